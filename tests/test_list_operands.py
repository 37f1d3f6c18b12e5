"""Python lists and tuples as NumPy operands (issue 16): NumPy reads ``[x, 2 * x, 3.0]`` passed
to ``np.var``, ``np.dot`` or a ufunc as one array, and so must every rule. Each function is
differentiated in reverse and forward mode (and, for vector inputs, as a Jacobian in both
modes and a Hessian) and compared with central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian

import s2sgrad as sg

W = [1.0, 2.0, 3.0]


# -- scalar input, the list built from it ----------------------------------------------------


def var_of_list(x):
    return np.var([x, 2 * x, 3.0])


def std_of_list(x):
    return np.std([x, 2 * x, 3.0])


def mean_of_list(x):
    return np.mean([x, 2 * x, 3.0])


def sum_of_tuple(x):
    return np.sum((x, 2 * x, 3.0))


def prod_of_list(x):
    return np.prod([x, 2 * x, 3.0])


def norm_of_list(x):
    return np.linalg.norm([x, 2 * x, 3.0])


def cumsum_of_list(x):
    return np.sum(np.cumsum([x, 2 * x, 3.0]) ** 2)


def var_with_axis(x):
    return np.sum(np.var([[x, 2 * x], [3.0, x * x]], axis=0))


def nested_array(x):
    return np.sum(np.array([[x, x + 1], [x * x, x]]) ** 2)


def absolute_of_list(x):
    return np.sum(np.absolute([x, -2 * x]))


def copy_of_list(x):
    return np.sum(np.copy([x, 3 * x]) * np.array([1.0, 2.0]))


def sin_of_list(x):
    return np.sum(np.sin([x, 3 * x]))


def exp_times_list(x):
    return np.sum(np.exp([x, 3 * x]) * [1.0, 2.0])


def transpose_of_nested(x):
    return np.sum(np.transpose([[x, 3 * x]]) * np.array([[1.0], [5.0]]))


def maximum_of_list(x):
    return np.sum(np.maximum([x, 3 * x], 0.5))


def list_minus_array(x):
    return np.sum(([x, 3.0] - np.array([1.0, x * x])) ** 2)


def var_of_list_local(x):
    w = [x, 2 * x, 3.0]
    return np.var(w)


def sin_of_list_local(x):
    w = [x, 2 * x, 3.0]
    return np.sum(np.sin(w))


def dot_of_tuple_local(x):
    w = (x, x * x)
    return np.dot(w, [1.0, 2.0])


def norm_of_list_local(x):
    w = [x, 2 * x]
    return np.linalg.norm(w) * x


def prod_of_list_local(x):
    w = [x, x + 1.0, 3.0]
    return np.prod(w)


def list_local_minus(x):
    w = [x, 2.0]
    return np.sum((w - np.array([1.0, x])) ** 2)


SCALAR_CASES = [
    var_of_list_local,
    sin_of_list_local,
    dot_of_tuple_local,
    norm_of_list_local,
    prod_of_list_local,
    list_local_minus,
    var_of_list,
    std_of_list,
    mean_of_list,
    sum_of_tuple,
    prod_of_list,
    norm_of_list,
    cumsum_of_list,
    var_with_axis,
    nested_array,
    absolute_of_list,
    copy_of_list,
    sin_of_list,
    exp_times_list,
    transpose_of_nested,
    maximum_of_list,
    list_minus_array,
]


@pytest.mark.parametrize("f", SCALAR_CASES, ids=lambda f: f.__name__)
def test_scalar_input(f):
    x = 0.7
    expected = numerical_jacobian(f, x)
    np.testing.assert_allclose(sg.grad(f)(x), expected, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (x,), (1.0,))[1], expected, rtol=1e-6, atol=1e-8)
    second = numerical_jacobian(sg.grad(f), x)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x), second, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.hessian(f)(x), second, rtol=1e-5, atol=1e-6)


# -- vector input, a constant list the other operand --------------------------------------------


def dot_list_right(x):
    return np.dot(x, [1.0, 2.0, 3.0])


def dot_list_left(x):
    return np.dot([1.0, 2.0, 3.0], x) * np.sum(x)


def multiply_list(x):
    return np.multiply(x, [1.0, 2.0, 3.0]) ** 2


def times_list_literal(x):
    return x * [1.0, 2.0, 3.0]


def list_times(x):
    return [1.0, 2.0, 3.0] * np.sin(x)


def matmul_list(x):
    return np.sin(x @ [1.0, 2.0, 3.0])


def method_dot_list(x):
    return x.dot([1.0, 2.0, 3.0]) * x


def list_local(x):
    w = [1.0, 2.0, 3.0]
    return np.sin(x) * w


def list_global(x):
    return np.dot(np.cos(x), W) + np.sum((x - W) ** 2) + np.var(W) * x


def where_lists(x):
    return np.where([True, False, True], x**2, [1.0, 2.0, 3.0])


def clip_list_bounds(x):
    return np.clip(x, [-1.0, -1.0, 0.0], [0.5, 1.0, 1.0]) * x


def var_of_rows(x):
    rows = [x, np.sin(x), x * x]
    return np.var(rows, axis=0)


def dot_list_parameter(xs, v):
    return np.dot(xs, v) ** 2


def test_list_parameter_read_as_one_array():
    xs, v = [0.3, -1.2], np.array([2.0, 0.5])
    grad = sg.grad(dot_list_parameter)(xs, v)
    assert isinstance(grad, list) and len(grad) == 2
    expected = numerical_jacobian(lambda a: dot_list_parameter(list(a), v), np.array(xs))
    np.testing.assert_allclose(grad, expected, rtol=1e-6)


VECTOR_CASES = [
    var_of_rows,
    dot_list_right,
    dot_list_left,
    multiply_list,
    times_list_literal,
    list_times,
    matmul_list,
    method_dot_list,
    list_local,
    list_global,
    where_lists,
    clip_list_bounds,
]


@pytest.mark.parametrize("f", VECTOR_CASES, ids=lambda f: f.__name__)
def test_vector_input(f):
    x = np.array([0.3, -1.2, 0.7])
    jacobian = numerical_jacobian(f, x)
    for mode in ("reverse", "forward"):
        got = sg.jacobian(f, mode=mode)(x)
        np.testing.assert_allclose(got, jacobian, rtol=1e-6, atol=1e-8, err_msg=mode)
    total_gradient = jacobian.sum(axis=0) if jacobian.ndim == 2 else jacobian
    grad = sg.grad(f)(x)
    assert isinstance(grad, np.ndarray)
    np.testing.assert_allclose(grad, total_gradient, rtol=1e-6, atol=1e-8)
    v = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(sg.jvp(f, (x,), (v,))[1], jacobian @ v, rtol=1e-6, atol=1e-8)


# -- lists whose kind the compiler cannot see where they are read -------------------------------
# A callee's parameter given a list, an item of a list of lists, a list saved by a callee's
# forward half for its backward half: where such a value is read as one array, its tangent (a
# list of tangents, each with the directions first when batched) must be made one array as the
# value is. With three list elements and three directions, the list of batched tangents had
# the right shape and the wrong layout: forward Jacobians and Hessians were silently wrong.


def spread(x, items):
    return np.var(items) * x + np.sum(np.sin(items) * 2 + np.square(items))


def spread_of_a_list_argument(w):
    items = [w[0] * w[1], w[1] * w[2], w[0] ** 2]
    return spread(0.7, items)


def spread_of_a_list_built_inside(x, w):
    items = [w[0] * w[1], w[1] * w[2] * x, w[0] ** 2]
    return np.var(items) * x + np.sum(np.square(items))


def spread_through_a_callee(w):
    return spread_of_a_list_built_inside(0.7, w)


def spread_of_an_item(w):
    rows = [[w[0] * w[1], w[1] * w[2], w[0] ** 2], [w[2], w[1], w[0]]]
    first = rows[0]
    return np.var(first) * np.sum(np.square(rows[1])) + np.sum(np.square(first) * 2)


def spread_of_split_pieces(w):
    parts = np.split(w * w, 3)  # a list of three arrays, read as one (3, 1) array
    return np.var(parts) + np.sum(np.square(parts) * 2)


HIDDEN_LIST_CASES = [
    spread_of_a_list_argument,
    spread_through_a_callee,
    spread_of_an_item,
    spread_of_split_pieces,
]


@pytest.mark.parametrize("inline", [True, False], ids=["inlined", "calls"])
@pytest.mark.parametrize("f", HIDDEN_LIST_CASES, ids=lambda f: f.__name__)
def test_a_list_whose_kind_is_not_seen(f, inline, monkeypatch):
    if not inline:
        monkeypatch.setenv("S2SGRAD_INLINE", "0")
    w = np.array([0.3, -0.5, 0.8])
    gradient = numerical_jacobian(f, w)
    np.testing.assert_allclose(sg.grad(f)(w), gradient, rtol=1e-6, atol=1e-8)
    for mode in ("reverse", "forward"):
        got = sg.jacobian(f, mode=mode)(w)
        np.testing.assert_allclose(got, gradient, rtol=1e-6, atol=1e-8, err_msg=mode)
    v = np.array([1.0, -0.5, 2.0])
    np.testing.assert_allclose(sg.jvp(f, (w,), (v,))[1], gradient @ v, rtol=1e-6, atol=1e-8)
    hessian = numerical_jacobian(sg.grad(f), w)
    np.testing.assert_allclose(sg.hessian(f)(w), hessian, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.jacobian(sg.grad(f))(w), hessian, rtol=1e-5, atol=1e-6)


def variance_of_the_first_row(params):
    first = params[0]
    return np.var(first) * params[1][0]


def test_an_item_of_a_nested_list_argument():
    params = [[0.3, -0.5, 0.8], [1.5, 2.0, 0.1]]
    flat = np.array([0.3, -0.5, 0.8, 1.5, 2.0, 0.1])

    def on_flat(a):
        return variance_of_the_first_row([list(a[:3]), list(a[3:])])

    expected = numerical_jacobian(on_flat, flat)
    for mode in ("reverse", "forward"):
        got = sg.jacobian(variance_of_the_first_row, mode=mode)(params)
        np.testing.assert_allclose(np.concatenate(got), expected, rtol=1e-6, err_msg=mode)


def layers_in_slots(x):
    hidden = [None] * 3
    grown = []
    h = x
    for layer in range(3):
        h = np.sin(h) + 1.0
        hidden[layer] = h
        grown = grown + [h * 2.0]  # noqa: RUF005 (a join)
    mask = x > 0.0
    return np.sum(np.where(mask, hidden[0] * hidden[2], grown[-1] * hidden[1]))


def test_items_the_analysis_can_see_are_arrays_are_not_converted():
    """The items of a list filled with arrays (``[None] * 3`` written slot by slot, a list
    grown by joins) and a mask are arrays: the gradient reads them as they are, with no
    ``list_as_array`` (transforms/list_kinds.py), and is right."""
    x = np.array([0.3, -1.2, 0.7])
    code = sg.source(sg.grad(layers_in_slots), x)
    assert "list_as_array" not in code and "np.asarray" not in code
    expected = numerical_jacobian(layers_in_slots, x)
    np.testing.assert_allclose(sg.grad(layers_in_slots)(x), expected, rtol=1e-6, atol=1e-8)
    forward = sg.jacobian(layers_in_slots, mode="forward")(x)
    np.testing.assert_allclose(forward, expected, rtol=1e-6, atol=1e-8)
