"""The kink recorder: what a program's check twin calls instead of comparisons and kinks.

Each function computes what the original expression computes and records how far its inputs
were from the kink (the smallest ``|a - b|``). The oracle runs the check twin, reads `margin`
and skips inputs closer to a kink than finite differences can step over.
"""

from __future__ import annotations

import numpy as np

_state = {"margin": np.inf}


def reset() -> None:
    _state["margin"] = np.inf


def margin() -> float:
    return float(_state["margin"])


def _record(distance) -> None:
    distance = np.min(np.abs(np.asarray(distance, dtype=float)), initial=np.inf)
    if not distance >= _state["margin"]:
        _state["margin"] = distance if distance == distance else 0.0


def _gt(a, b):
    _record(np.subtract(a, b))
    return a > b


def _lt(a, b):
    _record(np.subtract(a, b))
    return a < b


def _abs(a):
    _record(a)
    return abs(a)


def _npabs(a):
    _record(a)
    return np.abs(a)


def _max(a, b):
    _record(np.subtract(a, b))
    return max(a, b)


def _min(a, b):
    _record(np.subtract(a, b))
    return min(a, b)


def _maximum(a, b):
    _record(np.subtract(a, b))
    return np.maximum(a, b)


def _minimum(a, b):
    _record(np.subtract(a, b))
    return np.minimum(a, b)


def _rmax(v):
    ordered = np.sort(np.ravel(v))
    if ordered.size > 1:
        _record(ordered[-1] - ordered[-2])
    return np.max(v)


def _rmin(v):
    ordered = np.sort(np.ravel(v))
    if ordered.size > 1:
        _record(ordered[1] - ordered[0])
    return np.min(v)


def _sort(v):
    ordered = np.sort(v)
    if ordered.size > 1:
        _record(np.diff(ordered))
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
    return a % b


def _clip(a, lo, hi):
    _record(np.subtract(a, lo))
    _record(np.subtract(a, hi))
    return np.clip(a, lo, hi)


NAMESPACE = {
    name: value
    for name, value in dict(globals()).items()
    if name.startswith("_") and callable(value)
}
