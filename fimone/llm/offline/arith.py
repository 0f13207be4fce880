"""The figures a request asks the offline model to compute, so its analyser can check them.

"First compute 3+4, then multiply that result by 10" asks for 7 and 70: each part's
expression is found as the tool decisions find it, "that result" stands for the previous
part's value, and the expression is evaluated here (plain arithmetic only: + - * / % and
small powers; anything else is not checked rather than guessed).
"""

from __future__ import annotations

import ast
import operator

from fimone.llm.offline.markdown import inline_code
from fimone.llm.offline.tools import find_expression, resolve_references

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_MAX_EXPONENT = 64


def evaluate(expression: str) -> float | None:
    """The value of a plain arithmetic expression, or None when it is anything else."""
    try:
        return _eval(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError, TypeError):
        return None


def _eval(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _eval(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > _MAX_EXPONENT:
            raise ValueError("exponent too large")
        return float(_BINARY[type(node.op)](left, right))
    raise ValueError("not plain arithmetic")


def _plain(value: float) -> str:
    return str(int(value)) if value.is_integer() else repr(value)


def expected_values(parts: list[str]) -> list[tuple[str, float]]:
    """(label, value) of every part that is a calculation, in order."""
    found: list[tuple[str, float]] = []
    previous: str | None = None
    for part in parts:
        text = resolve_references(part, f"= {previous}") if previous is not None else part
        expression = find_expression(text)
        value = evaluate(expression) if expression else None
        if expression is None or value is None:
            continue
        found.append((f"{inline_code(expression)} = {_plain(value)}", value))
        previous = _plain(value)
    return found
