"""Second derivatives of functions of a 0-d Variable by nested GradientTapes.

Under an outer tape the inner gradient's code runs on Tensors; a derivative helper recorded
whole (``scaled_power``, the adjoint of ``**``) returns a Python float for 0-d arguments,
which the tape left plain: the Hessian of ``(1 + y * y) ** 0.5`` lost its second term,
silently (fuzz seed 32000242, mode tape_hessian). Against second differences.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

FUNCTIONS = {
    "square root": lambda y: (1.0 + y * y) ** 0.5,
    "pow": lambda y: pow(1.0 + y * y, 0.5),
    "negative power": lambda y: (2.0 + np.sin(y)) ** -1.5,
    "power of a power": lambda y: ((y * y + 0.5) ** 1.5) ** 0.5 * y,
    "quotient": lambda y: np.exp(y) / (1.0 + y**2),
}


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("value", [0.7, np.array(0.7)], ids=["float", "0-d array"])
def test_second_derivatives_of_a_scalar_by_nested_tapes(name, value):
    f = FUNCTIONS[name]
    y = sg.Variable(value)
    with sg.GradientTape() as outer:
        with sg.GradientTape() as inner:
            out = f(y)
        gy = inner.gradient(out, y)
    step = 1e-4
    want = (f(0.7 + step) - 2 * f(0.7) + f(0.7 - step)) / step**2
    assert float(outer.gradient(gy, y).numpy()) == pytest.approx(want, rel=1e-5, abs=1e-6)
