"""Reverse rules of reductions: sum, mean, prod, max, min, var, std, cumsum, cumprod.

None of these is elementwise: the compiler hands each template a ``g`` with exactly ``ans``'s
shape. A reduction's adjoint re-inserts the reduced axes (`unreduce`) so that ``g`` broadcasts
against ``a``; the contribution is returned lazily broadcast (it broadcasts to ``a``'s shape,
which is all an adjoint needs to do). Parameters are NumPy's own names; ``out``, ``where`` and
``initial`` are left out on purpose, so the compiler rejects calls that use them. ``var`` and
``std`` take ``ddof`` but not its NumPy 2 alias ``correction``, nor ``mean``.

Kinks: ``max``/``min`` split ``g`` equally among tied extrema (like JAX); ``std`` of a constant
slice has adjoint 0 there rather than 0/0 (`safe_divide`; README, "NaN-safe gradients").
``prod`` is exact with zeros in the slice, any number of them (products of the other elements
come from cumulative products, not ``ans / a``).
"""

import numpy as np

from ..adjoint_helpers import reduced_count, unreduce
from ..array_helpers import (
    extremum_weights,
    item_adjoint,
    item_of,
    item_tangent,
    prod_of_others,
    reverse_cumsum,
    safe_divide,
)
from ..cumulative_products import (
    cumprod_adjoint,
    cumprod_adjoint_jvp,
    cumprod_tangent,
    cumprod_tangent_jvp,
)
from ..registry import registry

vjp = registry.vjp
jvp = registry.jvp


@vjp(np.sum, reduction=True)
def sum_(g, ans, a, axis=None, dtype=None, keepdims=False):
    return unreduce(g, a, axis, keepdims)


@vjp(np.mean, reduction=True)
def mean(g, ans, a, axis=None, dtype=None, keepdims=False):
    return unreduce(g, a, axis, keepdims) / reduced_count(a, axis)


@vjp(np.prod, reduction=True)
def prod(g, ans, a, axis=None, dtype=None, keepdims=False):
    return unreduce(g, a, axis, keepdims) * prod_of_others(a, axis)


@vjp(np.max, np.amax, np.min, np.amin, reduction=True)
def extremum(g, ans, a, axis=None, keepdims=False):
    return unreduce(g, a, axis, keepdims) * extremum_weights(a, ans, axis, keepdims)


@vjp(np.var, reduction=True)
def var(g, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    count = reduced_count(a, axis)
    return unreduce(g, a, axis, keepdims) * (2 / (count - ddof)) * centered


@vjp(np.std, reduction=True)
def std(g, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    count = reduced_count(a, axis)
    # centered / std is 0/0 only on a constant slice, where centered is 0: the subgradient 0
    slope = safe_divide(centered, unreduce(ans, a, axis, keepdims))
    return unreduce(g, a, axis, keepdims) * slope / (count - ddof)


@vjp(np.cumsum)
def cumsum(g, ans, a, axis=None, dtype=None):
    return reverse_cumsum(g, a, axis)


@vjp(np.cumprod)
def cumprod(g, ans, a, axis=None, dtype=None):
    # exact where elements are 0 (runtime/cumulative_products.py), unlike reverse_cumsum / a
    return cumprod_adjoint(g, a, axis, ans)


@jvp(np.cumprod)
def cumprod_jvp(tangents, ans, a, axis=None, dtype=None):
    return cumprod_tangent(tangents[0], a, axis)


@jvp(cumprod_adjoint)
def cumprod_adjoint_(tangents, ans, g, a, axis=None, product=None):
    return cumprod_adjoint_jvp(tangents[0], tangents[1], g, a, axis)


@jvp(cumprod_tangent)
def cumprod_tangent_(tangents, ans, t, a, axis=None):
    return cumprod_tangent_jvp(tangents[0], tangents[1], t, a, axis)


@vjp(item_of)
def item(g, ans, a, *index):
    return item_adjoint(g, a, index)


@jvp(item_of)
def item_jvp(tangents, ans, a, *index):
    return item_tangent(tangents[0], a, index)


registry.linear(item_adjoint, item_tangent)
