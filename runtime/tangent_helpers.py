"""Helpers that generated forward-mode (tangent) code calls.

A tangent has exactly its primal's shape, or, in a *batched* sweep (several tangent
directions at once, for Jacobians and Hessians), one extra leading axis indexing the
direction: ``(batch, *primal.shape)``. These helpers create zeros of that shape and line a
tangent up with the result of a broadcasting call. The compiler emits them only where the
shapes do not provably agree already.
"""

from __future__ import annotations

import math

import numpy as np

from .containers import ContainerAdjoint, batch_container_adjoint, is_container

__all__ = [
    "accumulate_tangent",
    "add_to_diagonal",
    "add_to_diagonal_jvp",
    "batch_array",
    "batch_axis",
    "batch_concatenate",
    "batch_cumsum",
    "batch_fresh_adjoint",
    "batch_index",
    "batch_matmul_left",
    "batch_matmul_left_jvp",
    "batch_matmul_right",
    "batch_matmul_right_jvp",
    "batch_permutation",
    "batch_shape",
    "batch_size",
    "batch_unbroadcast",
    "batch_unreduce",
    "broadcast_tangent",
    "columns_to_jacobian",
    "diagonal_directions",
    "diagonal_times",
    "einsum_adjoint_tangent",
    "identity_directions",
    "lift_tangent",
    "map_examples",
    "matmul_tangent",
    "matmul_tangent_jvp",
    "norm_adjoint_tangent",
    "norm_axes",
    "prod_of_others_tangent",
    "rows_to_jacobian",
    "set_batch_item",
    "solve_jvp",
    "solve_jvp_tangent",
    "solve_tangent",
    "solve_transposed_tangent",
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
            return ContainerAdjoint(zeros, batch=batch)
        if isinstance(x, dict):
            return {key: zero_tangent(value, batch) for key, value in x.items()}
        return type(x)(zero_tangent(value, batch) for value in x)
    if isinstance(x, (range, slice, str, type(None))):  # bookkeeping a stack carries
        return 0.0
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
    shape = np.shape(ans)
    if batched:
        shape = (np.shape(t)[0], *shape)
    if np.shape(t) == shape:
        return t
    return np.broadcast_to(t, shape)


def lift_tangent(t, x, ans, extra=0):
    """A batched tangent of `x` given the rank of `ans` (axes of length 1 inserted behind
    the batch axis), so it broadcasts against `ans`-shaped values the way `x` does. An
    unbatched tangent (the rank of `x`) already does and is returned as it is. `extra` counts
    result axes `x` does not broadcast against (a vector operand of ``@`` drops one)."""
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
    return t[(slice(None), *items)]


def map_examples(fn, position, args, kwargs):
    """Apply a linear `fn` to each direction of a batched tangent at argument `position`: the
    general (slower) way to batch a primitive with no batching rule of its own."""
    args = list(args)
    batch = args[position]
    out = []
    for example in batch:
        args[position] = example
        out.append(fn(*args, **kwargs))
    return np.stack(out)


def _batch_dims(t, x) -> int:
    """How many leading batch axes tangent `t` of `x` has (tangents are full-shaped)."""
    return np.ndim(t) - np.ndim(x)


def tangent_sum(t, a, axis=None, keepdims=False):
    """``np.sum`` over `a`'s `axis` applied to a tangent of `a` (batched or not)."""
    nb = _batch_dims(t, a)
    if nb == 0:
        return np.sum(t, axis=axis, keepdims=keepdims)
    return np.sum(t, axis=batch_axis(axis, a), keepdims=keepdims)


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
    """``np.concatenate`` of batched tangents along `axis` of the result (None: flattened)."""
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


def batch_array(items):
    """``np.array(items)`` for a (nested) list of batched tangents: the batch axis first."""
    if not isinstance(items, (list, tuple)):
        return items
    return np.stack([batch_array(item) for item in items], axis=1)


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
    items = index if isinstance(index, tuple) else (index,)
    t[(slice(None), *items)] = value
    return t


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
    return value if value.__class__ is tuple else np.shape(value)


def batch_unbroadcast(t, ans, x, *operands):
    """``unbroadcast`` applied to each direction of a batched tangent `t`."""
    from .adjoint_helpers import unbroadcast

    t = np.asarray(t)
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
    return np.array(np.broadcast_to(t, (t.shape[0], *shape)), dtype=np.result_type(t, 1.0))


def accumulate_tangent(tdx, index, tg, dx, g=None):
    """The tangent of ``accumulate_at(dx, index, g)``: `tg` added into a copy of `tdx` (its
    own copy: the tangent may be shared), behind the batch axis if there is one (where a
    batched `tg` of a lazily broadcast `g` first gets the slots' missing axes)."""
    from .adjoint_helpers import accumulate_at

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
            tg = np.broadcast_to(lift_tangent(tg, g, np.asarray(dx)[index]), tdx[where].shape)
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


def _outer_directions(tangents, primals) -> int:
    """How many directions an *outer* batched sweep carries, or 0: a forward sweep over
    batched tangent code gives the tangent of a batched tangent one more leading axis."""
    for t, p in zip(tangents, primals, strict=True):
        if t is not None and np.ndim(t) > np.ndim(p):
            return np.shape(t)[0]
    return 0


def _each_outer_direction(fn, tangents, primals, count):
    """`fn(*tangents)` for each outer direction (an unbatched tangent passed as it is)."""
    return np.stack(
        [
            fn(
                *(
                    t[k] if t is not None and np.ndim(t) > np.ndim(p) else t
                    for t, p in zip(tangents, primals, strict=True)
                )
            )
            for k in range(count)
        ]
    )


def _terms(*parts):
    """The sum of the parts that are not None (0.0 when none is)."""
    found = [p for p in parts if p is not None]
    return sum(found[1:], found[0]) if found else 0.0


def add_to_diagonal_jvp(tt, tc, t, c, x):
    """The tangent of ``add_to_diagonal(t, c, x)`` from tangents `tt` of `t` and `tc` of `c`
    (None: none). It is linear in `t` and `c` together (``t + D(c)``), not in each apart, so
    both are replaced at once."""
    count = _outer_directions((tt, tc), (t, c))
    if count:
        return _each_outer_direction(
            lambda a, b: add_to_diagonal_jvp(a, b, t, c, x), (tt, tc), (t, c), count
        )
    if tc is None:
        return tt if tt is not None else 0.0
    if tt is None:
        return diagonal_directions(x, tc)
    return add_to_diagonal(tt, tc, x)


def matmul_tangent_jvp(tt, tx1, tx2, x1, x2, t, position, ans):
    """The tangent of ``matmul_tangent(x1, x2, t, position, ans)`` from tangents `tt`, `tx1`,
    `tx2` (None: none): it is bilinear in `t` and the operand at the other position (the one
    at `position` is read only for its shape)."""
    primals = (t, x1, x2)
    count = _outer_directions((tt, tx1, tx2), primals)
    if count:
        return _each_outer_direction(
            lambda a, b, c: matmul_tangent_jvp(a, b, c, x1, x2, t, position, ans),
            (tt, tx1, tx2),
            primals,
            count,
        )
    other = None
    if position == 0 and tx2 is not None:
        other = matmul_tangent(x1, tx2, t, 0, ans)
    elif position == 1 and tx1 is not None:
        other = matmul_tangent(tx1, x2, t, 1, ans)
    own = matmul_tangent(x1, x2, tt, position, ans) if tt is not None else None
    return _terms(own, other)


def batch_matmul_left_jvp(ttg, tty, tgv, ty_, tg, ty, g, x, y):
    """The tangent of ``batch_matmul_left(tg, ty, g, x, y)`` (bilinear in ``(tg, y)`` and in
    ``(g, ty)``) from the tangents `ttg`, `tty`, `tgv` (of `g`), `ty_` (of `y`)."""
    return _product_helper_jvp(batch_matmul_left, "y", (ttg, tty, tgv, ty_), (tg, ty, g, x, y))


def batch_matmul_right_jvp(ttg, ttx, tgv, tx_, tg, tx, g, x, y):
    """The tangent of ``batch_matmul_right(tg, tx, g, x, y)`` (bilinear in ``(tg, x)`` and in
    ``(g, tx)``) from the tangents `ttg`, `ttx`, `tgv` (of `g`), `tx_` (of `x`)."""
    return _product_helper_jvp(batch_matmul_right, "x", (ttg, ttx, tgv, tx_), (tg, tx, g, x, y))


def _product_helper_jvp(helper, operand, tangents, primals):
    """The tangent of ``helper(tg, t, g, x, y)``, a batched product helper bilinear in ``(tg,
    operand)`` and in ``(g, t)``, `operand` being ``"x"`` or ``"y"``; `tangents` are those of
    ``tg``, ``t``, ``g`` and the operand (None: none)."""
    ttg, tt, tgv, top = tangents
    tg, t, g, x, y = primals
    own = (tg, t, g, x if operand == "x" else y)
    count = _outer_directions(tangents, own)
    if count:
        return _each_outer_direction(
            lambda *each: _product_helper_jvp(helper, operand, each, primals), tangents, own, count
        )
    moved = (top, y) if operand == "x" else (x, top)
    return _terms(
        helper(ttg, tt, g, x, y) if ttg is not None or tt is not None else None,
        helper(tg, None, g, *moved) if tg is not None and top is not None else None,
        helper(None, t, tgv, x, y) if t is not None and tgv is not None else None,
    )


def _batched(t, primal) -> bool:
    return t is not None and np.ndim(t) > np.ndim(primal)


def einsum_adjoint_tangent(tg, toperands, g, subscripts, operands, argnum, optimize=False):
    """The tangent of ``einsum_adjoint(g, subscripts, operands, argnum)``, multilinear in `g`
    and in every operand but the one whose adjoint it is (batched tangents one direction at
    a time)."""
    from .array_helpers import einsum_adjoint

    def adjoint(g_, operands_):
        return einsum_adjoint(g_, subscripts, operands_, argnum, optimize)

    out = 0.0
    if tg is not None:
        if _batched(tg, g):
            out = np.stack([adjoint(t, operands) for t in tg])
        else:
            out = adjoint(tg, operands)
    for j, t in enumerate(toperands or ()):
        if j == argnum - 1 or t is None:
            continue
        directions = t if _batched(t, operands[j]) else [t]
        parts = [adjoint(g, [*operands[:j], d, *operands[j + 1 :]]) for d in directions]
        out = out + (np.stack(parts) if _batched(t, operands[j]) else parts[0])
    return out


def prod_of_others_tangent(t, a, axis=None):
    """The tangent of ``prod_of_others(a, axis)`` (for each element, the product of the
    others in its slice): exact with zeros in the slice, by differentiating the two
    exclusive cumulative products it is built from, one step along the slice at a time."""
    from .array_helpers import _axes

    a = np.asarray(a, dtype=np.result_type(a, 1.0))
    batched = _batched(t, a)
    t = np.asarray(t, dtype=a.dtype)
    if not batched:
        t = t[np.newaxis]
    t = np.broadcast_to(t, (t.shape[0], *a.shape))
    axes = _axes(axis, a.ndim)
    if not axes:
        out = np.zeros_like(t)
        return out if batched else out[0]
    ends = tuple(range(a.ndim - len(axes), a.ndim))
    moved = np.moveaxis(a, axes, ends)
    flat = moved.reshape(*moved.shape[: a.ndim - len(axes)], -1)
    tmoved = np.moveaxis(t, [x + 1 for x in axes], [x + 1 for x in ends])
    tflat = tmoved.reshape(t.shape[0], *flat.shape)
    n = flat.shape[-1]
    before = np.ones_like(flat)  # product of the elements before each one
    tbefore = np.zeros_like(tflat)
    for k in range(1, n):
        before[..., k] = before[..., k - 1] * flat[..., k - 1]
        tbefore[..., k] = (
            tbefore[..., k - 1] * flat[..., k - 1] + before[..., k - 1] * tflat[..., k - 1]
        )
    after = np.ones_like(flat)  # product of the elements after each one
    tafter = np.zeros_like(tflat)
    for k in range(n - 2, -1, -1):
        after[..., k] = after[..., k + 1] * flat[..., k + 1]
        tafter[..., k] = (
            tafter[..., k + 1] * flat[..., k + 1] + after[..., k + 1] * tflat[..., k + 1]
        )
    tothers = (tbefore * after + before * tafter).reshape(tmoved.shape)
    out = np.moveaxis(tothers, [x + 1 for x in ends], [x + 1 for x in axes])
    return out if batched else out[0]


def solve_jvp_tangent(t_ta, t_tb, t_a, t_x, ta, a, b, x, out):
    """The tangent of ``out = solve_jvp(ta, tb, a, b, x)``, which is ``solve(a, tb - ta @ x)``:
    linear in ``ta, tb`` jointly, bilinear in ``ta`` and ``x``, and ``d solve(a, r) =
    -solve(a, da @ solve(a, r))`` in `a` (None: no tangent)."""
    total = 0.0
    if t_ta is not None or t_tb is not None:
        total = total + solve_jvp(t_ta, t_tb, a, b, x)
    if ta is not None and t_x is not None:
        total = total + solve_jvp(ta, None, a, b, t_x)
    if t_a is not None:
        total = total + solve_jvp(t_a, None, a, b, out)
    return total


def solve_transposed_tangent(t_a, t_g, a, g, b, out):
    """The tangent of ``out = solve_transposed(a, g, b)``, which is ``solve(a^T, g)``:
    ``solve(a^T, dg - da^T @ out)`` (None: no tangent)."""
    from .array_helpers import _solves_vector, solve_transposed

    if t_a is None and t_g is None:
        return 0.0
    rhs = 0.0 if t_g is None else t_g
    if t_a is not None:
        transposed = np.swapaxes(t_a, -1, -2)
        if _solves_vector(a, b):
            rhs = rhs - (transposed @ np.asarray(out)[..., None])[..., 0]
        else:
            rhs = rhs - transposed @ out
    return solve_transposed(a, rhs, b)


def _singular_part(g, tx, x, ord, axes, keepdims):
    """``g * dD`` for the nuclear and spectral norms (``D`` depends on `x` alone)."""
    from .adjoint_helpers import unreduce
    from .array_helpers import singular_derivative_tangent

    if tx is None:
        return 0.0
    rows, cols = axes[0] % x.ndim, axes[1] % x.ndim

    def to_end(t):
        return np.moveaxis(t, (rows, cols), (-2, -1))

    def one(t):
        d = singular_derivative_tangent(to_end(x), to_end(t), ord)
        return np.moveaxis(d, (-2, -1), (rows, cols))

    dD = np.stack([one(t) for t in tx]) if _batched(tx, x) else one(tx)
    return unreduce(g, x, axes, keepdims) * dD


def norm_adjoint_tangent(tg, tans, tx, g, ans, x, ord=None, axis=None, keepdims=False):
    """The tangent of ``norm_adjoint(g, ans, x, ord, axis, keepdims)`` (``g * D`` with ``D =
    d norm / d x``) for the norms whose derivative is smooth where the norm is not 0: vector
    norms of any real ``ord`` and the Frobenius norm. Piecewise-linear norms (``ord`` 0, 1,
    inf; induced 1 and inf) have a locally constant ``D``. The nuclear and spectral norms'
    ``D`` comes from the SVD, and so does its tangent (`singular_derivative_tangent`)."""
    from .adjoint_helpers import unreduce
    from .array_helpers import (
        _vector_norm_derivative,
        norm_adjoint,
        safe_divide,
    )

    x = np.asarray(x, dtype=np.result_type(x, 1.0))
    matrix = (axis is None and ord is not None and x.ndim == 2) or (
        axis is not None and not isinstance(axis, (int, np.integer)) and len(axis) == 2
    )
    axes = tuple(range(x.ndim)) if axis is None and ord is not None else axis

    def expanded(t, primal):  # a reduced value (or its tangent) broadcast against x
        if _batched(t, primal):
            return np.stack([unreduce(d, x, axes, keepdims) for d in t])
        return unreduce(t, x, axes, keepdims)

    total = 0.0
    if tg is not None:  # linear in g
        if _batched(tg, g):
            total = np.stack([norm_adjoint(d, ans, x, ord, axis, keepdims) for d in tg])
        else:
            total = norm_adjoint(tg, ans, x, ord, axis, keepdims)
    p = 2.0 if ord in (None, "fro") else ord
    if matrix and ord in ("nuc", 2, -2):
        return total + _singular_part(g, tx, x, ord, axes, keepdims)
    if matrix and ord not in (None, "fro"):
        return total  # induced 1- and inf-norms: D is locally constant
    if not matrix and (p in (0, 1) or np.isinf(p)):
        return total
    norm = unreduce(ans, x, axes, keepdims)
    D = safe_divide(x, norm) if p == 2 else _vector_norm_derivative(x, norm, p, axes)
    dD = 0.0  # D = sign(x) |x|^(p-1) / norm^(p-1): (p-1) D (dx / x - dnorm / norm)
    if tx is not None:
        dD = dD + (safe_divide(tx, norm) if p == 2 else (p - 1) * safe_divide(D * tx, x))
    if tans is not None:
        dD = dD - (p - 1) * safe_divide(D * expanded(tans, ans), norm)
    return total + unreduce(g, x, axes, keepdims) * dD
