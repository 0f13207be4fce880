"""A safe arithmetic evaluator for the ``calculator`` tool: an AST walk, never ``eval``.

Accepted: int and float literals, ``+ - * / // % **``, unary ``+``/``-``, parentheses, the
constants ``pi``, ``e``, ``tau`` and a few functions of ``math``. Everything else (names,
attributes, subscripts, comparisons, strings, lambdas, …) is refused with a message the
model can act on. Work is bounded: the expression length, the number of AST nodes, the size
of integer results and the exponent of a power are all capped, so a hostile expression such
as ``9**9**9**9`` fails fast instead of eating the CPU.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from typing import Any

MAX_EXPRESSION_CHARS = 500
MAX_NODES = 200
MAX_INT_BITS = 4_000  # about 1,200 decimal digits
MAX_EXPONENT = 10_000


class CalculatorError(ValueError):
    """The expression is not allowed or cannot be evaluated; the message says why."""


_BINARY: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}
_UNARY: dict[type[ast.unaryop], Callable[[Any], Any]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_CONSTANTS = {"pi": math.pi, "e": math.e, "tau": math.tau}
_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "sqrt": math.sqrt,
    "log": math.log,
    "log10": math.log10,
    "log2": math.log2,
    "exp": math.exp,
    "sin": math.sin,
    "cos": math.cos,
    "tan": math.tan,
    "asin": math.asin,
    "acos": math.acos,
    "atan": math.atan,
    "floor": math.floor,
    "ceil": math.ceil,
    "abs": abs,
    "round": round,
    "min": min,
    "max": max,
}
# Spellings models and people write that Python does not: "×", "÷", "^" for power, "−".
_SPELLINGS = str.maketrans({"×": "*", "÷": "/", "−": "-", "^": "**"})  # noqa: RUF001


def evaluate(expression: str) -> int | float:
    """Evaluate ``expression`` or raise ``CalculatorError`` with a readable reason."""
    if not isinstance(expression, str) or not expression.strip():
        raise CalculatorError("the expression is empty")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise CalculatorError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    text = expression.translate(_SPELLINGS).strip()
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise CalculatorError(f"not a valid arithmetic expression ({exc.msg})") from None
    except ValueError:  # e.g. a NUL character
        raise CalculatorError("not a valid arithmetic expression") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise CalculatorError(f"the expression has more than {MAX_NODES} parts")
    try:
        return _eval(tree.body)
    except CalculatorError:
        raise
    except ZeroDivisionError:
        raise CalculatorError("division by zero") from None
    except OverflowError:
        raise CalculatorError("the result is too large") from None
    except (ValueError, TypeError) as exc:
        raise CalculatorError(f"math error: {exc}") from None


def format_number(value: int | float) -> str:
    """Integers exactly; floats to 12 significant digits (so 0.1 + 0.2 reads 0.3)."""
    if isinstance(value, int):
        return str(value)
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return format(value, ".12g")


def _check_size(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CalculatorError("only numbers are supported")
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise CalculatorError("the result is too large")
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculatorError("the result is not a finite number")
    return value


def _power(base: int | float, exponent: int | float) -> int | float:
    if abs(exponent) > MAX_EXPONENT:
        raise CalculatorError(f"exponents are limited to ±{MAX_EXPONENT}")
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0:
        # Bits of the result ≈ bits(base) × exponent: refuse before computing it.
        if abs(base) > 1 and (abs(base).bit_length() - 1) * exponent > MAX_INT_BITS:
            raise CalculatorError("the result is too large")
    result = base**exponent
    if isinstance(result, complex):
        raise CalculatorError("the result is a complex number")
    return result


def _eval(node: ast.AST) -> int | float:
    if isinstance(node, ast.Constant):
        return _check_size(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _eval(node.left), _eval(node.right)
        if isinstance(node.op, ast.Pow):
            return _check_size(_power(left, right))
        return _check_size(_BINARY[type(node.op)](left, right))
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _check_size(_UNARY[type(node.op)](_eval(node.operand)))
    if isinstance(node, ast.Name):
        if node.id in _CONSTANTS:
            return _CONSTANTS[node.id]
        raise CalculatorError(f"unknown name {node.id!r}")
    if isinstance(node, ast.Call):
        if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS:
            allowed = ", ".join(sorted(_FUNCTIONS))
            raise CalculatorError(f"only these functions are allowed: {allowed}")
        if node.keywords:
            raise CalculatorError("keyword arguments are not supported")
        args = [_eval(arg) for arg in node.args]
        return _check_size(_FUNCTIONS[node.func.id](*args))
    raise CalculatorError(f"{type(node).__name__} is not allowed in an arithmetic expression")
