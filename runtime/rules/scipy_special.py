"""Reverse rules of ``scipy.special``: gamma and beta functions, error functions, the logistic
family, log-sum-exp and softmax, entropies, Bessel functions.

Imported only once the program has imported ``scipy.special`` (`runtime/registry.py`), so
SciPy stays optional. The ufuncs are registered ``elementwise=True``: the compiler handles
broadcasting and derives their forward rules. Each template that needs another special
function calls its wrapper from `runtime/special_helpers.py`, and each wrapper shares the rule
of the function it wraps, so second derivatives work.

Arguments without a closed-form derivative -- the order of a Bessel function, the integer
order of ``polygamma`` and ``yn``, the shape parameters of ``gammainc``, ``gammaincc`` and
``betainc`` -- contribute `undefined_gradient`: differentiating with respect to one is a
`LookupError` when the function is transformed (as JAX raises for ``betainc``; autograd gives
no gradient there). Their other arguments are differentiated as usual.

Stability: ``log_ndtr``'s slope ``pdf / cdf`` is ``exp(-x**2 / 2 - ans) / sqrt(2 pi)``,
finite far in the lower tail where ``pdf`` and ``cdf`` both underflow; ``log_softmax`` uses
``exp(x - ans)`` and ``logsumexp`` ``exp(x - max x)`` (`logsumexp_slopes`), never ``exp(x)``;
``logsumexp``'s weights ``b`` are differentiated too (of either sign, with a positive
weighted sum; ``return_sign=True`` is refused when differentiating); ``log_expit``'s slope is
``expit(-x)``. ``scipy.special.sinc`` is ``numpy.sinc`` (its rule is NumPy's).
"""

import math

import numpy as np
import scipy.special as sc

from ..adjoint_helpers import unbroadcast, unreduce
from ..array_helpers import safe_divide
from ..registry import registry
from ..special_helpers import (
    logsumexp_slopes,
    logsumexp_slopes_tangent,
    logsumexp_slopes_tangent_tangent,
    logsumexp_tangent,
    logsumexp_tangent_tangent,
    ones_if_none,
    special_betaln,
    special_digamma,
    special_expit,
    special_gammaln,
    special_iv,
    special_ive,
    special_jv,
    special_polygamma,
    special_xlog1py,
    special_xlogy,
    special_yv,
    undefined_gradient,
)
from ..tangent_helpers import tangent_sum

vjp = registry.vjp
jvp = registry.jvp

# -- gamma and beta ------------------------------------------------------------------------------


@vjp(sc.gammaln, special_gammaln, elementwise=True)
def gammaln(g, ans, x):
    return g * special_digamma(x)


@vjp(sc.digamma, special_digamma, elementwise=True)
def digamma(g, ans, x):
    return g * special_polygamma(1, x)


@vjp(sc.polygamma, special_polygamma, elementwise=True)
def polygamma(g, ans, n, x):
    return undefined_gradient(g), g * special_polygamma(n + 1, x)


@vjp(sc.gamma, elementwise=True)
def gamma(g, ans, x):
    return g * ans * special_digamma(x)


@vjp(sc.rgamma, elementwise=True)
def rgamma(g, ans, x):
    return -g * ans * special_digamma(x)


@vjp(sc.betaln, special_betaln, elementwise=True)
def betaln(g, ans, a, b):
    both = special_digamma(a + b)
    return g * (special_digamma(a) - both), g * (special_digamma(b) - both)


@vjp(sc.beta, elementwise=True)
def beta(g, ans, a, b):
    both = special_digamma(a + b)
    return g * ans * (special_digamma(a) - both), g * ans * (special_digamma(b) - both)


@vjp(sc.gammainc, elementwise=True)
def gammainc(g, ans, a, x):
    # the density of a Gamma(a) variable at x
    density = np.exp(special_xlogy(a - 1, x) - x - special_gammaln(a))
    return undefined_gradient(g), g * density


@vjp(sc.gammaincc, elementwise=True)
def gammaincc(g, ans, a, x):
    density = np.exp(special_xlogy(a - 1, x) - x - special_gammaln(a))
    return undefined_gradient(g), -g * density


@vjp(sc.betainc, elementwise=True)
def betainc(g, ans, a, b, x):
    # the density of a Beta(a, b) variable at x
    log_density = special_xlogy(a - 1, x) + special_xlog1py(b - 1, -x) - special_betaln(a, b)
    return undefined_gradient(g), undefined_gradient(g), g * np.exp(log_density)


# -- error functions and the normal distribution ----------------------------------------------


@vjp(sc.erf, elementwise=True)
def erf(g, ans, x):
    return g * (2 / math.sqrt(math.pi)) * np.exp(-(x**2))


@vjp(sc.erfc, elementwise=True)
def erfc(g, ans, x):
    return -g * (2 / math.sqrt(math.pi)) * np.exp(-(x**2))


@vjp(sc.erfcx, elementwise=True)
def erfcx(g, ans, x):
    # erfcx = exp(x**2) erfc(x): 2 x erfcx(x) - 2 / sqrt(pi), no overflow for large x
    return g * (2 * x * ans - 2 / math.sqrt(math.pi))


@vjp(sc.erfinv, elementwise=True)
def erfinv(g, ans, x):
    return g * (math.sqrt(math.pi) / 2) * np.exp(ans**2)


@vjp(sc.erfcinv, elementwise=True)
def erfcinv(g, ans, x):
    return -g * (math.sqrt(math.pi) / 2) * np.exp(ans**2)


@vjp(sc.ndtr, elementwise=True)
def ndtr(g, ans, x):
    return g * np.exp(-(x**2) / 2) / math.sqrt(2 * math.pi)


@vjp(sc.log_ndtr, elementwise=True)
def log_ndtr(g, ans, x):
    # pdf / cdf without forming either: finite where both underflow (x << 0)
    return g * np.exp(-(x**2) / 2 - ans) / math.sqrt(2 * math.pi)


@vjp(sc.ndtri, elementwise=True)
def ndtri(g, ans, x):
    return g * math.sqrt(2 * math.pi) * np.exp(ans**2 / 2)


# -- logistic ------------------------------------------------------------------------------------


@vjp(sc.expit, special_expit, elementwise=True)
def expit(g, ans, x):
    return g * ans * (1 - ans)


@vjp(sc.logit, elementwise=True)
def logit(g, ans, x):
    return g / (x * (1 - x))


@vjp(sc.log_expit, elementwise=True)
def log_expit(g, ans, x):
    return g * special_expit(-x)


# -- log-sum-exp and softmax -------------------------------------------------------------------


@vjp(sc.logsumexp, reduction=True, broadcast_g=True)
def logsumexp(g, ans, a, axis=None, b=None, keepdims=False):
    # log S with S = sum(b exp(a)): slopes b exp(a) / S in a and exp(a) / S in b, from
    # `logsumexp_slopes`, which never reads ans (SciPy's logsumexp, slower than the gradient,
    # runs only where its value is used). return_sign=True is refused when differentiating
    spread = unreduce(g, a, axis, keepdims) * logsumexp_slopes(a, axis, b)
    return spread * ones_if_none(b), None, unbroadcast(spread, b)


@jvp(sc.logsumexp)
def logsumexp_jvp(tangents, ans, a, axis=None, b=None, keepdims=False):
    return logsumexp_tangent(tangents[0], tangents[2], a, axis, b, keepdims)


@jvp(logsumexp_tangent)
def logsumexp_tangent_jvp(tangents, ans, ta, tb, a, axis=None, b=None, keepdims=False):
    return logsumexp_tangent_tangent(
        tangents[0], tangents[1], tangents[2], tangents[4], ta, tb, a, axis, b, keepdims
    )


@jvp(logsumexp_slopes_tangent)
def logsumexp_slopes_tangent_jvp(tangents, ans, ta, tb, p, a, axis=None, b=None):
    return logsumexp_slopes_tangent_tangent(
        tangents[0], tangents[1], tangents[2], tangents[5], ta, tb, p, a, axis, b
    )


@vjp(logsumexp_slopes)
def logsumexp_slopes_(g, ans, a, axis=None, b=None):
    # p = exp(a) / S: dp_i/da_k = p_i (delta_ik - b_k p_k), dp_i/db_k = -p_i p_k
    gp = g * ans
    back = np.sum(gp, axis=axis, keepdims=True)
    return gp - ans * ones_if_none(b) * back, None, unbroadcast(-ans * back, b)


@jvp(logsumexp_slopes)
def logsumexp_slopes_jvp(tangents, ans, a, axis=None, b=None):
    return logsumexp_slopes_tangent(tangents[0], tangents[2], ans, a, axis, b)


@vjp(sc.multigammaln)
def multigammaln(g, ans, a, d):
    # sum over j = 1..d of digamma(a + (1 - j) / 2); the dimension d is an integer
    shifts = (1.0 - np.arange(1, d + 1)) / 2.0
    return g * np.sum(special_digamma(np.expand_dims(a, -1) + shifts), axis=-1), None


@jvp(sc.multigammaln)
def multigammaln_jvp(tangents, ans, a, d):
    shifts = (1.0 - np.arange(1, d + 1)) / 2.0
    return tangents[0] * np.sum(special_digamma(np.expand_dims(a, -1) + shifts), axis=-1)


@vjp(sc.softmax)
def softmax(g, ans, x, axis=None):
    return ans * (g - np.sum(g * ans, axis=axis, keepdims=True))


@jvp(sc.softmax)
def softmax_jvp(tangents, ans, x, axis=None):
    return ans * (tangents[0] - tangent_sum(tangents[0] * ans, x, axis, True))


@vjp(sc.log_softmax)
def log_softmax(g, ans, x, axis=None):
    return g - np.exp(ans) * np.sum(g, axis=axis, keepdims=True)


@jvp(sc.log_softmax)
def log_softmax_jvp(tangents, ans, x, axis=None):
    return tangents[0] - tangent_sum(tangents[0] * np.exp(ans), x, axis, True)


# -- x log y and entropies ---------------------------------------------------------------------


@vjp(sc.xlogy, special_xlogy, elementwise=True)
def xlogy(g, ans, x, y):
    return g * np.log(y), safe_divide(g * x, y)


@vjp(sc.xlog1py, special_xlog1py, elementwise=True)
def xlog1py(g, ans, x, y):
    return g * np.log1p(y), safe_divide(g * x, 1 + y)


@vjp(sc.entr, elementwise=True)
def entr(g, ans, x):
    return -g * (np.log(x) + 1)


@vjp(sc.rel_entr, elementwise=True)
def rel_entr(g, ans, x, y):
    return g * (np.log(x / y) + 1), -safe_divide(g * x, y)


# -- Bessel functions ------------------------------------------------------------------------------


@vjp(sc.i0, elementwise=True)
def i0(g, ans, x):
    return g * special_iv(1, x)


@vjp(sc.i1, elementwise=True)
def i1(g, ans, x):
    return g * (special_iv(0, x) + special_iv(2, x)) / 2


@vjp(sc.iv, special_iv, elementwise=True)
def iv(g, ans, v, x):
    return undefined_gradient(g), g * (special_iv(v - 1, x) + special_iv(v + 1, x)) / 2


@vjp(sc.i0e, elementwise=True)
def i0e(g, ans, x):
    return g * (special_ive(1, x) - np.sign(x) * ans)


@vjp(sc.i1e, elementwise=True)
def i1e(g, ans, x):
    return g * ((special_ive(0, x) + special_ive(2, x)) / 2 - np.sign(x) * ans)


@vjp(sc.ive, special_ive, elementwise=True)
def ive(g, ans, v, x):
    slope = (special_ive(v - 1, x) + special_ive(v + 1, x)) / 2 - np.sign(x) * ans
    return undefined_gradient(g), g * slope


@vjp(sc.j0, elementwise=True)
def j0(g, ans, x):
    return -g * special_jv(1, x)


@vjp(sc.j1, elementwise=True)
def j1(g, ans, x):
    return g * (special_jv(0, x) - special_jv(2, x)) / 2


@vjp(sc.jv, special_jv, elementwise=True)
def jv(g, ans, v, x):
    return undefined_gradient(g), g * (special_jv(v - 1, x) - special_jv(v + 1, x)) / 2


@vjp(sc.y0, elementwise=True)
def y0(g, ans, x):
    return -g * special_yv(1, x)


@vjp(sc.y1, elementwise=True)
def y1(g, ans, x):
    return g * (special_yv(0, x) - special_yv(2, x)) / 2


@vjp(sc.yn, sc.yv, special_yv, elementwise=True)
def yv(g, ans, v, x):
    return undefined_gradient(g), g * (special_yv(v - 1, x) - special_yv(v + 1, x)) / 2


registry.register_nondiff([undefined_gradient])


@vjp(ones_if_none, elementwise=True)
def ones_if_none_(g, ans, b):
    # the identity on weights that are given (differentiated: logsumexp's b)
    return g
