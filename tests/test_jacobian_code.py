"""`sg.jacobian` and `sg.hessian` are generated functions (s2sgrad/jacobian_code.py): their
source is readable with `sg.source`, and they are differentiated again like any generated code.
Checked against closed forms and central differences."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient, numerical_jacobian

import s2sgrad as sg

A = np.random.default_rng(7).normal(size=(5, 5))


def quadratic_plus_sines(x):
    return np.sum(np.sin(x) * x**2) + x @ A @ x


def sines_third_derivative(x):
    # d^3/dx^3 of sin(x) * x**2
    return 6 * np.cos(x) - 6 * x * np.sin(x) - x * x * np.cos(x)


def test_hessian_source_shows_the_sweep_it_calls():
    x = np.linspace(-1.0, 1.0, 5)
    hessian = sg.hessian(quadratic_plus_sines)
    text = sg.source(hessian, x)
    assert "Hessian of quadratic_plus_sines" in text
    assert "def hessian_quadratic_plus_sines(x):" in text
    assert "_t0 = jvp_dquadratic_plus_sinesdx(x)" in text
    assert "def jvp_dquadratic_plus_sinesdx(x):" in text  # the batched sweep, appended
    with pytest.raises(TypeError, match="pass example arguments"):
        sg.source(hessian)


def sines_and_square_of_sum(x):
    return np.sum(np.sin(x) * x**2) + np.sum(x) ** 2


@pytest.mark.parametrize("f", [sines_and_square_of_sum, quadratic_plus_sines])
def test_jacobian_of_a_hessian_is_the_third_derivative(f):
    # forward over the Hessian's forward-over-reverse code (reverse mode over generated
    # forward code is not supported: its tangent helpers have forward rules only)
    x = np.linspace(-1.0, 1.0, 5)
    third = sg.jacobian(sg.hessian(f), mode="forward")(x)
    expected = np.zeros((5, 5, 5))
    expected[np.arange(5), np.arange(5), np.arange(5)] = sines_third_derivative(x)
    assert third.shape == (5, 5, 5)
    np.testing.assert_allclose(third, expected, atol=1e-10)


def tanh_layer(W, v):
    return np.tanh(W @ v)


def test_grad_of_a_jacobian_matches_differences():
    W = np.random.default_rng(0).normal(size=(3, 4))
    v = np.linspace(-0.5, 0.5, 4)
    jacobian = sg.jacobian(tanh_layer, wrt=1, mode="reverse")

    def total(v):
        return np.sum(jacobian(W, v))

    got = sg.grad(jacobian, wrt=1)(W, v)
    eps = 1e-6
    expected = np.array([(total(v + eps * e) - total(v - eps * e)) / (2 * eps) for e in np.eye(4)])
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)


def scaled(x, y):
    return np.exp(x) * y


def test_elementwise_shortcut_falls_back_when_the_output_is_broadcast():
    x = np.array([0.1, -0.2, 0.3])
    y_same = np.array([1.0, 2.0, 3.0])
    y_rows = np.arange(6.0).reshape(2, 3)
    jacobian = sg.jacobian(scaled)
    np.testing.assert_allclose(jacobian(x, y_same), np.diag(np.exp(x) * y_same))
    assert "diagonal_directions(x," in sg.source(jacobian, x, y_same)  # built at the end
    wide = jacobian(x, y_rows)  # same argument kinds, output (2, 3): the full sweep
    expected = np.einsum("ij,jk->ijk", np.exp(x) * y_rows, np.eye(3))
    assert wide.shape == (2, 3, 3)
    np.testing.assert_allclose(wide, expected)


def spread(x):
    return np.outer(np.sin(x), x)


def test_auto_mode_picks_by_size_at_run_time():
    jacobian = sg.jacobian(spread, mode="auto")
    x = np.array([0.3, -0.7])
    text = sg.source(jacobian, x)
    assert "if np.size(x) < np.size(_out):" in text
    eye = np.eye(2)
    expected = np.einsum("ik,j->ijk", np.diag(np.cos(x)), x) + np.einsum(
        "i,jk->ijk", np.sin(x), eye
    )
    np.testing.assert_allclose(jacobian(x), expected, atol=1e-14)
    np.testing.assert_allclose(sg.jacobian(spread, mode="reverse")(x), expected, atol=1e-14)


W = np.random.default_rng(3).normal(size=(3, 4))


def cubes_of_a_product(x):
    return np.sum((W @ x) ** 3)


def test_third_order_grad_through_a_matrix_product():
    # grad of the sum of grad of the sum of grad: 6 W^T (W 1)**2, whatever x is (the forward
    # rules of the batched product helpers, differentiated once more)
    x = np.array([0.2, -0.1, 0.4, 0.3])
    third = sg.grad(sg.grad(sg.grad(cubes_of_a_product)))
    c = W @ np.ones(4)
    np.testing.assert_allclose(third(x), 6 * W.T @ (c * c), rtol=1e-10)


def _differences_of_one(x):
    return np.diff(x)  # one element: no outputs


def _empty_slice(x):
    return x[:0] * 2.0


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize(
    ("f", "x"), [(_differences_of_one, np.array([0.7])), (_empty_slice, np.ones(3))]
)
def test_the_jacobian_of_an_empty_output_is_empty(f, x, mode):
    # reverse mode mapped a rule over no directions: np.stack of nothing raised
    # ValueError: need at least one array to stack
    got = sg.jacobian(f, mode=mode)(x)
    assert got.shape == (0, *x.shape)


def _chain(a, b, c):
    return np.linalg.multi_dot([a, b, c])


def _chain_energy(a, b, c):
    return np.sum(np.linalg.multi_dot([a, b, c]) ** 2)


@pytest.mark.parametrize("wrt", [0, 1, 2])
def test_batched_list_adjoints_line_up_behind_the_directions(wrt):
    # the adjoint of a list element read whole (a number per direction, shape (4,)) was
    # added to an element's batched adjoint (4, 2, 2) at the end: "operands could not be
    # broadcast together" in the reverse Jacobian and the Hessian of np.linalg.multi_dot
    rng = np.random.default_rng(0)
    args = [rng.standard_normal((2, 3)), rng.standard_normal((3, 2)), rng.standard_normal((2, 2))]

    def moved(f, z):
        return f(*[z if k == wrt else arg for k, arg in enumerate(args)])

    want = numerical_jacobian(lambda z: moved(_chain, z), args[wrt])
    got = sg.jacobian(_chain, wrt=wrt, mode="reverse")(*args)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    hessian = numerical_jacobian(
        lambda z: numerical_gradient(lambda y: moved(_chain_energy, y), (z,), 0, 1e-5),
        args[wrt],
        1e-4,
    )
    got = sg.hessian(_chain_energy, wrt=wrt)(*args)
    np.testing.assert_allclose(got, hessian, rtol=1e-4, atol=1e-4)


def _sublist_einsum(x, y):
    return np.sum(np.einsum(x, (Ellipsis, 0, 1), y, (Ellipsis, 1, 2), (Ellipsis, 0, 2)) ** 2)


def test_second_derivatives_of_einsum_with_sublists_holding_an_ellipsis():
    # the zero tangent of the sublists' Ellipsis: "Cannot interpret 'Ellipsis' as a data type"
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 2, 3)), rng.standard_normal((2, 3, 2))
    hessian = numerical_jacobian(
        lambda z: numerical_gradient(lambda w: _sublist_einsum(x, w), (z,), 0, 1e-5), y, 1e-4
    )
    np.testing.assert_allclose(sg.hessian(_sublist_einsum, wrt=1)(x, y), hessian, atol=1e-4)
    mixed = numerical_jacobian(
        lambda z: numerical_gradient(lambda w: _sublist_einsum(w, z), (x,), 0, 1e-5), y, 1e-4
    )
    got = sg.grad(sg.grad(_sublist_einsum), wrt=1)(x, y)
    np.testing.assert_allclose(got, mixed.reshape((-1, *y.shape)).sum(axis=0), atol=1e-4)


def _concat_and_multiply(weights, *args):  # autograd's examples/rnn.py
    cat_state = np.hstack(args + (np.ones((args[0].shape[0], 1)),))  # noqa: RUF005 (a join)
    return np.dot(cat_state, weights)


def _rnn_step(w, x):
    return np.sum(np.tanh(_concat_and_multiply(w, x, 2 * x)))


def test_the_forward_jacobian_through_a_tuple_joined_in_a_callee():
    # the batched tangent of ``args + (ones,)`` was lifted to the rank of the tuple, which
    # NumPy could not read as one array ("inhomogeneous shape")
    rng = np.random.default_rng(0)
    w, x = rng.standard_normal((5, 2)) * 0.3, rng.standard_normal((3, 2))
    want = numerical_gradient(_rnn_step, (w, x), 0)
    got = sg.jacobian(_rnn_step, mode="forward")(w, x)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-8)


def _rows_appended(x):
    rows = []
    for i in range(3):
        rows.append([x[i], 1.0, x[i] ** 2])
    return np.sum(np.stack(rows) ** 3)


def _padded(x):
    return np.sum(np.concatenate([x, [1.0, x[0]]]) ** 3)


def _stacked_literal(x):
    return np.sum(np.vstack([x, [1.0, 2.0, x[0]]]) ** 3)


def _single_items(x):
    return np.sum(np.hstack([[x[0]], [x[1]], [2.0]]) ** 3)


def _columns(x):
    return np.sum(np.column_stack([[x[0], 1.0], [x[1], x[2]]]) ** 3)


def _tuples(x):
    return np.sum(np.stack([(x[0], x[1]), (1.0, x[2])]) ** 3)


@pytest.mark.parametrize(
    "f",
    [_rows_appended, _padded, _stacked_literal, _single_items, _columns, _tuples],
    ids=lambda f: f.__name__,
)
def test_batched_tangents_of_python_lists_of_numbers_keep_the_directions_in_front(f):
    # a list of batched scalar tangents became an array with the directions last: the forward
    # Jacobian, the Hessian and grad of grad put each tangent in the wrong slot (an asymmetric
    # Hessian, silently) or crashed in batch_concatenate (found running tutorial-style code)
    x = np.array([0.3, -0.4, 0.7])
    hessian = numerical_jacobian(lambda z: numerical_gradient(f, (z,), 0, 1e-5), x, 1e-4)
    np.testing.assert_allclose(sg.hessian(f)(x), hessian, atol=1e-5)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x), hessian.sum(0), atol=1e-5)
    gradient = numerical_gradient(f, (x,), 0)
    np.testing.assert_allclose(sg.jacobian(f, mode="forward")(x), gradient, atol=1e-6)
