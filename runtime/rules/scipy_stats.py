"""Reverse rules of ``scipy.stats`` distributions: log-densities, densities, distribution and
survival functions, with respect to the value and every continuous parameter.

Imported once the program has imported ``scipy.stats`` (`runtime/registry.py`). A rule is
registered for the bound method users call, ``scipy.stats.norm.logpdf``: each attribute access
makes a new bound method, but they compare equal, so the registry finds the rule however the
call is spelled (``scipy.stats.norm.logpdf(x, 0.0, 2.0)``, ``norm.logpdf(x, scale=s)`` after
``from scipy.stats import norm``). Parameters are SciPy's names (``loc``, ``scale``, ``df``,
``a``, ``b``, ``mu``, ``p``). Frozen distributions (``norm(mu, s).logpdf(x)``, or ``d = norm(mu,
s)`` then ``d.logpdf(x)``) have no rules: a `LookupError` says to call ``norm.logpdf(x, mu, s)``
instead (`transforms/library.py`). Differentiating them would need the front end to tell which
local holds which frozen distribution, and rewrite the method call into the distribution's.

Every method here broadcasts like a ufunc, so the rules are ``elementwise=True`` and their
forward rules are derived. With ``z = (x - loc) / scale`` and ``h`` the log-density of the
standard form in ``z``, a location-scale family has slopes ``h'(z) / scale`` in ``x``, minus
that in ``loc`` and ``-(1 + z h'(z)) / scale`` in ``scale``; a distribution function's slope
in ``z`` is the standard density. ``logcdf``/``logsf`` of the normal use
``exp(-z**2 / 2 - ans)`` (finite far in the tails, as ``log_ndtr``).

No closed form, so `undefined_gradient` (a `LookupError` if differentiated): the shape
parameters inside an incomplete gamma or beta function (``t.cdf``'s ``df``, ``gamma.cdf``'s
``a``, ...), the integer arguments of discrete distributions (``k``, ``n``, ``loc``).
"""

import math

import numpy as np
import scipy.stats as st

from ..registry import registry
from ..special_helpers import (
    special_betaln,
    special_digamma,
    special_gammaln,
    special_xlog1py,
    special_xlogy,
    undefined_gradient,
)

vjp = registry.vjp

# -- normal --------------------------------------------------------------------------------------


@vjp(st.norm.logpdf, elementwise=True)
def norm_logpdf(g, ans, x, loc=0.0, scale=1.0):
    slope = (loc - x) / (scale * scale)  # (one pass over x for the common case: the value)
    return g * slope, -g * slope, g * (slope * slope * scale - 1 / scale)


@vjp(st.norm.pdf, elementwise=True)
def norm_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -g * ans * z / scale, g * ans * z / scale, g * ans * (z * z - 1) / scale


@vjp(st.norm.cdf, elementwise=True)
def norm_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-z * z / 2) / (math.sqrt(2 * math.pi) * scale)
    return slope, -slope, -slope * z


@vjp(st.norm.sf, elementwise=True)
def norm_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-z * z / 2) / (math.sqrt(2 * math.pi) * scale)
    return -slope, slope, slope * z


@vjp(st.norm.logcdf, elementwise=True)
def norm_logcdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-z * z / 2 - ans) / (math.sqrt(2 * math.pi) * scale)
    return slope, -slope, -slope * z


@vjp(st.norm.logsf, elementwise=True)
def norm_logsf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-z * z / 2 - ans) / (math.sqrt(2 * math.pi) * scale)
    return -slope, slope, slope * z


# -- other location-scale families ---------------------------------------------------------------


@vjp(st.expon.logpdf, elementwise=True)
def expon_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -g / scale, g / scale, g * (z - 1) / scale


@vjp(st.expon.pdf, elementwise=True)
def expon_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -g * ans / scale, g * ans / scale, g * ans * (z - 1) / scale


@vjp(st.expon.cdf, elementwise=True)
def expon_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-z) * (z >= 0) / scale
    return slope, -slope, -slope * z


@vjp(st.expon.sf, elementwise=True)
def expon_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * ans * (z >= 0) / scale
    return -slope, slope, slope * z


@vjp(st.laplace.logpdf, elementwise=True)
def laplace_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    return -g * np.sign(z) / scale, g * np.sign(z) / scale, g * (np.abs(z) - 1) / scale


@vjp(st.laplace.pdf, elementwise=True)
def laplace_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    gp = g * ans
    return -gp * np.sign(z) / scale, gp * np.sign(z) / scale, gp * (np.abs(z) - 1) / scale


@vjp(st.laplace.cdf, elementwise=True)
def laplace_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-np.abs(z)) / (2 * scale)
    return slope, -slope, -slope * z


@vjp(st.laplace.sf, elementwise=True)
def laplace_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(-np.abs(z)) / (2 * scale)
    return -slope, slope, slope * z


@vjp(st.cauchy.logpdf, elementwise=True)
def cauchy_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -2 * z / (1 + z * z)
    return g * dz / scale, -g * dz / scale, -g * (1 + z * dz) / scale


@vjp(st.cauchy.pdf, elementwise=True)
def cauchy_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -2 * z / (1 + z * z)
    return g * ans * dz / scale, -g * ans * dz / scale, -g * ans * (1 + z * dz) / scale


@vjp(st.cauchy.cdf, elementwise=True)
def cauchy_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g / (math.pi * scale * (1 + z * z))
    return slope, -slope, -slope * z


@vjp(st.cauchy.sf, elementwise=True)
def cauchy_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g / (math.pi * scale * (1 + z * z))
    return -slope, slope, slope * z


@vjp(st.logistic.logpdf, elementwise=True)
def logistic_logpdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -np.tanh(z / 2)
    return g * dz / scale, -g * dz / scale, -g * (1 + z * dz) / scale


@vjp(st.logistic.pdf, elementwise=True)
def logistic_pdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -np.tanh(z / 2)
    return g * ans * dz / scale, -g * ans * dz / scale, -g * ans * (1 + z * dz) / scale


@vjp(st.logistic.cdf, elementwise=True)
def logistic_cdf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * ans * (1 - ans) / scale  # cdf = expit(z)
    return slope, -slope, -slope * z


@vjp(st.logistic.sf, elementwise=True)
def logistic_sf(g, ans, x, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * ans * (1 - ans) / scale  # sf = expit(-z)
    return -slope, slope, slope * z


# -- shape families --------------------------------------------------------------------------------


@vjp(st.t.logpdf, elementwise=True)
def t_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -(df + 1) * z / (df + z * z)
    ddf = (
        special_digamma((df + 1) / 2)
        - special_digamma(df / 2)
        - 1 / df
        - np.log1p(z * z / df)
        + (df + 1) * z * z / (df * (df + z * z))
    ) / 2
    return g * dz / scale, g * ddf, -g * dz / scale, -g * (1 + z * dz) / scale


@vjp(st.t.pdf, elementwise=True)
def t_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = -(df + 1) * z / (df + z * z)
    ddf = (
        special_digamma((df + 1) / 2)
        - special_digamma(df / 2)
        - 1 / df
        - np.log1p(z * z / df)
        + (df + 1) * z * z / (df * (df + z * z))
    ) / 2
    gp = g * ans
    return gp * dz / scale, gp * ddf, -gp * dz / scale, -gp * (1 + z * dz) / scale


@vjp(st.t.cdf, elementwise=True)
def t_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    log_density = (
        special_gammaln((df + 1) / 2)
        - special_gammaln(df / 2)
        - np.log(df * math.pi) / 2
        - (df + 1) / 2 * np.log1p(z * z / df)
    )
    slope = g * np.exp(log_density) / scale
    return slope, undefined_gradient(g), -slope, -slope * z


@vjp(st.t.sf, elementwise=True)
def t_sf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    log_density = (
        special_gammaln((df + 1) / 2)
        - special_gammaln(df / 2)
        - np.log(df * math.pi) / 2
        - (df + 1) / 2 * np.log1p(z * z / df)
    )
    slope = g * np.exp(log_density) / scale
    return -slope, undefined_gradient(g), slope, slope * z


@vjp(st.gamma.logpdf, elementwise=True)
def gamma_logpdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (a - 1) / z - 1
    return (
        g * dz / scale,
        g * (np.log(z) - special_digamma(a)),
        -g * dz / scale,
        g * (z - a) / scale,
    )


@vjp(st.gamma.pdf, elementwise=True)
def gamma_pdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (a - 1) / z - 1
    gp = g * ans
    return (
        gp * dz / scale,
        gp * (np.log(z) - special_digamma(a)),
        -gp * dz / scale,
        gp * (z - a) / scale,
    )


@vjp(st.gamma.cdf, elementwise=True)
def gamma_cdf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(special_xlogy(a - 1, z) - z - special_gammaln(a)) / scale
    return slope, undefined_gradient(g), -slope, -slope * z


@vjp(st.gamma.sf, elementwise=True)
def gamma_sf(g, ans, x, a, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    slope = g * np.exp(special_xlogy(a - 1, z) - z - special_gammaln(a)) / scale
    return -slope, undefined_gradient(g), slope, slope * z


@vjp(st.chi2.logpdf, elementwise=True)
def chi2_logpdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (df / 2 - 1) / z - 0.5
    ddf = (np.log(z / 2) - special_digamma(df / 2)) / 2
    return g * dz / scale, g * ddf, -g * dz / scale, -g * (1 + z * dz) / scale


@vjp(st.chi2.pdf, elementwise=True)
def chi2_pdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (df / 2 - 1) / z - 0.5
    ddf = (np.log(z / 2) - special_digamma(df / 2)) / 2
    gp = g * ans
    return gp * dz / scale, gp * ddf, -gp * dz / scale, -gp * (1 + z * dz) / scale


@vjp(st.chi2.cdf, elementwise=True)
def chi2_cdf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    half = df / 2
    slope = g * np.exp(special_xlogy(half - 1, z / 2) - z / 2 - special_gammaln(half)) / 2
    return slope / scale, undefined_gradient(g), -slope / scale, -slope * z / scale


@vjp(st.chi2.sf, elementwise=True)
def chi2_sf(g, ans, x, df, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    half = df / 2
    slope = g * np.exp(special_xlogy(half - 1, z / 2) - z / 2 - special_gammaln(half)) / 2
    return -slope / scale, undefined_gradient(g), slope / scale, slope * z / scale


@vjp(st.beta.logpdf, elementwise=True)
def beta_logpdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (a - 1) / z - (b - 1) / (1 - z)
    both = special_digamma(a + b)
    da = np.log(z) - special_digamma(a) + both
    db = np.log1p(-z) - special_digamma(b) + both
    return g * dz / scale, g * da, g * db, -g * dz / scale, -g * (1 + z * dz) / scale


@vjp(st.beta.pdf, elementwise=True)
def beta_pdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    dz = (a - 1) / z - (b - 1) / (1 - z)
    both = special_digamma(a + b)
    da = np.log(z) - special_digamma(a) + both
    db = np.log1p(-z) - special_digamma(b) + both
    gp = g * ans
    return gp * dz / scale, gp * da, gp * db, -gp * dz / scale, -gp * (1 + z * dz) / scale


@vjp(st.beta.cdf, elementwise=True)
def beta_cdf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    log_density = special_xlogy(a - 1, z) + special_xlog1py(b - 1, -z) - special_betaln(a, b)
    slope = g * np.exp(log_density) / scale
    return slope, undefined_gradient(g), undefined_gradient(g), -slope, -slope * z


@vjp(st.beta.sf, elementwise=True)
def beta_sf(g, ans, x, a, b, loc=0.0, scale=1.0):
    z = (x - loc) / scale
    log_density = special_xlogy(a - 1, z) + special_xlog1py(b - 1, -z) - special_betaln(a, b)
    slope = g * np.exp(log_density) / scale
    return -slope, undefined_gradient(g), undefined_gradient(g), slope, slope * z


# -- discrete distributions: derivatives in the continuous parameter only ------------------------


@vjp(st.poisson.logpmf, elementwise=True)
def poisson_logpmf(g, ans, k, mu, loc=0):
    return undefined_gradient(g), g * ((k - loc) / mu - 1), undefined_gradient(g)


@vjp(st.poisson.pmf, elementwise=True)
def poisson_pmf(g, ans, k, mu, loc=0):
    return undefined_gradient(g), g * ans * ((k - loc) / mu - 1), undefined_gradient(g)


@vjp(st.poisson.cdf, elementwise=True)
def poisson_cdf(g, ans, k, mu, loc=0):
    # d/dmu P(K <= k) = -pmf(floor(k)), 0 below the support
    j = np.floor(k - loc)
    density = np.exp(special_xlogy(j, mu) - mu - special_gammaln(np.maximum(j, 0) + 1)) * (j >= 0)
    return undefined_gradient(g), -g * density, undefined_gradient(g)


@vjp(st.poisson.sf, elementwise=True)
def poisson_sf(g, ans, k, mu, loc=0):
    j = np.floor(k - loc)
    density = np.exp(special_xlogy(j, mu) - mu - special_gammaln(np.maximum(j, 0) + 1)) * (j >= 0)
    return undefined_gradient(g), g * density, undefined_gradient(g)


@vjp(st.binom.logpmf, elementwise=True)
def binom_logpmf(g, ans, k, n, p, loc=0):
    j = k - loc
    return (
        undefined_gradient(g),
        undefined_gradient(g),
        g * (j / p - (n - j) / (1 - p)),
        undefined_gradient(g),
    )


@vjp(st.binom.pmf, elementwise=True)
def binom_pmf(g, ans, k, n, p, loc=0):
    j = k - loc
    slope = g * ans * (j / p - (n - j) / (1 - p))
    return undefined_gradient(g), undefined_gradient(g), slope, undefined_gradient(g)


@vjp(st.binom.cdf, elementwise=True)
def binom_cdf(g, ans, k, n, p, loc=0):
    # d/dp P(K <= j) = -n * pmf(j; n - 1, p) for 0 <= j < n, 0 elsewhere
    j = np.clip(np.floor(k - loc), 0, n - 1)
    log_pmf = (
        special_gammaln(n)
        - special_gammaln(j + 1)
        - special_gammaln(n - j)
        + special_xlogy(j, p)
        + special_xlog1py(n - 1 - j, -p)
    )
    inside = (k - loc >= 0) * (k - loc < n)
    slope = -g * n * np.exp(log_pmf) * inside
    return undefined_gradient(g), undefined_gradient(g), slope, undefined_gradient(g)


@vjp(st.binom.sf, elementwise=True)
def binom_sf(g, ans, k, n, p, loc=0):
    j = np.clip(np.floor(k - loc), 0, n - 1)
    log_pmf = (
        special_gammaln(n)
        - special_gammaln(j + 1)
        - special_gammaln(n - j)
        + special_xlogy(j, p)
        + special_xlog1py(n - 1 - j, -p)
    )
    inside = (k - loc >= 0) * (k - loc < n)
    slope = g * n * np.exp(log_pmf) * inside
    return undefined_gradient(g), undefined_gradient(g), slope, undefined_gradient(g)


@vjp(st.bernoulli.logpmf, elementwise=True)
def bernoulli_logpmf(g, ans, k, p, loc=0):
    j = k - loc
    return undefined_gradient(g), g * (j / p - (1 - j) / (1 - p)), undefined_gradient(g)


@vjp(st.bernoulli.pmf, elementwise=True)
def bernoulli_pmf(g, ans, k, p, loc=0):
    j = k - loc
    return undefined_gradient(g), g * ans * (j / p - (1 - j) / (1 - p)), undefined_gradient(g)


@vjp(st.bernoulli.cdf, elementwise=True)
def bernoulli_cdf(g, ans, k, p, loc=0):
    # 1 - p on [0, 1), constant elsewhere
    inside = np.where((k - loc >= 0) * (k - loc < 1), 1.0, 0.0)
    return undefined_gradient(g), -g * inside, undefined_gradient(g)


@vjp(st.bernoulli.sf, elementwise=True)
def bernoulli_sf(g, ans, k, p, loc=0):
    inside = np.where((k - loc >= 0) * (k - loc < 1), 1.0, 0.0)
    return undefined_gradient(g), g * inside, undefined_gradient(g)

# the multivariate distributions, through definitions (runtime/scipy_definitions.py)
from .. import scipy_definitions  # noqa: E402, F401
