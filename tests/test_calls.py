"""Calls to other user functions, each transformed in turn; direct and mutual recursion."""

import re
import subprocess
import sys

import call_programs as cp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(5)

CASES = [
    ("calls_a_helper", (rng.random(3), rng.random(3))),
    ("two_layers", (rng.random((3, 4)), rng.random((4, 2)), rng.random((2, 3)))),
    ("power", (1.3, 4)),
    ("power", (0.8, 0)),
    ("det_by_minors", (rng.random((3, 3)),)),
    ("det_by_minors", (rng.random((4, 4)),)),
    ("mutual", (0.7,)),
    ("helper_in_loop", (rng.random(4),)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_calls_match_finite_differences(name, args):
    f = getattr(cp, name)
    floats = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
    grads = sg.grad(f, wrt=floats)(*args)
    for i, got in zip(floats, grads, strict=True):
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


def test_recursion_depth_follows_the_values():
    df = sg.grad(cp.power)
    for n in range(6):
        assert df(1.5, n) == pytest.approx(n * 1.5 ** (n - 1) if n else 0.0)


def test_determinant_by_minors_matches_numpy():
    A = rng.random((4, 4))
    got = sg.grad(cp.det_by_minors)(A)
    np.testing.assert_allclose(got, np.linalg.det(A) * np.linalg.inv(A).T, rtol=1e-8)


@pytest.mark.usefixtures("calls_stay_calls")
def test_callee_code_is_shown_with_the_gradient():
    text = sg.source(sg.grad(cp.calls_a_helper, wrt=(0, 1)), np.ones(3), np.ones(3))
    assert re.search(r"_fwd_square_plus_sin(_\d+)?\(", text)
    assert re.search(r"def _bwd_square_plus_sin(_\d+)?\(", text)


def test_errors_in_a_callee_point_into_the_callee():
    with pytest.raises(sg.TransformError) as info:
        sg.grad(calls_bad_helper)(1.0)
    assert info.value.lineno == bad_helper.__code__.co_firstlineno + 1


def bad_helper(x):
    with open("nothing") as handle:
        return handle


def calls_bad_helper(x):
    return bad_helper(x) * 2.0


@pytest.mark.parametrize("w", [1.3, 0.4])
def test_nested_functions_are_inlined(w):
    x = np.array([0.2, 0.9, 1.7])
    grads = sg.grad(cp.with_nested_helpers, wrt=(0, 1))(x, w)
    for i, got in enumerate(grads):
        want = numerical_gradient(cp.with_nested_helpers, (x, w), i)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_nested_function_parameters_shadow_the_callers_changing_names():
    # once refused: "nested function 'step' reads 'x', which changes after it is defined"
    args = (0.7, -0.3, 1.9)
    f = cp.nested_with_shadowing_parameters
    for i, got in enumerate(sg.grad(f, wrt=(0, 1, 2))(*args)):
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-6, atol=1e-8)
    sg.check_grads(f, args, order=2)


def test_nested_function_reading_a_changed_value_is_rejected():
    with pytest.raises(sg.TransformError, match="changes after it is defined"):
        sg.grad(cp.nested_reads_a_changed_value)


SCALE = np.array([0.5, 2.0, -1.0])


def scaled(x, a=2.0, b=SCALE, *, power=2):
    return a * b * x**power


def uses_defaults(x):
    return np.sum(scaled(x) + scaled(x, 3.0, power=3))


def halved(x, a=0.5, *, power=2):
    return a * x**power


def uses_literal_defaults(x):
    return np.sum(halved(x) * halved(x, power=3))


def test_a_callee_left_to_its_defaults_literal_or_not_positional_or_keyword():
    x = np.array([0.3, 1.1, 0.7])  # positive: the split also differentiates x**power in power
    df = sg.grad(uses_defaults)
    want = 2.0 * SCALE * 2 * x + 3.0 * SCALE * 3 * x**2
    np.testing.assert_allclose(df(x), want, rtol=1e-12)
    np.testing.assert_allclose(df(x), numerical_gradient(uses_defaults, (x,), 0), rtol=1e-6)


def test_an_exported_gradient_calls_a_callee_with_its_literal_defaults(tmp_path):
    x = np.array([0.3, -1.1, 0.7])
    path = tmp_path / "exported_defaults.py"
    sg.export(sg.grad(uses_literal_defaults), path, x)
    code = (
        "import importlib.util, numpy as np\n"
        f"spec = importlib.util.spec_from_file_location('m', {str(path)!r})\n"
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
        "print(repr(getattr(m, m.__all__[0])(np.array([0.3, -1.1, 0.7])).tolist()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    got = np.array(eval(result.stdout))
    want = 0.25 * 5 * x**4  # d/dx (0.5 x^2)(0.5 x^3)
    np.testing.assert_allclose(got, want, rtol=1e-12)


def test_forward_mode_and_hessians_through_a_callee_left_to_its_defaults():
    x = np.array([0.3, 1.1, 0.7])
    _, tangent = sg.jvp(uses_defaults, (x,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(2.0 * SCALE * 2 * x + 3.0 * SCALE * 3 * x**2))
    hessian = sg.hessian(uses_defaults)(x)
    np.testing.assert_allclose(hessian, np.diag(2.0 * SCALE * 2 + 3.0 * SCALE * 6 * x))
