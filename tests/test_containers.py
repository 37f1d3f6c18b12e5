"""dict/list/tuple arguments (pytrees) and container literals: gradients with the same structure."""

import copy

import container_programs as cp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(6)


def leaf_gradient(f, args, index, path, eps=1e-6):
    """Central differences with respect to one leaf of a nested argument."""

    def leaf_of(tree):
        for key in path:
            tree = tree[key]
        return tree

    leaf = np.array(leaf_of(args[index]), dtype=float)
    grad = np.zeros_like(leaf)
    for k in np.ndindex(leaf.shape):
        values = []
        for sign in (1, -1):
            moved = copy.deepcopy(list(args))
            parent = moved[index]
            for key in path[:-1]:
                parent = parent[key]
            new = leaf.copy()
            new[k] += sign * eps
            parent[path[-1]] = new
            values.append(np.sum(f(*moved)))
        grad[k] = (values[0] - values[1]) / (2 * eps)
    return grad


def test_dict_of_parameters():
    params = {"W1": rng.random((3, 4)), "b1": rng.random(4), "W2": rng.random((4, 2))}
    x = rng.random((2, 3))
    grads = sg.grad(cp.mlp)(params, x)
    assert isinstance(grads, dict) and set(grads) == set(params)
    for key in params:
        assert grads[key].shape == params[key].shape
        want = leaf_gradient(cp.mlp, (params, x), 0, (key,))
        np.testing.assert_allclose(grads[key], want, rtol=1e-5, atol=1e-6)


def test_list_of_layers_read_in_a_loop():
    layers = [[rng.random((3, 3)), rng.random(3)], [rng.random((3, 3)), rng.random(3)]]
    x = rng.random((2, 3))
    grads = sg.grad(cp.layers_in_a_list)(layers, x)
    assert isinstance(grads, list) and isinstance(grads[0], list)
    for i in range(2):
        for j in range(2):
            want = leaf_gradient(cp.layers_in_a_list, (layers, x), 0, (i, j))
            np.testing.assert_allclose(grads[i][j], want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["pair_in_pair_out", "dict_literal"])
def test_container_literals(name):
    f = getattr(cp, name)
    args = (rng.random(3), rng.random(3)) if name == "pair_in_pair_out" else (rng.random(3),)
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, got in enumerate(grads):
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


def test_a_tuple_in_gives_a_tuple_out():
    grads = sg.grad(cp.tuple_argument)((1.5, 2.0))
    assert isinstance(grads, tuple)
    assert grads == pytest.approx((2 * 1.5 * 2.0, 1.5**2))


def test_unused_leaves_get_zeros_of_their_shape():
    params = {"W1": rng.random((3, 4)), "b1": rng.random(4), "W2": rng.random((4, 2)), "x": 1.0}
    grads = sg.grad(cp.mlp)(params, rng.random((2, 3)))
    assert grads["x"] == 0.0


WEIGHTS_3 = np.array([0.3, 0.2, 0.1])


def _appended_then_read_twice(v, b):
    rows = [b * 1.0, v * 2.0]
    rows.append(b)
    out = np.sum(np.dot(rows, WEIGHTS_3) ** 2)
    pair = out, np.sum(np.dot(rows, WEIGHTS_3)) * 2.0
    return pair[0]


def test_an_appended_list_read_as_an_array_twice():
    # its adjoint is an array, whose row for the appended element was read as a view and
    # then zeroed with the slot: half the gradient of b, silently (fuzz seed 40000102)
    v, b = np.array([0.3, -0.5, 0.8]), np.array([0.7, 0.2, -0.4])
    f = _appended_then_read_twice
    want = [(f(v, b + e) - f(v, b - e)) / 2e-6 for e in np.eye(3) * 1e-6]
    np.testing.assert_allclose(sg.grad(f, wrt=1)(v, b), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.jacobian(f, wrt=1)(v, b), want, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(sg.vjp(f, v, b)[1](1.0)[1], want, rtol=1e-6, atol=1e-9)
