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
    """`b`, or 1.0 for None: optional weights (``logsumexp``'s ``b``), which are constants."""
    return 1.0 if b is None else b
