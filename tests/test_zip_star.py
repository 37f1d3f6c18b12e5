"""``zip(*rows)``: a loop or comprehension over the columns of rows (it ran over the rows
themselves, so the value and every derivative were wrong without a word when there were as
many rows as columns, and a crash otherwise; found with autograd's examples/gmm.py)."""

import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

X = np.array([0.3, -0.2, 0.9])


def loop_over_columns(x):
    t = (x * 2.0, x + 1.0, x**2)
    s = 0.0
    for a, b, c in zip(*t, strict=True):
        s = s + a * b + np.sin(c)
    return s


def generator_over_columns(x):
    t = (x * 2.0, x + 1.0)
    return sum(a * b for a, b in zip(*t, strict=True))


def listed_columns(x):
    cols = list(zip(*[x * 2.0, x**2, np.sin(x)], strict=True))
    return sum(c[0] * c[1] + c[2] for c in cols)


def unpack(params):
    return params["a"] * 2.0, params["b"], params["c"]


def columns_of_a_callee_result(params):  # two components, three fields
    total = 0.0
    for a, b, c in zip(*unpack(params), strict=True):
        total = total + np.sin(a) * b + c**2
    return total


@pytest.mark.parametrize(
    "f", [loop_over_columns, generator_over_columns, listed_columns], ids=lambda f: f.__name__
)
def test_the_loop_runs_over_the_columns(f):
    value, grad = sg.value_and_grad(f)(X)
    assert value == pytest.approx(f(X), rel=1e-12)
    want = numerical_gradient(f, (X,), 0)
    np.testing.assert_allclose(grad, want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (X,), (X,))[1], want @ X, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jacobian(f, mode="forward")(X), want, rtol=1e-6, atol=1e-8)


def test_the_columns_of_a_callee_result_with_fewer_rows_than_columns():
    params = {"a": np.array([0.5, -1.0]), "b": np.array([1.0, 2.0]), "c": np.array([0.1, 0.2])}
    got = sg.grad(columns_of_a_callee_result)(params)
    for key in params:

        def moved(v, key=key):
            return columns_of_a_callee_result({**params, key: v})

        want = numerical_gradient(moved, (params[key],), 0)
        np.testing.assert_allclose(got[key], want, rtol=1e-6, atol=1e-8)
