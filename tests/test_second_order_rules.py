"""Second derivatives through the rules' own forward rules (issue 16, "Second order and
Jacobians"): Hessians, `sg.hvp` and Jacobians of gradients of norms, einsum, solve and other
linear or piecewise-linear functions, checked against central differences of the compiled
gradient (itself checked against central differences of the function elsewhere) or closed
forms. A zero second derivative is an array of the right shape, never a bare 0.0 and never a
crash in the batched tangent helpers.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian

import s2sgrad as sg

A = np.array([[2.0, 1.0, 0.0], [0.0, 3.0, 1.0], [1.0, 0.0, 4.0]])
X = np.array([0.3, -1.2, 0.7])
M = np.array([[0.3, -1.2, 0.5], [0.7, 2.0, -0.4]])
T = np.array([[[0.3, -1.2, 0.5], [0.7, 2.0, -0.4]], [[1.1, 0.2, -0.6], [-0.3, 0.9, 1.4]]])


def _fd_hessian(f, x, eps=1e-5):
    """Central differences of the compiled gradient (one column per element of x)."""
    return numerical_jacobian(sg.grad(f), x, eps)


def norm_vector(x):
    return np.linalg.norm(x)


def norm_vector_3(x):
    return np.linalg.norm(x, 3)


def norm_vector_1(x):
    return np.linalg.norm(x, 1)


def norm_vector_inf(x):
    return np.linalg.norm(x, np.inf)


def norm_vector_half(x):
    return np.linalg.norm(x, 0.5)


def norm_fro_default(m):
    return np.linalg.norm(m)


def norm_fro(m):
    return np.linalg.norm(m, "fro")


def norm_rows(m):
    return np.sum(np.linalg.norm(m, axis=1))


def norm_rows_keep(m):
    return np.sum(np.linalg.norm(m, axis=1, keepdims=True) * m)


def norm_cols_3(m):
    return np.sum(np.linalg.norm(m, 3, axis=0))


def norm_matrix_1(m):
    return np.linalg.norm(m, 1)


def norm_matrix_inf(m):
    return np.linalg.norm(m, np.inf)


def norm_nuc(m):
    return np.linalg.norm(m, "nuc")


def norm_spectral(m):
    return np.linalg.norm(m, 2)


def norm_vector_minus_inf(x):
    return np.linalg.norm(x, -np.inf)


def norm_vector_zero(x):
    return np.linalg.norm(x, 0) * np.sum(x**2)


def norm_vector_minus_1(x):
    return np.linalg.norm(x, -1)


def norm_matrix_minus_1(m):
    return np.linalg.norm(m, -1)


def norm_matrix_minus_2(m):
    return np.linalg.norm(m, -2)


def norm_matrix_minus_inf(m):
    return np.linalg.norm(m, -np.inf)


def norm_stacked_matrices(t):
    return np.sum(np.linalg.norm(t, "fro", axis=(1, 2)) ** 1.5)


def norm_stacked_spectral(t):
    return np.sum(np.linalg.norm(t, 2, axis=(0, 2)))


def norm_last_axis_3d(t):
    return np.sum(np.linalg.norm(t, axis=-1, keepdims=True) * t)


def einsum_sum(x):
    return np.einsum("i->", x)


def einsum_trace(m):
    return np.einsum("ii->", m)


def einsum_trace_of_square(a):
    return np.einsum("ii->", a @ a) + np.sum(a**3)


def einsum_dot(x):
    return np.einsum("i,i->", x, x)


def solve_rhs(b):
    return np.sum(np.linalg.solve(A, b))


def solve_matrix_rhs(b):
    return np.sum(np.linalg.solve(A, b))


def trace_of_matrix(m):
    return np.trace(m) + np.sum(m.T @ A)


def solve_rhs_squared(b):
    return np.sum(np.linalg.solve(A, b) ** 2)


CASES = [
    (norm_vector, X),
    (norm_vector_3, X),
    (norm_vector_1, X),
    (norm_vector_inf, X),
    (norm_vector_half, X),
    (norm_fro_default, M),
    (norm_fro, M),
    (norm_rows, M),
    (norm_rows_keep, M),
    (norm_cols_3, M),
    (norm_matrix_1, M),
    (norm_matrix_inf, M),
    (norm_nuc, M),
    (norm_spectral, M),
    (norm_vector_minus_inf, X),
    (norm_vector_zero, X),
    (norm_vector_minus_1, X),
    (norm_matrix_minus_1, M),
    (norm_matrix_minus_2, M),
    (norm_matrix_minus_inf, M),
    (norm_stacked_matrices, T),
    (norm_stacked_spectral, T),
    (norm_last_axis_3d, T),
    (einsum_sum, X),
    (einsum_trace, A),
    (einsum_trace_of_square, A / 3),
    (einsum_dot, X),
    (solve_rhs, X),
    (solve_rhs_squared, X),
]
IDS = [f.__name__ for f, _ in CASES]


@pytest.mark.parametrize(("f", "x"), CASES, ids=IDS)
def test_hessian_matches_differences_of_the_gradient(f, x):
    expected = _fd_hessian(f, x)
    got = sg.hessian(f)(x)
    assert np.shape(got) == x.shape + x.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    flat = np.reshape(got, (x.size, x.size))
    np.testing.assert_allclose(flat, flat.T, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("f", "x"), CASES, ids=IDS)
def test_hvp_matches_hessian_times_v(f, x):
    v = np.linspace(-1.0, 1.5, x.size).reshape(x.shape)
    expected = np.reshape(_fd_hessian(f, x).reshape(x.size, x.size) @ v.ravel(), x.shape)
    got = sg.hvp(f)(x, v)
    assert isinstance(got, np.ndarray) and got.shape == x.shape
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("f", "x"), CASES, ids=IDS)
def test_jacobian_of_gradient_in_both_modes(f, x):
    expected = _fd_hessian(f, x)
    for mode in ("reverse", "forward"):
        got = sg.jacobian(sg.grad(f), mode=mode)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=mode)


def linear_sum(x):
    return np.sum(3.0 * x) + 1.0


def linear_dot(x):
    return np.dot(A @ x, X)


LINEAR = [
    (linear_sum, X),
    (linear_dot, X),
    (einsum_sum, X),
    (solve_rhs, X),
    (solve_matrix_rhs, A),
    (trace_of_matrix, A),
    (einsum_trace, A),
]


@pytest.mark.parametrize(("f", "x"), LINEAR, ids=[f.__name__ for f, _ in LINEAR])
def test_linear_function_has_zero_second_derivatives_shaped_like_the_argument(f, x):
    got = sg.hvp(f)(x, np.ones_like(x))
    assert isinstance(got, np.ndarray) and got.shape == x.shape
    np.testing.assert_array_equal(got, 0.0)
    for hessian in (sg.hessian(f)(x), sg.jacobian(sg.grad(f))(x)):
        assert isinstance(hessian, np.ndarray) and hessian.shape == x.shape + x.shape
        np.testing.assert_array_equal(hessian, 0.0)



def sinc_sum(x):
    return np.sum(np.sinc(x))


def test_the_hessian_of_sinc_at_zero_is_minus_pi_squared_over_three():
    """The slope (cos(pi x) - sinc(x)) / x is 0/0 at 0: the rule uses its series there."""
    x = np.array([0.0, 1e-5, 0.5])
    h = sg.hessian(sinc_sum)(x)
    np.testing.assert_allclose(np.diag(h)[:2], [-np.pi**2 / 3] * 2, rtol=1e-6)
    np.testing.assert_allclose(h, numerical_jacobian(sg.grad(sinc_sum), x), atol=1e-6)
