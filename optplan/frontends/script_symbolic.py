"""Symbolic dimensions in TVMScript, planned at their upper bounds.

TVM's StaticPlanBlockMemory sizes a tensor of shape `(n, 768)` by the bound that
`R.func_attr({"tir_var_upper_bound": {"n": 2048}})` gives `n`; the runtime then runs at any
`n` up to it inside the same storage. optplan does the same by substitution:

1. Before reading any function, collect every `tir_var_upper_bound` of the module
   (`upper_bounds`); values given by the caller (`--bound`, or `--dim` for a replay) win.
2. A dimension is an integer, a symbol (`"n"` in a signature, `n` in a body, as TVM
   prints them), or `+ - * // %` of those and `T.int64(k)`; it is evaluated with the
   symbols' values (`dim_value`). A symbol without a value is an InputError that names
   it and says how to bound it.
3. `n = T.int64()` statements, which declare the symbols in a body, and TVM's
   module-level `n = TypeVar("n")`, are dropped.

The Program read is static at those values; reading the same text with other values
gives the same bindings at other sizes, which is how a plan made at the bound is replayed
at any smaller size.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable

from optplan.errors import InputError

BOUND_ATTR = "tir_var_upper_bound"
_SYMBOL_TYPES = ("T.int64", "T.int32")
_OPERATORS: dict[type[ast.operator], Callable[[int, int], int]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}


def upper_bounds(tree: ast.AST) -> dict[str, int]:
    """Every `"tir_var_upper_bound": {"n": 2048}` of every `R.func_attr` in the text."""
    bounds: dict[str, int] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _dotted(node.func) == "R.func_attr"):
            continue
        for arg in node.args:
            if not isinstance(arg, ast.Dict):
                continue
            for key, value in zip(arg.keys, arg.values):
                if isinstance(key, ast.Constant) and key.value == BOUND_ATTR:
                    bounds.update(bound_pairs(value, ""))
    return bounds


def bound_pairs(node: ast.expr, file: str) -> dict[str, int]:
    """`{"n": 2048, ...}` as a dict; anything else is an InputError."""
    message = f'{BOUND_ATTR} must be a dict of names to positive integers, like {{"n": 2048}}'
    if not isinstance(node, ast.Dict):
        raise _error(message, node, file)
    pairs = {}
    for key, value in zip(node.keys, node.values):
        number = _int_literal(value)
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or number is None:
            raise _error(message, value, file)
        if number < 1:
            raise _error(
                f"{BOUND_ATTR} of {key.value!r} must be at least 1, found {number}", value, file
            )
        pairs[key.value] = number
    return pairs


def dim_value(node: ast.expr, dims: dict[str, int], symbols: set[str], file: str) -> int | None:
    """The value of a dimension expression, or None when it is not one (a plain integer
    is left to the caller). Symbols used are added to `symbols`."""
    match node:
        case ast.Constant(value=str() as name) | ast.Name(id=name):
            symbols.add(name)
            if name not in dims:
                raise _error(
                    f"symbolic dimension {name!r} has no upper bound: add "
                    f'R.func_attr({{"{BOUND_ATTR}": {{"{name}": ...}}}}) to the function '
                    f"or give --bound {name}=VALUE",
                    node,
                    file,
                )
            return dims[name]
        case ast.BinOp(left=left, op=op, right=right) if type(op) in _OPERATORS:
            a, b = _operand(left, dims, symbols, file), _operand(right, dims, symbols, file)
            if isinstance(op, (ast.FloorDiv, ast.Mod)) and b == 0:
                raise _error("division by zero in a dimension", node, file)
            return _OPERATORS[type(op)](a, b)
        case ast.Call(func=func, args=[arg]) if _dotted(func) in _SYMBOL_TYPES:
            return _operand(arg, dims, symbols, file)
    return None


def is_symbol_declaration(stmt: ast.stmt) -> bool:
    """`n = T.int64()` (a body naming a symbolic dimension of its signature) or
    `n = TypeVar("n")` (TVM's module-level declaration of one its functions share)."""
    if not (
        isinstance(stmt, ast.Assign)
        and len(stmt.targets) == 1
        and isinstance(stmt.targets[0], ast.Name)
        and isinstance(stmt.value, ast.Call)
    ):
        return False
    callee, args = _dotted(stmt.value.func), stmt.value.args
    if callee == "TypeVar":
        return len(args) == 1 and isinstance(args[0], ast.Constant)
    return callee in _SYMBOL_TYPES and not args


def _operand(node: ast.expr, dims: dict[str, int], symbols: set[str], file: str) -> int:
    number = _int_literal(node)
    if number is not None:
        return number
    value = dim_value(node, dims, symbols, file)
    if value is None:
        raise _error(f"unsupported dimension expression {ast.unparse(node)}", node, file)
    return value


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def _error(message: str, node: ast.AST, file: str) -> InputError:
    line, col = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
    return InputError(message, file=file, line=line, col=col)


__all__ = ["BOUND_ATTR", "bound_pairs", "dim_value", "is_symbol_declaration", "upper_bounds"]
