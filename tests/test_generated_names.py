"""User names that look like generated ones (issue 16, "Generated names outside the namer"):
a local ``_batch`` or a parameter ``_out`` must not collide with the names of Jacobian and
Hessian code (the sweep's direction count, the output, the columns), since every generated
name comes from the `Namer`. Checked against central differences.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient, numerical_jacobian

import s2sgrad as sg

X = np.array([0.3, -1.2, 0.7])


def local_batch(x):
    _batch = 2.0
    y = np.zeros(3)
    y[0] = x[0] * _batch
    y[1] = np.sum(x)
    return np.sin(y) * x


def local_batch_int(x):
    _batch = 2
    y = np.zeros(3)
    y[1] = x[0] * x[1]
    return y * _batch + x


def parameter_out(_out):
    return np.sin(_out) * X + np.sum(_out) * _out


def parameters_like_locals(_j0, _t0=1.0):
    return np.sin(_j0) * _t0 + np.sum(_j0) * _j0


def parameter_like_the_sweep(jvp_parameter_like_the_sweep):
    _out = jvp_parameter_like_the_sweep
    return np.cumsum(_out**2) * np.sum(_out)


CASES = [local_batch, local_batch_int, parameter_out, parameters_like_locals]
CASES.append(parameter_like_the_sweep)


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian(f, mode):
    np.testing.assert_allclose(
        sg.jacobian(f, mode=mode)(X), numerical_jacobian(f, X), rtol=1e-6, atol=1e-8
    )


def scalar_with_batch(x):
    _batch = 3.0
    y = np.zeros(3)
    y[2] = x[0] * x[2]
    return np.sum(np.sin(x) * y) * _batch


def test_hessian_with_a_local_named_batch():
    expected = numerical_jacobian(sg.grad(scalar_with_batch), X)
    np.testing.assert_allclose(sg.hessian(scalar_with_batch)(X), expected, rtol=1e-5, atol=1e-7)


def shifted_sines(b, E):
    total = 0.0
    for _ in range(3):
        E = np.sin(E + b)
        total = total + np.sum(E)
    return total


def test_a_pushed_shape_is_popped_into_a_name_of_its_own():
    """A loop that pushes only a value's shape pops it into a name of its own: the value's
    name never holds a tuple in the adjoint (issue 18, confusing in a debugger)."""
    import re

    b, E = np.full(4, 0.3), np.full((2, 4), 0.2)
    source = sg.source(sg.grad(shifted_sines), b, E)
    pushes = re.findall(r"_stack\w*\.append\(\((.*)\)\)", source)
    pops = re.findall(r"\((.*)\) = _stack\w*\.pop\(\)", source)
    assert pushes and len(pushes) == len(pops)
    shapes = 0
    for pushed, popped in zip(pushes, pops, strict=True):
        for item, name in zip(pushed.split(", "), popped.split(", "), strict=True):
            if item.startswith("np.shape("):
                shapes += 1
                assert name != item[len("np.shape(") : -1]
    assert shapes
    expected = numerical_jacobian(lambda v: shifted_sines(v, E), b)
    np.testing.assert_allclose(sg.grad(shifted_sines)(b, E), expected, rtol=1e-6)


def _lambda_with_a_temporary_parameter(v, y):
    squares = {"a": np.sum(np.diff(v) ** 2), "b": y}
    g = lambda _t1: v @ v + _t1  # noqa: E731 (a parameter named like a temporary)
    s = g(v[0] % 2.0)
    return np.sum(v * (y / (1.0 + squares["a"] ** 2))) + s


def test_an_inlined_lambdas_parameter_named_like_a_temporary():
    """The lambda's ``_t1``, bound where the lambda is inlined, overwrote the temporary
    ``_t1 = np.diff(v)`` the adjoint reads later (crash in diff_adjoint: fuzz campaign,
    seed 3500712): a parameter that is no local of the function gets a fresh name."""
    v, y = np.array([0.2, -0.4, 0.9]), 0.7
    for index in (0, 1):
        got = sg.grad(_lambda_with_a_temporary_parameter, wrt=index)(v, y)
        expected = numerical_gradient(_lambda_with_a_temporary_parameter, (v, y), index)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-9)
