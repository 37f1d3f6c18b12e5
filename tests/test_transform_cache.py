"""One transform cache (transforms/transform_cache.py): every transform notices a changed
global, a redefined callee, a callee's changed global and a newly registered rule, and
registering an unrelated rule (importing ``s2sgrad.nn``) recompiles nothing."""

import subprocess
import sys

import numpy as np
import pytest
from s2sgrad.runtime import registry

import s2sgrad as sg
from tests.numerical import numerical_gradient

SCALE = 2.0


def scaled(x):
    return SCALE * x


def calls_scaled(x):
    return np.sum(scaled(x) * x)


def reads_scale(x):
    return np.sum(SCALE * x * x)


def callee(x):
    return x * x


def calls_callee(x):
    return np.sum(callee(x) * 3.0)


def opaque(x):
    return x * x


def calls_opaque(x):
    return np.sum(opaque(x))


X = np.array([0.5, -1.5, 2.0])
V = np.array([1.0, 0.5, -2.0])


def _gradient(fn):
    return sg.grad(fn)(X)


def _jvp(fn):
    return sg.jvp(fn, (X,), (V,))[1]


def _vjp(fn):
    return sg.vjp(fn, X)[1](1.0)[0]


def _jacobian(fn):
    return sg.jacobian(fn)(X)


def _jacobian_forward(fn):
    return sg.jacobian(fn, mode="forward")(X)


def _hvp(fn):
    return sg.hvp(fn)(X, V)


def _hessian(fn):
    return sg.hessian(fn)(X)


def _numeric(fn, mode):
    """The derivative `mode` computes, by central differences of `fn` as it is now."""
    gradient = numerical_gradient(fn, (X,), 0)
    if mode is _jvp:
        return np.dot(gradient, V)
    if mode in (_hvp, _hessian):
        hessian = np.array(
            [numerical_gradient(lambda x, k=k: sg.grad(fn)(x)[k], (X,), 0) for k in range(3)]
        )
        return hessian @ V if mode is _hvp else hessian
    return gradient


MODES = [_gradient, _jvp, _vjp, _jacobian, _jacobian_forward, _hvp, _hessian]


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.__name__.strip("_"))
@pytest.mark.parametrize("fn", [reads_scale, calls_scaled], ids=["global", "callee_global"])
def test_a_changed_global_is_used(mode, fn):
    global SCALE
    try:
        for value in (2.0, 3.0, 2.0):
            SCALE = value
            np.testing.assert_allclose(mode(fn), _numeric(fn, mode), rtol=1e-5, atol=1e-6)
    finally:
        SCALE = 2.0


@pytest.mark.parametrize("mode", MODES, ids=lambda m: m.__name__.strip("_"))
def test_a_redefined_callee_is_used(mode):
    global callee
    original = callee
    try:
        first = mode(calls_callee)
        np.testing.assert_allclose(first, _numeric(calls_callee, mode), rtol=1e-5, atol=1e-6)

        def callee(x):
            return x * x * x

        np.testing.assert_allclose(
            mode(calls_callee), _numeric(calls_callee, mode), rtol=1e-5, atol=1e-5
        )
    finally:
        callee = original


@pytest.mark.parametrize("mode", [_gradient, _jvp, _vjp, _jacobian, _jacobian_forward])
def test_a_rule_registered_between_calls_is_used(mode):
    """Registering rules for a user function makes it a primitive: the derivative then comes
    from the rules (here deliberately three times the true one, to tell them apart)."""
    assert np.allclose(mode(calls_opaque), _numeric(calls_opaque, mode))
    with registry.scratch():
        sg.primitive(opaque)

        @sg.register_vjp(opaque)
        def opaque_vjp(g, ans, x):
            return g * 6.0 * x

        @sg.register_jvp(opaque)
        def opaque_jvp(tangents, ans, x):
            return tangents[0] * 6.0 * x

        np.testing.assert_allclose(mode(calls_opaque), 3 * _numeric(calls_opaque, mode), rtol=1e-5)
    np.testing.assert_allclose(mode(calls_opaque), _numeric(calls_opaque, mode), rtol=1e-5)


def _compiled(mode, fn):
    """The compiled transform object a mode's lookup finds (its identity says whether it was
    compiled again)."""
    from s2sgrad.composed import vjp_transform
    from s2sgrad.forward_api import forward_transform

    if mode == "grad":
        return sg.grad(fn).__wrapped_transform__
    if mode == "jvp":
        return forward_transform(fn, ("x",))
    return vjp_transform(fn, ("x",))


@pytest.mark.parametrize("mode", ["grad", "jvp", "vjp"])
def test_an_unrelated_rule_recompiles_nothing(mode):
    def unrelated(x):
        return x

    before = _compiled(mode, reads_scale)
    with registry.scratch():
        sg.primitive(unrelated)

        @sg.register_vjp(unrelated)
        def unrelated_vjp(g, ans, x):
            return g

        assert _compiled(mode, reads_scale) is before
    assert _compiled(mode, reads_scale) is before


def test_importing_nn_recompiles_nothing(tmp_path):
    script = tmp_path / "check_nn.py"
    script.write_text(
        "import numpy as np, sys\n"
        "import s2sgrad as sg\n"
        "from s2sgrad.forward_api import forward_transform\n"
        "assert 's2sgrad.nn' not in sys.modules\n"
        "def f(x):\n"
        "    return np.sum(np.sin(x) * x)\n"
        "g = sg.grad(f).__wrapped_transform__\n"
        "j = forward_transform(f, ('x',))\n"
        "import s2sgrad.nn\n"
        "assert sg.grad(f).__wrapped_transform__ is g\n"
        "assert forward_transform(f, ('x',)) is j\n"
        "print('same')\n"
    )
    env = {"S2SGRAD_CACHE_DIR": str(tmp_path / "cache"), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "same"


def shares_a_front_end(x):
    return np.sum(np.sin(SCALE * x) * x)


def test_transforms_of_one_function_share_its_normal_form(monkeypatch):
    # sg.grad, sg.jvp and sg.hessian of one function normalize it once; a changed global
    # it reads makes the normal form (and every transform) be built again
    from s2sgrad.transforms import pipeline

    calls = []  # (the Hessian also normalizes the generated gradient it differentiates)
    original = pipeline.normalize
    monkeypatch.setattr(
        pipeline, "normalize", lambda parsed, *a: calls.append(parsed.name) or original(parsed, *a)
    )
    f = shares_a_front_end
    np.testing.assert_allclose(sg.grad(f)(X), numerical_gradient(f, (X,), 0), rtol=1e-6)
    sg.jvp(f, (X,), (V,))
    sg.hessian(f)(X)
    assert calls.count(f.__name__) == 1
    monkeypatch.setattr(sys.modules[__name__], "SCALE", 3.0)
    np.testing.assert_allclose(sg.grad(f)(X), numerical_gradient(f, (X,), 0), rtol=1e-6)
    assert calls.count(f.__name__) == 2
