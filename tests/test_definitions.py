"""NumPy functions differentiated through their definitions (`runtime/definitions.py`):
statistics, quantiles, NaN-skipping reductions, the trapezoidal rule, covariance.

Each case is a function written as a user writes it. The definition's value must be NumPy's
(so differentiating it differentiates the real function), and every derivative is checked
against central differences: reverse and forward mode and second order (`check_grads`).
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient
from s2sgrad.runtime.definitions import DEFINITIONS

import s2sgrad as sg
from s2sgrad.checks import check_grads

RNG = np.random.default_rng(7)
A = RNG.normal(size=(3, 5))
V = RNG.normal(size=6)
W = RNG.uniform(0.5, 1.5, size=5)
X = np.cumsum(RNG.uniform(0.2, 0.6, size=5))


def quantile_of_vector(v, q):
    return np.quantile(v, q) * 2.0


def quantiles_along_an_axis(a):
    return np.sum(np.quantile(a, [0.2, 0.7], axis=1, keepdims=True) ** 2)


def median_and_percentile(a):
    return np.sum(np.median(a, axis=0) ** 2) + np.percentile(a, 40.0)


def ranges(a):
    return np.sum(np.ptp(a, axis=1) ** 2) + np.ptp(a)


def nan_skipping(a):
    b = np.where(a > 1.2, np.nan, a)
    return np.nansum(b**2) + np.nanmean(b) + np.nanmax(b) * np.nanmin(b)


def weighted_average(a, w):
    return np.average(a, axis=1, weights=w) @ np.arange(3.0) + np.average(a)


def trapezoid_rules(a, x):
    return np.sum(np.trapezoid(a**2, x)) + np.trapezoid(a[0], dx=x[1])


def covariance(a):
    return np.sum(np.cov(a) ** 2) + np.sum(np.cov(a, rowvar=False, bias=True))


def correlation(a):
    return np.sum(np.corrcoef(a) ** 3)


TALL = RNG.normal(size=(5, 3)) + 2.0 * np.eye(5, 3)
SQUARE3 = RNG.normal(size=(3, 3)) * 0.4 + np.eye(3)
B = RNG.normal(size=5)


def pseudo_inverse_and_least_squares(a, b):
    x, residuals, rank, singular = np.linalg.lstsq(a, b, rcond=None)
    return np.sum(np.linalg.pinv(a) ** 2) + np.sum(x**3) + np.sum(residuals) + rank * singular[0]


def matrix_powers(a):
    return np.sum(np.linalg.matrix_power(a, 3)) + np.sum(np.linalg.matrix_power(a, -2))


def chained_product(a, b):
    return np.sum(np.linalg.multi_dot([a, b, a]) ** 2)


CASES = [
    (pseudo_inverse_and_least_squares, (TALL, B)),
    (matrix_powers, (SQUARE3,)),
    (chained_product, (TALL, TALL.T.copy())),
    (quantile_of_vector, (V, 0.35)),
    (quantiles_along_an_axis, (A,)),
    (median_and_percentile, (A,)),
    (ranges, (A,)),
    (nan_skipping, (A,)),
    (weighted_average, (A, W)),
    (trapezoid_rules, (A, X)),
    (covariance, (A,)),
    (correlation, (A,)),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize(("f", "args"), CASES, ids=IDS)
def test_gradient_of_every_argument(f, args):
    wrt = tuple(range(len(args)))
    grads = sg.grad(f, wrt=wrt)(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for k in wrt:
        np.testing.assert_allclose(grads[k], numerical_gradient(f, args, k), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(("f", "args"), CASES, ids=IDS)
def test_forward_mode_and_second_order(f, args):
    tangents = tuple(np.ones_like(np.asarray(a)) if np.ndim(a) else 1.0 for a in args)
    value, tangent = sg.jvp(f, args, tangents)
    expected = sum(np.sum(numerical_gradient(f, args, k)) for k in range(len(args)))
    assert value == pytest.approx(f(*args))
    assert tangent == pytest.approx(expected, rel=1e-6, abs=1e-7)
    check_grads(f, args, order=2, rtol=1e-5, atol=1e-6)


VALUE_CASES = [
    (np.linalg.pinv, (TALL,), {}),
    (np.linalg.pinv, (np.outer(B, B),), {"rcond": 1e-10}),
    (np.linalg.matrix_power, (SQUARE3, 5), {}),
    (np.linalg.matrix_power, (SQUARE3, -3), {}),
    (np.linalg.matrix_power, (SQUARE3, 0), {}),
    (np.linalg.multi_dot, ([TALL, TALL.T, TALL],), {}),
    (np.quantile, (A, 0.3), {}),
    (np.quantile, (A, [0.1, 0.9]), {"axis": 0, "keepdims": True}),
    (np.quantile, (A, np.array([[0.2], [0.5]])), {"axis": -1}),
    (np.percentile, (V, 73.0), {}),
    (np.median, (A,), {"axis": 1, "keepdims": True}),
    (np.median, (V,), {}),
    (np.ptp, (A,), {"axis": 0, "keepdims": True}),
    (np.nanmean, (np.where(A > 1.0, np.nan, A),), {"axis": 1}),
    (np.nanmax, (np.where(A > 1.0, np.nan, A),), {"keepdims": True}),
    (np.average, (A,), {"axis": 0, "weights": A**2}),
    (np.average, (A,), {"weights": A**2, "keepdims": True}),
    (np.trapezoid, (A,), {"axis": 0, "dx": 0.5}),
    (np.trapezoid, (A, A**2), {}),
    (np.cov, (A,), {"ddof": 2}),
    (np.cov, (V, V**2), {}),
    (np.cov, (A[0],), {}),
    (np.corrcoef, (A,), {"rowvar": False}),
]


@pytest.mark.parametrize(("function", "args", "kwargs"), VALUE_CASES)
def test_definitions_compute_what_numpy_computes(function, args, kwargs):
    definition = DEFINITIONS[function]
    np.testing.assert_allclose(
        definition(*args, **kwargs), function(*args, **kwargs), rtol=1e-10, atol=1e-12
    )


def test_lstsq_returns_what_numpy_returns():
    for a, b in [(TALL, B), (TALL, np.stack([B, B**2], axis=1)), (TALL[:2], B[:2])]:
        mine, theirs = DEFINITIONS[np.linalg.lstsq](a, b), np.linalg.lstsq(a, b)
        for got, want in zip(mine, theirs, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def quantile_nearest(v):
    return np.quantile(v, 0.5, method="nearest")


def test_other_quantile_methods_are_a_clear_error():
    with pytest.raises(NotImplementedError, match="method='linear' only"):
        sg.grad(quantile_nearest)(V)
