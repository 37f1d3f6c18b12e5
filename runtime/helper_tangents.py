"""Tangents of the helpers that generated adjoint code calls: what a second transformation
(``sg.hessian``, ``sg.hvp``, ``sg.jacobian(sg.grad(f))``) needs for the helpers whose forward
rule is not the helper itself applied to a tangent.

Each function takes the tangents of the helper's arguments (None where an argument has none)
and the helper's primal arguments, and returns the tangent of the helper's result, batched
(one leading axis of directions) when the tangents are. A tangent with no contribution is
zeros of the result's shape (with the batch axis), never a bare 0.0: batched helpers and the
Jacobian's assembly downstream index it. Registered as forward rules in ``rules/helpers.py``.
"""

from __future__ import annotations

import numpy as np

from .tangent_helpers import (
    _batched,
    _lift_to,
    _one_array,
    add_to_diagonal,
    batch_matmul_left,
    batch_matmul_right,
    diagonal_directions,
    matmul_tangent,
    solve_jvp,
    zero_tangent,
)

__all__ = [
    "add_to_diagonal_jvp",
    "batch_matmul_left_jvp",
    "batch_matmul_right_jvp",
    "einsum_adjoint_tangent",
    "matmul_tangent_jvp",
    "norm_adjoint_tangent",
    "prod_of_others_tangent",
    "solve_jvp_tangent",
    "solve_transposed_tangent",
]


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
    """The sum of the parts that are not None (None when none is)."""
    found = [p for p in parts if p is not None]
    return sum(found[1:], found[0]) if found else None


def _zero_result(like, tangents, primals):
    """The zero tangent of a helper's result shaped like `like`, with the batch axis of
    whichever of `tangents` is batched against its primal (None: none): a tangent with no
    contribution is zeros of the right shape, never a bare 0.0 that batched helpers and
    Jacobian assembly downstream could not index."""
    for t, p in zip(tangents, primals, strict=True):
        if _batched(t, p):
            return zero_tangent(like, np.shape(t)[0])
    return zero_tangent(like)


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
        return tt if tt is not None else _zero_result(t, (), ())
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
    total = _terms(own, other)
    return total if total is not None else np.zeros_like(matmul_tangent(x1, x2, t, position, ans))


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
    total = _terms(
        helper(ttg, tt, g, x, y) if ttg is not None or tt is not None else None,
        helper(tg, None, g, *moved) if tg is not None and top is not None else None,
        helper(None, t, tgv, x, y) if t is not None and tgv is not None else None,
    )
    return total if total is not None else np.zeros_like(helper(tg, t, g, x, y))


def einsum_adjoint_tangent(
    tg, tsubscripts, toperands, g, subscripts, operands, argnum, optimize=False
):
    """The tangent of ``einsum_adjoint(g, subscripts, operands, argnum)``, multilinear in `g`
    and in every operand but the one whose adjoint it is (batched tangents one direction at
    a time). `tsubscripts` is the tangent of `subscripts`, an operand in the sublist form
    ``np.einsum(a, [0, 1], b, [1, 2])``."""
    from .array_helpers import einsum_adjoint, einsum_operands

    spec, positions = einsum_operands(subscripts, operands)
    arrays = [(subscripts, *operands)[p] for p in positions]
    tfull = (tsubscripts, *(toperands or (None,) * len(operands)))
    # (a list operand's tangent is a list of tangents: one array, directions first; read
    # entry by entry it was taken for the directions, a wrong second derivative)
    full = (subscripts, *operands)
    tarrays = [_one_array(tfull[p], full[p]) for p in positions]
    k = positions.index(argnum)

    def adjoint(g_, arrays_):
        return einsum_adjoint(g_, spec, arrays_, k + 1, optimize)

    out = None
    if tg is not None:
        if _batched(tg, g):
            out = np.stack([adjoint(t, arrays) for t in tg])
        else:
            out = adjoint(tg, arrays)
    for j, t in enumerate(tarrays):
        if j == k or t is None:
            continue
        directions = t if _batched(t, arrays[j]) else [t]
        parts = [adjoint(g, [*arrays[:j], d, *arrays[j + 1 :]]) for d in directions]
        part = np.stack(parts) if _batched(t, arrays[j]) else parts[0]
        out = part if out is None else out + part
    if out is None:  # only the operand whose adjoint this is varies: it is read for its shape
        return _zero_result(arrays[k], (tg, *tarrays), (g, *arrays))
    return out


def prod_of_others_tangent(t, a, axis=None):
    """The tangent of ``prod_of_others(a, axis)`` (for each element, the product of the
    others in its slice): exact with zeros in the slice, by differentiating the two
    exclusive cumulative products it is built from, one step along the slice at a time."""
    from .array_helpers import _axes, floating

    t = _one_array(t, a)
    a = floating(a)
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
    parts = []
    if t_ta is not None or t_tb is not None:
        parts.append(solve_jvp(t_ta, t_tb, a, b, x))
    if ta is not None and t_x is not None:
        parts.append(solve_jvp(ta, None, a, b, t_x))
    if t_a is not None:
        parts.append(solve_jvp(t_a, None, a, b, out))
    total = _terms(*parts)
    return total if total is not None else _zero_result(out, (t_x,), (x,))


def solve_transposed_tangent(t_a, t_g, a, g, b, out):
    """The tangent of ``out = solve_transposed(a, g, b)``, which is ``solve(a^T, g)``:
    ``solve(a^T, dg - da^T @ out)`` (None: no tangent)."""
    from .array_helpers import _solves_vector, solve_transposed

    if t_a is None and t_g is None:
        return zero_tangent(out)  # (not reached from generated code: nothing varies)
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
        floating,
        norm_adjoint,
        safe_divide,
    )

    tx = _one_array(tx, x)
    x = floating(x)
    if np.iscomplexobj(x) and (tx is not None or tans is not None):  # (linear in g: right)
        raise ValueError(
            "second derivatives of np.linalg.norm are implemented for real arrays only "
            "(x is complex)"
        )
    matrix = (axis is None and ord is not None and x.ndim == 2) or (
        axis is not None and not isinstance(axis, (int, np.integer)) and len(axis) == 2
    )
    axes = tuple(range(x.ndim)) if axis is None and ord is not None else axis

    def expanded(t, primal):  # a reduced value (or its tangent) broadcast against x
        if _batched(t, primal):  # each direction expanded, then lined up behind the batch
            return _lift_to(np.stack([unreduce(d, x, axes, keepdims) for d in t]), x.ndim)
        return unreduce(t, x, axes, keepdims)

    total = _zero_result(x, (tg, tans, tx), (g, ans, x))
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
