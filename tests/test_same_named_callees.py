"""Two different callees of one name: their generated halves never share a name (issue 18,
"same-named defs from two modules"). They did: ``mod_a.loss`` and ``mod_b.loss`` both became
``_fwd_loss``/``_bwd_loss`` in the caller's module, and so did two closures of one factory,
so one callee's derivative was silently the other's. Checked against closed forms."""

from __future__ import annotations

import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.3, 0.5, -0.4])


@pytest.fixture(params=["inlined", "calls"], autouse=True)
def inlining(request):
    """Each test twice: with small callees written out where they are called, and with every
    call kept a call (the halves whose names clashed)."""
    if request.param == "calls":
        request.getfixturevalue("calls_stay_calls")
    return request.param


def _module(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n" + textwrap.dedent(body))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def two_losses(tmp_path):
    sines = _module(tmp_path, "same_name_sines", "def loss(x):\n    return np.sum(np.sin(x))\n")
    cubes = _module(tmp_path, "same_name_cubes", "def loss(x):\n    return np.sum(x**3)\n")
    yield sines.loss, cubes.loss
    del sys.modules["same_name_sines"], sys.modules["same_name_cubes"]


def _scaled(k):
    def scaled(x):
        return np.sum(np.sin(k * x))

    return scaled


SCALED_ONE, SCALED_THREE = _scaled(1.0), _scaled(3.0)


def two_closures(x):
    return SCALED_ONE(x) + SCALED_THREE(x)


def test_same_named_functions_of_two_modules(two_losses, inlining):
    sines, cubes = two_losses

    def f(x):
        return sines(x) + 2.0 * cubes(x)

    gradient = np.cos(X) + 6.0 * X**2
    np.testing.assert_allclose(sg.grad(f)(X), gradient, rtol=1e-12)
    np.testing.assert_allclose(sg.jvp(f, (X,), (np.ones(3),))[1], np.sum(gradient), rtol=1e-12)
    np.testing.assert_allclose(sg.hessian(f)(X), np.diag(-np.sin(X) + 12.0 * X), atol=1e-12)
    text = sg.source(sg.grad(f), X)
    forward_halves = {line.split("(")[0] for line in text.splitlines() if "def _fwd_" in line}
    assert len(forward_halves) == (2 if inlining == "calls" else 0)


def test_two_closures_of_one_factory():
    gradient = np.cos(X) + 3.0 * np.cos(3.0 * X)
    np.testing.assert_allclose(sg.grad(two_closures)(X), gradient, rtol=1e-12)
    tangent = sg.jvp(two_closures, (X,), (np.ones(3),))[1]
    np.testing.assert_allclose(tangent, np.sum(gradient), rtol=1e-12)
    hessian = np.diag(-np.sin(X) - 9.0 * np.sin(3.0 * X))
    np.testing.assert_allclose(sg.hessian(two_closures)(X), hessian, atol=1e-12)
