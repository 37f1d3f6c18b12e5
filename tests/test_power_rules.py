"""Powers with constant exponents at a zero base (issue 16): the derivative is defined where the
primal is, so ``x ** 0``, ``np.power(x, 0.0)``, ``x ** 1`` and ``x ** 2`` at ``x = 0`` have
finite first and second derivatives (closed forms below), in every mode, for Python numbers
and arrays, never ``ZeroDivisionError`` or NaN. The exponent's own derivatives stay exact at
an exponent of 0 (the mixed partial of ``x ** y`` is ``x ** (y - 1) * (1 + y log x)``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import s2sgrad as sg


def power_0(x):
    return x**0


def power_0_float(x):
    return x**0.0


def np_power_0(x):
    return np.power(x, 0.0)


def power_1(x):
    return x**1


def np_power_1(x):
    return np.power(x, 1.0)


def power_2(x):
    return x**2


def power_3(x):
    return x**3.0


def math_pow_2(x):
    return math.pow(x, 2.0)


# function, exponent: first derivative k x^(k-1), second k (k-1) x^(k-2), read at x = 0
CASES = [
    (power_0, 0),
    (power_0_float, 0),
    (np_power_0, 0),
    (power_1, 1),
    (np_power_1, 1),
    (power_2, 2),
    (power_3, 3),
]


def _slopes(k, x):
    first = 0.0 if k == 0 else k * x ** (k - 1)
    second = 0.0 if k in (0, 1) else k * (k - 1) * x ** (k - 2)
    return first, second


@pytest.mark.parametrize(("f", "k"), CASES, ids=[f.__name__ for f, _ in CASES])
@pytest.mark.parametrize("x", [0.0, 1.5])
def test_scalar_power_derivatives(f, k, x):
    first, second = _slopes(k, x)
    assert sg.grad(f)(x) == pytest.approx(first)
    assert sg.jvp(f, (x,), (1.0,))[1] == pytest.approx(first)
    assert sg.grad(sg.grad(f))(x) == pytest.approx(second)
    assert float(sg.hessian(f)(x)) == pytest.approx(second)
    assert sg.hvp(f)(x, 2.0) == pytest.approx(2.0 * second)


def sum_power_0(x):
    return np.sum(x**0)


def sum_np_power_0(x):
    return np.sum(np.power(x, 0.0))


def sum_power_1(x):
    return np.sum(x**1)


def sum_power_2(x):
    return np.sum(x**2)


def sum_power_3(x):
    return np.sum(np.power(x, 3.0))


ARRAY_CASES = [(sum_power_0, 0), (sum_np_power_0, 0), (sum_power_1, 1), (sum_power_2, 2)]
ARRAY_CASES.append((sum_power_3, 3))


@pytest.mark.parametrize(("total", "k"), ARRAY_CASES, ids=[f.__name__ for f, _ in ARRAY_CASES])
def test_array_power_derivatives(total, k):
    x = np.array([0.0, 1.5, -2.0])
    first, second = _slopes(k, x)
    np.testing.assert_allclose(sg.grad(total)(x), first * np.ones(3))
    np.testing.assert_allclose(sg.jvp(total, (x,), (np.ones(3),))[1], np.sum(first))
    np.testing.assert_allclose(sg.hessian(total)(x), np.diag(second * np.ones(3)))
    for mode in ("reverse", "forward"):
        jacobian = sg.jacobian(sg.grad(total), mode=mode)(x)
        np.testing.assert_allclose(jacobian, np.diag(second * np.ones(3)), err_msg=mode)


def test_math_pow_at_zero():
    assert sg.grad(math_pow_2)(0.0) == 0.0
    assert sg.grad(sg.grad(math_pow_2))(0.0) == pytest.approx(2.0)


def slope_in_x(x, y):
    return 2.0 * x * y + x**y


def test_mixed_partial_at_exponent_zero():
    # d/dy d/dx x^y = x^(y-1) (1 + y log x): at y = 0, x = 2 it is 1/2 (plus 2 from 2xy)
    mixed = sg.grad(sg.grad(slope_in_x, wrt=0), wrt=1)
    assert mixed(2.0, 0.0) == pytest.approx(2.5)
    assert mixed(2.0, 0.7) == pytest.approx(2.0 + 2.0**-0.3 * (1 + 0.7 * math.log(2.0)))


def test_fractional_power_at_zero_is_an_infinite_slope_not_an_exception():
    def root(x):
        return x**0.5

    assert sg.grad(root)(0.0) == math.inf
    assert sg.grad(root)(4.0) == pytest.approx(0.25)
