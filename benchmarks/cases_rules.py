"""Benchmarks of single NumPy rules (issue 17): each gradient against the derivative a person
writes by hand with NumPy, the issue's target being 1.5x. Included in `cases.CASES`."""

from __future__ import annotations

import numpy as np

from .cases import Case

# ---- sort: the adjoint is a scatter by the argsort ---------------------------------------------


def sorted_weighted(x, w):
    return np.sum(np.sort(x) * w)


def sorted_weighted_by_hand(x, w):
    g = np.empty_like(x)
    g[np.argsort(x, kind="stable")] = w
    return g


def _sort_args(small=False):
    rng = np.random.default_rng(0)
    n = 8 if small else 100_000
    return rng.normal(size=n), np.linspace(0.0, 1.0, n)


# ---- tensordot ------------------------------------------------------------------------------


def tensordot_energy(a, b):
    return np.sum(np.tensordot(a, b, axes=([1, 2], [0, 1])) ** 2)


def tensordot_energy_by_hand(a, b):
    c2 = 2.0 * np.tensordot(a, b, axes=([1, 2], [0, 1]))
    return np.tensordot(c2, b, axes=([1], [2])), np.tensordot(a, c2, axes=([0], [0]))


def _tensordot_args(small=False):
    rng = np.random.default_rng(1)
    n = 2 if small else 48
    return rng.normal(size=(n, 32, 16)), rng.normal(size=(32, 16, n))


# ---- cumprod: exact through zeros, and still one pass ------------------------------------------


def survival(p):
    return np.sum(np.cumprod(p, axis=1))


def survival_by_hand(p):
    # the textbook adjoint (right when no element is 0, as here)
    c = np.cumprod(p, axis=1)
    return np.flip(np.cumsum(np.flip(c, 1), axis=1), 1) / p


def _survival_args(small=False):
    rng = np.random.default_rng(2)
    return (rng.uniform(0.9, 1.0, size=(2, 3) if small else (200, 500)),)


# ---- take_along_axis: the log-probabilities of the true labels ---------------------------------


def true_class_log_likelihood(log_p, labels):
    return np.sum(np.take_along_axis(log_p, labels[:, None], axis=1) * 0.5)


def true_class_log_likelihood_by_hand(log_p, labels):
    g = np.zeros_like(log_p)
    np.add.at(g, (np.arange(len(labels)), labels), 0.5)
    return g


def _classifier_args(small=False):
    rng = np.random.default_rng(3)
    n, k = (4, 3) if small else (2000, 100)
    return rng.normal(size=(n, k)), rng.integers(0, k, size=n)


# ---- scipy.special and scipy.stats: a Poisson likelihood, a mixture, a Gaussian prior ----------

try:  # SciPy is optional (the dev extra installs it)
    import scipy.stats
    from scipy.special import digamma, gammaln, logsumexp, softmax
except ImportError:  # pragma: no cover
    scipy = None


def shape_likelihood(a, y):
    return np.sum(gammaln(a + y) - gammaln(a))


def shape_likelihood_by_hand(a, y):
    return digamma(a + y) - digamma(a)


def _shape_args(small=False):
    rng = np.random.default_rng(4)
    n = 8 if small else 100_000
    return rng.uniform(0.5, 5.0, n), rng.poisson(3.0, n).astype(float)


def mixture_log_likelihood(scores):
    return np.sum(logsumexp(scores, axis=1))


def mixture_log_likelihood_by_hand(scores):
    return softmax(scores, axis=1)


def _mixture_args(small=False):
    rng = np.random.default_rng(5)
    return (rng.normal(size=(4, 3) if small else (20_000, 10)),)


def gaussian_prior(w, scale):
    return np.sum(scipy.stats.norm.logpdf(w, 0.0, scale))


def gaussian_prior_by_hand(w, scale):
    return -w / scale**2


def _prior_args(small=False):
    rng = np.random.default_rng(6)
    return rng.normal(size=8 if small else 100_000), 1.5


SCIPY_CASES = (
    Case(
        name="gammaln",
        fn=shape_likelihood,
        wrt=0,
        make_args=_shape_args,
        by_hand=shape_likelihood_by_hand,
        description="scipy.special.gammaln in a negative-binomial shape, n = 100,000",
        ratio_target=1.5,
    ),
    Case(
        name="logsumexp",
        fn=mixture_log_likelihood,
        wrt=0,
        make_args=_mixture_args,
        by_hand=mixture_log_likelihood_by_hand,
        description="scipy.special.logsumexp over rows of 20,000 x 10",
        ratio_target=1.5,
    ),
    Case(
        name="norm.logpdf",
        fn=gaussian_prior,
        wrt=0,
        make_args=_prior_args,
        by_hand=gaussian_prior_by_hand,
        description="scipy.stats.norm.logpdf of n = 100,000 weights",
        ratio_target=1.5,
    ),
)

RULE_CASES = (
    Case(
        name="sort",
        fn=sorted_weighted,
        wrt=0,
        make_args=_sort_args,
        by_hand=sorted_weighted_by_hand,
        description="np.sort of n = 100,000 times fixed weights",
        ratio_target=1.5,
    ),
    Case(
        name="tensordot",
        fn=tensordot_energy,
        wrt=(0, 1),
        make_args=_tensordot_args,
        by_hand=tensordot_energy_by_hand,
        description="np.tensordot over two axes, (48, 32, 16) x (32, 16, 48), d/d(a, b)",
        ratio_target=1.5,
    ),
    Case(
        name="cumprod",
        fn=survival,
        wrt=0,
        make_args=_survival_args,
        by_hand=survival_by_hand,
        description="np.cumprod along rows of a 200 x 500 array of probabilities",
        ratio_target=1.5,
    ),
    Case(
        name="take_along_axis",
        fn=true_class_log_likelihood,
        wrt=0,
        make_args=_classifier_args,
        by_hand=true_class_log_likelihood_by_hand,
        description="log-probabilities picked by labels, 2000 x 100",
        ratio_target=1.5,
    ),
)
if scipy is not None:
    RULE_CASES += SCIPY_CASES
