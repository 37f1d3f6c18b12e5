"""Jacobians in both modes through rules whose batched forms are not the plain call
(issue 16, "Second order and Jacobians"): joins of pieces of different lengths, indexing that
mixes slices with integer arrays, an RK4 solver stacking its states, einsum's sublist form.
Each is checked against central differences of the function.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian

import s2sgrad as sg

CUBE = np.arange(100.0).reshape(5, 4, 5) / 37.0
A = np.arange(6.0).reshape(2, 3) / 3.0


def concatenate_unequal(x):
    return np.concatenate([x[:2] * 2.0, np.sin(x[2:])])


def concatenate_three(x):
    return np.concatenate([x[:2], x[1:] ** 2, x[:1]])


def stack_rows(x):
    return np.stack([x[:2], np.cos(x[1:3])], axis=1)


def mixed_index(x):
    return np.sin(x[3, 2:, [1, 3]])


def mixed_index_array_first(x):
    return x[[0, 2], :, 1] ** 2


def mixed_index_middle(x):
    return x[:, [1, 2], 2:4] * 3.0


def _rhs(t, y, k):
    return np.array([y[1], -k * y[0] - 0.1 * y[1] * t])


def rk4(y0):
    y = y0
    t = 0.0
    h = 0.1
    states = [y0]
    for _step in range(5):
        k1 = _rhs(t, y, 2.0)
        k2 = _rhs(t + h / 2, y + h / 2 * k1, 2.0)
        k3 = _rhs(t + h / 2, y + h / 2 * k2, 2.0)
        k4 = _rhs(t + h, y + h * k3, 2.0)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        t = t + h
        states.append(y)
    return np.stack(states)


def einsum_sublists(b):
    return np.einsum(A, [0, 1], b, [1, 2], [0, 2])


def einsum_sublists_square(b):
    return np.einsum(b, [0, 1], b, [1, 2], [0, 2])


def einsum_sublists_implicit(b):
    return np.einsum(b, [0, 1], b, [0, 1])


TWICE = np.eye(3) * 2.0


def _with_default_matrix(x, a=TWICE, scale=0.5):
    return a @ x + np.linalg.norm(x, 1) * scale


def callee_default_array(x):
    return _with_default_matrix(x) * x + _with_default_matrix(x, scale=2.0)


CASES = [
    (callee_default_array, np.array([0.3, -1.2, 0.7])),
    (concatenate_unequal, np.linspace(0.1, 1.0, 5)),
    (concatenate_three, np.linspace(0.1, 1.0, 5)),
    (stack_rows, np.linspace(0.1, 1.0, 5)),
    (mixed_index, CUBE),
    (mixed_index_array_first, CUBE[:3, :3, :3]),
    (mixed_index_middle, CUBE[:2]),
    (rk4, np.array([1.0, 0.5])),
    (einsum_sublists, np.arange(12.0).reshape(3, 4) / 5),
    (einsum_sublists_square, np.arange(9.0).reshape(3, 3) / 5),
    (einsum_sublists_implicit, np.arange(6.0).reshape(2, 3) / 5),
]


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize(("f", "x"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_jacobian_matches_differences(f, x, mode):
    got = sg.jacobian(f, mode=mode)(x)
    np.testing.assert_allclose(got, numerical_jacobian(f, x), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize(
    "f", [einsum_sublists_square, einsum_sublists_implicit], ids=lambda f: f.__name__
)
def test_einsum_sublist_gradient_and_hessian(f):
    def total(b):
        return np.sum(f(b) ** 2)

    b = np.arange(6.0).reshape(2, 3) / 5 if f is einsum_sublists_implicit else np.eye(3) / 2
    grad = sg.grad(total)(b)
    np.testing.assert_allclose(grad, numerical_jacobian(total, b), rtol=1e-6, atol=1e-7)
    hessian = sg.hessian(total)(b)
    np.testing.assert_allclose(hessian, numerical_jacobian(sg.grad(total), b), rtol=1e-5, atol=1e-6)


def test_jvp_through_a_callee_left_to_its_default_array():
    x, v = np.array([0.3, -1.2, 0.7]), np.array([1.0, -0.5, 2.0])
    _, tangent = sg.jvp(callee_default_array, (x,), (v,))
    np.testing.assert_allclose(tangent, numerical_jacobian(callee_default_array, x) @ v, rtol=1e-6)
