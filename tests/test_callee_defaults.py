"""A callee's default values are values, not names: a call leaving a parameter out uses the
default the callee has now (the transform cache checks every callee's defaults), and a default
computed in an enclosing scope (``def step(x, s=scale)`` in a factory) is not a name the callee
reads. Every derivative is checked against central differences of the function as it is now."""

import types

import numpy as np
import pytest

import s2sgrad as sg
from tests.numerical import numerical_gradient


def step(x, s=2.0):
    return x * s


def calls_step(x):
    return np.sum(step(x) * x)


def keyword_step(x, *, s=2.0):
    return x * s


def calls_keyword_step(x):
    return np.sum(keyword_step(x) * x)


def make(scale, vector):
    def inner(x, s=scale, *, v=vector):
        return x * s + np.sum(v * x) * x

    def g(x):
        return np.sum(inner(x) * x) + np.sum(inner(x, 1.0))

    return g


X = np.array([0.5, -1.5, 2.0])
V = np.array([1.0, 0.5, -2.0])

MODES = {
    "grad": lambda fn: sg.grad(fn)(X),
    "value_and_grad": lambda fn: sg.value_and_grad(fn)(X)[1],
    "jvp": lambda fn: sg.jvp(fn, (X,), (V,))[1],
    "vjp": lambda fn: sg.vjp(fn, X)[1](1.0)[0],
    "jacobian": lambda fn: sg.jacobian(fn)(X),
    "jacobian_forward": lambda fn: sg.jacobian(fn, mode="forward")(X),
    "hvp": lambda fn: sg.hvp(fn)(X, V),
    "hessian": lambda fn: sg.hessian(fn)(X),
    "grad_of_grad": lambda fn: sg.grad(sg.grad(fn))(X),
}


def _numeric(fn, mode):
    """What `mode` computes, by central differences of `fn` as it is now."""
    gradient = numerical_gradient(fn, (X,), 0)
    if mode == "jvp":
        return np.dot(gradient, V)
    if mode in ("hvp", "hessian", "grad_of_grad"):
        rows = [numerical_gradient(lambda x, k=k: sg.grad(fn)(x)[k], (X,), 0) for k in range(3)]
        hessian = np.array(rows)
        return {"hvp": hessian @ V, "hessian": hessian}.get(mode, hessian.sum(axis=0))
    return gradient


def _check(fn, mode):
    np.testing.assert_allclose(MODES[mode](fn), _numeric(fn, mode), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("mode", MODES)
def test_a_callee_default_changed_in_place_is_used(mode):
    try:
        for default in (2.0, 5.0):
            step.__defaults__ = (default,)
            _check(calls_step, mode)
        for default in (2.0, 4.0):
            keyword_step.__kwdefaults__["s"] = default
            _check(calls_keyword_step, mode)
    finally:
        step.__defaults__ = (2.0,)
        keyword_step.__kwdefaults__["s"] = 2.0


@pytest.mark.parametrize("mode", MODES)
def test_a_callee_sharing_code_with_other_defaults_is_used(mode):
    global step
    original = step
    try:
        _check(calls_step, mode)
        step = types.FunctionType(step.__code__, step.__globals__, "step", (7.0,))
        _check(calls_step, mode)
    finally:
        step = original


@pytest.mark.parametrize("mode", MODES)
def test_a_default_computed_in_the_enclosing_scope(mode):
    for scale, vector in ((3.0, V), (-0.5, X * 2.0)):
        _check(make(scale, vector), mode)
