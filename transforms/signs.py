"""Which names are provably positive: divisors whose adjoint needs no `safe_divide`.

The reverse rule of ``x / y`` divides by ``y`` with `safe_divide`, which gives exactly 0 where
the adjoint is 0 even at ``y == 0`` (NaN-safe gradients). Where ``y`` cannot be 0, that is a
function call for nothing: ``1.0 + c * c`` is at least 1. This pass finds such names by their
single definition, with rules that hold for real values in floating point too (no rule relies
on a product of positives, which can underflow to 0, or on ``exp``, which can):

- a positive number literal is positive; ``x * x``, ``x ** 2``, ``abs(x)``, ``np.square(x)``
  are non-negative;
- a sum is positive if one term is positive and the other non-negative;
- the square root of a positive value is positive.

`simplify=True` proves more (with sympy); this is the cheap part every gradient gets.
"""

from __future__ import annotations

import builtins
import math
import operator

import libcst as cst
import numpy as np

from .activity import Activity

__all__ = ["positive_names"]

_SQUARES = (np.square,)
_ABSOLUTE = (builtins.abs, np.absolute, math.fabs)
_ROOTS = (math.sqrt, np.sqrt)
_SUMS = (operator.add, np.add)


def positive_names(activity: Activity) -> frozenset[str]:
    """The names assigned once, by an operation whose result is provably > 0."""
    counts: dict[str, int] = {}
    for _, op in activity.operations:
        for target in op.targets:
            counts[target] = counts.get(target, 0) + 1
    positive: set[str] = set()
    nonnegative: set[str] = set()
    for _, op in activity.operations:
        if len(op.targets) != 1 or counts[op.targets[0]] != 1 or op.kwargs:
            continue
        sign = _sign(op, positive, nonnegative)
        if sign == "+":
            positive.add(op.targets[0])
        if sign in ("+", "0+"):
            nonnegative.add(op.targets[0])
    return frozenset(positive)


def _sign(op, positive: set, nonnegative: set) -> str | None:
    """The sign of the result of `op`: "+" (> 0), "0+" (>= 0) or None (unknown)."""
    args = op.args
    primitive = op.primitive
    if primitive in _SUMS and len(args) == 2:
        signs = [_of(a, positive, nonnegative) for a in args]
        if "+" in signs and all(s in ("+", "0+") for s in signs):
            return "+"
        return "0+" if all(s in ("+", "0+") for s in signs) else None
    if primitive in (operator.mul, np.multiply) and len(args) == 2 and _same(*args):
        return "0+"  # x * x
    if primitive in (operator.pow, np.power) and len(args) == 2 and _even(args[1]):
        return "0+"
    if primitive in _SQUARES + _ABSOLUTE and len(args) == 1:
        return "0+"
    if primitive in _ROOTS and len(args) == 1:
        sign = _of(args[0], positive, nonnegative)
        return "+" if sign == "+" else "0+" if sign == "0+" else None
    return None


def _of(expr: cst.BaseExpression, positive: set, nonnegative: set) -> str | None:
    if isinstance(expr, cst.Name):
        if expr.value in positive:
            return "+"
        return "0+" if expr.value in nonnegative else None
    if isinstance(expr, (cst.Integer, cst.Float)):
        value = expr.evaluated_value
        return "+" if value > 0 else "0+" if value == 0 else None
    return None


def _same(a: cst.BaseExpression, b: cst.BaseExpression) -> bool:
    return isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value


def _even(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value % 2 == 0
