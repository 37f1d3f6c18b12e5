"""Keyword-only parameters (``def f(x, *, k=2.0)``) under every transform: their defaults are
used, and keywords are passed where the API takes them. Each derivative is checked against
central differences. (jvp, vjp, jacobian, hessian and hvp crashed: ``zip() argument 2 is
shorter``, or a keyword-only parameter passed by position.)"""

import numpy as np
import pytest

import s2sgrad as sg
from tests.numerical import numerical_gradient


def powered(x, *, k=2.0, shift=0.5):
    return np.sum((x + shift) ** k)


def elementwise(x, y, *, k=3.0):
    return np.sin(x) * y**k


def scaled(x, *, s=2.0):
    return s * x * x


def calls_with_keyword(x):
    return np.sum(scaled(x, s=3.0) + scaled(x))


def required_keyword(x, *, k):
    return np.sum(x**k)


X = np.array([0.3, 1.2, 2.0])
Y = np.array([1.5, 0.5, -1.0])
V = np.array([1.0, -0.5, 0.25])


def _hessian(fn, x, **kw):
    rows = [
        numerical_gradient(
            lambda z, i=i: numerical_gradient(lambda w: fn(w, **kw), (z,), 0)[i], (x,), 0, eps=1e-4
        )
        for i in range(x.size)
    ]
    return np.array(rows)


@pytest.mark.parametrize("fn", [powered, calls_with_keyword])
def test_jvp_vjp_use_the_defaults(fn):
    expected = numerical_gradient(fn, (X,), 0)
    out, tangent = sg.jvp(fn, (X,), (V,))
    assert np.isclose(out, fn(X))
    np.testing.assert_allclose(tangent, expected @ V, rtol=1e-6)
    out, back = sg.vjp(fn, X)
    (gradient,) = back(1.0)
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_with_defaults_and_keywords(mode):
    jac = sg.jacobian(elementwise, mode=mode)
    expected = np.array(
        [numerical_gradient(lambda x, i=i: elementwise(x, Y)[i], (X,), 0) for i in range(3)]
    )
    np.testing.assert_allclose(jac(X, Y), expected, rtol=1e-6, atol=1e-8)
    expected = np.array(
        [numerical_gradient(lambda x, i=i: elementwise(x, Y, k=2.0)[i], (X,), 0) for i in range(3)]
    )
    np.testing.assert_allclose(jac(X, Y, k=2.0), expected, rtol=1e-6, atol=1e-8)


def test_hessian_and_hvp_with_defaults_and_keywords():
    for kw in ({}, {"k": 3.0}):
        expected = _hessian(powered, X, **kw)
        np.testing.assert_allclose(sg.hessian(powered)(X, **kw), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(sg.hvp(powered)(X, V, **kw), expected @ V, rtol=1e-4)


def test_grad_and_value_and_grad_with_keywords():
    expected = numerical_gradient(lambda x: powered(x, k=3.0), (X,), 0)
    np.testing.assert_allclose(sg.grad(powered)(X, k=3.0), expected, rtol=1e-6)
    value, gradient = sg.value_and_grad(powered)(X, k=3.0)
    assert np.isclose(value, powered(X, k=3.0))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6)


def test_grad_of_grad_with_keyword_only():
    second = sg.grad(sg.grad(cube_with_keyword))(1.5)
    assert np.isclose(second, 6 * 1.5 * 2.0)


def cube_with_keyword(x, *, c=2.0):
    return c * x**3


def test_a_keyword_only_parameter_without_default_is_a_clear_type_error():
    with pytest.raises(TypeError, match="'k'"):
        sg.jvp(required_keyword, (X,), (V,))
    with pytest.raises(TypeError, match="'k'"):
        sg.vjp(required_keyword, X)


def test_differentiating_with_respect_to_a_keyword_only_parameter():
    x = np.array([1.5, 2.0])
    first = np.sum(x**2 * np.log(x))  # d/dk sum(x ** k) at k = 2 (shift 0)
    second = np.sum(x**2 * np.log(x) ** 2)
    assert np.isclose(sg.grad(powered, wrt="k")(x, shift=0.0), first)
    assert np.isclose(sg.jacobian(powered, wrt="k")(x, shift=0.0), first)
    assert np.isclose(sg.jacobian(powered, wrt="k", mode="forward")(x, shift=0.0), first)
    assert np.isclose(sg.hessian(powered, wrt="k")(x, shift=0.0), second)
    assert np.isclose(sg.hvp(powered, wrt="k")(x, 1.0, shift=0.0), second)
