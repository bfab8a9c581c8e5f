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
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path

from optplan.errors import InputError
from optplan.frontends.script_exprs import read_attr_value, read_expr, read_type
from optplan.frontends.script_print import print_program
from optplan.frontends.script_symbolic import (
    BOUND_ATTR,
    bound_pairs,
    is_symbol_declaration,
    upper_bounds,
)
from optplan.frontends.script_syntax import (
    STATEMENT_ONLY,
    Attrs,
    Source,
    callee_name,
    dotted_name,
    error_at,
    expected_error,
    loc_of,
    new_var,
    no_keywords,
    read_string,
    shown,
    statement_kind,
)
from optplan.ir import (
    AttrValue,
    Binding,
    Block,
    Function,
    If,
    Kernel,
    Param,
    Program,
    SeqExpr,
    Type,
    Var,
)

__all__ = ["load", "parse", "print_program"]


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
    src = Source(file, text, {**upper_bounds(tree), **(dims or {})})
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


def _program(tree: ast.Module, src: Source) -> Program:
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
                raise error_at(mixed, stmt, src)
            module = _module_name(stmt, src)
            statements.extend(stmt.body)
        elif module is not None:
            raise error_at(mixed, stmt, src)
        else:
            statements.append(stmt)
    definitions = [_definition(stmt, src) for stmt in statements]
    _check_unique(statements, src)
    functions = tuple(d for d in definitions if isinstance(d, Function))
    if not functions:
        raise InputError("no @R.function found", file=src.file, line=1, col=1)
    return Program(functions, tuple(d for d in definitions if isinstance(d, Kernel)), module)


def _check_import(stmt: ast.Import | ast.ImportFrom, src: Source) -> None:
    if isinstance(stmt, ast.ImportFrom):
        modules = [stmt.module or ""]
    else:
        modules = [alias.name for alias in stmt.names]
    if not all(m == "tvm" or m.startswith("tvm.") for m in modules):
        raise error_at(f"unsupported import {shown(stmt, src)} (only tvm imports)", stmt, src)


def _check_unique(statements: Sequence[ast.stmt], src: Source) -> None:
    seen: set[str] = set()
    for stmt in statements:
        assert isinstance(stmt, ast.FunctionDef)  # _definition refused everything else
        if stmt.name in seen:
            raise error_at(f"{stmt.name!r} is defined twice", stmt, src)
        seen.add(stmt.name)


def _module_name(stmt: ast.ClassDef, src: Source) -> str:
    decorators = [callee_name(d) for d in stmt.decorator_list]
    if decorators != ["I.ir_module"] or stmt.bases or stmt.keywords:
        raise error_at(f"expected '@I.ir_module class {stmt.name}:'", stmt, src)
    return stmt.name


def _definition(stmt: ast.stmt, src: Source) -> Function | Kernel:
    if not isinstance(stmt, ast.FunctionDef):
        message = (
            f"unsupported statement {statement_kind(stmt)!r} (expected @R.function or @T.prim_func)"
        )
        raise error_at(message, stmt, src)
    if len(stmt.decorator_list) != 1:
        message = f"expected one decorator on {stmt.name!r}: @R.function or @T.prim_func"
        raise error_at(message, stmt, src)
    decorator = stmt.decorator_list[0]
    if callee_name(decorator) == "T.prim_func":
        return Kernel(stmt.name, _source_text(stmt, src))
    if isinstance(decorator, ast.Attribute) and dotted_name(decorator) == "R.function":
        return _function(stmt, src)
    raise error_at(f"unsupported decorator {shown(decorator, src)}", decorator, src)


def _source_text(stmt: ast.FunctionDef, src: Source) -> str:
    """The kernel's exact text from its first decorator line to its end, without the
    indentation of the class it sits in (so it reads the same at any depth)."""
    segment = ast.get_source_segment(src.text, stmt) or ""
    first = min(d.lineno for d in stmt.decorator_list)
    head = src.text.splitlines()[first - 1 : stmt.lineno - 1]
    body = segment.splitlines()
    indent = " " * stmt.col_offset
    rest = [line.removeprefix(indent) for line in head] + body[:1]
    return "\n".join(rest + [line.removeprefix(indent) for line in body[1:]])


def _function(stmt: ast.FunctionDef, src: Source) -> Function:
    args = stmt.args
    extra = args.posonlyargs + args.kwonlyargs + [a for a in (args.vararg, args.kwarg) if a]
    if extra or args.defaults:
        raise error_at(f"unsupported parameter form in {stmt.name!r}", stmt, src)
    params = tuple(_param(arg, src) for arg in args.args)
    for index, arg in enumerate(args.args):
        if arg.arg in (a.arg for a in args.args[:index]):
            raise error_at(f"parameter {arg.arg!r} appears twice", arg, src)
    ret_type = None if stmt.returns is None else read_type(stmt.returns, src)
    attrs, stmts = _func_attrs(stmt.body, src)
    stmts = [s for s in stmts if not _is_module_alias(s)]
    last = stmts[-1] if stmts else stmt
    if not isinstance(last, ast.Return) or last.value is None:
        raise error_at(f"function {stmt.name!r} must end with 'return <value>'", last, src)
    blocks = _blocks(stmts[:-1], src, in_branch=False)
    body = SeqExpr(blocks, read_expr(last.value, src), loc=loc_of(stmts[0], src))
    return Function(stmt.name, params, ret_type, body, attrs, loc=loc_of(stmt, src))


def _is_module_alias(stmt: ast.stmt) -> bool:
    """`cls = Module`: how TVM prints a module's functions; kernels are `cls.f` anyway."""
    match stmt:
        case ast.Assign(targets=[ast.Name(id="cls")], value=ast.Name()):
            return True
    return False


def _param(arg: ast.arg, src: Source) -> Param:
    if arg.annotation is None:
        raise error_at(
            f"parameter {arg.arg!r} needs a type such as R.Tensor(shape, dtype)", arg, src
        )
    loc = loc_of(arg, src)
    return Param(new_var(arg.arg, loc), read_type(arg.annotation, src), loc=loc)


def _func_attrs(stmts: list[ast.stmt], src: Source) -> tuple[Attrs, list[ast.stmt]]:
    """`R.func_attr({...})` taken out of the body, its keys sorted; declarations of
    symbolic dimensions (`n = T.int64()`) are dropped from the body too."""
    stmts = [s for s in stmts if not is_symbol_declaration(s)]
    found = [s for s in stmts if isinstance(s, ast.Expr) and callee_name(s.value) == "R.func_attr"]
    if len(found) > 1:
        raise error_at("R.func_attr given twice", found[1], src)
    if not found:
        return (), stmts
    call = found[0].value
    assert isinstance(call, ast.Call)
    if len(call.args) != 1 or call.keywords or not isinstance(call.args[0], ast.Dict):
        raise expected_error("R.func_attr({name: value, ...})", call, src)
    attrs: dict[str, AttrValue] = {}
    for key, value in zip(call.args[0].keys, call.args[0].values):
        if key is None:
            raise error_at("'**' in R.func_attr is not supported", value, src)
        name = read_string(key, "an attribute name", src)
        if name in attrs:
            raise error_at(f"attribute {name!r} given twice", key, src)
        if name == BOUND_ATTR:
            attrs[name] = tuple(sorted(bound_pairs(value, src.file).items()))
            continue
        attrs[name] = read_attr_value(value, src)
    return tuple(sorted(attrs.items())), [s for s in stmts if s is not found[0]]


def _blocks(stmts: Sequence[ast.stmt], src: Source, *, in_branch: bool) -> tuple[Block, ...]:
    """Dataflow blocks as written; the plain statements between them as plain blocks."""
    blocks: list[Block] = []
    plain: list[Binding] = []
    for stmt in stmts:
        if isinstance(stmt, ast.With):
            if in_branch:
                raise error_at("'with R.dataflow()' inside an 'if' branch", stmt, src)
            if plain:
                blocks.append(Block(tuple(plain), loc=plain[0].loc))
                plain = []
            blocks.append(_dataflow_block(stmt, src))
        else:
            plain.append(_statement(stmt, src, dataflow=False))
    if plain:
        blocks.append(Block(tuple(plain), loc=plain[0].loc))
    return tuple(blocks)


def _dataflow_block(stmt: ast.With, src: Source) -> Block:
    item = stmt.items[0]
    context = item.context_expr
    is_dataflow = isinstance(context, ast.Call) and callee_name(context) == "R.dataflow"
    if len(stmt.items) != 1 or item.optional_vars is not None or not is_dataflow:
        raise expected_error("'with R.dataflow():'", context, src)
    body = list(stmt.body)
    outputs: tuple[Var, ...] = ()
    last = body[-1].value if isinstance(body[-1], ast.Expr) else None
    if isinstance(last, ast.Call) and callee_name(last) == "R.output":
        outputs = _outputs(last, src)
        body.pop()
    bindings = tuple(_statement(s, src, dataflow=True) for s in body)
    return Block(bindings, dataflow=True, outputs=outputs, loc=loc_of(stmt, src))


def _outputs(call: ast.Call, src: Source) -> tuple[Var, ...]:
    no_keywords(call, src)
    names = []
    for arg in call.args:
        if not isinstance(arg, ast.Name):
            raise error_at(f"R.output takes variables, found {shown(arg, src)}", arg, src)
        names.append(new_var(arg.id, loc_of(arg, src)))
    return tuple(names)


def _statement(stmt: ast.stmt, src: Source, *, dataflow: bool) -> Binding:
    """One binding: `x = e`, `x: T = e`, a bare call (bound to `_`), or an if/else."""
    match stmt:
        case ast.Assign(targets=[ast.Name(id=name) as target], value=value):
            return Binding(
                new_var(name, loc_of(target, src)), read_expr(value, src), loc=loc_of(stmt, src)
            )
        case ast.Assign(targets=[target, *more]):
            culprit = more[0] if more else target
            raise error_at(f"unsupported assignment target {shown(culprit, src)}", culprit, src)
        case ast.AnnAssign(target=ast.Name(id=name) as target, annotation=ann, value=value):
            if value is None:
                raise error_at(f"{name!r} is annotated but not assigned", stmt, src)
            var = new_var(name, loc_of(target, src))
            return Binding(var, read_expr(value, src), read_type(ann, src), loc=loc_of(stmt, src))
        case ast.AnnAssign(target=target):
            raise error_at(f"unsupported assignment target {shown(target, src)}", target, src)
        case ast.Expr(value=ast.Call() as call) if callee_name(call) not in STATEMENT_ONLY:
            return Binding(
                new_var("_", loc_of(stmt, src)), read_expr(call, src), loc=loc_of(stmt, src)
            )
        case ast.Expr(value=ast.Call() as call) if callee_name(call) == "R.output":
            where = "last statement of a dataflow block" if dataflow else "end of a dataflow block"
            raise error_at(f"R.output(...) must be the {where}", stmt, src)
        case ast.If() if dataflow:
            raise error_at("'if' inside a dataflow block (Relax allows it only outside)", stmt, src)
        case ast.If():
            return _if_binding(stmt, src)
        case ast.Return():
            raise error_at("'return' must be the last statement of the function", stmt, src)
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        raise error_at(f"{callee_name(stmt.value)} is not allowed here", stmt, src)
    raise error_at(f"unsupported statement {statement_kind(stmt)!r}", stmt, src)


def _if_binding(stmt: ast.If, src: Source) -> Binding:
    if not stmt.orelse:
        raise error_at("'if' without 'else': a Relax If needs both branches", stmt, src)
    then_var, then_type, then_seq = _branch(stmt.body, src)
    else_var, else_type, else_seq = _branch(stmt.orelse, src)
    if then_var.name != else_var.name:
        message = f"both branches must assign the same variable, found {then_var.name!r} and "
        raise error_at(message + repr(else_var.name), stmt.orelse[-1], src)
    if then_type is not None and else_type is not None and then_type != else_type:
        raise error_at(f"the branches give {then_var.name!r} different types", stmt.orelse[-1], src)
    ty = then_type if then_type is not None else else_type
    value = If(read_expr(stmt.test, src), then_seq, else_seq, loc=loc_of(stmt, src))
    return Binding(then_var, value, ty, loc=loc_of(stmt, src))


def _branch(stmts: list[ast.stmt], src: Source) -> tuple[Var, Type | None, SeqExpr]:
    """A branch's bindings and its result: the value its last statement assigns."""
    last = stmts[-1]
    match last:
        case ast.Assign(targets=[ast.Name(id=name) as target], value=value):
            ty = None
        case ast.AnnAssign(target=ast.Name(id=name) as target, annotation=ann, value=value) if (
            value is not None
        ):
            ty = read_type(ann, src)
        case _:
            raise error_at(
                "an 'if' branch must end by assigning its result to a variable", last, src
            )
    blocks = _blocks(stmts[:-1], src, in_branch=True)
    seq = SeqExpr(blocks, read_expr(value, src), loc=loc_of(stmts[0], src))
    return new_var(name, loc_of(target, src)), ty, seq
