"""Jacobians and Hessians through the diagonal-tangent rules of `transforms/diagonal.py`
(forward mode seeded with every unit direction of one argument), against central differences
and closed forms, and what the generated code looks like."""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

rng = np.random.default_rng(11)
B = rng.normal(size=(4, 3))  # constant matrices of the functions below
S = rng.normal(size=(4, 4))
V = rng.normal(size=4)


def differences(f, x, eps=1e-6):
    """The Jacobian of `f` at the vector `x` by central differences, ``out.shape + (n,)``."""
    columns = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in np.eye(x.size)]
    return np.moveaxis(np.asarray(columns), 0, -1)


def chain(x):
    a = np.sin(x) * x**2
    b = np.exp(-a) / (1.0 + x * x)
    return np.tanh(b) - 3.0 * a


def row_times_matrix(x):
    return np.tanh(x) @ B


def matrix_times_column(x):
    return S @ np.exp(x) * 2.0


def diagonal_plus_full(x):
    return np.sin(x) + S @ x - x**3


def full_minus_diagonal(x):
    return (S @ x) - np.cos(x)


def dot_with_constant(x):
    return np.exp(x) @ V + x


def through_a_loop(x):
    y = np.sin(x)
    for _ in range(3):
        y = y * x + S @ y
    return y


def through_a_branch(x):
    y = np.exp(x)
    if np.sum(x) > 0:
        y = y * 2.0
    else:
        y = S @ y
    return y + x


def reassigned(x):
    y = np.sin(x)
    y = S @ y
    y = np.tanh(y)
    return y


def masked_sqrt(x):
    return np.where(x > 0, np.sqrt(np.abs(x)), 0.0)


FUNCTIONS = [
    chain,
    row_times_matrix,
    matrix_times_column,
    diagonal_plus_full,
    full_minus_diagonal,
    dot_with_constant,
    through_a_loop,
    through_a_branch,
    reassigned,
]


@pytest.mark.parametrize("mode", ["forward", "reverse"])
@pytest.mark.parametrize("f", FUNCTIONS, ids=lambda f: f.__name__)
def test_jacobians_match_differences(f, mode):
    x = np.array([0.3, -0.8, 1.1, 0.5])
    got = sg.jacobian(f, mode=mode)(x)
    np.testing.assert_allclose(got, differences(f, x), rtol=1e-6, atol=1e-7)


def energy(x):
    return np.sum(np.sin(x) * x**2) + x @ S @ x + np.exp(x) @ V


def test_hessian_matches_the_closed_form_and_builds_no_identity():
    x = np.array([0.3, -0.8, 1.1, 0.5])
    hessian = sg.hessian(energy)
    closed = (
        np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x * x * np.sin(x) + np.exp(x) * V) + S + S.T
    )
    np.testing.assert_allclose(hessian(x), closed, atol=1e-12)
    text = sg.source(hessian, x)
    assert "add_to_diagonal(" in text  # the elementwise part added to the matrix part
    assert "identity_directions" not in text  # no n-by-n identity pushed through products


def chain_then_matrix(x):
    a = np.sin(x) * x**2
    b = np.exp(-a) / (1.0 + x * x)
    return (np.tanh(b) - 3.0 * a) @ B


def test_elementwise_chain_keeps_only_diagonals():
    x = np.array([0.3, -0.8, 1.1, 0.5])
    jacobian = sg.jacobian(chain_then_matrix, mode="forward")
    np.testing.assert_allclose(jacobian(x), differences(chain_then_matrix, x), rtol=1e-6)
    text = sg.source(jacobian, x)
    sweep = text.split("def jvp_")[-1]
    assert "diagonal_times(" in sweep  # the chain's diagonal scales the rows of B
    assert "identity_directions" not in sweep and "diagonal_directions" not in sweep


def test_masked_square_root_has_a_finite_jacobian_at_zero():
    x = np.array([0.0, 0.25, -1.0, 4.0])
    for mode in ("forward", "reverse"):
        got = sg.jacobian(masked_sqrt, mode=mode)(x)
        assert np.all(np.isfinite(got))
        np.testing.assert_allclose(np.diag(got), [0.0, 1.0, 0.0, 0.25])
        assert np.count_nonzero(got - np.diag(np.diag(got))) == 0


def test_a_two_dimensional_argument():
    W = np.array([[0.2, -0.4, 0.9], [1.3, 0.1, -0.6]])

    def f(w):
        return np.tanh(w) * w

    got = sg.jacobian(f, mode="forward")(W)
    expected = differences(lambda v: f(v.reshape(2, 3)).ravel(), W.ravel()).reshape(2, 3, 2, 3)
    assert got.shape == (2, 3, 2, 3)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def layer(x):
    return np.tanh(B.T @ x)  # (3, 4) @ (4,): three outputs


def test_reverse_jacobian_keeps_the_output_adjoint_diagonal():
    # the VJP's seed has the output's shape (shaped_like): its diagonal tangent scales the
    # matrix, no identity over the outputs is built
    x = np.array([0.3, -0.8, 1.1, 0.5])
    jacobian = sg.jacobian(layer, mode="reverse")
    expected = (1 - np.tanh(B.T @ x) ** 2)[:, None] * B.T
    np.testing.assert_allclose(jacobian(x), expected, rtol=1e-12)
    np.testing.assert_allclose(jacobian(x), differences(layer, x), rtol=1e-6, atol=1e-8)
    sweep = sg.source(jacobian, x).split("def jvp_")[-1]
    assert "identity_directions" not in sweep and "times_diagonal(" in sweep


def test_the_diagonal_helpers_match_dense_constructions():
    from s2sgrad.runtime import add_to_diagonal, diagonal_directions, diagonal_times, times_diagonal

    c = np.array([1.0, -2.0, 0.5, 3.0])
    full = np.diag(c)
    x = np.zeros(4)
    np.testing.assert_array_equal(diagonal_directions(x, c), full)
    np.testing.assert_array_equal(diagonal_directions(x, 2.0), 2.0 * np.eye(4))
    for t in (S, S.T, np.asfortranarray(S), S[:, ::-1]):  # any memory layout
        before = t.copy()
        np.testing.assert_array_equal(add_to_diagonal(t, c, x), t + full)
        np.testing.assert_array_equal(t, before)  # a copy: the tangent may be shared
    np.testing.assert_allclose(diagonal_times(c, S), full @ S)
    np.testing.assert_allclose(times_diagonal(S, c), np.stack([S @ row for row in full]))
    np.testing.assert_allclose(diagonal_times(c, V), full @ V)
    cube = np.zeros((2, 2, 3))
    expected = 1.5 * np.eye(12).reshape(12, 2, 2, 3)
    np.testing.assert_array_equal(diagonal_directions(cube, 1.5), expected)


def square_product_then_sum(x):
    return np.sin(x) + S @ x - x**3  # S is square: S @ x has x's shape


def test_a_square_constant_product_keeps_the_shape():
    x = np.array([0.3, -0.8, 1.1, 0.5])
    jacobian = sg.jacobian(square_product_then_sum, mode="forward")
    np.testing.assert_allclose(jacobian(x), S + np.diag(np.cos(x) - 3 * x * x), atol=1e-12)
    sweep = sg.source(jacobian, x).split("def jvp_")[-1]
    assert "add_to_diagonal(add_to_diagonal(np.transpose(S)" in sweep
    assert "lift_tangent" not in sweep and "diagonal_directions" not in sweep
