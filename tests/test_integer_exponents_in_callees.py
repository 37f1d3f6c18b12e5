"""Second derivatives of ``x ** i`` with an integer loop counter ``i`` in a helper.

A callee's backward half takes the values its forward half saved, the counter among them, as
arguments: differentiated again, the counter has a tangent, zero. The power rule's slope in
the exponent, ``ans * log(x)``, is NaN at a negative base, and ``0 * NaN`` made every second
derivative NaN, silently but for a RuntimeWarning (hunt, repro_16: the Taylor series of sin in
a helper with a while loop). The exponent's contribution is now exactly 0 where its adjoint
or tangent is. Against closed forms.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import s2sgrad as sg


def odd_powers(x):
    s = 0.0
    i = 1
    while i < 4:
        s = s + x[1] ** i  # x1 + x1**3
        i += 2
    return s


def through_odd_powers(x):
    return odd_powers(x * 1.0)


def sin_taylor(x):
    s = 0.0
    k = 0
    while k < 8:
        s = s + (-1) ** k * x ** (2 * k + 1) / math.factorial(2 * k + 1)
        k += 1
    return s


def through_sin_taylor(x):
    return np.sum(sin_taylor(x))


X = np.array([0.4, -0.683])


@pytest.mark.parametrize(
    ("f", "hessian"),
    [
        (through_odd_powers, np.diag([0.0, 6 * X[1]])),
        (through_sin_taylor, np.diag(-np.sin(X))),
    ],
    ids=["odd powers", "sin by Taylor"],
)
def test_second_derivatives_with_a_negative_base(f, hessian):
    v = np.array([0.3, 1.0])
    np.testing.assert_allclose(sg.hessian(f)(X), hessian, atol=1e-6)
    np.testing.assert_allclose(sg.hvp(f)(X, v), hessian @ v, atol=1e-6)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(X), hessian.sum(0), atol=1e-6)
    np.testing.assert_allclose(sg.jacobian(sg.grad(f), mode="forward")(X), hessian, atol=1e-6)
