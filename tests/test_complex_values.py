"""Real functions of real inputs that compute with complex numbers on the way (a complex
constant, np.fft, |z|, the parts of z): the gradient is real and right, in every mode and at
second order.

Convention (JAX's): rules pair an adjoint `g` with a change `dz` as ``Re(sum(g * dz))``, so a
complex-linear map's adjoint is its transpose, |z|'s slope is ``conj(z) / |z|``, and a real
input's gradient is the real part of its adjoint. Before, a real input got a complex gradient
(``[2-1j, 2-1j]`` for ``sum(imag(x * (1+2j)))``), |z| and its forward rule missed the
conjugate, and forward mode passed complex tangents through ``real`` and ``imag``.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient, numerical_jacobian

import s2sgrad as sg
from s2sgrad.checks import check_grads

C = 1.0 + 2.0j
X = np.random.default_rng(0).normal(size=4)


def imaginary_part(x):
    return np.sum(np.imag(x * C))


def squared_magnitude_and_angle(x):
    z = x * C
    return np.sum(np.real(z * np.conj(z))) + np.sum(np.angle(z + 1.0))


def filtered_power(x):
    return np.sum(np.abs(np.fft.fft(x) * np.array([1.0, 2.0, 0.5, 1.5])) ** 2)


def shifted_magnitude(x):
    return np.sum(np.abs(x * (1.0 + 2.0j) + 0.5j))


def square_of_a_part(x):
    z = x * C
    return np.sum(np.imag(z * z)) + np.sum(np.real(np.exp(z * 0.3)))


CASES = [imaginary_part, squared_magnitude_and_angle, filtered_power, shifted_magnitude]
CASES.append(square_of_a_part)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_real_gradients_through_complex_values(f):
    expected = numerical_gradient(f, (X,), 0)
    got = sg.grad(f)(X)
    assert not np.iscomplexobj(got)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
    direction = np.random.default_rng(1).normal(size=X.shape)
    _, tangent = sg.jvp(f, (X,), (direction,))
    assert not np.iscomplexobj(tangent)
    assert tangent == pytest.approx(float(expected @ direction), rel=1e-6)
    hessian = numerical_jacobian(sg.grad(f), X)
    np.testing.assert_allclose(sg.hessian(f)(X), hessian, rtol=1e-5, atol=1e-6)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(
            sg.jacobian(sg.grad(f), mode=mode)(X), hessian, rtol=1e-5, atol=1e-6
        )
    check_grads(f, (X,), order=2, rtol=1e-5, atol=1e-6)
