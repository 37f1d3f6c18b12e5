"""sg.grad and sg.value_and_grad on straight-line NumPy code, checked against finite differences."""

import math

import numpy as np
import programs
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(0)


def spd(n):
    return rng.random((n, n)) + 2 * np.eye(n)


CASES = [
    ("f_sum", (rng.random(4),)),
    ("f_bcast", (rng.random((3, 4)), rng.random(4))),
    ("f_bcast", (rng.random((3, 4)), rng.random((3, 1)))),
    ("f_bcast", (rng.random((3, 4)), 0.5)),
    ("f_bcast2", (rng.random((3, 4)), rng.random(4))),
    ("f_bcast2", (0.3, rng.random(3))),
    ("f_aug", (rng.random(3),)),
    ("f_aug", (0.7,)),
    ("f_unpack", (rng.random(3), rng.random(3))),
    ("f_index", (rng.random(6),)),
    ("f_fancy", (rng.random(4),)),
    ("f_mask", (rng.random(6),)),
    ("f_matmul", (rng.random((3, 2)), rng.random((4, 3)))),
    ("f_matmul", (rng.random((3, 2)), rng.random(3))),
    ("f_mean_axis", (rng.random((3, 4)),)),
    ("f_methods", (rng.random((3, 2)),)),
    ("f_math", (0.7, 1.3)),
    ("f_global", (rng.random(3),)),
    ("f_linalg", (spd(3),)),
    ("f_slogdet", (spd(3),)),
    ("f_concat", (rng.random(3), rng.random(3))),
    ("f_einsum", (rng.random((2, 3)), rng.random((3, 4)))),
    ("f_where", (rng.random(7),)),
    ("f_nonscalar", (rng.random(3),)),
    ("f_unused", (rng.random(3), rng.random(3))),
    ("f_var", (rng.random((3, 4)),)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_gradient_matches_finite_differences(name, args):
    f = getattr(programs, name)
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    assert isinstance(grads, tuple) and len(grads) == len(args)
    for i, got in enumerate(grads):
        want = numerical_gradient(f, args, i)
        assert np.shape(got) == np.shape(args[i])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_inputs_are_not_modified():
    x = rng.random(6)
    before = x.copy()
    sg.grad(programs.f_index)(x)
    np.testing.assert_array_equal(x, before)


def square_sum(x, w):
    return np.sum((x * w) ** 2)


def test_wrt_by_index_name_and_tuple():
    x, w = rng.random(3), rng.random(3)
    by_index = sg.grad(square_sum, wrt=1)(x, w)
    by_name = sg.grad(square_sum, wrt="w")(x, w)
    both = sg.grad(square_sum, wrt=("x", 1))(x, w)
    np.testing.assert_allclose(by_index, 2 * x**2 * w)
    np.testing.assert_allclose(by_name, by_index)
    np.testing.assert_allclose(both[0], 2 * w**2 * x)
    np.testing.assert_allclose(both[1], by_index)
    assert sg.grad(square_sum, wrt=-1)(x, w).shape == (3,)


def test_single_element_wrt_tuple_gives_tuple():
    result = sg.grad(square_sum, wrt=(0,))(rng.random(3), rng.random(3))
    assert isinstance(result, tuple) and len(result) == 1


def test_value_and_grad():
    x, w = rng.random(3), rng.random(3)
    value, grad = sg.value_and_grad(square_sum, wrt="x")(x, w)
    assert value == pytest.approx(square_sum(x, w))
    np.testing.assert_allclose(grad, 2 * w**2 * x)


@sg.grad
def decorated(x):
    return x**3


@sg.grad(wrt="y")
def decorated_with_options(x, y):
    return x * y**2


def test_decorators():
    assert decorated(2.0) == pytest.approx(12.0)
    assert decorated_with_options(3.0, 2.0) == pytest.approx(12.0)
    assert decorated.__name__ == "ddecorateddx"


def with_default(x, scale=3.0, *, power=2):
    return scale * x**power


def test_signature_and_defaults_are_kept():
    df = sg.grad(with_default)
    assert df(2.0) == pytest.approx(12.0)
    assert df(2.0, 1.0, power=3) == pytest.approx(12.0)
    assert df(x=2.0) == pytest.approx(12.0)


def test_name_is_the_generated_entry():
    df = sg.grad(programs.f_sum)
    assert df.__name__ == "df_sumdx"
    assert "def df_sumdx(" in sg.source(df)


def test_scalar_and_array_specializations_agree():
    df = sg.grad(programs.f_bcast2, wrt=(0, 1))
    scalar = df(0.3, 0.8)
    array = df(np.array(0.3), np.array(0.8))
    np.testing.assert_allclose(scalar, array)
    assert isinstance(scalar[0], float)


def test_unconnected_input_gets_zeros():
    dx, dy = sg.grad(programs.f_unused, wrt=(0, 1))(rng.random(3), np.ones(3))
    np.testing.assert_array_equal(dx, np.zeros(3))
    np.testing.assert_allclose(dy, 2 * np.ones(3))


def test_integer_results_carry_no_gradient():
    df = sg.grad(rounded)
    assert df(2.3) == pytest.approx(2.0)  # d(floor(x) * x)/dx = floor(x)


def rounded(x):
    return np.floor(x) * x


def test_math_functions_on_python_floats():
    got = sg.grad(programs.f_math, wrt=(0, 1))(0.7, 1.3)
    want = [numerical_gradient(programs.f_math, (0.7, 1.3), i) for i in (0, 1)]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert all(isinstance(g, float) for g in got)
    assert math.isfinite(got[0])


def test_cached_transform_is_reused():
    assert sg.grad(square_sum).__wrapped_transform__ is sg.grad(square_sum).__wrapped_transform__


SCALE = 2.0


def scaled(x):
    return SCALE * x**2


def test_changed_global_is_seen_by_a_new_transform():
    global SCALE
    assert sg.grad(scaled)(1.0) == pytest.approx(4.0)
    SCALE = 5.0
    try:
        assert sg.grad(scaled)(1.0) == pytest.approx(10.0)
    finally:
        SCALE = 2.0


def test_wrapper_serves_other_argument_types_after_specializing():
    df = sg.grad(programs.f_bcast2, wrt=(0, 1))
    first = df(0.3, 0.8)  # the wrapper now runs this specialization directly
    as_arrays = df(np.array([0.3]), np.array([0.8]))
    again = df(0.3, 0.8)
    np.testing.assert_allclose(np.ravel(as_arrays[0]), [first[0]])
    np.testing.assert_allclose(again, first)
    x = rng.random((3, 4))
    b = rng.random(4)
    got = df(x, b)
    for i, want in enumerate(numerical_gradient(programs.f_bcast2, (x, b), k) for k in (0, 1)):
        np.testing.assert_allclose(got[i], want, rtol=1e-5, atol=1e-6)


def test_integer_and_float32_arrays():
    ints = np.arange(6)
    np.testing.assert_allclose(
        sg.grad(programs.f_index)(ints),
        numerical_gradient(programs.f_index, (ints,), 0),
        rtol=1e-5,
    )
    single = rng.random(6).astype(np.float32)
    assert sg.grad(programs.f_index)(single).dtype == np.float32
