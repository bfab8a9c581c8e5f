"""Read TVMScript in the Relax dialect (the subset optplan plans) without TVM.

The text is never executed; it is read from Python's own syntax tree in four steps:

1. `ast.parse`. A SyntaxError becomes an InputError at its line and column.
2. Top level: `@R.function` definitions, or one `@I.ir_module` class holding `@R.function`
   and `@T.prim_func` methods. `tvm` imports are skipped. Kernels are kept as their source
   text, decorators included, and never interpreted.
3. Function bodies: `R.func_attr({...})`, `with R.dataflow(): ... R.output(...)`,
   bindings with or without a type, bare calls (bound to `_`), `if`/`else` (a Relax If:
   both branches end by assigning the same variable, whose value is the branch's result),
   and a final `return`. Consecutive plain statements form one plain block.
4. Expressions and types: `R.<op>(args, attrs)`, with the special forms `R.call_tir`,
   `R.call_tir_inplace`, `R.const`, `R.shape`, `R.str`, `R.dtype`, `R.prim_value`;
   kernel calls by name; tuples, `t[i]`, `metadata[kind][i]`; the types `R.Tensor`,
   `R.Tuple`, `R.Shape`, `R.Object`, `R.Any` and `R.Prim`, with static shapes only.

Anything else raises `InputError` (`file:line:col: what is wrong`). Every node records its
`Loc`. `print_program` writes the same dialect back, and `parse(print_program(p)) == p`.
"""

from __future__ import annotations

import ast
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from optplan.errors import InputError
from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Call,
    Const,
    Expr,
    Function,
    If,
    Kernel,
    Literal,
    Loc,
    MetaConst,
    ObjectType,
    Param,
    PrimType,
    Program,
    SeqExpr,
    ShapeExpr,
    ShapeType,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
    Var,
)
from optplan.script_print import print_program
from optplan.script_symbolic import (
    BOUND_ATTR,
    bound_pairs,
    dim_value,
    is_symbol_declaration,
    upper_bounds,
)

__all__ = ["load", "parse", "print_program"]

Attrs = tuple[tuple[str, AttrValue], ...]

# How a statement is named in messages: its node name in lower case, except these.
_SPELLING = {
    "AsyncFor": "async for", "Delete": "del", "AugAssign": "augmented assignment",
    "AsyncWith": "async with", "AsyncFunctionDef": "async def", "FunctionDef": "def",
    "ClassDef": "class", "ImportFrom": "import", "Expr": "expression", "TryStar": "try",
}  # fmt: skip
_TYPE_NAMES = {"R.Tensor", "R.Tuple", "R.Shape", "R.Object", "R.Any", "R.Prim"}
_STATEMENT_ONLY = {"R.dataflow", "R.output", "R.func_attr", "R.function"}
_NON_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


@dataclass(frozen=True, slots=True)
class _Source:
    """The text being read and the name its errors carry."""

    file: str
    text: str
    # Values of symbolic dimensions (the upper bounds, unless overridden), and the names
    # the text used.
    dims: dict[str, int] = field(default_factory=dict)
    symbols: set[str] = field(default_factory=set)


# ---------------------------------------------------------------------------- entry points


def parse(text: str, file: str = "<string>", dims: Mapping[str, int] | None = None) -> Program:
    """The Program written in `text`; InputError naming `file` for anything outside the subset.

    Symbolic dimensions take the values in `dims`, else their `tir_var_upper_bound`; a
    name in `dims` that the text never uses is an InputError.
    """
    try:
        with warnings.catch_warnings():
            # Python's own warnings about the text ("invalid escape sequence") are not
            # optplan's to print; the reader reports what it cannot read as errors.
            warnings.simplefilter("ignore")
            tree = ast.parse(text, filename=file)
    except SyntaxError as exc:
        raise InputError(
            f"syntax error: {exc.msg}", file=file, line=exc.lineno or 0, col=exc.offset or 0
        ) from None
    except (ValueError, RecursionError, MemoryError) as exc:
        raise InputError(f"syntax error: {exc}", file=file) from None
    src = _Source(file, text, {**upper_bounds(tree), **(dims or {})})
    try:
        program = _program(tree, src)
    except RecursionError:
        # Deeply nested expressions exhaust the reader's recursion, not a limit of the IR.
        raise InputError("expressions nested too deeply to read", file=file, line=1) from None
    for name in sorted(set(dims or {}) - src.symbols):
        raise InputError(f"the program has no symbolic dimension named {name!r}", file=file)
    return program


def load(path: str | Path, dims: Mapping[str, int] | None = None) -> Program:
    """Read and parse the file at `path` (symbolic dimensions as in `parse`); errors name
    the file."""
    name = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read the file: {exc.strerror or exc}", file=name) from None
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text: {exc.reason}", file=name) from None
    return parse(text, name, dims)


# ---------------------------------------------------------------------------- helpers


def _loc(node: ast.AST, src: _Source) -> Loc:
    return Loc(src.file, node.lineno, node.col_offset + 1)  # type: ignore[attr-defined]


def _error(message: str, node: ast.AST, src: _Source) -> InputError:
    line, col = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
    return InputError(message, file=src.file, line=line, col=col)


def _show(node: ast.AST, src: _Source) -> str:
    """The source of `node` as written, on one line and short enough for a message."""
    text = " ".join((ast.get_source_segment(src.text, node) or ast.unparse(node)).split())
    return repr(text if len(text) <= 60 else text[:57] + "...")


def _expected(what: str, node: ast.AST, src: _Source) -> InputError:
    return _error(f"expected {what}, found {_show(node, src)}", node, src)


def _kind(stmt: ast.stmt) -> str:
    name = type(stmt).__name__
    return _SPELLING.get(name, name.lower())


def _var(name: str, loc: Loc) -> Var:
    return Var(name, loc=loc)


def _dotted(node: ast.AST) -> str | None:
    """`R.nn.relu` for the attribute chain R.nn.relu, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def _callee(node: ast.AST) -> str | None:
    """The dotted name of a call's function, or of a bare attribute chain."""
    return _dotted(node.func) if isinstance(node, ast.Call) else _dotted(node)


def _number(node: ast.AST, src: _Source) -> int | float | bool | None:
    """A numeric literal, including a negated one (`-1` is a unary minus in Python)."""
    value: int | float | bool | None = None
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
        value = node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        inner = node.operand
        if isinstance(inner, ast.Constant) and isinstance(inner.value, (int, float)):
            # -True is not a number anyone writes; keep it out rather than read it as -1.
            value = None if isinstance(inner.value, bool) else -inner.value
    if isinstance(value, float) and not math.isfinite(value):
        # 1e999 reads as infinity, which no attribute or prim value can print back.
        raise _error(f"number out of range: {_show(node, src)}", node, src)
    return value


def _int(node: ast.AST, what: str, src: _Source) -> int:
    value = _number(node, src)
    if type(value) is not int:
        raise _expected(f"{what} (an integer)", node, src)
    return value


def _string(node: ast.AST, what: str, src: _Source) -> str:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise _expected(f"{what} (a string)", node, src)
    return node.value


def _dtype(node: ast.AST, src: _Source) -> str:
    name = _string(node, 'a dtype such as "float32"', src)
    # NumPy parses odd strings as struct specs (and may raise anything); only a plain
    # name such as "float32" is a dtype here.
    known = name.isalnum() and name.isascii()
    try:
        known = known and np.dtype(name).name == name
    except (TypeError, ValueError, SyntaxError):
        known = False
    if not known:
        raise _error(f'unknown dtype {name!r} (expected a name such as "float32")', node, src)
    return name


def _no_keywords(node: ast.Call, src: _Source) -> None:
    if node.keywords:
        raise _error(f"unexpected keyword argument in {_show(node, src)}", node.keywords[0], src)


def _keywords(node: ast.Call, src: _Source) -> dict[str, ast.expr]:
    """The keyword arguments by name; `**kw` and repeated names are errors."""
    found: dict[str, ast.expr] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise _error("'**' arguments are not supported", keyword, src)
        if keyword.arg in found:
            raise _error(f"keyword argument {keyword.arg!r} repeated", keyword, src)
        found[keyword.arg] = keyword.value
    return found


# ---------------------------------------------------------------------------- top level


def _program(tree: ast.Module, src: _Source) -> Program:
    statements: list[ast.stmt] = []
    module: str | None = None
    mixed = "a file holds one @I.ir_module class or top-level functions, not both"
    for stmt in tree.body:
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):
            _check_import(stmt, src)
        elif is_symbol_declaration(stmt):
            continue
        elif isinstance(stmt, ast.ClassDef):
            if module is not None or statements:
                raise _error(mixed, stmt, src)
            module = _module_name(stmt, src)
            statements.extend(stmt.body)
        elif module is not None:
            raise _error(mixed, stmt, src)
        else:
            statements.append(stmt)
    definitions = [_definition(stmt, src) for stmt in statements]
    _check_unique(statements, src)
    functions = tuple(d for d in definitions if isinstance(d, Function))
    if not functions:
        raise InputError("no @R.function found", file=src.file, line=1, col=1)
    return Program(functions, tuple(d for d in definitions if isinstance(d, Kernel)), module)


def _check_import(stmt: ast.Import | ast.ImportFrom, src: _Source) -> None:
    if isinstance(stmt, ast.ImportFrom):
        modules = [stmt.module or ""]
    else:
        modules = [alias.name for alias in stmt.names]
    if not all(m == "tvm" or m.startswith("tvm.") for m in modules):
        raise _error(f"unsupported import {_show(stmt, src)} (only tvm imports)", stmt, src)


def _check_unique(statements: Sequence[ast.stmt], src: _Source) -> None:
    seen: set[str] = set()
    for stmt in statements:
        assert isinstance(stmt, ast.FunctionDef)  # _definition refused everything else
        if stmt.name in seen:
            raise _error(f"{stmt.name!r} is defined twice", stmt, src)
        seen.add(stmt.name)


def _module_name(stmt: ast.ClassDef, src: _Source) -> str:
    decorators = [_callee(d) for d in stmt.decorator_list]
    if decorators != ["I.ir_module"] or stmt.bases or stmt.keywords:
        raise _error(f"expected '@I.ir_module class {stmt.name}:'", stmt, src)
    return stmt.name


def _definition(stmt: ast.stmt, src: _Source) -> Function | Kernel:
    if not isinstance(stmt, ast.FunctionDef):
        message = f"unsupported statement {_kind(stmt)!r} (expected @R.function or @T.prim_func)"
        raise _error(message, stmt, src)
    if len(stmt.decorator_list) != 1:
        message = f"expected one decorator on {stmt.name!r}: @R.function or @T.prim_func"
        raise _error(message, stmt, src)
    decorator = stmt.decorator_list[0]
    if _callee(decorator) == "T.prim_func":
        return Kernel(stmt.name, _source_text(stmt, src))
    if isinstance(decorator, ast.Attribute) and _dotted(decorator) == "R.function":
        return _function(stmt, src)
    raise _error(f"unsupported decorator {_show(decorator, src)}", decorator, src)


def _source_text(stmt: ast.FunctionDef, src: _Source) -> str:
    """The kernel's exact text from its first decorator line to its end, without the
    indentation of the class it sits in (so it reads the same at any depth)."""
    segment = ast.get_source_segment(src.text, stmt) or ""
    first = min(d.lineno for d in stmt.decorator_list)
    head = src.text.splitlines()[first - 1 : stmt.lineno - 1]
    body = segment.splitlines()
    indent = " " * stmt.col_offset
    rest = [line.removeprefix(indent) for line in head] + body[:1]
    return "\n".join(rest + [line.removeprefix(indent) for line in body[1:]])


# ---------------------------------------------------------------------------- functions


def _function(stmt: ast.FunctionDef, src: _Source) -> Function:
    args = stmt.args
    extra = args.posonlyargs + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    if extra or args.defaults:
        raise _error(f"unsupported parameter form in {stmt.name!r}", stmt, src)
    params = tuple(_param(arg, src) for arg in args.args)
    for index, arg in enumerate(args.args):
        if arg.arg in (a.arg for a in args.args[:index]):
            raise _error(f"parameter {arg.arg!r} appears twice", arg, src)
    ret_type = None if stmt.returns is None else _type(stmt.returns, src)
    attrs, stmts = _func_attrs(stmt.body, src)
    stmts = [s for s in stmts if not _is_module_alias(s)]
    last = stmts[-1] if stmts else stmt
    if not isinstance(last, ast.Return) or last.value is None:
        raise _error(f"function {stmt.name!r} must end with 'return <value>'", last, src)
    blocks = _blocks(stmts[:-1], src, in_branch=False)
    body = SeqExpr(blocks, _expr(last.value, src), loc=_loc(stmts[0], src))
    return Function(stmt.name, params, ret_type, body, attrs, loc=_loc(stmt, src))


def _is_module_alias(stmt: ast.stmt) -> bool:
    """`cls = Module`: how TVM prints a module's functions; kernels are `cls.f` anyway."""
    match stmt:
        case ast.Assign(targets=[ast.Name(id="cls")], value=ast.Name()):
            return True
    return False


def _param(arg: ast.arg, src: _Source) -> Param:
    if arg.annotation is None:
        raise _error(f"parameter {arg.arg!r} needs a type such as R.Tensor(shape, dtype)", arg, src)
    loc = _loc(arg, src)
    return Param(_var(arg.arg, loc), _type(arg.annotation, src), loc=loc)


def _func_attrs(stmts: list[ast.stmt], src: _Source) -> tuple[Attrs, list[ast.stmt]]:
    """`R.func_attr({...})` taken out of the body, its keys sorted; declarations of
    symbolic dimensions (`n = T.int64()`) are dropped from the body too."""
    stmts = [s for s in stmts if not is_symbol_declaration(s)]
    found = [s for s in stmts if isinstance(s, ast.Expr) and _callee(s.value) == "R.func_attr"]
    if len(found) > 1:
        raise _error("R.func_attr given twice", found[1], src)
    if not found:
        return (), stmts
    call = found[0].value
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Dict):
        raise _expected("R.func_attr({name: value, ...})", call, src)
    attrs: dict[str, AttrValue] = {}
    for key, value in zip(call.args[0].keys, call.args[0].values):
        if key is None:
            raise _error("'**' in R.func_attr is not supported", value, src)
        name = _string(key, "an attribute name", src)
        if name in attrs:
            raise _error(f"attribute {name!r} given twice", key, src)
        if name == BOUND_ATTR:
            attrs[name] = tuple(sorted(bound_pairs(value, src.file).items()))
            continue
        attrs[name] = _attr_value(value, src)
    return tuple(sorted(attrs.items())), [s for s in stmts if s is not found[0]]


def _blocks(stmts: Sequence[ast.stmt], src: _Source, *, in_branch: bool) -> tuple[Block, ...]:
    """Dataflow blocks as written; the plain statements between them as plain blocks."""
    blocks: list[Block] = []
    plain: list[Binding] = []
    for stmt in stmts:
        if isinstance(stmt, ast.With):
            if in_branch:
                raise _error("'with R.dataflow()' inside an 'if' branch", stmt, src)
            if plain:
                blocks.append(Block(tuple(plain), loc=plain[0].loc))
                plain = []
            blocks.append(_dataflow_block(stmt, src))
        else:
            plain.append(_statement(stmt, src, dataflow=False))
    if plain:
        blocks.append(Block(tuple(plain), loc=plain[0].loc))
    return tuple(blocks)


def _dataflow_block(stmt: ast.With, src: _Source) -> Block:
    item = stmt.items[0]
    context = item.context_expr
    is_dataflow = isinstance(context, ast.Call) and _callee(context) == "R.dataflow"
    if len(stmt.items) != 1 or item.optional_vars is not None or not is_dataflow:
        raise _expected("'with R.dataflow():'", context, src)
    body = list(stmt.body)
    outputs: tuple[Var, ...] = ()
    last = body[-1].value if isinstance(body[-1], ast.Expr) else None
    if isinstance(last, ast.Call) and _callee(last) == "R.output":
        outputs = _outputs(last, src)
        body.pop()
    bindings = tuple(_statement(s, src, dataflow=True) for s in body)
    return Block(bindings, dataflow=True, outputs=outputs, loc=_loc(stmt, src))


def _outputs(call: ast.Call, src: _Source) -> tuple[Var, ...]:
    _no_keywords(call, src)
    names = []
    for arg in call.args:
        if not isinstance(arg, ast.Name):
            raise _error(f"R.output takes variables, found {_show(arg, src)}", arg, src)
        names.append(_var(arg.id, _loc(arg, src)))
    return tuple(names)


# ---------------------------------------------------------------------------- statements


def _statement(stmt: ast.stmt, src: _Source, *, dataflow: bool) -> Binding:
    """One binding: `x = e`, `x: T = e`, a bare call (bound to `_`), or an if/else."""
    match stmt:
        case ast.Assign(targets=[ast.Name(id=name) as target], value=value):
            return Binding(_var(name, _loc(target, src)), _expr(value, src), loc=_loc(stmt, src))
        case ast.Assign(targets=[target, *more]):
            culprit = more[0] if more else target
            raise _error(f"unsupported assignment target {_show(culprit, src)}", culprit, src)
        case ast.AnnAssign(target=ast.Name(id=name) as target, annotation=ann, value=value):
            if value is None:
                raise _error(f"{name!r} is annotated but not assigned", stmt, src)
            var = _var(name, _loc(target, src))
            return Binding(var, _expr(value, src), _type(ann, src), loc=_loc(stmt, src))
        case ast.AnnAssign(target=target):
            raise _error(f"unsupported assignment target {_show(target, src)}", target, src)
        case ast.Expr(value=ast.Call() as call) if _callee(call) not in _STATEMENT_ONLY:
            return Binding(_var("_", _loc(stmt, src)), _expr(call, src), loc=_loc(stmt, src))
        case ast.Expr(value=ast.Call() as call) if _callee(call) == "R.output":
            where = "last statement of a dataflow block" if dataflow else "end of a dataflow block"
            raise _error(f"R.output(...) must be the {where}", stmt, src)
        case ast.If() if dataflow:
            raise _error("'if' inside a dataflow block (Relax allows it only outside)", stmt, src)
        case ast.If():
            return _if_binding(stmt, src)
        case ast.Return():
            raise _error("'return' must be the last statement of the function", stmt, src)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        raise _error(f"{_callee(stmt.value)} is not allowed here", stmt, src)
    raise _error(f"unsupported statement {_kind(stmt)!r}", stmt, src)


def _if_binding(stmt: ast.If, src: _Source) -> Binding:
    if not stmt.orelse:
        raise _error("'if' without 'else': a Relax If needs both branches", stmt, src)
    then_var, then_type, then_seq = _branch(stmt.body, src)
    else_var, else_type, else_seq = _branch(stmt.orelse, src)
    if then_var.name != else_var.name:
        message = f"both branches must assign the same variable, found {then_var.name!r} and "
        raise _error(message + repr(else_var.name), stmt.orelse[-1], src)
    if then_type is not None and else_type is not None and then_type != else_type:
        raise _error(f"the branches give {then_var.name!r} different types", stmt.orelse[-1], src)
    ty = then_type if then_type is not None else else_type
    value = If(_expr(stmt.test, src), then_seq, else_seq, loc=_loc(stmt, src))
    return Binding(then_var, value, ty, loc=_loc(stmt, src))


def _branch(stmts: list[ast.stmt], src: _Source) -> tuple[Var, Type | None, SeqExpr]:
    """A branch's bindings and its result: the value its last statement assigns."""
    last = stmts[-1]
    match last:
        case ast.Assign(targets=[ast.Name(id=name) as target], value=value):
            ty = None
        case ast.AnnAssign(target=ast.Name(id=name) as target, annotation=ann, value=value) if (
            value is not None
        ):
            ty = _type(ann, src)
        case _:
            raise _error("an 'if' branch must end by assigning its result to a variable", last, src)
    blocks = _blocks(stmts[:-1], src, in_branch=True)
    seq = SeqExpr(blocks, _expr(value, src), loc=_loc(stmts[0], src))
    return _var(name, _loc(target, src)), ty, seq


# ---------------------------------------------------------------------------- expressions


def _expr(node: ast.expr, src: _Source) -> Expr:
    """An expression; a bare number is a prim value (an offset, a device index)."""
    number = _number(node, src)
    if number is not None:
        return Literal("prim", number, loc=_loc(node, src))
    match node:
        case ast.Name(id=name):
            return _var(name, _loc(node, src))
        case ast.Tuple(elts=elts):
            return Tuple(tuple(_expr(e, src) for e in elts), loc=_loc(node, src))
        case ast.Subscript():
            return _subscript(node, src)
        case ast.Call():
            return _call(node, src)
        case ast.Constant(value=str()):
            raise _error(f"a bare string {_show(node, src)}: write R.str(...)", node, src)
    raise _error(f"unsupported expression {_show(node, src)}", node, src)


def _subscript(node: ast.Subscript, src: _Source) -> Expr:
    inner = node.value
    if (
        isinstance(inner, ast.Subscript)
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "metadata"
    ):
        kind = _string(inner.slice, "a metadata kind", src)
        index = _int(node.slice, "a metadata index", src)
        if index < 0:
            raise _error(f"a metadata index must not be negative, found {index}", node.slice, src)
        return MetaConst(kind, index, loc=_loc(node, src))
    index = _int(node.slice, "a tuple index", src)
    if index < 0:
        raise _error(f"a tuple index must not be negative, found {index}", node.slice, src)
    return TupleGetItem(_expr(inner, src), index, loc=_loc(node, src))


def _call(node: ast.Call, src: _Source) -> Expr:
    name = _callee(node)
    if name is None:
        raise _error(f"unsupported expression {_show(node, src)}", node, src)
    if name in _TYPE_NAMES or name in _STATEMENT_ONLY:
        raise _error(f"{name} is not allowed in an expression", node, src)
    if name.startswith("R."):
        special = _SPECIAL.get(name[2:], _op_call)
        return special(name[2:], node, src)
    if "." not in name or (name.startswith("cls.") and name.count(".") == 1):
        return _kernel_call(name.removeprefix("cls."), node, src)
    raise _error(f"unknown construct {name!r}", node, src)


def _positional(node: ast.Call, src: _Source) -> tuple[Expr, ...]:
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise _error("'*' arguments are not supported", arg, src)
    return tuple(_expr(a, src) for a in node.args)


def _op_call(op: str, node: ast.Call, src: _Source) -> Call:
    """`R.<op>(args, name=value, ...)`: a call of a table op with sorted attributes."""
    attrs = {key: _attr_value(value, src) for key, value in _keywords(node, src).items()}
    args = _positional(node, src)
    return Call(op, args, tuple(sorted(attrs.items())), loc=_loc(node, src))


def _kernel_call(kernel: str, node: ast.Call, src: _Source) -> Call:
    """`fused_x(a, b, out)`: a destination-passing call of a kernel by name; keywords are
    the attributes of a lowered high-level op (`op="nn.conv2d", strides=[1, 1]`)."""
    attrs = {key: _attr_value(value, src) for key, value in _keywords(node, src).items()}
    if "kernel" in attrs:
        raise _error("a kernel call cannot take a keyword named 'kernel'", node, src)
    attrs["kernel"] = kernel
    args = _positional(node, src)
    return Call("call_kernel", args, tuple(sorted(attrs.items())), loc=_loc(node, src))


def _call_tir(op: str, node: ast.Call, src: _Source) -> Call:
    """`R.call_tir(kernel, (args...), out_ty=T)`; `out_sinfo=` is the older spelling."""
    usage = f"R.{op}(kernel, (args...), out_ty=R.Tensor(...))"
    keywords = _keywords(node, src)
    if "out_sinfo" in keywords and "out_ty" not in keywords:
        keywords["out_ty"] = keywords.pop("out_sinfo")
    if len(node.args) == 3 and "out_ty" not in keywords:
        keywords["out_ty"] = node.args[2]
    elif len(node.args) != 2:
        raise _expected(usage, node, src)
    if "out_ty" not in keywords or "out_sinfo" in keywords:
        raise _expected(usage, node, src)
    kernel = _dotted(node.args[0])
    if kernel is None or kernel.count(".") > (1 if kernel.startswith("cls.") else 0):
        raise _expected("a kernel name", node.args[0], src)
    packed = node.args[1]
    operands = packed.elts if isinstance(packed, ast.Tuple) else [packed]
    if isinstance(packed, ast.Call) and _callee(packed) == "R.tuple" and not packed.keywords:
        operands = packed.args  # how TVM prints a call without tensor arguments
    attrs = {key: _attr_value(value, src) for key, value in keywords.items()}
    if not _is_output_type(attrs["out_ty"]):
        raise _expected("out_ty=R.Tensor(...)", keywords["out_ty"], src)
    attrs["kernel"] = kernel.removeprefix("cls.")
    args = tuple(_expr(a, src) for a in operands)
    return Call(op, args, tuple(sorted(attrs.items())), loc=_loc(node, src))


def _is_output_type(value: AttrValue) -> bool:
    if isinstance(value, tuple):
        return bool(value) and all(_is_output_type(v) for v in value)
    return isinstance(value, (TensorType, TupleType))


def _const(op: str, node: ast.Call, src: _Source) -> Const:
    """`R.const(0.25, "float32")`; `R.const("-inf", "float32")` is how infinities print."""
    keywords = _keywords(node, src)
    if (
        len(node.args) not in (1, 2)
        or set(keywords) - {"dtype"}
        or (len(node.args) == 2 and keywords)
    ):
        raise _expected("R.const(value, dtype)", node, src)
    value_node = node.args[0]
    value = _number(value_node, src)
    if isinstance(value_node, ast.Constant) and value_node.value in _NON_FINITE:
        value = _NON_FINITE[value_node.value]
    if value is None:
        raise _expected("a number in R.const", value_node, src)
    dtype_node = node.args[1] if len(node.args) == 2 else keywords.get("dtype")
    if dtype_node is None:
        # What TVM assumes for an untyped constant.
        dtype = "bool" if type(value) is bool else "int64" if type(value) is int else "float32"
    else:
        dtype = _dtype(dtype_node, src)
    return Const(value, dtype, loc=_loc(node, src))


def _shape_expr(op: str, node: ast.Call, src: _Source) -> ShapeExpr:
    _no_keywords(node, src)
    if len(node.args) != 1:
        raise _expected("R.shape([dims...])", node, src)
    return ShapeExpr(_dims(node.args[0], "R.shape", src), loc=_loc(node, src))


def _literal(op: str, node: ast.Call, src: _Source) -> Literal:
    """`R.str("global")`, `R.dtype("float32")`, `R.prim_value(0)`."""
    _no_keywords(node, src)
    if len(node.args) != 1:
        raise _expected(f"R.{op}(value)", node, src)
    arg = node.args[0]
    loc = _loc(node, src)
    if op == "str":
        return Literal("str", _string(arg, "a string", src), loc=loc)
    if op == "dtype":
        return Literal("dtype", _dtype(arg, src), loc=loc)
    number = _number(arg, src)
    if number is None:
        raise _expected("a number in R.prim_value", arg, src)
    return Literal("prim", number, loc=loc)


def _match_cast(op: str, node: ast.Call, src: _Source) -> Call:
    """`R.match_cast(value, R.Tensor(shape, dtype))`: the value, at the type it says."""
    keywords = _keywords(node, src)
    type_node = node.args[1] if len(node.args) == 2 else keywords.pop("struct_info", None)
    if type_node is None or keywords or len(node.args) not in (1, 2):
        raise _expected("R.match_cast(value, R.Tensor(shape, dtype))", node, src)
    value = _expr(node.args[0], src)
    return Call(op, (value,), (("struct_info", _type(type_node, src)),), loc=_loc(node, src))


_SPECIAL: dict[str, Callable[[str, ast.Call, _Source], Expr]] = {
    "match_cast": _match_cast,
    "call_tir": _call_tir,
    "call_tir_inplace": _call_tir,
    "const": _const,
    "shape": _shape_expr,
    "str": _literal,
    "dtype": _literal,
    "prim_value": _literal,
}


# ---------------------------------------------------------------------------- attributes, types


def _attr_value(node: ast.expr, src: _Source) -> AttrValue:
    """A keyword attribute: a Python literal, a list or tuple of them, or a type."""
    number = _number(node, src)
    if number is not None:
        return number
    match node:
        case ast.Constant(value=str() | None as value):
            return value
        case ast.List(elts=elts) | ast.Tuple(elts=elts):
            return tuple(_attr_value(e, src) for e in elts)
        case ast.Call() | ast.Attribute() if _callee(node) in _TYPE_NAMES:
            return _type(node, src)
    message = "expected an attribute value (number, string, bool, None, list or type), found "
    raise _error(message + _show(node, src), node, src)


def _type(node: ast.expr, src: _Source) -> Type:
    name = _callee(node)
    call = node if isinstance(node, ast.Call) else None
    if name == "R.Tensor":
        if call is None:
            raise _error("R.Tensor without a shape: optplan plans static shapes only", node, src)
        return _tensor_type(call, src)
    if name == "R.Tuple":
        if call is None:
            return TupleType(())
        _no_keywords(call, src)
        return TupleType(tuple(_type(a, src) for a in call.args))
    if name == "R.Shape":
        return _shape_type(call, src)
    if name in ("R.Object", "R.Any") and (call is None or not (call.args or call.keywords)):
        return ObjectType()
    if name == "R.Prim" and call is not None:
        return _prim_type(call, src)
    raise _expected("a type such as R.Tensor(shape, dtype)", node, src)


def _tensor_type(node: ast.Call, src: _Source) -> TensorType:
    keywords = _keywords(node, src)
    shape_node = node.args[0] if node.args else keywords.pop("shape", None)
    dtype_node = node.args[1] if len(node.args) > 1 else keywords.pop("dtype", None)
    if shape_node is None and set(keywords) <= {"ndim"} and dtype_node is not None:
        message = "R.Tensor without a shape: optplan plans static shapes only"
        raise _error(message, node, src)
    if (
        keywords
        or len(node.args) > 2
        or dtype_node is None
        or not isinstance(shape_node, (ast.Tuple, ast.List))
    ):
        raise _expected("R.Tensor(shape, dtype)", node, src)
    return TensorType(_dims(shape_node, "R.Tensor", src), _dtype(dtype_node, src))


def _dims(node: ast.expr, what: str, src: _Source) -> tuple[int, ...]:
    """Dimensions: integers, or symbolic ones at their values (`script_symbolic`)."""
    if not isinstance(node, (ast.Tuple, ast.List)):
        raise _expected(f"the dimensions of {what} as a tuple or list", node, src)
    dims = []
    for dim in node.elts:
        symbolic = dim_value(dim, src.dims, src.symbols, src.file)
        value = _int(dim, f"a dimension of {what}", src) if symbolic is None else symbolic
        if value < 0:
            raise _error(f"negative dimension {value} in {what}", dim, src)
        dims.append(value)
    return tuple(dims)


def _shape_type(node: ast.Call | None, src: _Source) -> ShapeType:
    if node is None:
        return ShapeType()
    keywords = _keywords(node, src)
    if node.args and not keywords and len(node.args) == 1:
        return ShapeType(len(_dims(node.args[0], "R.Shape", src)))
    if not node.args and set(keywords) <= {"ndim"}:
        ndim = keywords.get("ndim")
        value = -1 if ndim is None else _int(ndim, "ndim", src)
        if value < -1:
            raise _error(f"ndim must be -1 (unknown) or more, found {value}", node, src)
        return ShapeType(value)
    raise _expected("R.Shape([dims...]) or R.Shape(ndim=n)", node, src)


def _prim_type(node: ast.Call, src: _Source) -> PrimType:
    keywords = _keywords(node, src)
    dtype_node = node.args[0] if node.args else keywords.pop("dtype", None)
    if dtype_node is None or len(node.args) > 1 or keywords:
        raise _expected("R.Prim(dtype)", node, src)
    return PrimType(_dtype(dtype_node, src))
