"""Builtins called inside a differentiated function: ``dict(a=...)`` is a dict literal,
``pow`` has the rule of ``**``, and a builtin with no derivative is a LookupError that says
what to write instead (it suggested registering a rule for ``dict``)."""

import numpy as np
import pytest
from numerical import numerical_gradient, numerical_jacobian

import s2sgrad as sg

X = np.array([0.3, 0.5, 0.9])


def keyword_dict(x):
    d = dict(a=x[0], b=x[1] * x)
    return d["a"] * np.sum(d["b"])


def builtin_pow(x):
    return pow(x[0], 3) + pow(x[1], x[2])


@pytest.mark.parametrize("f", [keyword_dict, builtin_pow], ids=lambda f: f.__name__)
def test_the_builtin_is_differentiated_in_every_mode(f):
    want = numerical_gradient(f, (X,), 0)
    np.testing.assert_allclose(sg.grad(f)(X), want, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(sg.jvp(f, (X,), (X,))[1], want @ X, rtol=1e-6, atol=1e-8)
    hessian = numerical_jacobian(lambda z: numerical_gradient(f, (z,), 0, eps=1e-5), X, 1e-4)
    np.testing.assert_allclose(sg.hessian(f)(X), hessian, rtol=1e-4, atol=1e-5)


def sorts(x):
    return sorted(x)[0] * x[1]


def tuples(x):
    t = tuple(x * 2.0)
    return t[0] * t[1]


def divides(x):
    q, r = divmod(x[0], 0.2)
    return r * x[1] + q


@pytest.mark.parametrize(
    ("f", "instead"),
    [(sorts, r"np\.sort\(x\)"), (tuples, r"a tuple literal"), (divides, r"x // y and x % y")],
    ids=["sorted", "tuple", "divmod"],
)
def test_a_builtin_without_a_derivative_says_what_to_write_instead(f, instead):
    name = f.__code__.co_names[0]
    line = f.__code__.co_firstlineno + 1
    message = rf"no gradient registered for {name} \(used at .*:{line}:\d+\); the builtin {name}"
    with pytest.raises(LookupError, match=message) as info:
        sg.grad(f)(X)
    assert "register_vjp" not in str(info.value)
    assert info.match(instead)
