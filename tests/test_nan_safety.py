"""NaN-safe gradients (README, "NaN-safe gradients"): a branch ``np.where`` did not select
contributes exactly 0, and norms and standard deviations get the subgradient 0 at their kinks.

Every expected value is a closed form: the derivative of the branch that was selected.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import s2sgrad as sg


def masked_sqrt(x):
    return np.sum(np.where(x > 0, np.sqrt(x), 0.0))


def masked_sqrt_scalar(x):
    return np.where(x > 0, np.sqrt(x), 0.0)


def norm(x):
    return np.linalg.norm(x)


def norm_of(x, ord, axis):
    return np.sum(np.linalg.norm(x, ord=ord, axis=axis))


def sinc(x):
    return np.sum(np.where(x != 0, np.sin(x) / x, 1.0))


def reciprocal(x):
    return np.sum(np.where(x != 0, 1.0 / x, 0.0))


def masked_log(x):
    return np.sum(np.where(x > 0, np.log(x) + np.log2(x) + np.log10(x), 0.0))


def masked_log1p(x):
    return np.sum(np.where(x > -1, np.log1p(x), 0.0))


def masked_arcsin(x):
    return np.sum(np.where(np.abs(x) < 1, np.arcsin(x) + np.arccos(x), 0.0))


def angle(y, x):
    return np.sum(np.arctan2(y, x))


def powers(x, p):
    return np.sum(x**p)


def spread(x):
    return np.sum(np.std(x, axis=1))


X = np.array([-1.0, 0.0, 0.25, 4.0])


def _sqrt_slope(x):
    return np.where(x > 0, 0.5 / np.sqrt(np.where(x > 0, x, 1.0)), 0.0)


@pytest.fixture(autouse=True)
def _no_nan_warnings():
    """The derivatives themselves warn about nothing (primal warnings are the user's code)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with np.errstate(invalid="ignore", divide="ignore"):  # the primal's own sqrt(-1)
            yield


def test_grad_of_masked_sqrt_is_zero_where_masked():
    np.testing.assert_array_equal(sg.grad(masked_sqrt)(X), [0.0, 0.0, 1.0, 0.25])
    assert sg.grad(masked_sqrt_scalar)(0.0) == 0.0
    assert sg.grad(masked_sqrt_scalar)(4.0) == 0.25


def test_jvp_of_masked_sqrt_is_zero_where_masked():
    for k in range(len(X)):
        direction = np.eye(len(X))[k]
        _, tangent = sg.jvp(masked_sqrt, (X,), (direction,))
        assert tangent == _sqrt_slope(X)[k]
    assert sg.jvp(masked_sqrt_scalar, (0.0,), (1.0,))[1] == 0.0


def test_norm_at_zero_has_the_subgradient_zero():
    zero = np.zeros(3)
    np.testing.assert_array_equal(sg.grad(norm)(zero), zero)
    assert sg.jvp(norm, (zero,), (np.ones(3),))[1] == 0.0
    x = np.array([3.0, 0.0, -4.0])
    np.testing.assert_allclose(sg.grad(norm)(x), x / 5.0, rtol=1e-15)


@pytest.mark.parametrize(
    ("ord", "axis", "shape"),
    [
        (None, None, (2, 3)),
        (2, 1, (2, 3)),
        (3, None, (4,)),
        (0.5, None, (4,)),
        (1, None, (4,)),
        (np.inf, None, (4,)),
        ("fro", None, (2, 3)),
        (None, (0, 1), (2, 3)),
    ],
)
def test_norms_of_any_order_at_zero_are_finite(ord, axis, shape):
    zero = np.zeros(shape)
    grad = sg.grad(norm_of)(zero, ord, axis)
    np.testing.assert_array_equal(grad, np.zeros(shape))
    assert sg.jvp(norm_of, (zero, ord, axis), (np.ones(shape), None, None))[1] == 0.0


def test_a_zero_entry_of_a_fractional_norm_gets_zero():
    x = np.array([0.0, 1.0, 4.0])
    ans = np.sum(np.sqrt(np.abs(x))) ** 2
    want = np.array([0.0, np.sqrt(ans) / 1.0, np.sqrt(ans) / 2.0])  # ans^(1/2) |x|^(-1/2)
    np.testing.assert_allclose(sg.grad(norm_of)(x, 0.5, None), want, rtol=1e-14)


def test_sinc_and_reciprocal_are_finite_at_zero():
    x = np.array([-2.0, 0.0, 0.5])
    nonzero = np.where(x != 0, x, 1.0)
    want = np.where(x != 0, np.cos(x) / nonzero - np.sin(x) / nonzero**2, 0.0)
    np.testing.assert_allclose(sg.grad(sinc)(x), want, rtol=1e-14)
    np.testing.assert_allclose(sg.grad(reciprocal)(x), np.where(x != 0, -1 / nonzero**2, 0.0))
    _, tangent = sg.jvp(sinc, (x,), (np.ones(3),))
    assert tangent == pytest.approx(np.sum(want), rel=1e-14)


def test_logarithms_and_inverse_sines_are_finite_where_masked():
    x = np.array([-1.0, 0.0, 2.0])
    want = np.array([0.0, 0.0, 0.5 * (1 + 1 / np.log(2.0) + 1 / np.log(10.0))])
    np.testing.assert_allclose(sg.grad(masked_log)(x), want, rtol=1e-14)
    np.testing.assert_allclose(sg.grad(masked_log1p)(np.array([-1.0, 1.0])), [0.0, 0.5])
    u = np.array([-1.0, 1.0, 1.5, 0.5])
    np.testing.assert_array_equal(sg.grad(masked_arcsin)(u), [0.0, 0.0, 0.0, 0.0])


def test_arctan2_at_the_origin_is_zero():
    dy, dx = sg.grad(angle, wrt=(0, 1))(np.array([0.0, 1.0]), np.array([0.0, 1.0]))
    np.testing.assert_allclose(dy, [0.0, 0.5])
    np.testing.assert_allclose(dx, [0.0, -0.5])


def test_the_exponent_of_a_zero_base_has_slope_zero():
    x = np.array([0.0, 2.0])
    dx, dp = sg.grad(powers, wrt=(0, 1))(x, 1.5)
    np.testing.assert_allclose(dp, 2.0**1.5 * np.log(2.0), rtol=1e-14)
    np.testing.assert_allclose(dx, [0.0, 1.5 * np.sqrt(2.0)], rtol=1e-14)


def test_std_of_a_constant_row_has_the_subgradient_zero():
    x = np.array([[2.0, 2.0, 2.0], [1.0, 2.0, 3.0]])
    grad = sg.grad(spread)(x)
    centered = x[1] - 2.0
    np.testing.assert_allclose(grad, [[0.0, 0.0, 0.0], centered / (3 * np.std(x[1]))])


def test_second_derivatives_of_the_masked_sqrt_where_selected():
    d2 = sg.grad(sg.grad(masked_sqrt_scalar))
    assert d2(4.0) == pytest.approx(-0.25 * 4.0**-1.5, rel=1e-14)
    H = sg.hessian(masked_sqrt)(X[2:])
    np.testing.assert_allclose(H, np.diag([-0.25 * 0.25**-1.5, -0.25 * 4.0**-1.5]), rtol=1e-14)


def test_second_derivatives_of_the_masked_sqrt_are_zero_where_masked():
    d2 = sg.grad(sg.grad(masked_sqrt_scalar))
    assert d2(-1.0) == 0.0
    assert d2(0.0) == 0.0
    H = sg.hessian(masked_sqrt)(X)
    np.testing.assert_array_equal(H[:2], np.zeros((2, 4)))


def _divides_by_positives(x, y):
    q = 1.0 + x * x  # >= 1
    r = np.sqrt(y**2 + 2.0)  # >= sqrt(2)
    s = np.abs(x) + 0.5  # >= 0.5
    return np.sum(y / q + x / r + y / s)


def _divides_by_anything(x, y):
    q = x * y + 1.0  # can be 0
    p = np.exp(x)  # can underflow to 0
    return np.sum(y / q + y / p)


def test_a_divisor_known_positive_is_divided_by_directly_and_others_safely():
    x, y = np.array([0.3, -1.5]), np.array([2.0, -0.7])
    direct = sg.grad(_divides_by_positives, wrt=(0, 1))
    assert "safe_divide" not in sg.source(direct, x, y).split('"""')[-1]
    eps = 1e-6
    for k, arg in enumerate((x, y)):
        fd = []
        for e in np.eye(arg.size):
            hi = [x, y]
            lo = [x, y]
            hi[k], lo[k] = arg + eps * e, arg - eps * e
            fd.append((_divides_by_positives(*hi) - _divides_by_positives(*lo)) / (2 * eps))
        np.testing.assert_allclose(direct(x, y)[k], fd, rtol=1e-6)
    safe = sg.grad(_divides_by_anything, wrt=(0, 1))
    assert sg.source(safe, x, y).count("safe_divide(") >= 2
