"""`sg.export`: the module it writes imports in a fresh interpreter (numpy and s2sgrad.runtime
only) and gives bit-for-bit the results of the function it was exported from."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import typing

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.standalone import literal

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

W = np.array([[0.5, -1.0], [2.0, np.nan]])
TABLE = np.linspace(-1.0, 1.0, 1000)
SETTINGS = {"scale": 0.1, "powers": (2, 3)}


def helper(v):
    return np.sin(v) * SETTINGS["scale"]


def with_constants(x, y):
    total = np.sum(helper(x) * x) + np.sum(TABLE[:3] * x) * y
    return total + np.nansum(W) * y ** SETTINGS["powers"][1]


def power_tower(x, n):
    if n == 0:
        return x
    return power_tower(x * 1.5, n - 1) + np.sin(x)


class _Scaler:
    factor = 3.0


SCALER = _Scaler()


def reads_an_object(x):
    return x * SCALER.factor


def with_an_object_default(x, scaler=SCALER):
    return np.sum(x * scaler.factor)


SCALE = np.float64(2.0)


def with_defaults(x, w=W[0], scale=SCALE, *, power=2):
    return np.sum(np.sin(x * w) * scale) ** power


def _run_exported(path, calls: list[str]) -> list:
    """Import the exported module in a fresh interpreter, run `calls`, return exact results."""
    code = f"""
import importlib.util, json, sys
import numpy as np
spec = importlib.util.spec_from_file_location("exported", {str(path)!r})
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
def exact(value):
    if isinstance(value, tuple):
        return [exact(v) for v in value]
    array = np.asarray(value, dtype=float)
    return [type(value).__name__, list(array.shape), array.tobytes().hex()]
results = [exact(eval(call, vars(module), {{"np": np}})) for call in {calls!r}]
print(json.dumps({{"results": results}}))
"""
    env = {**os.environ, "PYTHONPATH": REPO}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _exact(value):
    if isinstance(value, tuple):
        return [_exact(v) for v in value]
    array = np.asarray(value, dtype=float)
    return [type(value).__name__, list(array.shape), array.tobytes().hex()]


def test_round_trip_in_a_fresh_interpreter(tmp_path):
    df = sg.grad(with_constants, wrt=("x", "y"))
    dtower = sg.grad(power_tower)
    x = np.array([0.1, -0.2, 0.3])
    expected = [_exact(df(x, 2.0)), _exact(df(x, np.float64(0.5))), _exact(dtower(0.3, 4))]
    grad_path = sg.export(df, tmp_path / "grad_module.py")
    assert grad_path == str(tmp_path / "grad_module.py")
    sg.export(dtower, str(tmp_path / "tower.py"))
    run = _run_exported(
        grad_path,
        [
            "dwith_constantsdx_y(np.array([0.1, -0.2, 0.3]), 2.0)",
            "dwith_constantsdx_y(np.array([0.1, -0.2, 0.3]), np.float64(0.5))",
        ],
    )
    assert run["results"] == expected[:2]
    assert _run_exported(tmp_path / "tower.py", ["dpower_towerdx(0.3, 4)"])["results"] == [
        expected[2]
    ]


@pytest.mark.usefixtures("calls_stay_calls")
def test_exported_text_is_one_module(tmp_path):
    path = sg.export(sg.grad(with_constants), tmp_path / "m.py")
    text = open(path).read()
    tree = ast.parse(text)
    defs = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    # (a callee's halves are named after it, with a number when another function of its name
    # was transformed before in this process)
    assert [re.sub(r"_\d+$", "", name) for name in defs] == [
        "dwith_constantsdx",
        "_fwd_helper",
        "_bwd_helper",
    ]
    assert '__all__ = ["dwith_constantsdx"]' in text
    imports = [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(i == "import numpy as np" or "s2sgrad.runtime" in i for i in imports), imports
    assert not [p for p in os.listdir(tmp_path) if p != "m.py"]  # no temporary file left


@pytest.mark.parametrize(
    "value",
    [
        0.1,
        -0.0,
        float("inf"),
        3,
        True,
        None,
        "text",
        1 + 2j,
        np.float32(0.1),
        np.int64(7),
        np.arange(6, dtype=np.int32).reshape(2, 3),
        np.array([np.nan, 1e-300, -np.inf]),
        np.linspace(0.0, 1.0, 300, dtype=np.float32),
        np.array([[1 + 1j, 2.5]]),
        ((1.0,), [2, {"a": np.zeros(2)}]),
    ],
)
def test_literals_are_exact(value):
    rebuilt = eval(literal(value), {"np": np})
    assert type(rebuilt) is type(value)
    if isinstance(value, float) and value != value:
        assert rebuilt != rebuilt
    elif isinstance(value, (np.ndarray, np.generic)):
        assert rebuilt.dtype == value.dtype and rebuilt.shape == value.shape
        assert rebuilt.tobytes() == value.tobytes()
    elif isinstance(value, tuple):
        assert repr(rebuilt) == repr(value)
    else:
        assert rebuilt == value and repr(rebuilt) == repr(value)


def test_bad_input(tmp_path):
    with pytest.raises(TypeError, match="function returned by an s2sgrad transform"):
        sg.export(with_constants, tmp_path / "x.py")
    with pytest.raises(TypeError, match="path must be a str"):
        sg.export(sg.grad(power_tower), 3)
    with pytest.raises(ValueError, match="'SCALER', a _Scaler"):
        sg.export(sg.grad(reads_an_object), tmp_path / "y.py")
    assert not os.path.exists(tmp_path / "y.py")


def test_an_inlined_callee_is_part_of_the_exported_entry(tmp_path):
    path = sg.export(sg.grad(with_constants), tmp_path / "m.py")
    text = open(path).read()
    defs = [n.name for n in ast.parse(text).body if isinstance(n, ast.FunctionDef)]
    assert defs == ["dwith_constantsdx"]
    assert re.search(r"# line \d+ of helper: return np.sin\(v\) \* SETTINGS", text)
    x = np.linspace(0.1, 1.0, 3)
    exported = _run_exported(path, [f"dwith_constantsdx(np.array({x.tolist()}), 0.5)"])
    assert exported["results"] == [_exact(sg.grad(with_constants)(x, 0.5))]


@pytest.mark.usefixtures("calls_stay_calls")
def test_source_of_a_function_with_callees_is_one_module():
    df = sg.grad(with_constants, wrt=("x", "y"))
    x = np.linspace(0.1, 1.0, 3)
    text = sg.source(df)
    tree = ast.parse(text)
    assert ast.get_docstring(tree).startswith("Generated by s2sgrad")
    assert sum(isinstance(node, ast.Expr) for node in tree.body) == 1  # one docstring
    assert text.count("__all__") == 1 and '__all__ = ["dwith_constantsdx_y"]' in text
    defs = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    plain = [re.sub(r"_\d+$", "", name) for name in defs]
    assert defs[0] == "dwith_constantsdx_y" and "_fwd_helper" in plain and "_bwd_helper" in plain
    assert "Exported by s2sgrad.export" not in text
    # the captured constants stay names; given them, the module computes the same gradient
    namespace = {name: value for name, value in with_constants.__globals__.items()}
    exec(compile(text, "merged", "exec"), namespace)
    for a, b in zip(namespace["dwith_constantsdx_y"](x, 0.5), df(x, 0.5), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-14)


MATRIX = np.array([[1.0, 2.0, 0.5], [-1.0, 0.3, 2.0], [0.0, 1.5, -0.7]])


def sines_and_quadratic(x):
    return np.sum(np.sin(x) * x**2) + x @ MATRIX @ x


def test_a_hessian_is_exported_for_example_arguments(tmp_path):
    hessian = sg.hessian(sines_and_quadratic)
    x = np.array([0.1, -0.2, 0.3])
    with pytest.raises(TypeError, match=r"sg.export\(fn, path, \*args\)"):
        sg.export(hessian, tmp_path / "h.py")
    path = sg.export(hessian, tmp_path / "h.py", x)
    text = open(path).read()
    assert "def hessian_sines_and_quadratic(x):" in text and "MATRIX" in text
    run = _run_exported(path, ["hessian_sines_and_quadratic(np.array([0.1, -0.2, 0.3]))"])
    assert run["results"] == [_exact(hessian(x))]
    closed = np.diag(2 * np.sin(x) + 4 * x * np.cos(x) - x * x * np.sin(x)) + MATRIX + MATRIX.T
    np.testing.assert_allclose(hessian(x), closed, atol=1e-12)


def test_the_entry_keeps_the_functions_defaults(tmp_path):
    df = sg.grad(with_defaults)
    x = np.array([0.3, -0.4])
    expected = [_exact(df(x)), _exact(df(x, np.array([1.5, 0.5]), power=3))]
    path = sg.export(df, tmp_path / "defaults.py")
    text = open(path).read()
    assert (
        "def dwith_defaultsdx(x, w=DEFAULT_w, scale=DEFAULT_scale, *, power=DEFAULT_power):" in text
    )
    calls = [
        "dwith_defaultsdx(np.array([0.3, -0.4]))",
        "dwith_defaultsdx(np.array([0.3, -0.4]), np.array([1.5, 0.5]), power=3)",
    ]
    assert _run_exported(path, calls)["results"] == expected
    # the gradient is checked against finite differences, not only against itself
    eps = 1e-6
    numeric = [
        (with_defaults(x + eps * e) - with_defaults(x - eps * e)) / (2 * eps) for e in np.eye(2)
    ]
    np.testing.assert_allclose(df(x), numeric, rtol=1e-6)


def test_a_default_that_is_not_data_is_named(tmp_path):
    df = sg.grad(with_an_object_default)
    np.testing.assert_allclose(df(np.array([0.5, 1.0])), [3.0, 3.0])
    with pytest.raises(ValueError, match="default of parameter 'scaler' is a _Scaler"):
        sg.export(df, tmp_path / "bad.py")
    assert not os.path.exists(tmp_path / "bad.py")


try:  # SciPy is optional at run time; the dev extra installs it
    import scipy.stats
    from scipy.special import gammaln, logsumexp
except ImportError:  # pragma: no cover
    scipy = None


def poisson_and_prior(w, x, y):
    eta = x @ w
    prior = np.sum(scipy.stats.norm.logpdf(w, 0.0, 2.0))
    return np.sum(np.exp(eta) - y * eta + gammaln(y + 1.0)) + logsumexp(w * eta[:3]) - prior


@pytest.mark.skipif(scipy is None, reason="scipy is not installed (optional)")
def test_a_function_calling_scipy_exports_with_its_imports(tmp_path):
    """SciPy's functions are imported by the exported module (by their public path), not
    written as data (ValueError before)."""
    x = np.array([[0.2, -0.1, 0.4], [0.3, 0.5, -0.2], [-0.4, 0.1, 0.2]])
    y, w = np.array([1.0, 0.0, 2.0]), np.array([0.1, -0.3, 0.2])
    df = sg.value_and_grad(poisson_and_prior)
    path = sg.export(df, tmp_path / "scipy_module.py", w, x, y)
    text = open(path).read()
    assert "from scipy.special import logsumexp" in text
    assert "import scipy.stats" in text
    call = f"{df.__name__}(np.array({w.tolist()}), np.array({x.tolist()}), np.array({y.tolist()}))"
    assert _run_exported(path, [call])["results"] == [_exact(df(w, x, y))]


def _trapezoid_times_sum(x):
    return np.trapezoid(x**2, dx=0.5) * np.sum(x)


def test_an_exported_hessian_through_a_definition_with_a_none_default_imports(tmp_path):
    # np.trapezoid's definition reads its x=None default, a captured None: it was written as
    # ``from builtins import _fwd_trapezoid_x`` (None's type lives in builtins), and the module
    # failed to import (fuzz campaign of the export mode, seed 7400025)
    x = np.array([0.3, 0.5, 0.9])
    hessian = sg.hessian(_trapezoid_times_sum)
    module = _load(sg.export(hessian, tmp_path / "trapezoid_hessian.py", x))
    got = getattr(module, module.__all__[0])(x)
    np.testing.assert_allclose(got, hessian(x), rtol=1e-12)
    h = 1e-4
    rows = [
        (sg.grad(_trapezoid_times_sum)(x + h * e) - sg.grad(_trapezoid_times_sum)(x - h * e))
        / (2 * h)
        for e in np.eye(3)
    ]
    np.testing.assert_allclose(got, np.array(rows), rtol=1e-6)


def _weighted(x, w):
    return np.sum(x * w) + np.sum(x**2)


class _Pair(typing.NamedTuple):
    a: float
    b: np.ndarray


def _of_a_record(v, r):
    return r.a / (1.0 + r.a**2) + np.sum(v * r.b)


def test_an_exported_module_refuses_arguments_of_kinds_it_was_not_written_for(tmp_path):
    # a module exported for Python numbers, called with arrays, gave a (2, 2) "gradient" of
    # a (2,) argument; the general code, given a NamedTuple, returned its adjoint keyed by
    # position ({0: ..., 1: ...}) rather than the record
    gradient = sg.grad(_weighted)
    for_numbers = _load(sg.export(gradient, tmp_path / "for_numbers.py", 1.0, 2.0))
    x, w = np.array([1.0, 2.0]), np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match="argument 'x' is an array of 1 dimensions, but this"):
        _entry(for_numbers)(x, w)
    assert _entry(for_numbers)(1.0, 2.0) == pytest.approx(4.0)
    general = _load(sg.export(gradient, tmp_path / "general.py"))
    np.testing.assert_allclose(_entry(general)(x, w), gradient(x, w))
    record = sg.grad(_of_a_record, wrt=(0, 1))
    args = (np.array([1.0, 2.0]), _Pair(0.5, np.array([0.1, 0.2])))
    with pytest.raises(TypeError, match="argument 'r' is a _Pair, but this module"):
        _entry(_load(sg.export(record, tmp_path / "record_general.py")))(*args)
    for_records = _load(sg.export(record, tmp_path / "for_records.py", *args))
    dv, dr = _entry(for_records)(*args)
    np.testing.assert_allclose(dv, args[1].b)
    assert type(dr) is _Pair
    np.testing.assert_allclose(dr.b, args[0])
    assert dr.a == pytest.approx((1 - 0.25) / 1.25**2)


def _load(path):
    """Import the module `sg.export` wrote at `path`."""
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _entry(module):
    return getattr(module, module.__all__[0])


def _scaled_by(k):
    def scaled(a):
        return np.sin(a) * (k + 2.0)

    return scaled


_scaled_minus = _scaled_by(-1.25)


def _made_with(k):
    def f(x):
        return np.sum(_scaled_minus(x) * k)

    return f


def test_two_closures_reading_different_values_of_one_name_are_a_clear_refusal(tmp_path):
    # f reads k = 1.1 and the closure it calls k = -1.25: one module cannot hold both (fuzz
    # seed 5702427, export mode); the refusal names the value and says what to do, as every
    # value export cannot write does ("cannot export: ...")
    gradient = sg.grad(_made_with(1.1))
    x = np.array([0.2, -0.4])
    np.testing.assert_allclose(gradient(x), np.cos(x) * 0.75 * 1.1)
    with pytest.raises(ValueError, match=r"cannot export: two generated modules read .* 'k'"):
        sg.export(gradient, tmp_path / "closures.py")


@pytest.mark.skipif(scipy is None, reason="scipy is not installed (optional)")
def test_the_source_of_a_function_calling_scipy_imports_it():
    # sg.source (and s2sgrad dump) only named the SciPy functions in a comment of captured
    # constants: the module raised NameError when run (hunt, science3 repro_3)
    x = np.array([[0.2, -0.1, 0.4], [0.3, 0.5, -0.2], [-0.4, 0.1, 0.2]])
    y, w = np.array([1.0, 0.0, 2.0]), np.array([0.1, -0.3, 0.2])
    df = sg.value_and_grad(poisson_and_prior)
    text = sg.source(df, w, x, y)
    assert "from scipy.special import gammaln" in text and "import scipy.stats" in text
    namespace: dict = {}
    exec(compile(text, "<source>", "exec"), namespace)
    value, gradient = namespace[namespace["__all__"][0]](w, x, y)
    assert value == df(w, x, y)[0]
    np.testing.assert_allclose(gradient, df(w, x, y)[1])


def _dict_loss(p, x):
    return np.sum(np.tanh(x @ p["W"] + p["b"]) ** 2)


def test_source_of_a_hessian_in_a_dict_says_it_is_not_written(tmp_path):
    # its module called the runtime with a function it did not define: NameError when run
    # (sg.source), a ValueError naming an internal (sg.export; hunt, science3 repro_2)
    p = {"W": np.ones((2, 3)) * 0.1, "b": np.zeros(3)}
    x = np.array([[0.2, -0.1], [0.3, 0.5]])
    hessian = sg.hessian(_dict_loss)
    assert hessian(p, x)["b"]["b"].shape == (3, 3)  # the values are there
    for write in (
        lambda: sg.source(hessian, p, x),
        lambda: sg.export(hessian, tmp_path / "h.py", p, x),
    ):
        with pytest.raises(TypeError, match="do not write the Hessian with respect to a dict"):
            write()
