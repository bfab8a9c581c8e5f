"""Print a Program as TVMScript in the Relax dialect that `optplan.frontends.script.parse` reads.

The printer writes what TVM 0.27 writes, in the same order:

1. The `# from tvm.script import ...` header, then either one `@I.ir_module` class (kernel
   texts first, then functions, indented into the class) or top-level definitions.
2. Per function: the signature with parameter types, `R.func_attr({...})`, each block
   (`with R.dataflow():` ... `R.output(...)`, or plain statements), then `return`.
3. Per binding: `x: T = value`, `x = value` when untyped, a bare call for a `_` binding
   without a type, and `if`/`else` for an If, each branch ending with `x = <result>`.

One difference from TVM's text: an op's keyword attributes print sorted by name (the IR
keeps them sorted), where TVM prints them in its attribute declaration order. TVM's parser
reads both as the same module (tests/test_tvm_printer.py checks it with TVM itself).

The printed form is canonical: parsing it gives back an equal Program, provided the
program is canonical too (no empty or adjacent plain blocks, If branches of plain
bindings, a MetaConst's inferred type left out of the text as TVM leaves it out).
Programs that no text can express (a name that is not an identifier, an If used as an
operand, an infinite attribute) raise ValueError: that is a bug in the caller.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Iterator

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
    MetaConst,
    ObjectType,
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

__all__ = ["print_expr", "print_program", "print_type"]

_INDENT = "    "
_NON_FINITE = {math.inf: "inf", -math.inf: "-inf"}
_TUPLE_ATTRS = {"ty_args"}  # TVM prints these arrays as tuples, all others as lists


def print_program(program: Program) -> str:
    """The TVMScript text of `program`, ending with a newline."""
    # Inside a module TVM refers to the module's own definitions as `cls.name`.
    names = [k.name for k in program.kernels] + [fn.name for fn in program.functions]
    kernels = frozenset(names) if program.module else frozenset()
    header = ["# from tvm.script import ir as I"] if program.module else []
    if program.kernels:
        header.append("# from tvm.script import tir as T")
    header.append("# from tvm.script import relax as R")
    parts = [_kernel_lines(k) for k in program.kernels]
    parts += [list(_function_lines(fn, kernels)) for fn in program.functions]
    # One blank line after the header and between definitions, as TVM prints them.
    body = [line for part in parts for line in [""] + part][1:]
    if program.module is not None:
        body = ["@I.ir_module", f"class {_name(program.module)}:"] + _indent(body)
    return "\n".join(header + [""] + body) + "\n"


def print_type(ty: Type) -> str:
    """`R.Tensor((1, 2), dtype="float32")` and the other Relax type spellings."""
    match ty:
        case TensorType(shape=shape, dtype=dtype):
            return f"R.Tensor({_tuple_text([str(d) for d in shape])}, dtype={_string(dtype)})"
        case TupleType(fields=fields):
            return f"R.Tuple({', '.join(print_type(f) for f in fields)})"
        case ShapeType(ndim=ndim):
            return "R.Shape" if ndim < 0 else f"R.Shape(ndim={ndim})"
        case ObjectType():
            return "R.Any"  # the spelling TVM 0.27 prints
        case PrimType(dtype=dtype):
            return f"R.Prim({_string(dtype)})"
    raise ValueError(f"not a type: {ty!r}")


def print_expr(expr: Expr, kernels: frozenset[str] = frozenset()) -> str:
    """One expression; `kernels` are the names a module defines, printed as `cls.name`."""
    match expr:
        case Var(name=name):
            return _name(name)
        case Const(value=value, dtype=dtype):
            return f"R.const({_const_value(value)}, {_string(dtype)})"
        case MetaConst(kind=kind, index=index):
            return f"metadata[{_string(kind)}][{index}]"
        case ShapeExpr(values=values):
            return f"R.shape([{', '.join(str(v) for v in values)}])"
        case Literal():
            return _literal(expr)
        case Call():
            return _call(expr, kernels)
        case Tuple(fields=fields):
            return _tuple_text([print_expr(f, kernels) for f in fields])
        case TupleGetItem(tuple_value=value, index=index):
            return f"{print_expr(value, kernels)}[{index}]"
        case If():
            raise ValueError("an If can only be printed as the value of a binding")
    raise ValueError(f"not an expression: {expr!r}")


# ---------------------------------------------------------------------------- structure


def _kernel_lines(kernel: Kernel) -> list[str]:
    if not kernel.text.startswith("@T.prim_func"):
        raise ValueError(f"kernel {kernel.name!r}: its text must start with '@T.prim_func'")
    return kernel.text.split("\n")


def _function_lines(fn: Function, kernels: frozenset[str]) -> Iterator[str]:
    params = ", ".join(f"{_name(p.var.name)}: {print_type(p.type)}" for p in fn.params)
    returns = "" if fn.ret_type is None else f" -> {print_type(fn.ret_type)}"
    yield "@R.function"
    yield f"def {_name(fn.name)}({params}){returns}:"
    if fn.attrs:
        items = ", ".join(f"{_string(k)}: {_func_attr(k, v)}" for k, v in sorted(fn.attrs))
        yield _INDENT + f"R.func_attr({{{items}}})"
    for block in fn.body.blocks:
        yield from _indent(_block_lines(block, kernels))
    yield _INDENT + f"return {_value(fn.body.body, kernels)}"


def _block_lines(block: Block, kernels: frozenset[str]) -> list[str]:
    lines = [line for b in block.bindings for line in _binding_lines(b, kernels)]
    if not block.dataflow:
        return lines
    outputs = ", ".join(_name(v.name) for v in block.outputs)
    return ["with R.dataflow():"] + _indent(lines + [f"R.output({outputs})"])


def _binding_lines(binding: Binding, kernels: frozenset[str]) -> list[str]:
    value = binding.value
    if isinstance(value, If):
        return _if_lines(binding, value, kernels)
    if binding.var.name == "_" and binding.type is None and isinstance(value, Call):
        return [print_expr(value, kernels)]  # a call made for its effect
    return [_assignment(binding.var, binding.type, value, kernels)]


def _if_lines(binding: Binding, node: If, kernels: frozenset[str]) -> list[str]:
    lines = [f"if {print_expr(node.cond, kernels)}:"]
    lines += _indent(_branch_lines(binding, node.then_branch, kernels))
    lines += ["else:"] + _indent(_branch_lines(binding, node.else_branch, kernels))
    return lines


def _branch_lines(binding: Binding, branch: SeqExpr, kernels: frozenset[str]) -> list[str]:
    lines = []
    for block in branch.blocks:
        if block.dataflow:
            raise ValueError("a dataflow block inside an If branch cannot be printed")
        lines += _block_lines(block, kernels)
    return lines + [_assignment(binding.var, binding.type, branch.body, kernels)]


def _assignment(var: Var, ty: Type | None, value: Expr, kernels: frozenset[str]) -> str:
    annotation = "" if ty is None else f": {print_type(ty)}"
    return f"{_name(var.name)}{annotation} = {_value(value, kernels)}"


def _value(expr: Expr, kernels: frozenset[str]) -> str:
    """A right-hand side: a tuple of two or more fields goes without parentheses, as TVM
    prints it."""
    if isinstance(expr, Tuple) and len(expr.fields) >= 2:
        return ", ".join(print_expr(f, kernels) for f in expr.fields)
    return print_expr(expr, kernels)


def _indent(lines: list[str]) -> list[str]:
    return [_INDENT + line if line else line for line in lines]


# ---------------------------------------------------------------------------- expressions


def _call(call: Call, kernels: frozenset[str]) -> str:
    args = [print_expr(a, kernels) for a in call.args]
    attrs = dict(call.attrs)
    if call.op in ("call_tir", "call_tir_inplace", "call_kernel"):
        kernel = attrs.pop("kernel", None)
        if not isinstance(kernel, str):
            raise ValueError(f"{call.op} needs a 'kernel' attribute naming the kernel")
        callee = f"cls.{kernel}" if kernel in kernels else _name(kernel)
        if call.op == "call_kernel":
            # A lowered high-level op keeps its attributes (and names its op) as keywords.
            return f"{callee}({', '.join(args + _keywords(attrs))})"
        out_ty = attrs.pop("out_ty", None)
        if out_ty is None:
            raise ValueError(f"{call.op} needs an 'out_ty' attribute")
        keywords = [f"out_ty={_attr(out_ty)}"] + _keywords(attrs)
        return f"R.{call.op}({callee}, {_tuple_text(args)}, {', '.join(keywords)})"
    if call.op in ("call_packed", "call_builtin_with_ctx") and isinstance(attrs.get("func"), str):
        func = _string(str(attrs.pop("func")))
        return f"R.{call.op}({', '.join([func, *args, *_keywords(attrs)])})"
    if call.op == "match_cast" and set(attrs) == {"struct_info"}:
        return f"R.match_cast({args[0]}, {_attr(attrs['struct_info'])})"
    return f"R.{call.op}({', '.join(args + _keywords(attrs))})"


def _keywords(attrs: dict[str, AttrValue]) -> list[str]:
    return [f"{_name(key)}={_attr(attrs[key], key)}" for key in sorted(attrs)]


def _literal(literal: Literal) -> str:
    match literal.kind, literal.value:
        case "str", str(text):
            return f"R.str({_string(text)})"
        case "dtype", str(dtype):
            return f"R.dtype({_string(dtype)})"
        case "prim", bool() | int() | float() as number:
            return _number(number)
    raise ValueError(f"cannot print literal {literal!r}")


def _const_value(value: float | bool) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        # TVM prints infinities as strings; the reader turns them back into floats.
        return _string(_NON_FINITE.get(value, "nan"))
    return _number(value)


def _func_attr(key: str, value: AttrValue) -> str:
    """A function attribute; the symbolic bounds print as TVM's dict `{"n": 2048}`."""
    if key == "tir_var_upper_bound" and isinstance(value, tuple):
        pairs = [p for p in value if isinstance(p, tuple) and len(p) == 2]
        return "{" + ", ".join(f"{_string(str(k))}: {_attr(v)}" for k, v in pairs) + "}"
    return _attr(value)


def _attr(value: AttrValue, key: str = "") -> str:
    match value:
        case None | bool():
            return repr(value)
        case int() | float():
            return _number(value)
        case str():
            return _string(value)
        case tuple() if key in _TUPLE_ATTRS:
            return _tuple_text([_attr(v) for v in value])
        case tuple():
            return f"[{', '.join(_attr(v) for v in value)}]"
    return print_type(value)


def _number(value: float | bool) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"cannot print the non-finite number {value} here")
    # Through the built-in types, so NumPy scalars print as plain Python literals.
    if isinstance(value, bool):
        return repr(bool(value))
    if isinstance(value, int):
        return repr(int(value))
    # 17 significant digits, as TVM prints floats: exact, and diffs against TVM's text stay
    # small; a float that prints without a point or an exponent gets ".0" to stay a float.
    text = f"{float(value):.17g}"
    return text if any(c in text for c in ".en") else text + ".0"


def _string(text: str) -> str:
    """A double-quoted literal, as TVM prints strings, in plain ASCII: every other
    character is escaped the way Python reads it back (json's surrogate pairs would not
    read back as one character)."""
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(char.encode("unicode_escape").decode("ascii"))
    return '"' + "".join(out) + '"'


def _tuple_text(items: list[str]) -> str:
    return f"({items[0]},)" if len(items) == 1 else f"({', '.join(items)})"


def _name(name: str) -> str:
    if not name.isidentifier() or keyword.iskeyword(name):
        raise ValueError(f"{name!r} is not a name TVMScript can print")
    return name
