"""The kink recorder: what a program's check twin calls instead of comparisons and kinks.

Each function computes what the original expression computes and records how far its inputs
were from the kink (the smallest ``|a - b|``) and which side of it they were on (`decisions`:
a comparison's outcome, a sign, the quotient of ``%``, an order). The oracle runs the check
twin, reads `margin` and skips inputs closer to a kink than finite differences can step over;
and it runs the twin again at every point finite differences evaluate, since a margin is in
the kink's own units: an operand a thousand times as sensitive as the input crosses a kink
0.07 away within a step of 1e-6 (``i5 % 2.0``, fuzz seed 3601383).
"""

from __future__ import annotations

import numpy as np

_state = {"margin": np.inf, "decisions": []}


def reset() -> None:
    _state["margin"] = np.inf
    _state["decisions"] = []


def margin() -> float:
    return float(_state["margin"])


def decisions() -> tuple:
    """Which side of each kink the last run was on, in the order it met them."""
    return tuple(_state["decisions"])


def _decide(*sides) -> None:
    _state["decisions"].append(tuple(np.asarray(side).tobytes() for side in sides))


def _record(distance) -> None:
    distance = np.min(np.abs(np.asarray(distance, dtype=float)), initial=np.inf)
    if not distance >= _state["margin"]:
        _state["margin"] = distance if distance == distance else 0.0


def _gt(a, b):
    _record(np.subtract(a, b))
    _decide(np.greater(a, b))
    return a > b


def _lt(a, b):
    _record(np.subtract(a, b))
    _decide(np.less(a, b))
    return a < b


def _abs(a):
    _record(a)
    _decide(np.sign(a))
    return abs(a)


def _npabs(a):
    _record(a)
    _decide(np.sign(a))
    return np.abs(a)


def _max(a, b):
    _record(np.subtract(a, b))
    _decide(np.greater(a, b))
    return max(a, b)


def _min(a, b):
    _record(np.subtract(a, b))
    _decide(np.greater(a, b))
    return min(a, b)


def _maximum(a, b):
    _record(np.subtract(a, b))
    _decide(np.greater(a, b))
    return np.maximum(a, b)


def _minimum(a, b):
    _record(np.subtract(a, b))
    _decide(np.greater(a, b))
    return np.minimum(a, b)


def _rmax(v):
    ordered = np.sort(np.ravel(v))
    if ordered.size > 1:
        _record(ordered[-1] - ordered[-2])
    _decide(np.argmax(v))
    return np.max(v)


def _rmin(v):
    ordered = np.sort(np.ravel(v))
    if ordered.size > 1:
        _record(ordered[1] - ordered[0])
    _decide(np.argmin(v))
    return np.min(v)


def _sort(v):
    ordered = np.sort(v)
    if ordered.size > 1:
        _record(np.diff(ordered))
    _decide(np.argsort(v))
    return ordered


def _quantile(v, q):
    _sort(v)
    return np.quantile(v, q)


def _ptp(v):
    _rmax(v)
    _rmin(v)
    return np.ptp(v)


def _mod(a, b):
    remainder = np.mod(a, b)
    _record(remainder)
    _record(remainder - b)
    _decide(np.floor_divide(a, b))
    return a % b


def _clip(a, lo, hi):
    _record(np.subtract(a, lo))
    _record(np.subtract(a, hi))
    _decide(np.less(a, lo), np.greater(a, hi))
    return np.clip(a, lo, hi)


NAMESPACE = {
    name: value
    for name, value in dict(globals()).items()
    if name.startswith("_") and callable(value)
}
