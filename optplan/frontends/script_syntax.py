"""Reading TVMScript's Python syntax tree: where a node is, errors that name it, and the
literals (numbers, strings, dtypes, keywords) every reader step shares.
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

import numpy as np

from optplan.errors import InputError
from optplan.ir import (
    AttrValue,
    Loc,
    Var,
)

Attrs = tuple[tuple[str, AttrValue], ...]


# How a statement is named in messages: its node name in lower case, except these.
_SPELLING = {
    "AsyncFor": "async for", "Delete": "del", "AugAssign": "augmented assignment",
    "AsyncWith": "async with", "AsyncFunctionDef": "async def", "FunctionDef": "def",
    "ClassDef": "class", "ImportFrom": "import", "Expr": "expression", "TryStar": "try",
}  # fmt: skip


TYPE_NAMES = {"R.Tensor", "R.Tuple", "R.Shape", "R.Object", "R.Any", "R.Prim"}


STATEMENT_ONLY = {"R.dataflow", "R.output", "R.func_attr", "R.function"}


NON_FINITE = {"inf": float("inf"), "-inf": float("-inf"), "nan": float("nan")}


@dataclass(frozen=True, slots=True)
class Source:
    """The text being read and the name its errors carry."""

    file: str
    text: str
    # Values of symbolic dimensions (the upper bounds, unless overridden), and the names
    # the text used.
    dims: dict[str, int] = field(default_factory=dict)
    symbols: set[str] = field(default_factory=set)


def loc_of(node: ast.AST, src: Source) -> Loc:
    return Loc(src.file, node.lineno, node.col_offset + 1)  # type: ignore[attr-defined]


def error_at(message: str, node: ast.AST, src: Source) -> InputError:
    line, col = node.lineno, node.col_offset + 1  # type: ignore[attr-defined]
    return InputError(message, file=src.file, line=line, col=col)


def shown(node: ast.AST, src: Source) -> str:
    """The source of `node` as written, on one line and short enough for a message."""
    text = " ".join((ast.get_source_segment(src.text, node) or ast.unparse(node)).split())
    return repr(text if len(text) <= 60 else text[:57] + "...")


def expected_error(what: str, node: ast.AST, src: Source) -> InputError:
    return error_at(f"expected {what}, found {shown(node, src)}", node, src)


def statement_kind(stmt: ast.stmt) -> str:
    name = type(stmt).__name__
    return _SPELLING.get(name, name.lower())


def new_var(name: str, loc: Loc) -> Var:
    return Var(name, loc=loc)


def dotted_name(node: ast.AST) -> str | None:
    """`R.nn.relu` for the attribute chain R.nn.relu, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = dotted_name(node.value)
        return None if base is None else f"{base}.{node.attr}"
    return None


def callee_name(node: ast.AST) -> str | None:
    """The dotted name of a call's function, or of a bare attribute chain."""
    return dotted_name(node.func) if isinstance(node, ast.Call) else dotted_name(node)


def read_number(node: ast.AST, src: Source) -> int | float | bool | None:
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
        raise error_at(f"number out of range: {shown(node, src)}", node, src)
    return value


def read_int(node: ast.AST, what: str, src: Source) -> int:
    value = read_number(node, src)
    if type(value) is not int:
        raise expected_error(f"{what} (an integer)", node, src)
    return value


def read_string(node: ast.AST, what: str, src: Source) -> str:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise expected_error(f"{what} (a string)", node, src)
    return node.value


def read_dtype(node: ast.AST, src: Source) -> str:
    name = read_string(node, 'a dtype such as "float32"', src)
    # NumPy parses odd strings as struct specs (and may raise anything); only a plain
    # name such as "float32" is a dtype here.
    known = name.isalnum() and name.isascii()
    try:
        known = known and np.dtype(name).name == name
    except (TypeError, ValueError, SyntaxError):
        known = False
    if not known:
        raise error_at(f'unknown dtype {name!r} (expected a name such as "float32")', node, src)
    return name


def no_keywords(node: ast.Call, src: Source) -> None:
    if node.keywords:
        raise error_at(f"unexpected keyword argument in {shown(node, src)}", node.keywords[0], src)


def keyword_args(node: ast.Call, src: Source) -> dict[str, ast.expr]:
    """The keyword arguments by name; `**kw` and repeated names are errors."""
    found: dict[str, ast.expr] = {}
    for keyword in node.keywords:
        if keyword.arg is None:
            raise error_at("'**' arguments are not supported", keyword, src)
        if keyword.arg in found:
            raise error_at(f"keyword argument {keyword.arg!r} repeated", keyword, src)
        found[keyword.arg] = keyword.value
    return found
