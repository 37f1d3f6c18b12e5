"""Transforms of a primitive itself (``sg.jvp(np.sin, ...)``, ``sg.grad(np.sin)``): it is
differentiated through its rules, as a JAX user expects (they crashed inside the compiler:
``'numpy.ufunc' object has no attribute '__code__'``); one with no rule is a LookupError
naming it, and an object that is neither is a TypeError. Checked against closed forms and
central differences."""

import math

import numpy as np
import pytest

import s2sgrad as sg
from tests.numerical import numerical_gradient

X = np.array([0.3, 1.2, -0.7])
V = np.array([1.0, -0.5, 2.0])


@pytest.mark.parametrize("primitive", [np.sin, np.tanh, np.exp])
def test_every_transform_of_a_ufunc(primitive):
    expected = numerical_gradient(primitive, (X,), 0)  # the diagonal of the Jacobian
    out, tangent = sg.jvp(primitive, (X,), (V,))
    np.testing.assert_allclose(out, primitive(X))
    np.testing.assert_allclose(tangent, expected * V, rtol=1e-6)
    out, back = sg.vjp(primitive, X)
    np.testing.assert_allclose(back(V)[0], expected * V, rtol=1e-6)
    np.testing.assert_allclose(sg.grad(primitive)(X), expected, rtol=1e-6)
    value, gradient = sg.value_and_grad(primitive)(X)
    np.testing.assert_allclose(value, primitive(X))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(
            sg.jacobian(primitive, mode=mode)(X), np.diag(expected), rtol=1e-6
        )


def test_second_order_of_a_ufunc():
    assert np.isclose(sg.grad(sg.grad(np.sin))(0.5), -np.sin(0.5))
    assert np.isclose(sg.hvp(np.sin)(0.5, 2.0), -2.0 * np.sin(0.5))
    np.testing.assert_allclose(sg.hessian(np.sin)(X), np.diag(-np.sin(X)), atol=1e-12)


def test_reductions_binary_ufuncs_and_math_functions():
    np.testing.assert_allclose(sg.grad(np.sum)(X), np.ones(3))
    np.testing.assert_allclose(sg.grad(np.prod)(X), numerical_gradient(np.prod, (X,), 0), rtol=1e-6)
    assert np.isclose(sg.grad(math.sin)(0.5), math.cos(0.5))
    _, tangent = sg.jvp(np.multiply, (X, V), (np.ones(3), None))
    np.testing.assert_allclose(tangent, V)
    _, back = sg.vjp(np.multiply, X, V)
    da, db = back(np.ones(3))
    np.testing.assert_allclose(da, V)
    np.testing.assert_allclose(db, X)
    gx, gy = sg.grad(np.arctan2, wrt=(0, 1))(0.5, 2.0)
    assert np.isclose(gx, 2.0 / 4.25) and np.isclose(gy, -0.5 / 4.25)


def test_a_primitive_without_a_rule_is_a_lookup_error_naming_it():
    with pytest.raises(LookupError, match=r"numpy\.vander"):
        sg.grad(np.vander)
    with pytest.raises(LookupError, match=r"numpy\.vander"):
        sg.jvp(np.vander, (X,), (V,))


def test_something_not_a_function_is_a_type_error():
    with pytest.raises(TypeError, match="grad"):
        sg.grad(object())
    with pytest.raises(TypeError, match="jacobian"):
        sg.jacobian(3.0)
