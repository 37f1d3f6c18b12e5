"""Compiling code whose values are used twice is linear in its length.

The analysis of which returned values are new objects walked each name's definitions once per
path to it: ``y = y + 0.01 * y * y`` (an explicit Euler step) eight times took about a minute
to differentiate, sixteen did not finish, and a GradientTape recording a 60-step bisection
never returned (hunt, round4 repro_1). No timing is asserted: these take well under a second
now, and the old walk would not have finished them within CI's limit.
"""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import s2sgrad as sg


def _euler_steps(tmp_path, n):
    path = tmp_path / f"euler_{n}.py"
    path.write_text("def f(y):\n" + "    y = y + 0.01 * y * y\n" * n + "    return y\n")
    spec = importlib.util.spec_from_file_location(f"euler_{n}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


def test_many_steps_reusing_a_value_compile(tmp_path):
    f = _euler_steps(tmp_path, 24)
    y, step = 0.5, 1e-6
    assert sg.grad(f)(y) == pytest.approx((f(y + step) - f(y - step)) / (2 * step), rel=1e-6)


def test_a_tape_recording_many_steps_differentiates(tmp_path):
    y0 = sg.Variable(0.5)
    with sg.GradientTape() as tape:
        y = y0
        for _ in range(40):
            y = y + 0.01 * y * y
    want = 1.0
    value = 0.5
    for _ in range(40):
        want *= 1.0 + 0.02 * value
        value = value + 0.01 * value * value
    assert float(tape.gradient(y, y0).numpy()) == pytest.approx(want, rel=1e-9)
    assert np.isfinite(float(y.numpy()))
