"""One adjoint for every NumPy function that only moves, copies or drops elements.

`np.tile`, `np.roll`, `np.rot90`, `np.pad`, `np.diag`, `np.tril`, `np.take_along_axis`,
`np.hstack`, `np.split` and their kin compute nothing: each element of the result is an element
of the arguments, or a constant. So instead of one hand-written adjoint per function, the rule
calls the function itself on the arguments' *element numbers* (`element_numbers`: 1, 2, ... in
the arguments' shapes, 0 for "no element") and gets the map from result positions to argument
elements. The adjoint adds ``g`` up by that map (`moved_adjoint`, one `np.bincount`, linear
time); the tangent picks from it (`moved_tangent`). The functions are linear, so their forward
rules are the functions themselves; these helpers are linear in ``g`` and ``t``, which is all
second order needs (the map is an integer constant of the derivative).

A function that computes values (`np.pad`'s ``mean`` mode) must not go through here: its rule
checks (`copying_pad_mode`).
"""

from __future__ import annotations

import numpy as np

from .adjoint_helpers import unbroadcast
from .containers import ContainerAdjoint, by_position, is_container

__all__ = [
    "copying_pad_mode",
    "element_numbers",
    "moved_adjoint",
    "moved_adjoint_transpose",
    "moved_tangent",
    "moved_tangent_transpose",
    "pad_fill_adjoint",
    "pad_fill_tangent",
    "picked_adjoint",
    "sort_order",
]


def _pieces(x) -> list:
    return list(x) if is_container(x) else [x]


def element_numbers(x):
    """Arrays shaped like `x` (or like each array of the sequence `x`) numbering its elements
    1, 2, ... across all of them (0 is left for the constants a function may insert)."""
    start = 1
    numbered = []
    for piece in _pieces(x):
        shape = np.shape(piece)
        size = int(np.prod(shape, dtype=np.int64))
        numbered.append(np.arange(start, start + size, dtype=np.intp).reshape(shape))
        start += size
    return numbered if is_container(x) else numbered[0]


def _flat(moved) -> np.ndarray:
    if isinstance(moved, (list, tuple)):
        return np.concatenate([np.ravel(m) for m in moved]) if moved else np.zeros(0, np.intp)
    return np.ravel(moved)


def _lead(g, moved) -> tuple:
    """The leading batch axes of `g` (several directions at once, in a batched sweep)."""
    if isinstance(g, ContainerAdjoint):
        return () if g.batch is None else (g.batch,)
    if isinstance(moved, (list, tuple)):
        for k, m in enumerate(moved):
            if np.ndim(g[k]) > np.ndim(m):
                return np.shape(g[k])[: np.ndim(g[k]) - np.ndim(m)]
        return ()
    return np.shape(g)[: max(np.ndim(g) - np.ndim(moved), 0)]


def _flat_adjoint(g, moved, lead: tuple) -> np.ndarray:
    """`g` (an array, or a container adjoint of a list result) as (*lead, elements)."""
    if isinstance(moved, (list, tuple)):
        # a container adjoint (a missing entry is a zero) or a list of adjoints
        parts = [
            np.reshape(_entry_shaped(g, k, lead, np.shape(m)), (*lead, -1))
            for k, m in enumerate(moved)
        ]
        return np.concatenate(parts, axis=-1) if parts else np.zeros((*lead, 0))
    return np.reshape(np.broadcast_to(g, (*lead, *np.shape(moved))), (*lead, -1))


def _entry_shaped(g, k, lead: tuple, shape: tuple):
    value = dict.get(g, k, 0.0) if isinstance(g, ContainerAdjoint) else g[k]
    value = np.asarray(value)
    if lead and value.ndim == len(lead):  # one number per direction
        value = np.reshape(value, (*lead, *(1,) * len(shape)))
    return np.broadcast_to(value, (*lead, *shape))


def moved_adjoint(g, x, moved):
    """The adjoint of a function that moved the elements of `x` to the positions `moved`
    gives them (`moved` is the function applied to ``element_numbers(x)``): `g` summed by
    element. A sequence `x` gets a container adjoint with one array per entry. `g` may carry
    leading batch axes (then so does the result). For a list `moved` (``np.split``'s), `g` is
    a list of adjoints, a container adjoint, or one array: the list read as one array (the
    pieces along the first axis behind the batch axes), as ``np.var(parts)``'s adjoint is."""
    pieces = _pieces(x)
    sizes = [int(np.size(p)) for p in pieces]
    count = sum(sizes) + 1
    if isinstance(moved, (list, tuple)) and isinstance(g, np.ndarray) and moved:
        g = list(np.moveaxis(g, np.ndim(g) - 1 - np.ndim(moved[0]), 0))
    lead = _lead(g, moved)
    flat_g = _flat_adjoint(g, moved, lead)
    rows = int(np.prod(lead, dtype=np.int64))
    # one bincount for every direction: direction r's elements are numbered r * count + ...
    where = (_flat(moved)[None, :] + count * np.arange(rows)[:, None]).ravel()
    weights = np.reshape(flat_g, (rows, -1))
    total = np.bincount(where, weights=np.real(weights).ravel(), minlength=rows * count)
    if np.iscomplexobj(weights):
        total = total + 1j * np.bincount(
            where, weights=np.imag(weights).ravel(), minlength=rows * count
        )
    dtype = np.result_type(flat_g, 1.0)
    total = np.reshape(total, (*lead, count))[..., 1:].astype(dtype, copy=False)
    out = []
    start = 0
    for piece, size in zip(pieces, sizes, strict=True):
        part = np.reshape(total[..., start : start + size], (*lead, *np.shape(piece)))
        out.append(part if np.ndim(part) else part[()])
        start += size
    if is_container(x):
        return by_position(out, batch=lead[0] if lead else None)
    return out[0]


def moved_tangent(t, x, moved):
    """The tangent of a function that moved the elements of `x` as `moved` says: `t` picked
    by element (0 where the function put a constant). `t` may carry leading batch axes. For a
    sequence `x`, `t` has one tangent per entry (None: zeros), or is one array when the
    function read `x` as one array (``np.pad(rows, 1)``: its tangent made one array, the
    batch axes first, which splitting by entry would take apart along the batch axis)."""
    if is_container(x) and isinstance(t, np.ndarray):
        x = np.asarray(x)  # numbered in the same order as element_numbers numbers the list
    pieces = _pieces(x)
    tangents = list(t) if is_container(x) else [t]
    given = [(tk, p) for tk, p in zip(tangents, pieces, strict=True) if tk is not None]
    lead = max((_lead_of(tk, p) for tk, p in given), key=len, default=())
    flat = [np.zeros((*lead, 1))]
    for tk, piece in zip(tangents, pieces, strict=True):
        shape = (*lead, int(np.size(piece)))
        if tk is None:
            flat.append(np.zeros(shape))
        elif isinstance(tk, (list, tuple)):  # a Python list's: one tangent per item
            flat.append(np.reshape(_lead_first(tk, piece, lead), shape))
        elif np.ndim(tk) < len(lead) + np.ndim(piece):  # a zero standing for a whole piece
            flat.append(np.broadcast_to(np.asarray(tk, dtype=float), shape))
        else:
            flat.append(np.reshape(tk, shape))
    picked = np.concatenate(flat, axis=-1)[..., _flat(moved)]
    if isinstance(moved, (list, tuple)):
        return _unflatten(picked, moved, lead)
    return np.reshape(picked, (*lead, *np.shape(moved)))


def moved_adjoint_transpose(c, g, x, moved):
    """The reverse rule of ``moved_adjoint(g, x, moved)`` in `g` (nested GradientTapes run
    adjoint code on Tensors and need it): the cotangent `c` of `x`'s adjoint picked by element,
    as `moved_tangent` picks a tangent, summed where `g` was broadcast. For a sequence `x`, `c`
    has one cotangent per entry: a container adjoint (a missing entry is zero) or a list."""
    if is_container(x) and isinstance(c, ContainerAdjoint):
        c = [dict.get(c, k) for k in range(len(_pieces(x)))]
    picked = moved_tangent(c, x, moved)
    if isinstance(moved, (list, tuple)):  # a list of pieces (np.split's): one per piece
        return picked
    return unbroadcast(picked, g)


def moved_tangent_transpose(c, t, x, moved):
    """The reverse rule of ``moved_tangent(t, x, moved)`` in `t`: `c` added up by element
    (`moved_adjoint`), summed where an array's `t` was broadcast (a sequence's is by entry)."""
    out = moved_adjoint(c, x, moved)
    return out if is_container(x) else unbroadcast(out, t)


def _lead_of(t, piece) -> tuple:
    """The batch axes of the tangent `t` of `piece` (a Python list's: its first item's)."""
    while isinstance(t, (list, tuple)) and len(t) and isinstance(piece, (list, tuple)):
        t, piece = t[0], piece[0]
    if isinstance(t, (list, tuple)):
        return ()
    return np.shape(t)[: max(np.ndim(t) - np.ndim(piece), 0)]


def _lead_first(t, piece, lead):
    """The tangent `t` of a (nested) Python list `piece`, one tangent per item, as one array
    with the batch axes `lead` in front: NumPy would put them last (``[0.0, tx[0]]`` with
    ``tx[0]`` of shape (3,) is an array of shape (2, 3), read as (3, 2) it put each
    direction's tangent in the wrong slot)."""
    if isinstance(t, (list, tuple)):
        items = [_lead_first(item, sub, lead) for item, sub in zip(t, piece, strict=True)]
        return np.stack(items, axis=len(lead))
    return np.broadcast_to(np.asarray(t, dtype=float), (*lead, *np.shape(piece)))


def _unflatten(picked, moved, lead):
    out, start = [], 0
    for m in moved:
        size = int(np.size(m))
        out.append(np.reshape(picked[..., start : start + size], (*lead, *np.shape(m))))
        start += size
    return out


def picked_adjoint(g, arr, indices, axis=-1):
    """The adjoint of ``np.take_along_axis(arr, indices, axis)`` (a classifier's pick of the
    true labels' scores): `g` added where it was picked from, with leading batch axes.
    Cheaper than `moved_adjoint` when few elements are picked: no map of every element."""
    lead = np.shape(g)[: max(np.ndim(g) - np.ndim(arr), 0)]
    out = np.zeros((*lead, *np.shape(arr)), dtype=np.result_type(g, arr, 1.0))
    if axis is None:  # on `arr` flattened
        _add_along(np.reshape(out, (*lead, -1)), np.ravel(indices), g, len(lead), len(lead))
        return out
    axis = int(axis) % np.ndim(arr)
    # `g` may be lazily broadcast (the rule is registered broadcast_g=True): the picks have
    # the shape of `indices` broadcast against `arr` off `axis`
    rest = list(np.shape(arr))
    rest[axis] = 1
    picked = np.broadcast_shapes(np.shape(indices), tuple(rest))
    g = np.broadcast_to(g, (*lead, *picked))
    _add_along(out, indices, g, axis + len(lead), len(lead))
    return out


def _add_along(out, indices, g, axis: int, batch: int) -> None:
    """``out[..., indices, ...] += g`` along `axis`, repeated indices adding up."""
    shape = np.broadcast_shapes(np.shape(g), (1,) * batch + np.shape(indices))
    grids = list(np.ogrid[tuple(slice(n) for n in shape)])
    picks = np.reshape(indices, (1,) * batch + np.shape(indices))
    if np.shape(picks)[axis] == 1:
        # one pick per slice (a label per row): no position repeats, so a plain scatter,
        # several times faster than np.add.at
        grids[axis] = picks
        out[tuple(grids)] = g
        return
    grids[axis] = np.broadcast_to(picks, shape)
    np.add.at(out, tuple(grids), np.broadcast_to(g, shape))


def copying_pad_mode(mode):
    """`mode` if `np.pad` only copies elements in it (the modes `moved_adjoint` can undo)."""
    if callable(mode) or mode not in ("constant", "edge", "reflect", "symmetric", "wrap"):
        raise LookupError(
            f"no gradient registered for numpy.pad with mode={mode!r}: only the modes "
            "'constant', 'edge', 'reflect', 'symmetric' and 'wrap' are differentiated"
        )
    return mode


def pad_fill_adjoint(g, array, pad_width, constant_values=0):
    """The adjoint of `np.pad`'s fill value (a number): `g` summed over the padding."""
    if np.ndim(constant_values):
        raise LookupError(
            "no gradient registered for numpy.pad's constant_values given per axis: "
            "differentiate a single fill value, or pad with 0 and add the values yourself"
        )
    inside = np.pad(np.ones(np.shape(array), dtype=bool), pad_width)
    return np.sum(np.where(inside, 0.0, g))


def pad_fill_tangent(t, moved):
    """The tangent `np.pad`'s fill value `t` (a number, or None: constant) gives the padding
    (`moved` is 0 there), with `t`'s leading batch axes."""
    if t is None:
        return 0.0
    lead = np.shape(t)
    return np.reshape(t, (*lead, *(1,) * np.ndim(moved))) * (np.asarray(moved) == 0)


def sort_order(a, axis=-1, kth=None):
    """Where `np.sort(a, axis)` (or `np.partition(a, kth, axis)`) takes each result element
    from, as element numbers (see `element_numbers`)."""
    numbers = element_numbers(a)
    if axis is None:
        numbers, a, axis = np.ravel(numbers), np.ravel(a), -1
    order = (
        np.argsort(a, axis=axis, kind="stable")
        if kth is None
        else np.argpartition(a, kth, axis=axis)
    )
    return np.take_along_axis(numbers, order, axis=axis)
