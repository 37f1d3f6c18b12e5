"""Adjoints of containers: dicts, lists and tuples of arrays and numbers (pytrees).

The adjoint of a container is a `ContainerAdjoint`: a dict from key (or index) to the adjoint
of that element, a missing key meaning zero. Generated code reads and accumulates it like an
array adjoint (``dp["W"] += g``, ``dp = dp + other``); `as_structure` turns it into the
argument's own structure (a tuple for a tuple, zeros for elements with no gradient) at the
end. A number stands for "that value in every element", which is how a container adjoint is
lazily broadcast (the seed ``1.0`` of a function returning a tuple differentiates the sum of
all its elements).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "ContainerAdjoint",
    "as_structure",
    "is_container",
    "part",
    "parts_of",
    "repeated",
    "snapshot",
]


class ContainerAdjoint(dict):
    """Adjoints by key; a missing key is a zero adjoint.

    As the tangent of a container adjoint in a batched sweep it carries the number of
    directions, `batch`, and a missing key is then a zero for each direction.
    """

    def __init__(self, *items, batch=None):
        super().__init__(*items)
        self.batch = batch

    def __missing__(self, key):
        return 0.0 if self.batch is None else np.zeros(self.batch)

    def copy(self):
        return ContainerAdjoint(self, batch=self.batch)

    def __add__(self, other):
        out = self.copy()
        if isinstance(other, dict):
            for key, value in other.items():
                out[key] = out[key] + value
        elif other != 0:
            raise TypeError("cannot add a number to a container adjoint")
        return out

    __radd__ = __add__


def is_container(value) -> bool:
    return isinstance(value, (dict, list, tuple))


def part(adjoint, key):
    """The adjoint of element `key` of a container whose adjoint is `adjoint`."""
    if isinstance(adjoint, (dict, list, tuple)):
        return adjoint[key]
    return adjoint  # a number: the same for every element


def parts_of(g, value):
    """The adjoint of ``np.array(value)``: one part of `g` per element of a list or tuple."""
    if isinstance(value, (list, tuple)):
        return [parts_of(row, item) for row, item in zip(np.asarray(g), value, strict=True)]
    return g


def repeated(g, items):
    """The adjoint of every term of ``sum(items)``: `g` itself, once per item."""
    return [g] * len(items)


def as_structure(adjoint, value):
    """`adjoint` (a container adjoint, a number or an array) with `value`'s structure and
    shapes: dict for dict, list for list, tuple for tuple, zeros where nothing flowed."""
    if isinstance(value, dict):
        return {k: as_structure(part(adjoint, k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [as_structure(part(adjoint, i), v) for i, v in enumerate(value)]
        return type(value)(items) if type(value) in (list, tuple) else items
    shape = np.shape(value)
    if np.shape(adjoint) == shape:
        return adjoint
    dtype = np.result_type(value, 1.0)
    if isinstance(value, (float, int)) and not shape:
        return float(np.sum(adjoint))
    return np.zeros(shape, dtype) + adjoint


def snapshot(value):
    """`value` as it is now, unaffected by later in-place changes to it (an array or a
    container that the adjoint sweep restores slot by slot, or pops and appends to)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [snapshot(item) for item in value]
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    return value
