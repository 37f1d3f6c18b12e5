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
    by_function = {p: (f, d) for p, f, d in entries}
    entries += [(helper, *by_function[wrapped]) for helper, wrapped in helpers.items()]
    return [Symbolic(p, f, d) for p, f, d in entries]


def _rows() -> list:
    return _special_rows()


def _formulas() -> list:
    return _special_formulas()


SCIPY = Deferred(_rows)
SCIPY_SYMBOLIC = Deferred(_formulas)
SCIPY_NONDIFFERENTIABLE: list = []
if sc is not None:
    from s2sgrad import runtime as _runtime

    SCIPY_NONDIFFERENTIABLE += [_runtime.undefined_gradient, _runtime.ones_if_none]
