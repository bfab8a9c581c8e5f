"""TVMScript expressions, attributes and types (step 4 of `script`'s reader):
`R.<op>(args, attrs)` and its special forms (`R.call_tir`, `R.const`, `R.shape`,
`R.match_cast`, ...), kernel calls, tuples and subscripts; `R.Tensor`, `R.Tuple`,
`R.Shape`, `R.Object`, `R.Any`, `R.Prim`.
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from optplan.frontends.script_symbolic import (
    dim_value,
)
from optplan.frontends.script_syntax import (
    NON_FINITE,
    STATEMENT_ONLY,
    TYPE_NAMES,
    Source,
    callee_name,
    dotted_name,
    error_at,
    expected_error,
    keyword_args,
    loc_of,
    new_var,
    no_keywords,
    read_dtype,
    read_int,
    read_number,
    read_string,
    shown,
)
from optplan.ir import (
    AttrValue,
    Call,
    Const,
    Expr,
    Literal,
    MetaConst,
    ObjectType,
    PrimType,
    ShapeExpr,
    ShapeType,
    TensorType,
    Tuple,
    TupleGetItem,
    TupleType,
    Type,
)


def read_expr(node: ast.expr, src: Source) -> Expr:
    """An expression; a bare number is a prim value (an offset, a device index), and so is
    a symbolic dimension or arithmetic on them (`kernel(x, n, out)`: TVM hands a kernel
    the sizes it cannot read off its buffers), at the dimension's value."""
    number = read_number(node, src)
    if number is not None:
        return Literal("prim", number, loc=loc_of(node, src))
    if isinstance(node, (ast.Name, ast.BinOp)) and _only_dims(node, src):
        value = dim_value(node, src.dims, src.symbols, src.file)
        if value is not None:
            return Literal("prim", value, loc=loc_of(node, src))
    match node:
        case ast.Name(id=name):
            return new_var(name, loc_of(node, src))
        case ast.Tuple(elts=elts):
            return Tuple(tuple(read_expr(e, src) for e in elts), loc=loc_of(node, src))
        case ast.Subscript():
            return _subscript(node, src)
        case ast.Call():
            return _call(node, src)
        case ast.Constant(value=str()):
            raise error_at(f"a bare string {shown(node, src)}: write R.str(...)", node, src)
    raise error_at(f"unsupported expression {shown(node, src)}", node, src)


def _only_dims(node: ast.expr, src: Source) -> bool:
    """Whether every name in `node` is a symbolic dimension with a value."""
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name)]
    return bool(names) and all(name in src.dims for name in names)


def _subscript(node: ast.Subscript, src: Source) -> Expr:
    inner = node.value
    if (
        isinstance(inner, ast.Subscript)
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "metadata"
    ):
        kind = read_string(inner.slice, "a metadata kind", src)
        index = read_int(node.slice, "a metadata index", src)
        if index < 0:
            raise error_at(f"a metadata index must not be negative, found {index}", node.slice, src)
        return MetaConst(kind, index, loc=loc_of(node, src))
    index = read_int(node.slice, "a tuple index", src)
    if index < 0:
        raise error_at(f"a tuple index must not be negative, found {index}", node.slice, src)
    return TupleGetItem(read_expr(inner, src), index, loc=loc_of(node, src))


def _call(node: ast.Call, src: Source) -> Expr:
    name = callee_name(node)
    if name is None:
        raise error_at(f"unsupported expression {shown(node, src)}", node, src)
    if name in TYPE_NAMES or name in STATEMENT_ONLY:
        raise error_at(f"{name} is not allowed in an expression", node, src)
    if name.startswith("R."):
        special = _SPECIAL.get(name[2:], _op_call)
        return special(name[2:], node, src)
    if "." not in name or (name.startswith("cls.") and name.count(".") == 1):
        return _kernel_call(name.removeprefix("cls."), node, src)
    raise error_at(f"unknown construct {name!r}", node, src)


def _positional(node: ast.Call, src: Source) -> tuple[Expr, ...]:
    for arg in node.args:
        if isinstance(arg, ast.Starred):
            raise error_at("'*' arguments are not supported", arg, src)
    return tuple(read_expr(a, src) for a in node.args)


def _op_call(op: str, node: ast.Call, src: Source) -> Call:
    """`R.<op>(args, name=value, ...)`: a call of a table op with sorted attributes."""
    attrs = {key: read_attr_value(value, src) for key, value in keyword_args(node, src).items()}
    args = _positional(node, src)
    return Call(op, args, tuple(sorted(attrs.items())), loc=loc_of(node, src))


def _kernel_call(kernel: str, node: ast.Call, src: Source) -> Call:
    """`fused_x(a, b, out)`: a destination-passing call of a kernel by name; keywords are
    the attributes of a lowered high-level op (`op="nn.conv2d", strides=[1, 1]`)."""
    attrs = {key: read_attr_value(value, src) for key, value in keyword_args(node, src).items()}
    if "kernel" in attrs:
        raise error_at("a kernel call cannot take a keyword named 'kernel'", node, src)
    attrs["kernel"] = kernel
    args = _positional(node, src)
    return Call("call_kernel", args, tuple(sorted(attrs.items())), loc=loc_of(node, src))


def _call_tir(op: str, node: ast.Call, src: Source) -> Call:
    """`R.call_tir(kernel, (args...), out_ty=T)`; `out_sinfo=` is the older spelling."""
    usage = f"R.{op}(kernel, (args...), out_ty=R.Tensor(...))"
    keywords = keyword_args(node, src)
    if "out_sinfo" in keywords and "out_ty" not in keywords:
        keywords["out_ty"] = keywords.pop("out_sinfo")
    if len(node.args) == 3 and "out_ty" not in keywords:
        keywords["out_ty"] = node.args[2]
    elif len(node.args) != 2:
        raise expected_error(usage, node, src)
    if "out_ty" not in keywords or "out_sinfo" in keywords:
        raise expected_error(usage, node, src)
    kernel = dotted_name(node.args[0])
    if kernel is None or kernel.count(".") > (1 if kernel.startswith("cls.") else 0):
        raise expected_error("a kernel name", node.args[0], src)
    packed = node.args[1]
    operands = packed.elts if isinstance(packed, ast.Tuple) else [packed]
    if isinstance(packed, ast.Call) and callee_name(packed) == "R.tuple" and not packed.keywords:
        operands = packed.args  # how TVM prints a call without tensor arguments
    attrs = {key: read_attr_value(value, src) for key, value in keywords.items()}
    if not _is_output_type(attrs["out_ty"]):
        raise expected_error("out_ty=R.Tensor(...)", keywords["out_ty"], src)
    attrs["kernel"] = kernel.removeprefix("cls.")
    args = tuple(read_expr(a, src) for a in operands)
    return Call(op, args, tuple(sorted(attrs.items())), loc=loc_of(node, src))


def _is_output_type(value: AttrValue) -> bool:
    if isinstance(value, tuple):
        return bool(value) and all(_is_output_type(v) for v in value)
    return isinstance(value, (TensorType, TupleType))


def _const(op: str, node: ast.Call, src: Source) -> Const:
    """`R.const(0.25, "float32")`; `R.const("-inf", "float32")` is how infinities print."""
    keywords = keyword_args(node, src)
    if (
        len(node.args) not in (1, 2)
        or set(keywords) - {"dtype"}
        or (len(node.args) == 2 and keywords)
    ):
        raise expected_error("R.const(value, dtype)", node, src)
    value_node = node.args[0]
    value = read_number(value_node, src)
    if isinstance(value_node, ast.Constant) and value_node.value in NON_FINITE:
        value = NON_FINITE[value_node.value]
    if value is None:
        raise expected_error("a number in R.const", value_node, src)
    dtype_node = node.args[1] if len(node.args) == 2 else keywords.get("dtype")
    if dtype_node is None:
        # What TVM assumes for an untyped constant.
        dtype = "bool" if type(value) is bool else "int64" if type(value) is int else "float32"
    else:
        dtype = read_dtype(dtype_node, src)
    return Const(value, dtype, loc=loc_of(node, src))


def _shape_expr(op: str, node: ast.Call, src: Source) -> ShapeExpr:
    no_keywords(node, src)
    if len(node.args) != 1:
        raise expected_error("R.shape([dims...])", node, src)
    return ShapeExpr(_dims(node.args[0], "R.shape", src), loc=loc_of(node, src))


def _literal(op: str, node: ast.Call, src: Source) -> Literal:
    """`R.str("global")`, `R.dtype("float32")`, `R.prim_value(0)`."""
    no_keywords(node, src)
    if len(node.args) != 1:
        raise expected_error(f"R.{op}(value)", node, src)
    arg = node.args[0]
    loc = loc_of(node, src)
    if op == "str":
        return Literal("str", read_string(arg, "a string", src), loc=loc)
    if op == "dtype":
        return Literal("dtype", read_dtype(arg, src), loc=loc)
    number = read_number(arg, src)
    if number is None:
        raise expected_error("a number in R.prim_value", arg, src)
    return Literal("prim", number, loc=loc)


def _match_cast(op: str, node: ast.Call, src: Source) -> Call:
    """`R.match_cast(value, R.Tensor(shape, dtype))`: the value, at the type it says."""
    keywords = keyword_args(node, src)
    type_node = node.args[1] if len(node.args) == 2 else keywords.pop("struct_info", None)
    if type_node is None or keywords or len(node.args) not in (1, 2):
        raise expected_error("R.match_cast(value, R.Tensor(shape, dtype))", node, src)
    value = read_expr(node.args[0], src)
    return Call(op, (value,), (("struct_info", read_type(type_node, src)),), loc=loc_of(node, src))


def _call_packed(op: str, node: ast.Call, src: Source) -> Call:
    """`R.call_packed("vm.builtin.name", args..., ty_args=(T,))` and
    `R.call_builtin_with_ctx("vm.builtin.name", (args...), ty_args=(T,))`: a call of a
    function the runtime registers (`func`), which returns a value of type T (an object
    without `ty_args`)."""
    usage = f'R.{op}("function name", args..., ty_args=(type,))'
    name = node.args[0] if node.args else None
    if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
        raise expected_error(usage, node, src)
    attrs = {key: read_attr_value(value, src) for key, value in keyword_args(node, src).items()}
    attrs["func"] = name.value
    args = tuple(read_expr(a, src) for a in node.args[1:])
    return Call(op, args, tuple(sorted(attrs.items())), loc=loc_of(node, src))


_SPECIAL: dict[str, Callable[[str, ast.Call, Source], Expr]] = {
    "call_packed": _call_packed,
    "call_builtin_with_ctx": _call_packed,
    "match_cast": _match_cast,
    "call_tir": _call_tir,
    "call_tir_inplace": _call_tir,
    "const": _const,
    "shape": _shape_expr,
    "str": _literal,
    "dtype": _literal,
    "prim_value": _literal,
}


def read_attr_value(node: ast.expr, src: Source) -> AttrValue:
    """A keyword attribute: a Python literal, a list or tuple of them, or a type."""
    number = read_number(node, src)
    if number is not None:
        return number
    match node:
        case ast.Constant(value=str() | None as value):
            return value
        case ast.List(elts=elts) | ast.Tuple(elts=elts):
            return tuple(read_attr_value(e, src) for e in elts)
        case ast.Call() | ast.Attribute() if callee_name(node) in TYPE_NAMES:
            return read_type(node, src)
    message = "expected an attribute value (number, string, bool, None, list or type), found "
    raise error_at(message + shown(node, src), node, src)


def read_type(node: ast.expr, src: Source) -> Type:
    name = callee_name(node)
    call = node if isinstance(node, ast.Call) else None
    if name == "R.Tensor":
        if call is None:
            raise error_at("R.Tensor without a shape: optplan plans static shapes only", node, src)
        return _tensor_type(call, src)
    if name == "R.Tuple":
        if call is None:
            return TupleType(())
        no_keywords(call, src)
        return TupleType(tuple(read_type(a, src) for a in call.args))
    if name == "R.Shape":
        return _shape_type(call, src)
    if name in ("R.Object", "R.Any") and (call is None or not (call.args or call.keywords)):
        return ObjectType()
    if name == "R.Prim" and call is not None:
        return _prim_type(call, src)
    raise expected_error("a type such as R.Tensor(shape, dtype)", node, src)


def _tensor_type(node: ast.Call, src: Source) -> TensorType:
    keywords = keyword_args(node, src)
    shape_node = node.args[0] if node.args else keywords.pop("shape", None)
    dtype_node = node.args[1] if len(node.args) > 1 else keywords.pop("dtype", None)
    if shape_node is None and set(keywords) <= {"ndim"} and dtype_node is not None:
        message = "R.Tensor without a shape: optplan plans static shapes only"
        raise error_at(message, node, src)
    if (
        keywords
        or len(node.args) > 2
        or dtype_node is None
        or not isinstance(shape_node, (ast.Tuple, ast.List))
    ):
        raise expected_error("R.Tensor(shape, dtype)", node, src)
    return TensorType(_dims(shape_node, "R.Tensor", src), read_dtype(dtype_node, src))


def _dims(node: ast.expr, what: str, src: Source) -> tuple[int, ...]:
    """Dimensions: integers, or symbolic ones at their values (`script_symbolic`)."""
    if not isinstance(node, (ast.Tuple, ast.List)):
        raise expected_error(f"the dimensions of {what} as a tuple or list", node, src)
    dims = []
    for dim in node.elts:
        symbolic = dim_value(dim, src.dims, src.symbols, src.file)
        value = read_int(dim, f"a dimension of {what}", src) if symbolic is None else symbolic
        if value < 0:
            raise error_at(f"negative dimension {value} in {what}", dim, src)
        dims.append(value)
    return tuple(dims)


def _shape_type(node: ast.Call | None, src: Source) -> ShapeType:
    if node is None:
        return ShapeType()
    keywords = keyword_args(node, src)
    if node.args and not keywords and len(node.args) == 1:
        return ShapeType(len(_dims(node.args[0], "R.Shape", src)))
    if not node.args and set(keywords) <= {"ndim"}:
        ndim = keywords.get("ndim")
        value = -1 if ndim is None else read_int(ndim, "ndim", src)
        if value < -1:
            raise error_at(f"ndim must be -1 (unknown) or more, found {value}", node, src)
        return ShapeType(value)
    raise expected_error("R.Shape([dims...]) or R.Shape(ndim=n)", node, src)


def _prim_type(node: ast.Call, src: Source) -> PrimType:
    keywords = keyword_args(node, src)
    dtype_node = node.args[0] if node.args else keywords.pop("dtype", None)
    if dtype_node is None or len(node.args) > 1 or keywords:
        raise expected_error("R.Prim(dtype)", node, src)
    return PrimType(read_dtype(dtype_node, src))
