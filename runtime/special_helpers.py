"""Special functions that the SciPy rules' templates call, under names generated code imports.

A rule template may only name ``np``, ``math`` and what ``s2sgrad.runtime`` exports (generated
code imports nothing else), yet the derivative of ``gammaln`` is ``digamma`` and that of
``iv`` is made of ``iv`` again. These thin wrappers call the SciPy function of the same
meaning. SciPy is imported inside them, on first call: ``s2sgrad.runtime`` imports NumPy only,
and a wrapper is only ever called by code differentiating a program that itself called SciPy.

Each wrapper is a primitive with the rule of the SciPy function it wraps
(``runtime/rules/scipy_special.py`` registers one template for both), so derivatives of
derivatives work. The names carry a ``special_`` prefix so that a user's own
``from scipy.special import digamma`` keeps its name in generated code.

`undefined_gradient` marks, in a template, an argument with no closed-form derivative (the
order ``v`` of a Bessel function, the shape parameters of ``betainc``): the compiler refuses
to differentiate with respect to such an argument (`LookupError`, at transform time), and a
template called directly gives NaN there.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "logsumexp_slopes",
    "logsumexp_slopes_tangent",
    "logsumexp_slopes_tangent_tangent",
    "logsumexp_tangent",
    "logsumexp_tangent_tangent",
    "ones_if_none",
    "special_betaln",
    "special_digamma",
    "special_expit",
    "special_gammaln",
    "special_iv",
    "special_ive",
    "special_jv",
    "special_polygamma",
    "special_xlog1py",
    "special_xlogy",
    "special_yv",
    "undefined_gradient",
]


def _special():
    import scipy.special

    return scipy.special


def special_digamma(x):
    """ψ(x) = d/dx log Γ(x) (``scipy.special.digamma``)."""
    return _special().digamma(x)


def special_polygamma(n, x):
    """ψ⁽ⁿ⁾(x), the n-th derivative of ψ (``scipy.special.polygamma``; `n` an integer)."""
    return _special().polygamma(n, x)


def special_gammaln(x):
    """log |Γ(x)| (``scipy.special.gammaln``)."""
    return _special().gammaln(x)


def special_betaln(a, b):
    """log |B(a, b)| (``scipy.special.betaln``)."""
    return _special().betaln(a, b)


def special_expit(x):
    """1 / (1 + exp(-x)) without overflow (``scipy.special.expit``)."""
    return _special().expit(x)


def special_xlogy(x, y):
    """x log y, 0 where x is 0 (``scipy.special.xlogy``)."""
    return _special().xlogy(x, y)


def special_xlog1py(x, y):
    """x log(1 + y), 0 where x is 0 (``scipy.special.xlog1py``)."""
    return _special().xlog1py(x, y)


def special_iv(v, x):
    """The modified Bessel function of the first kind of order v (``scipy.special.iv``)."""
    return _special().iv(v, x)


def special_ive(v, x):
    """``iv(v, x) * exp(-|x|)`` for real x (``scipy.special.ive``)."""
    return _special().ive(v, x)


def special_jv(v, x):
    """The Bessel function of the first kind of order v (``scipy.special.jv``)."""
    return _special().jv(v, x)


def special_yv(v, x):
    """The Bessel function of the second kind of order v (``scipy.special.yv``)."""
    return _special().yv(v, x)


def undefined_gradient(g):
    """NaN shaped like `g`: the contribution of an argument whose derivative s2sgrad does not
    know in closed form (the compiler rejects differentiating with respect to it first; only
    a template called directly gets here)."""
    return np.full(np.shape(g), np.nan)


def ones_if_none(b):
    """`b`, or 1.0 for None: optional weights (``logsumexp``'s ``b``); the identity on
    given weights, differentiated as such."""
    return 1.0 if b is None else b


# -- log-sum-exp ---------------------------------------------------------------------------------
#
# With S = sum over `axis` of b * exp(a) (b = 1 when None), ``logsumexp`` is log S. Its slopes
# are p = exp(a) / S in b and w = b * p in a, computed from exp(a - max a): no overflow, and no
# need of the primal result, so the reverse rule of ``logsumexp`` never makes SciPy compute it.


def logsumexp_slopes(a, axis=None, b=None):
    """exp(a) / sum(b * exp(a)) over `axis` (b broadcasts to `a`'s shape; 1 when None): the
    slope of ``logsumexp(a, axis, b)`` in `b`, and times `b` its slope in `a` (the softmax of
    `a` when `b` is None). Stable: exp(a - max a), never exp(a)."""
    a = np.asarray(a)
    peak = np.max(a, axis=axis, keepdims=True)
    if not np.all(np.isfinite(peak)):  # an all -inf slice: no shift there
        peak = np.where(np.isfinite(peak), peak, 0.0)
    slopes = np.exp(a - peak)
    total = np.sum(slopes if b is None else b * slopes, axis=axis, keepdims=True)
    slopes /= total
    return slopes


def _lifted(t, x, like):
    """Tangent `t` of `x` (maybe with leading batch axes) shaped to broadcast against
    `like`-shaped values (and batched ones) the way `x` does."""
    batch = np.ndim(t) - np.ndim(x)
    missing = np.ndim(like) - np.ndim(x)
    if batch <= 0 or missing <= 0:
        return t
    t = np.asarray(t)
    return np.reshape(t, t.shape[:batch] + (1,) * missing + t.shape[batch:])


def _batched_axis(axis, t, like):
    """`axis` of `like` as an axis of `t`, which may carry leading batch axes."""
    batch = np.ndim(t) - np.ndim(like)
    if batch <= 0:
        return axis
    if axis is None:
        return tuple(range(batch, np.ndim(t)))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    return tuple(batch + k % np.ndim(like) for k in axes)


def logsumexp_tangent(ta, tb, a, axis=None, b=None, keepdims=False):
    """The tangent of ``logsumexp(a, axis, b, keepdims)`` from the tangents `ta` of `a` and
    `tb` of `b` (None: no tangent; either may carry leading batch axes):
    sum(w * ta + p * tb) over `axis`."""
    slopes = logsumexp_slopes(a, axis, b)
    total = 0.0
    for t, weights in ((ta, slopes if b is None else slopes * b), (tb, slopes)):
        if t is not None:
            t = _lifted(t, b if t is tb else a, slopes) * weights
            total = total + np.sum(t, axis=_batched_axis(axis, t, slopes), keepdims=keepdims)
    return total


def logsumexp_slopes_tangent(ta, tb, ans, a, axis=None, b=None):
    """The tangent of ``p = logsumexp_slopes(a, axis, b)``: p * (ta - sum(b p ta)) - p *
    sum(p tb), sums over `axis` (None tangents: none; batched ones welcome)."""
    weights = ans if b is None else ans * b
    total = 0.0
    if ta is not None:
        ta = _lifted(ta, a, ans)
        total = ans * (ta - np.sum(weights * ta, axis=_batched_axis(axis, ta, ans), keepdims=True))
    if tb is not None:
        tb = _lifted(tb, b, ans)
        total = total - ans * np.sum(ans * tb, axis=_batched_axis(axis, tb, ans), keepdims=True)
    return total


def logsumexp_tangent_tangent(t_ta, t_tb, t_a, t_b, ta, tb, a, axis=None, b=None, keepdims=False):
    """The tangent of ``logsumexp_tangent(ta, tb, a, axis, b, keepdims)`` from tangents of
    its arguments (`t_ta` of `ta`, ..., None where none): linear in (ta, tb), and through the
    slopes p and w = b p in (a, b). Second order; there is no third."""
    total = logsumexp_tangent(t_ta, t_tb, a, axis, b, keepdims)
    if t_a is None and t_b is None:
        return total
    slopes = logsumexp_slopes(a, axis, b)
    moved = logsumexp_slopes_tangent(t_a, t_b, slopes, a, axis, b)
    terms = []
    if ta is not None:
        weights = moved if b is None else moved * b
        if t_b is not None:
            weights = weights + _lifted(t_b, b, slopes) * slopes
        terms.append(_lifted(ta, a, slopes) * weights)
    if tb is not None:
        terms.append(_lifted(tb, b, slopes) * moved)
    for term in terms:
        total = total + np.sum(term, axis=_batched_axis(axis, term, slopes), keepdims=keepdims)
    return total


def logsumexp_slopes_tangent_tangent(t_ta, t_tb, t_ans, t_b, ta, tb, ans, a, axis=None, b=None):
    """The tangent of ``logsumexp_slopes_tangent(ta, tb, ans, a, axis, b)`` from tangents of
    its arguments (None where none; `a` enters through ``ans = p`` alone): linear in (ta,
    tb), and in p and b through p * (ta - sum(b p ta)) - p * sum(p tb). Second order; there
    is no third."""
    total = logsumexp_slopes_tangent(t_ta, t_tb, ans, a, axis, b)
    if t_ans is None and t_b is None:
        return total
    weights = ans if b is None else ans * b
    moved = 0.0  # the tangent of the weights b p
    if t_ans is not None:
        t_ans = _lifted(t_ans, a, ans)
        moved = t_ans if b is None else t_ans * b
    if t_b is not None:
        moved = moved + _lifted(t_b, b, ans) * ans

    def summed(term):
        return np.sum(term, axis=_batched_axis(axis, term, ans), keepdims=True)

    if ta is not None:
        ta = _lifted(ta, a, ans)
        if t_ans is not None:
            total = total + t_ans * (ta - summed(weights * ta))
        total = total - ans * summed(moved * ta)
    if tb is not None and t_ans is not None:
        tb = _lifted(tb, b, ans)
        total = total - t_ans * summed(ans * tb) - ans * summed(t_ans * tb)
    return total
