"""Rows of the rule table (`tests/rule_table.py` explains a row) for scipy.special and
scipy.stats, with their sympy formulas and the SciPy functions that carry no derivative.

`tests/rule_table.py` imports this module before it defines `Row` and `Symbolic`, and spreads
`SCIPY` and `SCIPY_SYMBOLIC` into its tables after defining them: so the two are `Deferred`
lists, built on first iteration, by then from the finished classes. Without SciPy they are
empty.

Sympy knows the derivatives of ``loggamma``, ``polygamma``, ``erfinv``, the Bessel functions,
...; `lambdify` has no NumPy spelling for several of them, so each is given SciPy's
implementation (lambdify's ``_imp_``), which evaluates sympy's derivative, not ours. An argument
whose derivative has no closed form (a Bessel order, ``betainc``'s shapes) enters a formula
through `NoDerivative`: sympy then gives NaN there, as the rule's `undefined_gradient` does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import sympy as sp

try:
    import scipy.special as sc
    import scipy.stats as st
except ImportError:  # SciPy is optional: no rows
    sc = st = None

POSITIVE = (0.5, 2.0)
UNARY = (((3,),), ((),))
BINARY = (((3,), (3,)), ((2, 1), (3,)), ((), ()))
SCALAR_PAIR = (((), ()),)
SHAPES = np.array([0.5, 1.0, 2.5])


class Deferred:
    """A list made by `build` when first iterated (empty without SciPy)."""

    def __init__(self, build: Callable[[], list]) -> None:
        self._build = build
        self._items: list | None = None

    def __iter__(self) -> Iterator:
        if self._items is None:
            self._items = self._build() if sc is not None else []
        return iter(self._items)

    def __len__(self) -> int:
        return len(list(iter(self)))


class NoDerivative(sp.Function):
    """The identity, whose derivative sympy reports as NaN (see the module docstring)."""

    _imp_ = staticmethod(lambda v: v)

    def fdiff(self, argindex=1):
        return sp.nan


def _give_sympy_scipy_implementations() -> None:
    for function, implementation in (
        (sp.polygamma, sc.polygamma),
        (sp.loggamma, sc.gammaln),
        (sp.erfinv, sc.erfinv),
        (sp.erfcinv, sc.erfcinv),
        (sp.besseli, sc.iv),
        (sp.besselj, sc.jv),
        (sp.bessely, sc.yv),
    ):
        function._imp_ = staticmethod(implementation)


# -- scipy.special -------------------------------------------------------------------------------


def _mixed_signs(rng, shape):
    """Weights of both signs whose weighted sum stays positive for exponents in +-0.5."""
    return np.broadcast_to([3.0, -0.5, 2.0, -0.2], shape) * rng.uniform(0.9, 1.1, shape)


def _special_rows() -> list:
    from rule_table import Row

    from s2sgrad import runtime

    rows = []
    for unary, domain in (
        ((sc.gammaln, sc.digamma, sc.gamma, sc.rgamma), POSITIVE),
        ((runtime.special_gammaln, runtime.special_digamma), POSITIVE),
        ((sc.erf, sc.erfc, sc.erfcx, sc.ndtr, sc.log_ndtr), (-2.0, 2.0)),
        ((sc.expit, sc.log_expit, runtime.special_expit), (-2.0, 2.0)),
        ((sc.erfinv,), (-0.9, 0.9)),
        ((sc.erfcinv,), (0.1, 1.9)),
        ((sc.ndtri, sc.logit), (0.05, 0.95)),
        ((sc.entr,), POSITIVE),
        ((sc.i0, sc.i1, sc.i0e, sc.i1e, sc.j0, sc.j1), (-3.0, 3.0)),
        ((sc.y0, sc.y1), POSITIVE),
    ):
        rows += [Row(p, UNARY, domain=domain) for p in unary]
    for binary, domain in (
        ((sc.betaln, sc.beta, runtime.special_betaln), POSITIVE),
        ((sc.xlogy, sc.xlog1py, runtime.special_xlogy, runtime.special_xlog1py), (0.2, 2.0)),
        ((sc.rel_entr,), POSITIVE),
    ):
        rows += [Row(p, BINARY, domain=domain) for p in binary]
    orders = (
        (sc.polygamma, 1),
        (sc.polygamma, 2),
        (runtime.special_polygamma, 1),
        (sc.iv, 1.5),
        (sc.ive, 1.5),
        (sc.jv, 1.5),
        (sc.yv, 1.5),
        (sc.yn, 2),
        (runtime.special_iv, 1),
        (runtime.special_ive, 1),
        (runtime.special_jv, 0.5),
        (runtime.special_yv, 2.5),
    )
    for p, order in orders:
        rows.append(Row(p, UNARY, args=lambda x, order=order: (order, x), domain=POSITIVE))
    rows += [
        Row(sc.multigammaln, UNARY, args=lambda a: (a, 3), domain=(1.5, 3.0)),
        # (shape parameters as constants: differentiating with respect to one is refused)
        *[
            Row(p, UNARY, args=lambda x, a=a: (a, x), domain=(0.2, 3.0))
            for p in (sc.gammainc, sc.gammaincc)
            for a in (1.7, np.array([0.5, 1.0, 2.5]))
        ],
        Row(sc.betainc, UNARY, args=lambda x: (0.7, np.array(2.5), x), domain=(0.1, 0.9)),
        Row(sc.betainc, (((3,),),), args=lambda x: (SHAPES, 1.5, x), domain=(0.1, 0.9)),
        *[
            Row(p, (((3, 4),),), kwargs=kw)
            for p in (sc.logsumexp, sc.softmax, sc.log_softmax)
            for kw in ({}, {"axis": 1}, {"axis": 0})
        ],
        Row(sc.logsumexp, (((3, 4),), ((5,),)), kwargs={"axis": -1, "keepdims": True}),
        Row(sc.logsumexp, (((3, 4),),), args=lambda a: (a, 1, np.linspace(0.5, 2.0, 3)[:, None])),
        # weights b, differentiated: same shape, broadcast, negative ones (a positive sum)
        *[
            Row(sc.logsumexp, shapes, args=lambda a, b, k=axis: (a, k, b), kwargs=kw, domain=domain)
            for axis, kw in ((None, {}), (1, {}), (0, {"keepdims": True}), ((0, 1), {}))
            for shapes, domain in (
                ((((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 4), (1, 4))), ((-2.0, 2.0), (0.5, 2.0))),
            )
        ],
        Row(
            sc.logsumexp,
            (((3, 4), (3, 4)),),
            args=lambda a, b: (a, 1, b),
            domain=((-0.5, 0.5), _mixed_signs),
        ),
        *[
            Row(runtime.logsumexp_slopes, shapes, args=lambda a, b, k=axis: (a, k, b), domain=dom)
            for axis in (None, 1, 0)
            for shapes, dom in (((((3, 4), (3, 4)), ((3, 4), (4,))), ((-2.0, 2.0), (0.5, 2.0))),)
        ],
        Row(runtime.ones_if_none, UNARY),
        *[
            Row(runtime.logsumexp_slopes, (((3, 4),),), args=lambda a, k=axis: (a, k))
            for axis in (None, 1)
        ],
    ]
    return rows


def _special_formulas() -> list:
    from rule_table import Symbolic

    _give_sympy_scipy_implementations()
    one, two = (1.0, 1.0), (2.0, 2.0)  # integer orders, drawn as floats
    entries = [
        (sc.gammaln, sp.loggamma, POSITIVE),
        (sc.digamma, lambda x: sp.polygamma(0, x), POSITIVE),
        (sc.polygamma, lambda n, x: sp.polygamma(NoDerivative(n), x), (one, POSITIVE)),
        (sc.gamma, sp.gamma, POSITIVE),
        (sc.rgamma, lambda x: 1 / sp.gamma(x), POSITIVE),
        (sc.betaln, lambda a, b: sp.log(sp.beta(a, b)), POSITIVE),
        (sc.beta, sp.beta, POSITIVE),
        (
            sc.gammainc,
            lambda a, x: sp.lowergamma(NoDerivative(a), x) / sp.gamma(NoDerivative(a)),
            ((0.5, 3.0), POSITIVE),
        ),
        (
            sc.gammaincc,
            lambda a, x: sp.uppergamma(NoDerivative(a), x) / sp.gamma(NoDerivative(a)),
            ((0.5, 3.0), POSITIVE),
        ),
        (
            sc.betainc,
            lambda a, b, x: sp.betainc_regularized(NoDerivative(a), NoDerivative(b), 0, x),
            (POSITIVE, POSITIVE, (0.1, 0.9)),
        ),
        (sc.erf, sp.erf, (-2.0, 2.0)),
        (sc.erfc, sp.erfc, (-2.0, 2.0)),
        (sc.erfcx, lambda x: sp.exp(x**2) * sp.erfc(x), (-2.0, 2.0)),
        (sc.erfinv, sp.erfinv, (-0.9, 0.9)),
        (sc.erfcinv, sp.erfcinv, (0.1, 1.9)),
        (sc.ndtr, lambda x: (1 + sp.erf(x / sp.sqrt(2))) / 2, (-2.0, 2.0)),
        (sc.log_ndtr, lambda x: sp.log((1 + sp.erf(x / sp.sqrt(2))) / 2), (-2.0, 2.0)),
        (sc.ndtri, lambda p: sp.sqrt(2) * sp.erfinv(2 * p - 1), (0.05, 0.95)),
        (sc.expit, lambda x: 1 / (1 + sp.exp(-x)), (-2.0, 2.0)),
        (sc.logit, lambda p: sp.log(p / (1 - p)), (0.05, 0.95)),
        (sc.log_expit, lambda x: -sp.log(1 + sp.exp(-x)), (-2.0, 2.0)),
        (sc.xlogy, lambda x, y: x * sp.log(y), (0.2, 2.0)),
        (sc.xlog1py, lambda x, y: x * sp.log(1 + y), (0.2, 2.0)),
        (sc.entr, lambda x: -x * sp.log(x), POSITIVE),
        (sc.rel_entr, lambda x, y: x * sp.log(x / y), POSITIVE),
        (sc.i0, lambda x: sp.besseli(0, x), (-3.0, 3.0)),
        (sc.i1, lambda x: sp.besseli(1, x), (-3.0, 3.0)),
        (sc.i0e, lambda x: sp.besseli(0, x) * sp.exp(-sp.Abs(x)), (-3.0, 3.0)),
        (sc.i1e, lambda x: sp.besseli(1, x) * sp.exp(-sp.Abs(x)), (-3.0, 3.0)),
        (sc.iv, lambda v, x: sp.besseli(NoDerivative(v), x), ((0.5, 2.5), POSITIVE)),
        (
            sc.ive,
            lambda v, x: sp.besseli(NoDerivative(v), x) * sp.exp(-sp.Abs(x)),
            ((0.5, 2.5), POSITIVE),
        ),
        (sc.j0, lambda x: sp.besselj(0, x), (-3.0, 3.0)),
        (sc.j1, lambda x: sp.besselj(1, x), (-3.0, 3.0)),
        (sc.jv, lambda v, x: sp.besselj(NoDerivative(v), x), ((0.5, 2.5), POSITIVE)),
        (sc.y0, lambda x: sp.bessely(0, x), POSITIVE),
        (sc.y1, lambda x: sp.bessely(1, x), POSITIVE),
        (sc.yv, lambda v, x: sp.bessely(NoDerivative(v), x), ((0.5, 2.5), POSITIVE)),
        (sc.yn, lambda n, x: sp.bessely(NoDerivative(n), x), (two, POSITIVE)),
    ]
    from s2sgrad import runtime

    helpers = {
        runtime.special_gammaln: sc.gammaln,
        runtime.special_digamma: sc.digamma,
        runtime.special_polygamma: sc.polygamma,
        runtime.special_betaln: sc.betaln,
        runtime.special_expit: sc.expit,
        runtime.special_xlogy: sc.xlogy,
        runtime.special_xlog1py: sc.xlog1py,
        runtime.special_iv: sc.iv,
        runtime.special_ive: sc.ive,
        runtime.special_jv: sc.jv,
        runtime.special_yv: sc.yv,
    }
    entries.append((runtime.ones_if_none, lambda b: b, (-2.0, 2.0)))
    by_function = {p: (f, d) for p, f, d in entries}
    entries += [(helper, *by_function[wrapped]) for helper, wrapped in helpers.items()]
    return [Symbolic(p, f, d) for p, f, d in entries]


# -- scipy.stats ---------------------------------------------------------------------------------

LOC_SCALE = (((3,), (), ()), ((), (), ()))
WITH_SHAPE = (((3,), (), (), ()), ((), (), (), ()))
COUNTS = np.array([0.0, 1.0, 3.0])
SHAPE_CONSTANTS = {4: (2.5,), 5: (2.5, 1.7)}  # by arity: t's df, gamma's a; beta's a, b


def _nan_tagged(*values):
    """0 with a NaN derivative in each of `values` (integer arguments of discrete laws)."""
    return sum(NoDerivative(v) - v for v in values)


def _z(x, loc, scale):
    return (x - loc) / scale


def _registered(method):
    """The bound method the registry holds for `method`: each access to ``st.norm.logpdf``
    makes a new (equal) object, and the meta-tests match rows to rules by identity."""
    from s2sgrad.runtime import registry

    return registry.lookup(method).primitive


def _stats_entries() -> list:
    """(method, formula, domain per argument): the elementwise rules, with sympy formulas."""
    return [(_registered(m), f, d) for m, f, d in _stats_table()]


def _stats_table() -> list:
    real, loc, scale = (-2.0, 2.0), (-1.0, 1.0), POSITIVE
    right = ((0.8, 3.0), (-0.7, 0.7), scale)  # x - loc > 0: expon, and laplace off its kink
    pi = sp.pi

    def norm_log(x, m, s):
        return -(_z(x, m, s) ** 2) / 2 - sp.log(s) - sp.log(2 * pi) / 2

    def norm_cdf(x, m, s):
        return (1 + sp.erf(_z(x, m, s) / sp.sqrt(2))) / 2

    def logistic_log(x, m, s):
        z = _z(x, m, s)
        return -z - 2 * sp.log(1 + sp.exp(-z)) - sp.log(s)

    def t_log(x, v, m, s):
        z = _z(x, m, s)
        head = sp.loggamma((v + 1) / 2) - sp.loggamma(v / 2) - sp.log(v * pi) / 2
        return head - sp.log(s) - (v + 1) / 2 * sp.log(1 + z**2 / v)

    def t_sf(x, v, m, s):  # for z > 0
        z, v_ = _z(x, m, s), NoDerivative(v)
        return sp.betainc_regularized(v_ / 2, sp.Rational(1, 2), 0, v_ / (v_ + z**2)) / 2

    def gamma_log(x, a, m, s):
        z = _z(x, m, s)
        return (a - 1) * sp.log(z) - z - sp.loggamma(a) - sp.log(s)

    def gamma_cdf(x, a, m, s):
        return sp.lowergamma(NoDerivative(a), _z(x, m, s)) / sp.gamma(NoDerivative(a))

    def chi2_log(x, k, m, s):
        z = _z(x, m, s)
        return (k / 2 - 1) * sp.log(z) - z / 2 - k / 2 * sp.log(2) - sp.loggamma(k / 2) - sp.log(s)

    def chi2_cdf(x, k, m, s):
        half = NoDerivative(k) / 2
        return sp.lowergamma(half, _z(x, m, s) / 2) / sp.gamma(half)

    def beta_log(x, a, b, m, s):
        z = _z(x, m, s)
        return (a - 1) * sp.log(z) + (b - 1) * sp.log(1 - z) - sp.log(sp.beta(a, b)) - sp.log(s)

    def beta_cdf(x, a, b, m, s):
        return sp.betainc_regularized(NoDerivative(a), NoDerivative(b), 0, _z(x, m, s))

    def poisson_log(k, mu, m):
        j = NoDerivative(k) - NoDerivative(m)
        return j * sp.log(mu) - mu - sp.loggamma(j + 1)

    def poisson_cdf(k, mu, m):
        j = sp.floor(NoDerivative(k) - NoDerivative(m))
        return sp.uppergamma(j + 1, mu) / sp.gamma(j + 1) + _nan_tagged(k, m)

    def binom_log(k, n, p, m):
        j, n_ = NoDerivative(k) - NoDerivative(m), NoDerivative(n)
        choose = sp.loggamma(n_ + 1) - sp.loggamma(j + 1) - sp.loggamma(n_ - j + 1)
        return choose + j * sp.log(p) + (n_ - j) * sp.log(1 - p)

    def binom_cdf(k, n, p, m):
        j, n_ = sp.floor(NoDerivative(k) - NoDerivative(m)), NoDerivative(n)
        return sp.betainc_regularized(n_ - j, j + 1, 0, 1 - p) + _nan_tagged(k, m)

    def bernoulli_log(k, p, m):
        j = NoDerivative(k) - NoDerivative(m)
        return j * sp.log(p) + (1 - j) * sp.log(1 - p)

    shape_t = (real, (1.5, 5.0), loc, scale)
    shape_gamma = ((2.0, 4.0), (1.5, 3.0), (-0.5, 0.5), scale)
    shape_beta = ((0.3, 0.6), (1.5, 3.0), (1.5, 3.0), (-0.1, 0.1), (0.9, 1.1))
    count, zero = (3.0, 3.0), (0.0, 0.0)
    return [
        (st.norm.logpdf, norm_log, (real, loc, scale)),
        (st.norm.pdf, lambda *a: sp.exp(norm_log(*a)), (real, loc, scale)),
        (st.norm.cdf, norm_cdf, (real, loc, scale)),
        (st.norm.sf, lambda *a: 1 - norm_cdf(*a), (real, loc, scale)),
        (st.norm.logcdf, lambda *a: sp.log(norm_cdf(*a)), (real, loc, scale)),
        (st.norm.logsf, lambda *a: sp.log(1 - norm_cdf(*a)), (real, loc, scale)),
        (st.expon.logpdf, lambda x, m, s: -_z(x, m, s) - sp.log(s), right),
        (st.expon.pdf, lambda x, m, s: sp.exp(-_z(x, m, s)) / s, right),
        (st.expon.cdf, lambda x, m, s: 1 - sp.exp(-_z(x, m, s)), right),
        (st.expon.sf, lambda x, m, s: sp.exp(-_z(x, m, s)), right),
        (st.laplace.logpdf, lambda x, m, s: -sp.Abs(_z(x, m, s)) - sp.log(2 * s), right),
        (st.laplace.pdf, lambda x, m, s: sp.exp(-sp.Abs(_z(x, m, s))) / (2 * s), right),
        (st.laplace.cdf, lambda x, m, s: 1 - sp.exp(-_z(x, m, s)) / 2, right),
        (st.laplace.sf, lambda x, m, s: sp.exp(-_z(x, m, s)) / 2, right),
        (st.cauchy.logpdf, lambda x, m, s: -sp.log(pi * s * (1 + _z(x, m, s) ** 2)), right),
        (st.cauchy.pdf, lambda x, m, s: 1 / (pi * s * (1 + _z(x, m, s) ** 2)), right),
        (st.cauchy.cdf, lambda x, m, s: sp.Rational(1, 2) + sp.atan(_z(x, m, s)) / pi, right),
        (st.cauchy.sf, lambda x, m, s: sp.Rational(1, 2) - sp.atan(_z(x, m, s)) / pi, right),
        (st.logistic.logpdf, logistic_log, (real, loc, scale)),
        (st.logistic.pdf, lambda *a: sp.exp(logistic_log(*a)), (real, loc, scale)),
        (st.logistic.cdf, lambda x, m, s: 1 / (1 + sp.exp(-_z(x, m, s))), (real, loc, scale)),
        (st.logistic.sf, lambda x, m, s: 1 / (1 + sp.exp(_z(x, m, s))), (real, loc, scale)),
        (st.t.logpdf, t_log, shape_t),
        (st.t.pdf, lambda *a: sp.exp(t_log(*a)), shape_t),
        (st.t.cdf, lambda *a: 1 - t_sf(*a), ((0.8, 3.0), *shape_t[1:3], scale)),
        (st.t.sf, t_sf, ((0.8, 3.0), (1.5, 5.0), (-0.5, 0.5), scale)),
        (st.gamma.logpdf, gamma_log, shape_gamma),
        (st.gamma.pdf, lambda *a: sp.exp(gamma_log(*a)), shape_gamma),
        (st.gamma.cdf, gamma_cdf, shape_gamma),
        (st.gamma.sf, lambda *a: 1 - gamma_cdf(*a), shape_gamma),
        (st.chi2.logpdf, chi2_log, shape_gamma),
        (st.chi2.pdf, lambda *a: sp.exp(chi2_log(*a)), shape_gamma),
        (st.chi2.cdf, chi2_cdf, shape_gamma),
        (st.chi2.sf, lambda *a: 1 - chi2_cdf(*a), shape_gamma),
        (st.beta.logpdf, beta_log, shape_beta),
        (st.beta.pdf, lambda *a: sp.exp(beta_log(*a)), shape_beta),
        (st.beta.cdf, beta_cdf, shape_beta),
        (st.beta.sf, lambda *a: 1 - beta_cdf(*a), shape_beta),
        (st.poisson.logpmf, poisson_log, (count, (0.5, 3.0), zero)),
        (st.poisson.pmf, lambda *a: sp.exp(poisson_log(*a)), (count, (0.5, 3.0), zero)),
        (st.poisson.cdf, poisson_cdf, (count, (0.5, 3.0), zero)),
        (st.poisson.sf, lambda *a: 1 - poisson_cdf(*a), (count, (0.5, 3.0), zero)),
        (st.binom.logpmf, binom_log, (count, (10.0, 10.0), (0.2, 0.8), zero)),
        (st.binom.pmf, lambda *a: sp.exp(binom_log(*a)), (count, (10.0, 10.0), (0.2, 0.8), zero)),
        (st.binom.cdf, binom_cdf, (count, (10.0, 10.0), (0.2, 0.8), zero)),
        (st.binom.sf, lambda *a: 1 - binom_cdf(*a), (count, (10.0, 10.0), (0.2, 0.8), zero)),
        (st.bernoulli.logpmf, bernoulli_log, ((1.0, 1.0), (0.2, 0.8), zero)),
        (st.bernoulli.pmf, lambda *a: sp.exp(bernoulli_log(*a)), ((0.0, 0.0), (0.2, 0.8), zero)),
        (
            st.bernoulli.cdf,
            lambda k, p, m: 1 - p + _nan_tagged(k, m),
            ((0.5, 0.5), (0.2, 0.8), zero),
        ),
        (st.bernoulli.sf, lambda k, p, m: p + _nan_tagged(k, m), ((0.5, 0.5), (0.2, 0.8), zero)),
    ]


def _stats_rows() -> list:
    from rule_table import Row

    rows = []
    for method, _, domain in _stats_entries():
        if method.__self__ in (st.poisson, st.binom, st.bernoulli):
            continue
        shapes = {3: LOC_SCALE, 4: WITH_SHAPE, 5: (((3,), (), (), (), ()), ((),) * 5)}
        if method.__name__ in ("cdf", "sf") and len(domain) > 3:
            # (shape parameters as constants: differentiating with respect to one is refused)
            shape_args = SHAPE_CONSTANTS[len(domain)]
            rows.append(
                Row(
                    method,
                    LOC_SCALE,
                    args=lambda x, m, s, c=shape_args: (x, *c, m, s),
                    domain=(domain[0], *domain[-2:]),
                    tol=1e-5,
                )
            )
            continue
        rows.append(Row(method, shapes[len(domain)], domain=domain, tol=1e-5))
    for name in ("logpmf", "pmf", "cdf", "sf"):
        ones = np.array([-1.0, 0.5, 1.0] if name in ("cdf", "sf") else [0.0, 1.0, 1.0])
        rows += [
            Row(
                _registered(getattr(st.poisson, name)),
                UNARY,
                args=lambda mu: (COUNTS, mu),
                domain=(0.5, 3.0),
            ),
            Row(
                _registered(getattr(st.binom, name)),
                UNARY,
                args=lambda p: (np.array([0.0, 3.0, 10.0]), 10, p),
                domain=(0.2, 0.8),
            ),
            Row(
                _registered(getattr(st.bernoulli, name)),
                UNARY,
                args=lambda p, k=ones: (k, p),
                domain=(0.2, 0.8),
            ),
        ]
    return rows


def _stats_formulas() -> list:
    from rule_table import Symbolic

    return [Symbolic(p, f, d) for p, f, d in _stats_entries()]


def _rows() -> list:
    return _special_rows() + _stats_rows()


def _formulas() -> list:
    return _special_formulas() + _stats_formulas()


SCIPY = Deferred(_rows)
SCIPY_SYMBOLIC = Deferred(_formulas)
SCIPY_NONDIFFERENTIABLE: list = []
if sc is not None:
    from s2sgrad import runtime as _runtime

    SCIPY_NONDIFFERENTIABLE += [_runtime.undefined_gradient]
