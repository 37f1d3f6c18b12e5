"""Complex arguments a real function's derivative is not taken in (``f(x, c)``, ``c = 0.5j``).

The compiler makes the adjoint of a real value that meets a complex one real (JAX's
convention: a real input's gradient is real; `complex_values`), where it can see complex
values appear. A complex *argument* it could not see: the gradient came back complex, or a
complex contribution was added into a real buffer in place ('Cannot cast ufunc add output
from complex128 to float64'). Whether each argument is complex is now part of what selects a
specialization. Nested GradientTapes met the same: the tape's recorded constants are such
arguments of the code the inner gradient runs (the fuzzer's new ``tape_hessian`` mode).
Every derivative against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, -0.5, 1.2])
V = np.array([0.3, 1.0, -2.0])


def magnitudes(w, c, weights):
    return np.abs(np.dot(w, w) + c) + np.sum(np.abs(w[::-1] * weights) ** 2)


ARGUMENTS = {
    "complex number": (0.5j, np.array([1.0, 2.0, 3.0])),
    "NumPy complex": (np.complex128(0.25 + 1j), np.array([1.0, 2.0, 3.0])),
    "complex array": (0.5, np.array([1j, 2.0, 1.0 + 1.0j])),
    "real arguments": (0.5, np.array([1.0, 2.0, 3.0])),
}


def gradient_by_differences(f, x, *rest):
    return np.array([(f(x + e, *rest) - f(x - e, *rest)) / 2e-6 for e in np.eye(x.size) * 1e-6])


def hessian_by_differences(f, x, *rest):
    columns = [
        gradient_by_differences(f, x + e, *rest) - gradient_by_differences(f, x - e, *rest)
        for e in np.eye(x.size) * 1e-4
    ]
    return np.stack(columns, axis=1) / 2e-4


def assert_real_close(got, want, atol=1e-6):
    assert not np.iscomplexobj(got), got
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("name", list(ARGUMENTS))
def test_every_mode_with_complex_arguments(name):
    c, weights = ARGUMENTS[name]
    gradient = gradient_by_differences(magnitudes, X, c, weights)
    hessian = hessian_by_differences(magnitudes, X, c, weights)
    assert_real_close(sg.grad(magnitudes)(X, c, weights), gradient)
    assert_real_close(sg.value_and_grad(magnitudes)(X, c, weights)[1], gradient)
    assert_real_close(sg.vjp(magnitudes, X, c, weights)[1](1.0)[0], gradient)
    tangent = sg.jvp(magnitudes, (X, c, weights), (V, 0.0, np.zeros(3)))[1]
    assert_real_close(tangent, gradient @ V)
    for mode in ("reverse", "forward"):
        assert_real_close(sg.jacobian(magnitudes, mode=mode)(X, c, weights), gradient)
    assert_real_close(sg.hessian(magnitudes)(X, c, weights), hessian, atol=1e-4)
    assert_real_close(sg.hvp(magnitudes)(X, c, weights, V), hessian @ V, atol=1e-4)


def test_real_and_complex_arrays_take_turns():
    # one gradient function called with a real, then a complex, then a real array again:
    # each kind its own specialization (the guard of the inlined one checks the dtype too)
    grad = sg.grad(magnitudes)
    for weights in ([1.0, 2.0, 3.0], [1j, 2.0, 1.0 + 1.0j], [1.0, 2.0, 3.0], [2j, 1.0, 1.0]):
        weights = np.array(weights)
        assert_real_close(
            grad(X, 0.5, weights), gradient_by_differences(magnitudes, X, 0.5, weights)
        )


def shifted_magnitude(w):
    return np.abs(np.dot(w, w) + 0.5j)


def test_nested_tapes_through_a_complex_constant():
    # the inner gradient's code takes the recorded 0.5j as an argument: its Hessian was
    # complex and wrong (fuzz seed 31000002, mode tape_hessian)
    x = sg.Variable(X)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            out = shifted_magnitude(x)
        gx = inner.gradient(out, x)
    assert_real_close(gx.numpy(), gradient_by_differences(shifted_magnitude, X))
    want = hessian_by_differences(shifted_magnitude, X)
    assert_real_close(outer.jacobian(gx, x).numpy(), want, atol=1e-4)


def test_tensors_have_any_and_all():
    # (the adjoint of |z| for complex z asks `.any()` of what it divides, which under a nested
    # tape is a Tensor: an AttributeError from inside s2sgrad)
    t = sg.constant(np.array([0.0, 1.0, -2.0]))
    assert bool(t.any()) and not bool(t.all())
    assert bool((t > -3.0).all(axis=0)) and not bool((t > -1.0).all())


MIXED = np.array([[1 + 1j, 0.5], [0.2j, 2 - 1j]])
ARGUMENTS_HELD = [np.zeros(3), MIXED]  # a complex array inside a global list


def _projected(x, m):
    return np.sum(np.abs(m @ x[:2]) ** 2)


def unpacked_from_a_global_list(x):
    a = list(ARGUMENTS_HELD)
    a[0] = x
    return _projected(*a)


def test_a_complex_array_inside_a_global_list():
    # a global list holding a complex array was no complex constant to the analysis: the
    # slice's contribution was complex, added into its real buffer ('Cannot cast ufunc add
    # output from complex128 to float64'; hunt, variations repro_6)
    x = np.array([0.4, -0.7, 1.1])
    assert_real_close(
        sg.grad(unpacked_from_a_global_list)(x),
        gradient_by_differences(unpacked_from_a_global_list, x),
    )


def test_float32_and_float64_arrays_take_turns():
    # (the inlined specialization's guard tests the dtype's identity: another dtype goes
    # through the dispatcher, which gives it its own kind of specialization or the same)
    grad = sg.grad(magnitudes)
    for dtype in (np.float64, np.float32, np.float64, np.complex128, np.float64):
        weights = np.array([1.0, 2.0, 3.0], dtype=dtype)
        got = grad(X, 0.5, weights)
        want = gradient_by_differences(magnitudes, X, 0.5, weights.astype(np.complex128))
        assert_real_close(got, want, atol=1e-4)


def real_times_complex(x, c):
    return np.real(np.sum(x * x * c)) + np.sum(x**3)


def test_a_hessian_asked_with_a_real_then_a_complex_argument():
    # the composed Hessian's key had no dtype: the real code ran for the complex argument
    # (a complex, wrong Hessian; the regression review, repro_3)
    x = np.array([0.3, -0.7, 1.1])
    hessian = sg.hessian(real_times_complex)
    for c in (
        np.array([1.0, 2.0, 3.0]),
        np.array([1.0 + 1j, 2.0, 3.0j]),
        np.array([2.0, 1.0, 0.5]),
    ):
        want = np.diag(2 * np.real(c) + 6 * x)
        assert_real_close(hessian(x, c), want, atol=1e-9)
        assert_real_close(sg.jacobian(sg.grad(real_times_complex))(x, c), want, atol=1e-9)
