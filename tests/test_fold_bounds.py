"""Constant folding computes only what is quick to compute and can be written back: a huge
integer power (``9 ** 9 ** 9``, hours of work), a literal that overflows a float (``1e400``) or
a product whose numbers overflow or underflow when gathered is left as written, so every
function compiles (`sg.grad`, `s2sgrad dump`, with `simplify=True` too) and the derivative is
what the code as written computes.

The transforms run in a subprocess: a regression would hang this process, not fail a test."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from numerical import numerical_gradient

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = """
import numpy as np


def dead_branch_power(x):
    if x > 100.0:
        return x * 9 ** 9 ** 9
    return x * x


def conditional_power(x):
    return x * x * (2 ** 10 ** 10 if x > 100.0 else 1.5)


def huge_floor_division(x):
    if x > 100.0:
        return x * (10 ** 10 ** 9 // 3)
    return np.sin(x) * x


def negative_power(x):
    return x * 9 ** -9 ** 9 + x * x


def float_literal_overflow(x):
    return x * x + x / 1e400


def float_power_overflow(x):
    if x > 1e9:
        return x * 10.0 ** 400
    return x * x * x


def infinite_literal(x):
    return x * 1e400


def negative_infinite_literal(x):
    return x * (-1e400) + x


def product_overflow(x):
    return x * 1e200 * 1e200 / 1e300


def product_underflow(x):
    return x * 1e-200 * 1e-200 * 1e50
"""

# In a subprocess: every mode's derivative of every function, and the CLI's dump of some.
PROGRAM = """
import io, json, sys, contextlib
sys.path.insert(0, {folder!r})
import numpy as np
import s2sgrad as sg
from s2sgrad import cli
import folding_module as m

points = {points!r}
out = {{}}
for name, x in points.items():
    f = getattr(m, name)
    value, grad = sg.value_and_grad(f)(x)
    out[name] = {{
        "value": value,
        "grad": sg.grad(f)(x),
        "simplified": sg.grad(f, simplify=True)(x),
        "unoptimized": sg.grad(f, optimize=False)(x),
        "jvp": sg.jvp(f, (x,), (1.0,))[1],
        "value_and_grad": [value, grad],
    }}
for name in {dumped!r}:
    for options in ([], ["--simplify"], ["--mode", "forward"], ["--order", "2"]):
        text = io.StringIO()
        with contextlib.redirect_stdout(text):
            status = cli.main(["dump", m.__file__ + ":" + name, *options])
        out["dump " + name + " " + " ".join(options)] = [status, text.getvalue()]
print(json.dumps(out))
"""

POINTS = {
    "dead_branch_power": 3.0,
    "conditional_power": 2.0,
    "huge_floor_division": 0.7,
    "negative_power": 1.5,
    "float_literal_overflow": 2.5,
    "float_power_overflow": 1.2,
    "infinite_literal": 2.0,
    "negative_infinite_literal": 2.0,
    "product_overflow": 1e-250,
    "product_underflow": 1e300,
}
DUMPED = ["dead_branch_power", "huge_floor_division", "infinite_literal", "product_overflow"]


def _module(tmp_path):
    import importlib.util

    path = tmp_path / "folding_module.py"
    path.write_text(MODULE)
    spec = importlib.util.spec_from_file_location("folding_module", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    folder = tmp_path_factory.mktemp("folding")
    module = _module(folder)
    code = PROGRAM.format(folder=str(folder), points=POINTS, dumped=DUMPED)
    env = {**os.environ, "PYTHONPATH": REPO, "S2SGRAD_CACHE_DIR": "off"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert done.returncode == 0, done.stderr
    return module, json.loads(done.stdout.strip().splitlines()[-1])


FINITE = [
    "dead_branch_power",
    "conditional_power",
    "huge_floor_division",
    "negative_power",
    "float_literal_overflow",
    "float_power_overflow",
]


@pytest.mark.parametrize("name", FINITE)
def test_unfolded_constants_give_the_finite_difference_derivative(results, name):
    module, found = results
    f, x = getattr(module, name), POINTS[name]
    expected = float(numerical_gradient(f, (x,), 0))
    row = found[name]
    assert row["value"] == f(x)
    for mode in ("grad", "simplified", "unoptimized", "jvp"):
        assert row[mode] == pytest.approx(expected, rel=1e-6), mode


def test_infinite_literals_are_compiled_as_written(results):
    _, found = results
    for mode in ("grad", "simplified", "unoptimized", "jvp"):
        assert found["infinite_literal"][mode] == np.inf  # d(x * inf)/dx
        assert found["negative_infinite_literal"][mode] == -np.inf
    assert found["infinite_literal"]["value"] == np.inf


def test_gathered_numbers_that_overflow_or_underflow_are_not_folded(results):
    module, found = results
    # x * 1e200 * 1e200 / 1e300 is 1e100 * x: 1e200 * 1e200 alone overflows
    overflow = found["product_overflow"]
    assert overflow["value"] == module.product_overflow(1e-250) == pytest.approx(1e-150)
    for mode in ("grad", "simplified", "unoptimized"):  # (a unit tangent overflows as x would)
        assert overflow[mode] == pytest.approx(1e100, rel=1e-12), mode
    # x * 1e-200 * 1e-200 * 1e50 at 1e300 is 1e-50 as written; 1e-400 alone underflows to 0
    underflow = found["product_underflow"]
    assert underflow["value"] == module.product_underflow(1e300) == pytest.approx(1e-50)


@pytest.mark.parametrize("name", DUMPED)
def test_dump_of_unfoldable_constants_finishes(results, name):
    _, found = results
    dumps = {key: value for key, value in found.items() if key.startswith(f"dump {name} ")}
    assert len(dumps) == 4
    for key, (status, text) in dumps.items():
        assert status == 0, key
        assert "\ndef " in text, key
    if name == "dead_branch_power":
        assert "9**387420489" in found[f"dump {name} "][1].replace(" ", "")


def test_dump_command_of_a_huge_power_finishes(tmp_path):
    (tmp_path / "power.py").write_text("def f(x):\n    return x * 9 ** 9 ** 9\n")
    env = {**os.environ, "PYTHONPATH": REPO, "S2SGRAD_CACHE_DIR": "off"}
    done = subprocess.run(
        [sys.executable, "-m", "s2sgrad", "dump", "power.py:f"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "9**387420489" in done.stdout.replace(" ", "")
