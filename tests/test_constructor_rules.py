"""Constructors whose values move with a float argument (issue 16): ``np.linspace``'s ends and
``np.full``'s fill value have rules, checked in every mode against central differences; the
index tricks ``np.r_``/``np.c_`` and the constructors without a rule (``np.arange``'s start,
``np.logspace``, ``np.vander``, ``np.meshgrid``) raise `LookupError` naming them when their
float arguments are differentiated, never a silent zero. With constant arguments they need
no rule.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_jacobian

import s2sgrad as sg


def linspace_scalar_ends(a):
    return np.sum(np.linspace(a, 2 * a + 1.0, 5) ** 2)


def linspace_no_endpoint(a):
    return np.sum(np.sin(np.linspace(-a, a * a, 4, endpoint=False)))


def linspace_vector_ends(x):
    return np.linspace(x[:2], np.array([3.0, x[2]]), 4) ** 2


def linspace_axis(x):
    return np.cos(np.linspace(x[0], x[1:], 3, axis=1))


def linspace_constant_stop(x):
    return np.linspace(x, 1.0, 3, axis=-1) * x[0]


def full_fill(a):
    return np.sum(np.full((2, 3), a) * np.arange(6.0).reshape(2, 3)) * a


def full_vector_fill(x):
    return np.full((2, 3), x) ** 2


def full_like_fill(x):
    return np.full_like(np.zeros((2, 3)), x[0] * x[1]) + x


SCALAR_CASES = [linspace_scalar_ends, linspace_no_endpoint, full_fill]
VECTOR_CASES = [
    linspace_vector_ends,
    linspace_axis,
    linspace_constant_stop,
    full_vector_fill,
    full_like_fill,
]


@pytest.mark.parametrize("f", SCALAR_CASES, ids=lambda f: f.__name__)
def test_scalar_argument(f):
    a = 0.7
    expected = numerical_jacobian(f, a)
    np.testing.assert_allclose(sg.grad(f)(a), expected, rtol=1e-6)
    np.testing.assert_allclose(sg.jvp(f, (a,), (1.0,))[1], expected, rtol=1e-6)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(a), numerical_jacobian(sg.grad(f), a), rtol=1e-5)


@pytest.mark.parametrize("f", VECTOR_CASES, ids=lambda f: f.__name__)
def test_vector_argument(f):
    x = np.array([0.3, -1.2, 0.7])
    expected = numerical_jacobian(f, x)
    for mode in ("reverse", "forward"):
        got = sg.jacobian(f, mode=mode)(x)
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8, err_msg=mode)


def r_of_input(a):
    return np.sum(np.r_[a, 2 * a, 3.0] ** 2)


def c_of_input(a):
    return np.sum(np.c_[np.array([a, a]), np.array([1.0, a])] ** 2)


def arange_from_input(a):
    return np.sum(np.arange(a, a + 3.0))


def logspace_of_input(a):
    return np.sum(np.logspace(0.0, a, 4))


def vander_of_input(x):
    return np.sum(np.vander(x, 3))


def meshgrid_of_input(x):
    grid, _ = np.meshgrid(x, np.ones(2))
    return np.sum(grid**2)


@pytest.mark.parametrize(
    ("f", "name"),
    [
        (r_of_input, "np.r_"),
        (c_of_input, "np.c_"),
        (arange_from_input, "numpy.arange"),
        (logspace_of_input, "numpy.logspace"),
        (vander_of_input, "numpy.vander"),
        (meshgrid_of_input, "numpy.meshgrid"),
    ],
)
def test_no_rule_is_a_lookup_error_naming_the_function(f, name):
    x = np.array([0.3, -1.2, 0.7])
    arg = x if f in (vander_of_input, meshgrid_of_input) else 0.7
    with pytest.raises(LookupError, match=name.replace(".", r"\.")):
        sg.grad(f)(arg)
    with pytest.raises(LookupError, match=name.replace(".", r"\.")):
        sg.jvp(f, (arg,), (np.ones_like(arg),))


def constant_constructors(x):
    grid = np.r_[1.0, 2.0, 3.0] + np.arange(3) + np.linspace(0.0, 1.0, 3)
    return np.sum(grid * x + np.full(3, 2.0) * np.vander(np.ones(3), 3)[0] * x)


def test_constant_arguments_need_no_rule():
    x = np.array([0.3, -1.2, 0.7])
    np.testing.assert_allclose(
        sg.grad(constant_constructors)(x), numerical_jacobian(constant_constructors, x)
    )
