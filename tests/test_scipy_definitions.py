"""scipy.stats' multivariate distributions, differentiated through definitions
(`runtime/scipy_definitions.py`): values equal to SciPy's, derivatives against central
differences in reverse and forward mode and to second order."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient

scipy_stats = pytest.importorskip("scipy.stats")

import s2sgrad as sg  # noqa: E402
from s2sgrad.checks import check_grads  # noqa: E402

RNG = np.random.default_rng(5)
_A = RNG.normal(size=(3, 3))
COV = _A @ _A.T + 3.0 * np.eye(3)
POINTS = RNG.normal(size=(4, 3))
MEAN = RNG.normal(size=3)
SIMPLEX = np.array([0.2, 0.3, 0.5])
ALPHA = np.array([1.5, 2.0, 3.0])


def gaussian_log_likelihood(x, mean, cov):
    return np.sum(scipy_stats.multivariate_normal.logpdf(x, mean=mean, cov=cov))


def gaussian_density_diagonal(x, mean, variances):
    return np.sum(scipy_stats.multivariate_normal.pdf(x, mean, variances))


def dirichlet_prior(alpha, x):
    return scipy_stats.dirichlet.logpdf(x, alpha) + scipy_stats.dirichlet.pdf(x, alpha)


CASES = [
    (gaussian_log_likelihood, (POINTS, MEAN, COV)),
    (gaussian_density_diagonal, (POINTS, MEAN, np.array([1.0, 2.0, 3.0]))),
    (dirichlet_prior, (ALPHA, SIMPLEX)),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize(("f", "args"), CASES, ids=IDS)
def test_derivatives_in_every_mode(f, args):
    wrt = (0, 1, 2) if len(args) == 3 else (0,)  # (x of dirichlet lives on the simplex)
    grads = sg.grad(f, wrt=wrt)(*args)
    for k, got in zip(wrt, grads, strict=True):
        np.testing.assert_allclose(got, numerical_gradient(f, args, k), rtol=1e-6, atol=1e-8)
    tangents = tuple(np.ones_like(a) if k in wrt else np.zeros_like(a) for k, a in enumerate(args))
    expected = sum(np.sum(numerical_gradient(f, args, k)) for k in wrt)
    assert sg.jvp(f, args, tangents)[1] == pytest.approx(expected, rel=1e-6)
    check_grads(f, args, order=2, wrt=wrt, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(
    ("x", "mean", "cov"),
    [
        (POINTS, MEAN, COV),
        (POINTS[0], MEAN, COV),
        (POINTS, MEAN, np.array([1.0, 2.0, 3.0])),
        (POINTS, None, COV),
        (POINTS, MEAN, 1.5),
        (0.3, 0.1, 2.0),
        (np.array([0.3, 0.5]), None, 2.0),
    ],
)
def test_multivariate_normal_values_are_scipys(x, mean, cov):
    from s2sgrad.runtime.scipy_definitions import multivariate_normal_logpdf

    expected = scipy_stats.multivariate_normal.logpdf(x, mean=mean, cov=cov)
    np.testing.assert_allclose(multivariate_normal_logpdf(x, mean, cov), expected, rtol=1e-12)


def test_dirichlet_values_are_scipys():
    from s2sgrad.runtime.scipy_definitions import dirichlet_logpdf

    columns = np.stack([SIMPLEX, SIMPLEX[::-1]], axis=1)
    for x in (SIMPLEX, columns):
        expected = scipy_stats.dirichlet.logpdf(x, ALPHA)
        np.testing.assert_allclose(dirichlet_logpdf(x, ALPHA), expected, rtol=1e-12)


def singular_gaussian(x):
    return scipy_stats.multivariate_normal.logpdf(x, cov=np.eye(3), allow_singular=True)


def test_allow_singular_is_a_clear_error():
    with pytest.raises(NotImplementedError, match="allow_singular=False"):
        sg.grad(singular_gaussian)(MEAN)
