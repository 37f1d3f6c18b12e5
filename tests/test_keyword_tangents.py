"""Forward mode sees the tangent of an argument passed by keyword (``np.full((3,),
fill_value=c)``, ``np.linspace(a, stop=b)``, ``np.pad(x, 2, constant_values=c)``).

Before, forward rules were given tangents by position only: a differentiated keyword argument
of a linear primitive had no tangent (a jvp of 0 instead of 3, silently), and a written rule
reading it crashed the compiler (IndexError). Checked against central differences, in every
forward mode and at second order.
"""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg
from s2sgrad.checks import check_grads


def full_by_keyword(c, x):
    return np.sum(np.full((3,), fill_value=c) * x)


def linspace_by_keyword(a, b):
    return np.sum(np.linspace(a, stop=b, num=4) ** 2)


def clip_by_keyword(c, x):
    return np.sum(np.clip(x, a_min=c, a_max=2.0) ** 2)


def pad_by_keyword(c, x):
    return np.sum(np.pad(x, 2, constant_values=c) ** 2)


CASES = [full_by_keyword, linspace_by_keyword, clip_by_keyword, pad_by_keyword]
X = np.array([0.3, 0.5, 0.9])


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_jvp_of_a_keyword_argument(f):
    c = 0.7 if f is not linspace_by_keyword else 0.4
    other = X if f is not linspace_by_keyword else 1.3
    expected = numerical_gradient(f, (c, other), 0)
    value, tangent = sg.jvp(f, (c, other), (1.0, np.zeros_like(other)))
    assert value == pytest.approx(f(c, other))
    assert tangent == pytest.approx(expected, rel=1e-6)
    assert sg.jacobian(f, mode="forward")(c, other) == pytest.approx(expected, rel=1e-6)
    assert sg.grad(f)(c, other) == pytest.approx(expected, rel=1e-6)
    check_grads(f, (c, other), order=2, rtol=1e-5, atol=1e-6)
