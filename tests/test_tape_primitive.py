"""``sg.primitive`` under a GradientTape (API.md section 1, issue 16): a call of a primitive on
Tensors is one recorded operation whose derivative is its registered rule, never its body's
operations one by one; without a rule, ``tape.gradient`` raises LookupError naming it. The
same wrapper works under the source transforms.
"""

from __future__ import annotations

import numpy as np
import pytest
from s2sgrad.runtime import registry

import s2sgrad as sg


@pytest.fixture
def scratch():
    with registry.scratch():
        yield


def _rounded(x):
    return np.floor(x * 100.0) / 100.0  # piecewise constant: its operations have slope 0


def _sine_product(x, y):
    return np.sin(x) * y


def test_a_primitive_without_a_rule_fails_at_gradient_time_naming_it(scratch):
    opaque = sg.primitive(_sine_product)
    x = sg.Variable(np.array([0.3, -1.2]))
    with sg.GradientTape() as tape:
        y = opaque(x, 2.0)  # recording works: the value is the function's
        total = np.sum(y)
    np.testing.assert_allclose(y.numpy(), 2.0 * np.sin([0.3, -1.2]))
    with pytest.raises(LookupError, match="_sine_product"):
        tape.gradient(total, x)


def test_the_rule_not_the_body_gives_the_tape_gradient(scratch):
    rounded = sg.primitive(_rounded)

    @sg.register_vjp(rounded)
    def straight_through(g, ans, x):
        return g

    x = sg.Variable(np.array([0.123, -0.456, 0.789]))
    with sg.GradientTape() as tape:
        total = np.sum(rounded(x) * np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(tape.gradient(total, x).numpy(), [1.0, 2.0, 3.0])

    def uses_rounded(x):
        return np.sum(rounded(x) * np.array([1.0, 2.0, 3.0]))

    np.testing.assert_allclose(sg.grad(uses_rounded)(x.numpy()), [1.0, 2.0, 3.0])


def test_a_primitive_with_a_rule_matches_differences_under_a_tape(scratch):
    opaque = sg.primitive(_sine_product)

    @sg.register_vjp(opaque)
    def opaque_vjp(g, ans, x, y):
        return g * np.cos(x) * y, g * np.sin(x)

    xv, yv = np.array([0.3, -1.2]), np.array([1.0, 2.0])
    x, y = sg.Variable(xv), sg.Variable(yv)
    with sg.GradientTape() as tape:
        total = np.sum(opaque(x, y) ** 2)
    gx, gy = tape.gradient(total, [x, y])
    np.testing.assert_allclose(gx.numpy(), 2 * np.sin(xv) * yv**2 * np.cos(xv))
    np.testing.assert_allclose(gy.numpy(), 2 * np.sin(xv) ** 2 * yv)


def test_plain_arguments_call_the_function(scratch):
    opaque = sg.primitive(_sine_product)
    assert opaque(0.5, 2.0) == 2.0 * np.sin(0.5)
    assert opaque.__name__ == "_sine_product"
