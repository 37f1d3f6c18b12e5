"""Helpers that generated forward-mode (tangent) code calls.

A tangent has exactly its primal's shape, or, in a *batched* sweep (several tangent
directions at once, for Jacobians and Hessians), one extra leading axis indexing the
direction: ``(batch, *primal.shape)``. These helpers create zeros of that shape and line a
tangent up with the result of a broadcasting call. The compiler emits them only where the
shapes do not provably agree already. The tangents of the adjoint helpers themselves (second
order) are in `helper_tangents`.
"""

from __future__ import annotations

import math

import numpy as np

from .containers import (
    ContainerAdjoint,
    batch_container_adjoint,
    element_keys,
    elements,
    is_container,
    is_record,
    positions_of,
)

__all__ = [
    "accumulate_tangent",
    "add_to_diagonal",
    "batch_array",
    "batch_axis",
    "batch_concatenate",
    "batch_cumsum",
    "batch_fresh_adjoint",
    "batch_index",
    "batch_item_tangent",
    "batch_matmul_left",
    "batch_matmul_right",
    "batch_part",
    "batch_permutation",
    "batch_shape",
    "batch_size",
    "batch_stack",
    "batch_sum",
    "batch_unbroadcast",
    "batch_unreduce",
    "broadcast_tangent",
    "columns_to_jacobian",
    "diagonal_directions",
    "diagonal_times",
    "identity_directions",
    "lift_tangent",
    "linspace_tangent",
    "list_as_array",
    "map_examples",
    "matmul_tangent",
    "norm_axes",
    "operand_tangent",
    "rows_to_jacobian",
    "set_batch_item",
    "solve_jvp",
    "solve_tangent",
    "tangent_sum",
    "times_diagonal",
    "writable_tangent",
    "zero_tangent",
]


def zero_tangent(x, batch=None):
    """The zero tangent of `x`: ``0.0`` for a number, zeros shaped like `x` otherwise (with a
    leading axis of length `batch` in a batched sweep); containers get containers of zeros."""
    if is_container(x):
        if isinstance(x, ContainerAdjoint):
            zeros = {key: zero_tangent(value, batch) for key, value in x.items()}
            return ContainerAdjoint(zeros, batch=batch, keys=x.keys_of_value, positions=x.positions)
        if is_record(x):  # keyed by field, as derivative code reads it (``tp["W"]``)
            zeros = {key: zero_tangent(value, batch) for key, value in elements(x)}
            keys, positions = element_keys(x), positions_of(x)
            zeros = ContainerAdjoint(zeros, batch=batch, keys=keys, positions=positions)
            zeros.record_of = x  # (a read of what is no field: `field_key`)
            return zeros
        if isinstance(x, dict):
            return {key: zero_tangent(value, batch) for key, value in x.items()}
        return type(x)(zero_tangent(value, batch) for value in x)
    if isinstance(x, (range, slice, str, type(None))) or x is Ellipsis:
        return 0.0  # bookkeeping a stack carries, an index (einsum's sublists hold ...)
    shape = np.shape(x)
    if batch is None:
        if not shape and isinstance(x, (float, int)):
            return 0.0
        return np.zeros(shape, dtype=np.result_type(x, 1.0))
    return np.zeros((batch, *shape), dtype=np.result_type(x, 1.0))


def broadcast_tangent(t, ans, batched=False):
    """`t` broadcast to exactly `ans`'s shape (behind the batch axis when `batched`)."""
    if is_container(t):  # a container's tangent (of a container adjoint) is keyed by element
        return t
    if is_container(ans):  # container adjoint arithmetic: keyed by element too
        return _by_element(t, ans, batched)
    shape = np.shape(ans)
    if batched:
        shape = (np.shape(t)[0], *shape)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape)


def _by_element(t, ans, batched: bool) -> ContainerAdjoint:
    """The tangent `t` of an array or number added to the container adjoint `ans`, keyed by
    element as `ContainerAdjoint.__add__` adds it: an array with an axis (behind the
    directions) holds a row per element, a number goes to every element."""
    if isinstance(ans, ContainerAdjoint) and ans.keys_of_value is not None:
        keys = tuple(ans.keys_of_value)
    else:
        keys = element_keys(ans)
    t = np.asarray(t)
    batch = t.shape[0] if batched else None
    if t.ndim > batched:
        rows = np.moveaxis(t, 1, 0) if batched else t
        return ContainerAdjoint(enumerate(rows), batch=batch, keys=tuple(range(len(rows))))
    return ContainerAdjoint({key: t for key in keys}, batch=batch, keys=keys)


def lift_tangent(t, x, ans, extra=0):
    """A batched tangent of `x` given the rank of `ans` (axes of length 1 inserted behind
    the batch axis), so it broadcasts against `ans`-shaped values the way `x` does. An
    unbatched tangent (the rank of `x`) already does and is returned as it is. `extra` counts
    result axes `x` does not broadcast against (a vector operand of ``@`` drops one). A list
    or tuple joined to another (``args + (ones,)``) is no array: its tangent stays a list."""
    if isinstance(ans, (list, tuple)) or isinstance(t, (list, tuple)):
        return t
    missing = np.ndim(ans) + extra - np.ndim(x)
    if missing <= 0 or np.ndim(t) == np.ndim(x):
        return t
    t = np.asarray(t)
    return np.reshape(t, (t.shape[0],) + (1,) * missing + t.shape[1:])


def batch_axis(axis, x):
    """`axis` of `x` as an axis of its batched tangent (None: every axis but the batch)."""
    ndim = np.ndim(x)
    if axis is None:
        return tuple(range(1, ndim + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(a % ndim + 1 for a in axis)
    return axis % ndim + 1


def batch_shape(t, shape):
    """`shape` (an int or a tuple, possibly with -1) for a batched tangent `t`."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return (np.shape(t)[0], *shape)


def batch_index(t, index):
    """``t[index]`` for a batched tangent: the index applies behind the batch axis (a
    container tangent is indexed directly)."""
    if is_container(t):
        return t[index]
    items = index if isinstance(index, tuple) else (index,)
    if _is_advanced(items):
        # NumPy puts the axes of advanced indices separated by a slice first: the batch
        # axis goes last, where indexing leaves it (and keeps it) whatever the index
        return np.moveaxis(np.moveaxis(t, 0, -1)[items], -1, 0)
    return t[(slice(None), *items)]


def _is_advanced(items) -> bool:
    """An index with integer arrays or lists in it and no ``...`` (the batch axis cannot be
    put last behind an Ellipsis, and a basic index keeps the batch axis first anyway)."""
    if any(item is Ellipsis for item in items):
        return False
    return any(
        isinstance(item, list) or (isinstance(item, np.ndarray) and item.dtype != np.bool_)
        for item in items
    )


def batch_part(t, adjoint, key):
    """``part(adjoint, key)`` applied to each direction of a batched tangent `t` of
    `adjoint`: a container's tangent holds batched tangents by key; an array adjoint's (a
    list read as one array) is indexed behind the batch axis; a number's is the same for
    every element."""
    from .containers import part

    if is_container(t):
        return part(t, key)
    if isinstance(adjoint, np.ndarray) and adjoint.ndim:
        return t[:, key] if adjoint.shape[0] != 1 else t[:, 0]
    return t


def map_examples(fn, position, args, kwargs):
    """Apply a linear `fn` to each direction of a batched tangent at argument `position`: the
    general (slower) way to batch a primitive with no batching rule of its own. A keyword
    argument's tangent is mapped when `position` is its name. The tangent of a list or
    tuple (``np.dot(rows, x)``, ``dot_adjoint_b(g, rows, x)``) is a list of batched
    tangents: each direction is that list of the direction's entries, which `fn` reads as
    it reads the list itself (one array, or a sequence of arrays)."""
    args, kwargs = list(args), dict(kwargs)
    holder = kwargs if isinstance(position, str) else args
    batch = holder[position]
    if isinstance(batch, (list, tuple)):
        count = batch_size(batch)
        batch = [_direction(batch, k) for k in range(count)] if count else batch_array(batch)
    out = []
    for example in batch:
        holder[position] = example
        out.append(fn(*args, **kwargs))
    if not out:  # no directions (a Jacobian of an empty output): what one would be, none of it
        holder[position] = np.zeros(np.shape(batch)[1:], np.result_type(batch, 1.0))
        shaped = fn(*args, **kwargs)
        if isinstance(shaped, (list, tuple)):
            return [np.zeros((0, *np.shape(piece))) for piece in shaped]
        return np.zeros((0, *np.shape(shaped)), np.result_type(shaped, 1.0))
    if isinstance(out[0], (list, tuple)):
        # a sequence per direction (the adjoint of a join, one piece per array joined): a
        # sequence of batched pieces, which need not have one shape between them
        return [np.stack(pieces) for pieces in zip(*out, strict=True)]
    return np.stack(out)


def _direction(t, k: int):
    """Direction `k` of a batched tangent, a (nested) list or tuple of them kept one."""
    if isinstance(t, list):
        return [_direction(item, k) for item in t]
    if isinstance(t, tuple):
        return tuple(_direction(item, k) for item in t)
    return t[k]


def _batch_dims(t, x) -> int:
    """How many leading batch axes tangent `t` of `x` has (tangents are full-shaped)."""
    return np.ndim(t) - np.ndim(x)


def tangent_sum(t, a, axis=None, keepdims=False):
    """``np.sum`` over `a`'s `axis` applied to a tangent of `a` (batched or not)."""
    nb = _batch_dims(t, a)
    if nb == 0:
        return np.sum(t, axis=axis, keepdims=keepdims)
    return np.sum(t, axis=batch_axis(axis, a), keepdims=keepdims)


def batch_sum(tangents, items, ans, start):
    """The batched tangent of ``ans = sum(items, ...)`` given the tangents of `items` (a list
    of batched tangents, a batched tangent of an array summed over its first axis, or None)
    and `start`, the start's tangent lifted to `ans`'s rank (or the result's batched zero).
    Each item's tangent is lifted to `ans`'s rank behind the axis of directions first: a
    number's tangent among vectors' would otherwise broadcast along the wrong axis."""
    total = start
    if isinstance(items, np.ndarray) and tangents is not None:
        total = total + lift_tangent(np.sum(tangents, axis=1), items[0], ans)
    elif tangents is not None:
        for t, item in zip(tangents, items, strict=True):
            if t is not None:
                total = total + lift_tangent(t, item, ans)
    return broadcast_tangent(total, ans, True)


def solve_tangent(a, rhs, b):
    """``np.linalg.solve(a, rhs)`` where `rhs` is a (possibly batched) tangent shaped like `b`.
    NumPy reads a 1-D `b` as one vector; its tangents are solved as a stack of vectors."""
    if np.ndim(b) == 1:
        return np.linalg.solve(a, np.expand_dims(rhs, -1))[..., 0]
    return np.linalg.solve(a, rhs)


def solve_jvp(ta, tb, a, b, ans):
    """The tangent of ``x = solve(a, b)``: ``solve(a, tb - ta @ x)`` (None: no tangent)."""
    if tb is not None:
        tb = lift_tangent(tb, b, ans)
    if ta is None:
        rhs = tb
    else:
        ta = lift_tangent(ta, a, ans, 1 if np.ndim(b) == 1 else 0)
        if np.ndim(b) == 1:
            product = (ta @ np.expand_dims(ans, -1))[..., 0]
        else:
            product = ta @ ans
        rhs = -product if tb is None else tb - product
    return solve_tangent(a, rhs, b)


def matmul_tangent(x1, x2, t, position, ans):
    """The tangent of ``x1 @ x2`` from a batched tangent `t` of the argument at `position`:
    the batch axis must end up first whatever NumPy's rules for 1-D operands do to it."""
    n1, n2 = np.ndim(x1), np.ndim(x2)
    if position == 0:
        if n1 == 1:
            return t @ x2 if n2 == 1 else np.moveaxis(t @ x2, -2, 0)
        return lift_tangent(t, x1, ans, 1 if n2 == 1 else 0) @ x2
    if n2 == 1:
        return t @ x1 if n1 == 1 else np.moveaxis(x1 @ np.swapaxes(t, -1, -2), -1, 0)
    return x1 @ lift_tangent(t, x2, ans, 1 if n1 == 1 else 0)


def batch_concatenate(tangents, axis, ans):
    """``np.concatenate`` of batched tangents along `axis` of the result (None: flattened).
    A piece that is a Python list has a list of tangents: made one array, directions first
    (`batch_array`; NumPy would put them last)."""
    tangents = [batch_array(t) for t in tangents]
    if axis is None:
        return np.concatenate([np.reshape(t, (np.shape(t)[0], -1)) for t in tangents], axis=1)
    return np.concatenate(tangents, axis=batch_axis(axis, ans))


def batch_permutation(axes, a):
    """The axes argument of ``np.transpose`` for a batched tangent of `a`."""
    ndim = np.ndim(a)
    if axes is None:
        return (0, *range(ndim, 0, -1))
    return (0, *batch_axis(axes, a))


def batch_cumsum(t, a, axis=None):
    """``np.cumsum(a, axis)`` applied to each direction of a batched tangent `t` of `a`."""
    if axis is None:
        return np.cumsum(np.reshape(t, (np.shape(t)[0], -1)), axis=1)
    return np.cumsum(t, axis=batch_axis(axis, a))


def list_as_array(x):
    """`x` as NumPy reads it where it takes one array: a (nested) list or tuple made one
    array, anything else (an array, a number, a container adjoint) as it is. Generated code
    calls it on values that may be lists (`transforms/list_kinds.py`)."""
    if isinstance(x, (list, tuple)):
        return np.asarray(x)
    return x


def batch_stack(tangents, axis, ans):
    """``np.stack`` of batched tangents along `axis` of the result, a piece that is a Python
    list made one array first, directions first (as in `batch_concatenate`)."""
    return np.stack([batch_array(t) for t in tangents], axis=batch_axis(axis, ans))


def batch_array(items):
    """``np.array(items)`` for a (nested) list of batched tangents: the batch axis first."""
    if not isinstance(items, (list, tuple)):
        return items
    return np.stack([batch_array(item) for item in items], axis=1)


def operand_tangent(t, value, ans, batched=False, joined_at=None):
    """The tangent of `value`, an operand of ``+`` or ``*``, as the operation read it.

    When the result `ans` is an array (``L + x``, ``L * np.float64(2.0)``), NumPy read a list
    `value` as one array, and so is its tangent (directions first when `batched`). When it is
    a list or tuple, ``+`` joined and ``*`` repeated: the list of tangents joins or repeats
    the same way, and when the other operand of a join has no tangent (`joined_at`: the
    position of `value` in it) zeros stand for its elements'."""
    if not isinstance(value, (list, tuple)):
        return t
    if not isinstance(ans, (list, tuple)):
        return batch_array(t) if batched else np.asarray(t)
    if joined_at is None:
        return t
    batch = batch_size(t) if batched else None
    if joined_at == 0:
        zeros = [zero_tangent(e, batch) for e in ans[len(value) :]]
        return type(ans)([*t, *zeros])
    zeros = [zero_tangent(e, batch) for e in ans[: len(ans) - len(value)]]
    return type(ans)([*zeros, *t])


def batch_size(*tangents):
    """The number of directions in a batched sweep: the leading axis of the first tangent
    that is an array (a container's first array element counts)."""
    for t in tangents:
        if isinstance(t, np.ndarray) and t.ndim:
            return t.shape[0]
        if is_container(t):
            found = batch_size(*(t.values() if isinstance(t, dict) else t))
            if found is not None:
                return found
    return None


def writable_tangent(t):
    """A tangent that item writes may change: a copy of its own (tangents can be shared)."""
    if is_container(t):
        return t.copy() if isinstance(t, dict) else list(t)
    return np.array(t, dtype=np.result_type(t, 1.0))


def set_batch_item(t, index, value):
    """``t[index] = value`` behind the batch axis of a batched tangent (containers direct),
    in place; returns `t`. Generated code writes ``t = set_batch_item(t, ...)``, so a
    further transformation sees the value it changes (and, lacking a rule, says so)."""
    if is_container(t):
        t[index] = value
        return t
    if isinstance(value, (list, tuple)):
        # a list's tangent written into slots of an array (``y[:2] = [a, b]``): one array,
        # directions first (NumPy would put them last: each direction in the wrong slot)
        value = batch_array(value)
    items = index if isinstance(index, tuple) else (index,)
    if _is_advanced(items):  # the batch axis last, as in `batch_index` (a view: in place)
        moved = np.moveaxis(t, 0, -1)
        moved[items] = np.moveaxis(value, 0, -1) if np.ndim(value) else value
        return t
    slot = (slice(None), *items)
    if np.ndim(value):  # directions first: axes of length 1 behind them, to the slot's rank
        value = np.asarray(value)
        missing = t[slot].ndim - value.ndim
        value = np.reshape(value, (value.shape[0],) + (1,) * missing + value.shape[1:])
    t[slot] = value
    return t


def batch_item_tangent(tt, index, tvalue, t, value):
    """The tangent of ``set_batch_item(t, index, value)`` (a derivative of a Jacobian's
    batched sweep: a third derivative): `tt`, the tangent of the batched tangent `t`, with the
    slots behind both batch axes set to `tvalue`, the tangent of `value` (zero where it has
    none), which is lifted as `set_batch_item` lifts `value`."""
    if tvalue is None and tt is None:
        return None
    batch = np.shape(tvalue if tt is None else tt)[0]
    tt = np.zeros((batch, *np.shape(t))) if tt is None else writable_tangent(tt)
    if is_container(t):
        raise LookupError("no forward-mode rule for an item of a batched container tangent")
    items = index if isinstance(index, tuple) else (index,)
    if tvalue is None:
        tvalue = 0.0
    elif np.ndim(value) and not _is_advanced(items):  # lifted behind both batch axes
        value_shape = np.shape(value)
        missing = np.ndim(t[(slice(None), *items)]) - len(value_shape)
        lifted = (value_shape[0],) + (1,) * missing + value_shape[1:]
        tvalue = np.reshape(np.broadcast_to(tvalue, (batch, *value_shape)), (batch, *lifted))
    elif not np.ndim(value):
        tvalue = np.reshape(tvalue, (batch,) + (1,) * np.ndim(t[(slice(None), *items)]))
    return set_batch_item(tt, (slice(None), *items), tvalue)


def linspace_tangent(tstart, tstop, start, stop, num=50, endpoint=True, axis=0, ans=None):
    """The tangent of ``np.linspace(start, stop, num, endpoint, axis=axis)`` from tangents of
    its ends (None: none, a batched one with the sweep's directions first). It is linear in
    both ends together (the samples of tangents are the tangents of the samples), so it is
    ``np.linspace`` of the tangents, the samples' axis behind the batch axis when batched."""
    batch = next(
        (np.shape(t)[0] for t, p in ((tstart, start), (tstop, stop)) if _batched(t, p)), None
    )
    rank = max(np.ndim(start), np.ndim(stop))

    def lined_up(t, primal):
        if t is None:
            return 0.0
        if batch is None:
            return t
        t = t if _batched(t, primal) else np.broadcast_to(t, (batch, *np.shape(t)))
        return _lift_to(t, rank)

    ends = (lined_up(tstart, start), lined_up(tstop, stop))
    if batch is None:
        return np.linspace(*ends, int(num), endpoint=endpoint, axis=axis)
    out = np.linspace(*ends, int(num), endpoint=endpoint, axis=axis % (rank + 1) + 1)
    return np.broadcast_to(out, (batch, *np.shape(ans))) if ans is not None else out


def norm_axes(x, axis=None):
    """The axes ``np.linalg.norm(x, axis=axis)`` reduces (all of them for ``axis=None``)."""
    return tuple(range(np.ndim(x))) if axis is None else axis


def _lift_to(t, rank: int):
    """Batched `t` with axes of length 1 inserted behind the batch axis up to `rank` + 1."""
    t = np.asarray(t)
    missing = rank + 1 - t.ndim
    if missing <= 0:
        return t
    return np.reshape(t, (t.shape[0],) + (1,) * missing + t.shape[1:])


def _shape_of(value) -> tuple:
    from .adjoint_helpers import _shape

    return _shape(value) if value.__class__ is tuple else np.shape(value)


def batch_unbroadcast(t, ans, x, *operands):
    """``unbroadcast`` applied to each direction of a batched tangent `t` (the real part for a
    real `x`, as `match_shape` gives a real value's adjoint)."""
    from .adjoint_helpers import _is_real_value, unbroadcast

    t = np.asarray(t)
    if np.iscomplexobj(t) and _is_real_value(x):
        t = np.real(t)
    if t.ndim == 0:  # one number for every direction (a record's field its packed tangent
        return t[()]  # lacks: a default the call left out, hunt variations repro_9)
    batch = t.shape[0]
    shapes = [_shape_of(x), *(_shape_of(o) for o in operands)]
    rank = max(len(s) for s in (*shapes, t.shape[1:]))

    def padded(shape):
        return (batch,) + (1,) * (rank - len(shape)) + tuple(shape)

    out = unbroadcast(np.reshape(t, padded(t.shape[1:])), *(padded(s) for s in shapes))
    shape = (batch, *np.shape(ans))
    if out.shape == shape:
        return out
    # the leading padding axes were reduced to length 1; a lazily broadcast direction (a
    # scalar adjoint seeding an array) is still smaller than `ans` and is broadcast out
    out = np.reshape(out, (batch, *out.shape[1 + rank - len(shape) + 1 :]))
    return np.broadcast_to(out, shape)


def batch_unreduce(t, ans, x, axis=None, keepdims=False):
    """``unreduce`` applied to each direction of a batched tangent `t`."""
    if axis is None or keepdims:
        return t
    shape = _shape_of(x)
    ndim = len(shape)
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    axes = tuple(sorted(a % ndim for a in axes))
    reduced = tuple(n for i, n in enumerate(shape) if i not in axes)
    t = np.broadcast_to(_lift_to(t, len(reduced)), (np.shape(t)[0], *reduced))
    return np.expand_dims(t, tuple(a + 1 for a in axes))


def batch_fresh_adjoint(t, x):
    """``fresh_adjoint`` applied to each direction of a batched tangent `t`."""
    if is_container(x):
        return batch_container_adjoint(t, x)
    shape = _shape_of(x)
    t = _lift_to(t, len(shape))
    # x's kind too, as `fresh_adjoint`: a complex value's buffer, given real directions (the
    # cotangents of a reverse Jacobian), must keep the imaginary parts added into it
    dtype = np.result_type(t, 1.0)
    if np.iscomplexobj(x):
        dtype = np.result_type(dtype, 1j)
    return np.array(np.broadcast_to(t, (t.shape[0], *shape)), dtype=dtype)


def accumulate_tangent(tdx, index, tg, dx, g=None, like=None):
    """The tangent of ``accumulate_at(dx, index, g)``: `tg` added into a copy of `tdx` (its
    own copy: the tangent may be shared), behind the batch axis if there is one (where a
    batched `tg` of a lazily broadcast `g` first gets the slots' missing axes).

    `like`: the value `tdx` is the tangent of, when that is itself a batched tangent of
    `dx` (the tangent of this function, a third derivative): `index` picks the slots behind
    its batch axes."""
    from .adjoint_helpers import accumulate_at

    shift = 0  # batch axes of `like` (and of `g`, then the batched tangent it is) in front
    if like is not None and not is_container(like) and np.ndim(like) > np.ndim(dx):
        shift = np.ndim(like) - np.ndim(dx)
        items = index if isinstance(index, tuple) else (index,)
        index = (*(slice(None),) * shift, *items)
        dx = like
    if tdx is None:
        added = dx[index] if g is None else g  # tg has g's rank, plus the batch axis if any
        batched = tg is not None and np.ndim(tg) > np.ndim(added)
        batch = np.shape(tg)[0] if batched else None
        tdx = zero_tangent(dx, batch)
    else:
        tdx = writable_tangent(tdx)
    if tg is None:
        return tdx
    if np.ndim(tdx) > np.ndim(dx):
        items = index if isinstance(index, tuple) else (index,)
        where = (slice(None), *items)
        if g is not None and not is_container(tg):  # np.add.at needs the full shape
            slots, tg = np.asarray(dx)[index], np.asarray(tg)
            missing = slots.ndim - np.ndim(g)  # a lazily broadcast `g`: its axes trail
            if missing > 0 and tg.ndim > np.ndim(g):
                cut = 1 + shift  # behind the batch axes
                tg = np.reshape(tg, tg.shape[:cut] + (1,) * missing + tg.shape[cut:])
            tg = np.broadcast_to(tg, (np.shape(tdx)[0], *slots.shape))
        if _is_advanced(items):  # the batch axis last, as in `batch_index` (views: in place)
            accumulate_at(np.moveaxis(tdx, 0, -1), items, np.moveaxis(np.asarray(tg), 0, -1))
            return tdx
        return accumulate_at(tdx, where, tg)
    return accumulate_at(tdx, index, tg)


def identity_directions(x):
    """Every unit direction of `x` at once: the batched tangent whose direction ``k`` is 1 at
    element ``k`` of `x` (shape ``(x.size, *x.shape)``)."""
    shape = np.shape(x)
    size = math.prod(shape)  # not np.prod: several microseconds on a tuple
    return np.eye(size, dtype=np.result_type(x, 1.0)).reshape((size, *shape))


def diagonal_directions(x, c):
    """``identity_directions(x)`` with direction ``k`` scaled by element ``k`` of `c`
    (broadcast to x's shape): the batched tangent of a value that depends on the seeded
    argument element by element, with `c` the diagonal of its Jacobian. The diagonal is
    written into zeros (not multiplied into the identity), so an infinite slope stays off the
    other directions."""
    shape = np.shape(x)
    if len(shape) == 1 and np.shape(c) == shape:
        return np.diag(c)
    size = math.prod(shape)
    out = np.zeros((size, size), dtype=np.result_type(x, c, 1.0))
    out.reshape(-1)[:: size + 1] = _flat_diagonal(c, shape)
    return out.reshape((size, *shape))


def add_to_diagonal(t, c, x):
    """``t + diagonal_directions(x, c)`` for a batched tangent `t` of a value shaped like `x`:
    a copy of `t` with `c` added along its diagonal, not a second full array."""
    shape = np.shape(x)
    size = math.prod(shape)
    # a copy (`t` may be shared), in C order: only then is reshape(-1) a view to add into
    out = np.array(t, dtype=np.result_type(t, c, 1.0), order="C")
    out.reshape(-1)[:: size + 1] += _flat_diagonal(c, shape)
    return out


def _flat_diagonal(c, shape):
    """`c` broadcast to `shape` and flattened (a number as it is)."""
    if np.ndim(c) == 0:
        return c
    return np.ravel(c if np.shape(c) == shape else np.broadcast_to(c, shape))


def diagonal_times(c, b):
    """The batched tangent of ``v @ b`` for a vector `v` whose tangent is
    ``diagonal_directions(v, c)`` and a constant `b` (a vector or a matrix): direction ``k``
    is ``c[k] * b[k]``."""
    if np.ndim(b) == 1 or np.ndim(c) == 0:
        return c * b if np.ndim(b) == 1 else c * np.asarray(b)
    return np.expand_dims(c, -1) * b


def times_diagonal(b, c):
    """The batched tangent of ``b @ v`` for a constant `b` (a vector or a matrix) and a vector
    `v` whose tangent is ``diagonal_directions(v, c)``: direction ``k`` is ``c[k] * b[..., k]``."""
    if np.ndim(b) == 1:
        return b * c
    return np.swapaxes(b * c, -1, -2)


def columns_to_jacobian(columns, x):
    """The Jacobian, shaped ``out.shape + x.shape``, from a batched tangent sweep seeded with
    every unit direction of `x` (`identity_directions`): direction ``k`` is column ``k``, an
    array shaped like the output."""
    columns = np.asarray(columns)
    out_shape = columns.shape[1:]
    if columns.ndim == 2 and len(out_shape) == 1 and np.ndim(x) == 1:
        return columns.T  # (x.size, out.size) -> (out.size, x.size)
    moved = np.moveaxis(columns.reshape((columns.shape[0], *out_shape)), 0, -1)
    return moved.reshape((*out_shape, *np.shape(x)))


def rows_to_jacobian(rows, out, x):
    """The Jacobian, shaped ``out.shape + x.shape``, from a batched sweep over the VJP seeded
    with every unit direction of the output: direction ``k`` is row ``k``."""
    return np.reshape(rows, (*np.shape(out), *np.shape(x)))


def batch_matmul_left(tg, ty, g, x, y):
    """The batched tangent of ``matmul_left(g, x, y)`` (the adjoint of `x` in ``x @ y``,
    bilinear in `g` and `y`) from batched tangents `tg`, `ty` (None: none), for operands of
    rank 1 or 2; other ranks go one direction at a time."""
    from .adjoint_helpers import matmul_left

    xn, yn = np.ndim(x), np.ndim(y)
    out = 0.0
    if tg is not None:
        if xn > 2 or yn > 2:
            out = map_examples(matmul_left, 0, (tg, x, y), {})
        elif yn == 1:
            out = np.expand_dims(tg, -1) * y  # (B,) or (B, k) times y
        else:
            out = tg @ np.swapaxes(y, -1, -2)
    if ty is not None:
        if xn > 2 or yn > 2:
            part = map_examples(matmul_left, 2, (g, x, ty), {})
        elif xn == 1 and yn == 1:
            part = g * ty
        elif xn == 1:
            part = ty @ g
        elif yn == 1:
            part = np.expand_dims(g, -1) * np.expand_dims(ty, -2)
        else:
            part = g @ np.swapaxes(ty, -1, -2)
        out = out + part
    return out


def batch_matmul_right(tg, tx, g, x, y):
    """The batched tangent of ``matmul_right(g, x, y)`` (the adjoint of `y` in ``x @ y``,
    bilinear in `g` and `x`), as `batch_matmul_left`."""
    from .adjoint_helpers import matmul_right

    xn, yn = np.ndim(x), np.ndim(y)
    out = 0.0
    if tg is not None:
        if xn > 2 or yn > 2:
            out = map_examples(matmul_right, 0, (tg, x, y), {})
        elif xn == 1 and yn == 1:
            out = np.expand_dims(tg, -1) * x
        elif xn == 1:
            out = np.expand_dims(x, -1) * np.expand_dims(tg, -2)
        else:
            out = tg @ x if yn == 1 else np.swapaxes(x, -1, -2) @ tg
    if tx is not None:
        if xn > 2 or yn > 2:
            part = map_examples(matmul_right, 1, (g, tx, y), {})
        elif xn == 1 and yn == 1:
            part = g * tx
        elif xn == 1:
            part = np.expand_dims(tx, -1) * g
        else:
            part = np.swapaxes(tx, -1, -2) @ g
        out = out + part
    return out


def _batched(t, primal) -> bool:
    return t is not None and np.ndim(t) > np.ndim(primal)


def _one_array(t, primal):
    """The tangent `t` of `primal` as one array when `primal` is a list read as one array
    (its tangent is then a list of tangents, batched ones stacked behind the batch axis)."""
    if not isinstance(t, (list, tuple)) or not isinstance(primal, (list, tuple)):
        return t
    if any(_batched(ti, pi) for ti, pi in zip(t, primal, strict=True)):
        return batch_array(t)
    return np.asarray(t)
