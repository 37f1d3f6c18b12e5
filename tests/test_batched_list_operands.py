"""Python lists and tuples where NumPy takes one array, in the batched sweeps of forward mode
(`sg.jacobian(mode="forward")`, `sg.hessian`, `sg.grad(sg.grad(f))`, `sg.jacobian(sg.grad(f))`):
tangents there carry a leading axis of directions, and the tangent of a list is a list of
them, which must be made one array with the directions first wherever the list is read as
one array (as an operand of ``np.dot`` or of a rule's helper, ``dot_adjoint_b(g, rows, x)``;
written into an array's slots, ``y[:2] = [a, b]``). Stacked as NumPy stacks a list, the
directions come second: silently wrong numbers, or a broadcast error. And a tuple written into
slots is one array in reverse mode too (its adjoint's helper read a bare tuple as a shape).

Each function is checked against central differences of itself (first order) or of
`sg.grad` (second order), which is right for all of them.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian

import s2sgrad as sg

X = np.array([0.7, -0.4, 0.3])


# -- 1. a list (of numbers or of vectors) as an operand of a NumPy function ------------------


def dot_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return np.dot(v, x) ** 2


def dot_of_rows(x):
    rows = [x * x[0], np.sin(x) + 1.0, x**2 + 0.5]
    return np.sum(np.dot(rows, x) ** 2)


def two_rows_dot(x):
    rows = [x * x[0], np.sin(x) + 1.0]
    return np.sum(np.dot(rows, x) ** 2)


def matmul_of_comprehension(x):
    rows = [x ** (k + 1) for k in range(3)]
    return np.sum(np.matmul(rows, x) ** 2)


def matmul_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return np.matmul(v, x) ** 2


def inner_of_appended(x):
    rows = []
    for k in range(2):
        rows.append(x * (k + 1.0) + x[k])
    return np.sum(np.inner(rows, x) ** 2)


def tensordot_of_tuple(x):
    rows = (x * x[1], np.cos(x))
    return np.sum(np.tensordot(rows, x, axes=1) ** 2)


def kron_of_scalars(x):
    v = [x[1] * x[2], x[0] + 0.5]
    return np.sum(np.kron(v, x) ** 2)


def cross_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return np.sum(np.cross(v, x) ** 2)


def einsum_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return np.sum(np.einsum("i,j->ij", v, x) * np.arange(9.0).reshape(3, 3)) ** 2


def einsum_elementwise_with_a_list(x):  # (the list's tangent read entry by entry in the
    # tangent of einsum's adjoint: an asymmetric Hessian; hunt, variations repro_1)
    return np.sum(np.einsum("i,i->i", [x[0], 2.0, x[1]], x) ** 2)


def einsum_of_a_nested_list(x):  # (variations repro_2: a broadcast error)
    m = [[x[0], 1.0, 0.5], [0.0, x[1], x[2]], [x[2], 0.0, 1.0]]
    return np.sum(np.einsum("ij,j->i", m, x) ** 2)


def cumprod_of_rows(x):
    rows = [x * x[0], np.sin(x) + 1.0, x**2 + 0.5]
    return np.sum(np.cumprod(rows, axis=0))


def cumprod_of_an_array(x):  # (a batched adjoint the same everywhere: np.sum's)
    rows = np.array([x * x[0], np.sin(x) + 1.0, x**2 + 0.5])
    return np.sum(np.cumprod(rows, axis=0))


def pad_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return (np.sum(np.pad(v, 1) * np.arange(5.0)) * x[0]) ** 2


def atleast_2d_of_scalars(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return (np.sum(np.atleast_2d(v) * np.arange(3.0)) * x[0]) ** 2


def dot_of_dict_values(x):
    d = {"a": x * x[2], "b": np.exp(x)}
    rows = list(d.values())
    return np.sum(np.dot(rows, x) ** 2)


OPERAND_CASES = [
    dot_of_scalars,
    dot_of_rows,
    two_rows_dot,
    matmul_of_comprehension,
    matmul_of_scalars,
    inner_of_appended,
    tensordot_of_tuple,
    kron_of_scalars,
    cross_of_scalars,
    einsum_of_scalars,
    einsum_elementwise_with_a_list,
    einsum_of_a_nested_list,
    cumprod_of_rows,
    cumprod_of_an_array,
    pad_of_scalars,
    atleast_2d_of_scalars,
    dot_of_dict_values,
]


def _hessian_by_differences(f, x):
    return numerical_jacobian(sg.grad(f), x, eps=1e-5)


def _check_second_order(f, x):
    expected = _hessian_by_differences(f, x)
    tolerance = {"rtol": 1e-4, "atol": 1e-5}
    np.testing.assert_allclose(sg.hessian(f)(x), expected, **tolerance)
    np.testing.assert_allclose(sg.jacobian(sg.grad(f), mode="forward")(x), expected, **tolerance)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x), expected.sum(axis=0), **tolerance)


def _check_first_order(f, x):
    expected = numerical_jacobian(f, x)
    for mode in ("forward", "reverse"):
        np.testing.assert_allclose(
            sg.jacobian(f, mode=mode)(x), expected, rtol=1e-5, atol=1e-7, err_msg=mode
        )


@pytest.mark.parametrize("f", OPERAND_CASES, ids=lambda f: f.__name__)
def test_a_list_operand(f):
    _check_first_order(f, X)
    _check_second_order(f, X)


def einsum_vector(x):
    return np.einsum("i,i->", [x[0] * x[1], x[0]], [x[1], 2.0]) * x


def pad_vector(x):
    v = [x[1] * x[2], x[0] * x[1] + 0.05, x[2] ** 2 + 0.2]
    return np.pad(v, 1) * x[0]


@pytest.mark.parametrize("f", [einsum_vector, pad_vector], ids=lambda f: f.__name__)
def test_a_list_operand_vector_output(f):
    _check_first_order(f, X)


# -- 2. slots written from a list or tuple of numbers ------------------------------------------


def row_from_list(x):
    Y = np.zeros((2, 3))
    Y[0] = [x[0] * x[1], x[0], x[2] ** 2]
    return Y


def slice_from_list(x):
    y = np.zeros(4)
    y[:2] = [x[0] * x[1], x[0]]
    return y * np.sum(x)


def column_from_list(x):
    Y = np.zeros((3, 2))
    Y[:, 1] = [x[0] * x[1], x[0], np.sin(x[2])]
    return Y


def fancy_from_list(x):
    y = np.zeros(3)
    y[[0, 2]] = [x[0] * x[1], x[2]]
    return y


def slice_from_bare_tuple(x):
    y = np.zeros(3)
    y[0:2] = x[1], x[2]
    return y * x


def row_from_tuple(x):
    Y = np.zeros((2, 3))
    Y[1] = (x[0] * x[1], x[0], 2.0)
    return Y


SLOT_CASES = [
    row_from_list,
    slice_from_list,
    column_from_list,
    fancy_from_list,
    slice_from_bare_tuple,
    row_from_tuple,
]


@pytest.mark.parametrize("f", SLOT_CASES, ids=lambda f: f.__name__)
def test_slots_written_from_a_list(f):
    _check_first_order(f, X)

    def scalar(x):
        Y = f(x)
        return np.sum(Y**3) + np.sum(Y) * x[0]

    _check_second_order(scalar, X)


# -- 3. a tuple with a constant entry written into slots: reverse mode -----------------------


def tuple_with_constant(a):
    y = np.zeros(2)
    y[:] = (a * 3.0, 1.0)
    return y


def row_tuple_with_constant(a):
    Y = np.zeros((2, 2))
    Y[1, :] = (np.sin(a), 1.0)
    return Y


def tail_tuple_with_constant(x):
    y = np.zeros(3)
    y[1:] = (x[0] * 3.0, 1.0)
    return y * x


@pytest.mark.parametrize(
    "f, x",
    [(tuple_with_constant, 0.7), (row_tuple_with_constant, 0.7), (tail_tuple_with_constant, X)],
    ids=["slice", "row", "tail"],
)
def test_a_tuple_with_a_constant_written_into_slots(f, x):
    _check_first_order(f, x)


def test_a_scalar_through_a_tuple_in_slots_agrees_with_grad():
    def s(x):
        return np.sum(tail_tuple_with_constant(x)) ** 2

    expected = numerical_jacobian(s, X)
    np.testing.assert_allclose(sg.grad(s)(X), expected, rtol=1e-5)
    np.testing.assert_allclose(sg.jacobian(s, mode="reverse")(X), expected, rtol=1e-5)
    _check_second_order(s, X)


def _adds_a_tuple(x):
    y = x**2
    y[:2] += (x[2], 2.0)
    return np.sum(y**2)


def tuple_added_in_a_callee(x):  # (called by star-arguments: a split, which read the tuple
    # (x[2], 2.0) as a shape in its adjoint's unbroadcast; hunt, variations repro_4)
    args = (x,)
    return _adds_a_tuple(*args)


def test_a_tuple_added_to_slots_in_a_callee():
    x = np.array([0.4, -0.7, 1.1])
    want = numerical_jacobian(tuple_added_in_a_callee, x)
    np.testing.assert_allclose(sg.grad(tuple_added_in_a_callee)(x), want, rtol=1e-6, atol=1e-8)
    grad = sg.grad(tuple_added_in_a_callee)
    hessian = np.array([(grad(x + e) - grad(x - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.hessian(tuple_added_in_a_callee)(x), hessian, atol=1e-5)
