"""Derivatives of ``np.cumprod`` that stay exact where elements are 0.

The textbook adjoint ``reverse_cumsum(g * ans) / a`` (autograd's) divides by the elements, so
it is NaN or wrong as soon as one is 0. These helpers run the recurrences instead, one pass
along the axis each (vectorized over the other axes; `t`, `s` and `g` may carry leading batch
axes): with ``E[j]`` the product of the elements before ``j``,

- tangent: ``T[i] = T[i-1] * a[i] + E[i] * t[i]``;
- adjoint: ``ga[j] = E[j] * S[j]`` with ``S[j] = g[j] + a[j+1] * S[j+1]``;

and, for second order, the derivatives of those two in a direction ``s`` of ``a``
(`cumprod_tangent_slope`, `cumprod_adjoint_slope`). Third order has no rule (LookupError).
First order, the hot path, is vectorized instead: divisions by elements before a slice's first
zero (where they are exact), and the zero's own term after it (`_split_at_first_zero`).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "cumprod_adjoint",
    "cumprod_adjoint_jvp",
    "cumprod_adjoint_slope",
    "cumprod_tangent",
    "cumprod_tangent_jvp",
    "cumprod_tangent_slope",
]


def _along(x, a, axis, rank):
    """`x` (shaped like `a`, maybe with leading batch axes) with `axis` first, and an undo.
    Everything gets `rank` axes (length 1 for batch axes it lacks), so all broadcast. With
    ``axis=None`` cumprod runs over `a` flattened: so does `x` (then `_flat` first)."""
    k = (int(axis) if axis is not None else 0) % np.ndim(a) - np.ndim(a)  # from the end
    x = np.reshape(x, (1,) * (rank - np.ndim(x)) + np.shape(x))
    return np.moveaxis(x, k, 0), lambda y: np.moveaxis(y, 0, k)


def _flat(a, *others):
    """`a` flattened and each of `others` (with leading batch axes) shaped to match."""
    size = np.size(a)
    return np.ravel(a), *(
        np.reshape(x, (*np.shape(x)[: np.ndim(x) - np.ndim(a)], size))
        if np.size(x) != 1 or np.ndim(x)
        else x
        for x in others
    )


def _exclusive(a0):
    """Products of the elements before each position (`a0` has the axis first)."""
    out = np.ones_like(a0)
    for i in range(1, len(a0)):
        out[i] = out[i - 1] * a0[i - 1]
    return out


def _exclusive_slope(a0, s0):
    """The derivative of `_exclusive` in the direction `s0`."""
    e = _exclusive(a0)
    out = np.zeros(np.broadcast_shapes(np.shape(s0), np.shape(a0)))
    for i in range(1, len(a0)):
        out[i] = out[i - 1] * a0[i - 1] + e[i - 1] * s0[i - 1]
    return out


def _floating(x, *others):
    return np.asarray(x, dtype=np.result_type(x, *others, 1.0))


def _split_at_first_zero(a0):
    """Along axis 0 of `a0`: positions before each slice's first zero (all of a slice with
    none), the products before each position, and ``P[i]``, the product of the elements
    after the first zero up to ``i`` (1 up to the zero itself)."""
    n = len(a0)
    zero = a0 == 0
    first = np.where(zero.any(axis=0), zero.argmax(axis=0), n)
    position = np.arange(n).reshape((n,) + (1,) * (np.ndim(a0) - 1))
    before = position < first
    exclusive = np.cumprod(np.concatenate([np.ones_like(a0[:1]), a0[:-1]]), axis=0)
    after = np.cumprod(np.where(position > first, a0, 1.0), axis=0)
    at = np.minimum(first, n - 1)[None]
    return before, position >= first, exclusive, after, at


def cumprod_tangent(t, a, axis=None):
    """The tangent of ``np.cumprod(a, axis)`` for the tangent `t` of `a` (linear in `t`).

    Before a slice's first zero it is ``ans * cumsum(t / a)``; from the zero on only the
    zero's own tangent survives (every other term holds the zero): ``t[z] * E[z] * P[i]``."""
    if axis is None:
        a, t = _flat(a, t)
    rank = max(np.ndim(a), np.ndim(t))
    a0, _ = _along(_floating(a, t), a, axis, rank)
    t0, back = _along(_floating(t, a), a, axis, rank)
    if a0.all():  # no zero: the textbook tangent is exact
        return back(np.cumprod(a0, axis=0) * np.cumsum(t0 / a0, axis=0))
    before, from_zero, exclusive, after, at = _split_at_first_zero(a0)
    ratio = np.where(before, t0 / np.where(before, a0, 1.0), 0.0)
    head = np.cumprod(a0, axis=0) * np.cumsum(ratio, axis=0)
    shape = np.broadcast_shapes(np.shape(t0), np.shape(a0))
    at = np.broadcast_to(at, (1, *shape[1:]))
    zero_tangent = np.take_along_axis(np.broadcast_to(t0, shape), at, axis=0)
    zero_before = np.take_along_axis(np.broadcast_to(exclusive, shape), at, axis=0)
    return back(np.where(from_zero, zero_tangent * zero_before * after, head))


def cumprod_tangent_slope(t, s, a, axis=None):
    """The derivative of ``cumprod_tangent(t, a)`` in the direction `s` of `a`."""
    if axis is None:
        a, t, s = _flat(a, t, s)
    rank = max(np.ndim(a), np.ndim(t), np.ndim(s))
    a0, _ = _along(_floating(a, t, s), a, axis, rank)
    t0, back = _along(_floating(t, a), a, axis, rank)
    s0, _ = _along(_floating(s, a), a, axis, rank)
    e, de = _exclusive(a0), _exclusive_slope(a0, s0)
    shape = np.broadcast_shapes(np.shape(t0), np.shape(s0), np.shape(a0))
    tangent, out = np.zeros(shape), np.zeros(shape)
    for i in range(len(a0)):
        previous_t = tangent[i - 1] if i else 0.0
        previous = out[i - 1] if i else 0.0
        out[i] = previous * a0[i] + previous_t * s0[i] + de[i] * t0[i]
        tangent[i] = previous_t * a0[i] + e[i] * t0[i]
    return back(out)


def _suffix(g0, a0):
    """``S[j] = g[j] + a[j+1] * S[j+1]`` (`g0` and `a0` have the axis first)."""
    out = np.array(np.broadcast_to(g0, np.broadcast_shapes(np.shape(g0), np.shape(a0))))
    for j in range(len(a0) - 2, -1, -1):
        out[j] = out[j] + a0[j + 1] * out[j + 1]
    return out


def cumprod_adjoint(g, a, axis=None, product=None):
    """The adjoint of ``np.cumprod(a, axis)`` for `a` (linear in `g`); `product` is that
    cumprod when the caller has it.

    Before a slice's first zero ``z`` it is ``reverse_cumsum(g * ans) / a``; at ``z`` it is
    ``E[z] * sum(g[i] * P[i] for i >= z)``; after it, 0 (every product holds the zero)."""
    if axis is None:
        shape = np.shape(a)
        out = cumprod_adjoint(g, np.ravel(a), 0, product)  # g is shaped like the flat result
        return np.reshape(out, (*np.shape(out)[:-1], *shape))
    floating = _floating(a, g)
    if floating.all():  # no zero: the textbook adjoint is exact, run along the axis where it
        # is (counted from the end: `g` may have leading batch axes), with no axis moved first
        k = int(axis) % np.ndim(a) - np.ndim(a)
        if product is None or np.ndim(product) != np.ndim(a):
            product = np.cumprod(floating, axis=k)
        return _reverse_cumsum_over(g, product, floating, k)
    rank = max(np.ndim(a), np.ndim(g))
    a0, _ = _along(floating, a, axis, rank)
    g0, back = _along(_floating(g, a), a, axis, rank)
    before, from_zero, exclusive, after, at = _split_at_first_zero(a0)
    weighted = g0 * np.cumprod(a0, axis=0)
    head = np.flip(np.cumsum(np.flip(weighted, 0), axis=0), 0) / np.where(before, a0, 1.0)
    shape = np.broadcast_shapes(np.shape(g0), np.shape(a0))
    tail = np.sum(np.where(from_zero, g0 * after, 0.0), axis=0, keepdims=True)
    at_zero = (
        np.take_along_axis(
            np.broadcast_to(exclusive, shape), np.broadcast_to(at, (1, *shape[1:])), axis=0
        )
        * tail
    )
    position = np.arange(len(a0)).reshape((len(a0),) + (1,) * (np.ndim(a0) - 1))
    is_zero = position == at
    return back(np.where(before, head, np.where(is_zero & from_zero, at_zero, 0.0)))


def _reverse_cumsum_over(g, product, a, k: int):
    """``reverse_cumsum(g * product) / a`` along the axis `k`, in one buffer of our own (the
    sweeps are memory-bound: each fresh array costs about as much as the arithmetic). A `g`
    with one value everywhere (``np.sum``'s adjoint, broadcast) is a factor applied last,
    unless it has leading batch axes, which the result keeps."""
    uniform = (
        isinstance(g, np.ndarray)
        and g.size > 0
        and not any(g.strides)
        and g.shape == np.shape(product)
    )
    if uniform:
        out = np.flip(np.cumsum(np.flip(product, k), axis=k), k)
    else:
        out = np.multiply(_floating(g, a), product)
        flipped = np.flip(out, k)
        np.cumsum(flipped, axis=k, out=flipped)
    out = np.divide(out, a, out=_reused(out, a))
    factor = g.flat[0] if uniform else 1
    if factor != 1:
        out = np.multiply(out, factor, out=_reused(out, factor))
    return out


def _reused(out: np.ndarray, other):
    """`out` as the output of an operation with `other` when its dtype holds the result."""
    return out if np.result_type(out, other) == out.dtype else None


def cumprod_adjoint_slope(g, s, a, axis=None):
    """The derivative of ``cumprod_adjoint(g, a)`` in the direction `s` of `a`."""
    if axis is None:
        shape = np.shape(a)
        flat_a, s = _flat(a, s)
        out = cumprod_adjoint_slope(g, s, flat_a, 0)
        return np.reshape(out, (*np.shape(out)[:-1], *shape))
    rank = max(np.ndim(a), np.ndim(g), np.ndim(s))
    a0, _ = _along(_floating(a, g, s), a, axis, rank)
    g0, back = _along(_floating(g, a), a, axis, rank)
    s0, _ = _along(_floating(s, a), a, axis, rank)
    suffix = _suffix(g0, a0)
    slope = np.zeros(np.broadcast_shapes(np.shape(suffix), np.shape(s0)))
    for j in range(len(a0) - 2, -1, -1):
        slope[j] = a0[j + 1] * slope[j + 1] + s0[j + 1] * suffix[j + 1]
    return back(_exclusive_slope(a0, s0) * suffix + _exclusive(a0) * slope)


def cumprod_tangent_jvp(tt, ta, t, a, axis=None):
    """The tangent of ``cumprod_tangent(t, a, axis)`` for tangents `tt` of `t` and `ta` of `a`
    (None: no tangent)."""
    parts = []
    if tt is not None:
        parts.append(cumprod_tangent(tt, a, axis))
    if ta is not None:
        parts.append(cumprod_tangent_slope(t, ta, a, axis))
    return sum(parts[1:], parts[0]) if parts else 0.0


def cumprod_adjoint_jvp(tg, ta, g, a, axis=None):
    """The tangent of ``cumprod_adjoint(g, a, axis)`` for tangents `tg` of `g` and `ta` of `a`
    (None: no tangent)."""
    parts = []
    if tg is not None:
        parts.append(cumprod_adjoint(tg, a, axis))
    if ta is not None:
        parts.append(cumprod_adjoint_slope(g, ta, a, axis))
    return sum(parts[1:], parts[0]) if parts else 0.0
