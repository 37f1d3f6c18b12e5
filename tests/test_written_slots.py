"""Slot writes whose derivatives were silently wrong (found by running Tangent's test functions
and variations of them): an integer index naming one slot twice, an array a callee built by
slot writes and returned, and a function defined inside f that writes into f's array.

Every derivative is compared with central differences of the function itself, in every mode.
"""

import numpy as np
import pytest
from numerical import numerical_gradient, numerical_jacobian
from s2sgrad.runtime import kept_entries

import s2sgrad as sg

W = np.array([1.0, 2.0, 3.0])
X = np.array([0.3, -0.4, 0.9])


# -- an integer index naming one slot twice: NumPy keeps the last value written there ---------


def repeated_write(x):
    y = np.zeros(3)
    y[[0, 0, 1]] = x * 2.0  # slot 0 keeps 2 x[1]: x[0] is overwritten
    return np.sum(y * W * x)


def repeated_add(x):
    y = np.ones(3)
    y[[0, 0, 1]] += x * x  # buffered: slot 0 gets one addition, of x[1]^2
    return np.sum(y * W)


def repeated_scale(x):
    y = x * 1.0
    y[[2, -1]] *= x[0]  # one slot named twice, scaled once
    return np.sum(y * y)


def repeated_scalar(x):
    y = np.zeros(3)
    y[[0, 0, 1]] = x[0] * x[1]  # two slots hold the product
    return np.sum(y * W) + x[2]


def repeated_pairs(x):
    m = np.zeros((3, 3))
    m[[0, 0, 2], [1, 1, 0]] = x * x  # element (0, 1) named twice
    return np.sum(m @ W)


REPEATED = [repeated_write, repeated_add, repeated_scale, repeated_scalar, repeated_pairs]


def _hessian(f, x):
    return numerical_jacobian(lambda z: numerical_gradient(f, (z,), 0, eps=1e-5), x, eps=1e-4)


def _every_mode(f, x):
    want = numerical_gradient(f, (x,), 0)
    value, got = sg.value_and_grad(f)(x)
    assert value == pytest.approx(f(x), rel=1e-12)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sg.vjp(f, x)[1](1.0)[0], want, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(sg.jvp(f, (x,), (W,))[1], want @ W, rtol=1e-6, atol=1e-7)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(sg.jacobian(f, mode=mode)(x), want, rtol=1e-6, atol=1e-7)
    hessian = _hessian(f, x)
    np.testing.assert_allclose(sg.hessian(f)(x), hessian, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sg.hvp(f)(x, W), hessian @ W, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x), hessian.sum(0), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("f", REPEATED, ids=lambda f: f.__name__)
def test_a_slot_named_twice_gets_the_adjoint_of_the_value_numpy_kept(f):
    # the adjoint gave every entry naming a slot that slot's adjoint: y[[0, 0, 1]] = 2 x gave
    # [2, 2, 4] for [0, 2, 4] (sg.grad, vjp, the reverse Jacobian; forward mode was right)
    _every_mode(f, X)


def test_the_entries_kept_are_those_numpy_keeps():
    np.testing.assert_array_equal(kept_entries((3,), [0, 0, 1]), [False, True, True])
    np.testing.assert_array_equal(kept_entries((4,), [-1, 3, 0]), [False, True, True])
    pairs = ([0, 0, 2], [1, 1, 0])
    np.testing.assert_array_equal(kept_entries((3, 3), pairs), [False, True, True])
    y = np.zeros(5)
    index = np.array([[4, 1], [4, 4]])
    y[index] = np.arange(1.0, 5.0).reshape(2, 2)  # what NumPy keeps, asked directly
    np.testing.assert_array_equal(kept_entries((5,), index), y[index] == [[1, 2], [3, 4]])


# -- a callee that builds an array by slot writes and returns it ------------------------------


def build(x):
    y = np.zeros(3)
    y[0] = x[0] ** 2
    y[2] = x[1] * x[2]
    return y


def uses_a_built_array(x):
    y = build(x)
    return np.sum(y * x)


def build_pair(x):
    y = np.ones(3)
    y[1] = x[1] ** 2
    return y, x[0]


def uses_a_built_pair(x):
    y, a = build_pair(x)
    return np.sum(y * x) * a


def build_copy(y):
    z = y.copy()
    z[1] = z[0] * z[1]
    return z


def uses_a_built_copy(x):
    z = build_copy(x)
    return np.sum(z * x)


def build_matrix(x):
    m = np.eye(3)
    m[0] = x
    m[:, 2] = x**2
    return m


def uses_a_built_matrix(x):
    return np.sum(build_matrix(x) @ x)


@pytest.mark.parametrize(
    "f",
    [uses_a_built_array, uses_a_built_pair, uses_a_built_copy, uses_a_built_matrix],
    ids=lambda f: f.__name__,
)
def test_an_array_a_callee_wrote_into_and_returned_is_what_the_caller_reads(f):
    # the callee's backward half put its overwritten slots back into the array it had
    # returned, so the caller read them as they were before the writes: the value of
    # uses_a_built_array was 0.0 and its gradient wrong; through build_pair the gradient was
    # right but the Hessian was not symmetric (the reverse Jacobian of build_matrix was wrong)
    _every_mode(f, np.array([0.7, -1.1, 0.4]))


# -- a function defined inside f, writing into f's array ----------------------------------------


def writes_through_a_nested_function(x):
    y = np.zeros(3)

    def put(i, v):
        y[i] = v

    for i in range(3):
        put(i, x[i] ** 2)
    return np.sum(y * x)


def test_a_nested_function_called_for_its_writes_is_inlined():
    # a call whose result goes unread was kept as written while the definition was gone:
    # NameError: name 'put' is not defined, raised in generated code
    _every_mode(writes_through_a_nested_function, np.array([0.5, 1.2, 0.8]))


# -- a tuple assignment whose later values are views of what an earlier target writes -----------


def swap_rows(a):
    b = a.copy()
    b[0], b[2] = b[2], b[0]  # rows are views: NumPy leaves both equal to the old b[2]
    return np.sum(b * np.arange(9.0).reshape(3, 3))


def swap_row_copies(a):
    b = a.copy()
    b[0], b[2] = b[2].copy(), b[0].copy()
    return np.sum(b * np.arange(9.0).reshape(3, 3))


def swap_entries(x):
    y = x * 1.0
    y[0], y[2] = y[2], y[0]  # numbers: a swap
    return np.sum(y * W)


def test_a_later_value_viewing_an_earlier_target_is_refused_where_it_is_a_view():
    # the derivative was that of a swap, NumPy's value is not one: silently wrong
    with pytest.raises(sg.TransformError, match=r"'b' is written into here.*\(b\[2\]\)") as info:
        sg.grad(swap_rows)(np.ones((3, 3)))
    assert info.value.lineno == swap_rows.__code__.co_firstlineno + 2
    a = np.arange(9.0).reshape(3, 3) / 7.0
    for f in (swap_row_copies,):
        np.testing.assert_allclose(sg.grad(f)(a), numerical_gradient(f, (a,), 0), atol=1e-7)
    _every_mode(swap_entries, X)


# -- a slot write whose value is the array itself ----------------------------------------------


def written_onto_itself(x):
    y = x * 2
    y[:] = y
    return np.sum(y * x)


def reversed_onto_itself(x):
    y = x * 1.0
    y[::-1] = y  # NumPy copies the overlap first: y is x reversed
    return np.sum(y * x**2)


def permuted_onto_itself(x):
    y = x * 2
    y[[2, 0, 1]] = y
    return np.sum(y * x)


@pytest.mark.parametrize(
    "f",
    [written_onto_itself, reversed_onto_itself, permuted_onto_itself],
    ids=lambda f: f.__name__,
)
def test_a_slot_write_of_the_array_itself_keeps_the_adjoint_it_gives(f):
    # the value's adjoint is the array's own: it was added, then the slots were zeroed, so
    # sg.grad of y[:] = y was half the derivative (found running tutorial-style programs)
    _every_mode(f, X)
