"""The on-disk cache of generated source: a second process compiles the stored text instead of
transforming again, without importing libcst; functions calling user functions (recursive ones
too) are cached with their callees' modules; changed source (the function's or a callee's),
changed captured values, rebound callees, corrupt entries and concurrent writers are all
handled; entries are JSON text, never pickles. Every test uses its own temporary cache
directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from s2sgrad.transforms.spec import GradSpec

import s2sgrad as sg
from s2sgrad import disk_cache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = """
import numpy as np

SCALE = 2.0


def f(x):
    return np.sum(np.sin(x) * x * SCALE)
"""

# Run in a fresh interpreter: transform a function of cached_module, call it, and say whether
# the transform and the specialization came from disk (generate_gradient is replaced by a
# function that fails) and whether the compiler (libcst) was imported.
PROGRAM = """
import json, sys
sys.path.insert(0, {folder!r})
import numpy as np
import s2sgrad as sg
from s2sgrad import dispatch
if {forbid_generation!r}:
    def refuse(*args, **kwargs):
        raise AssertionError("generated again instead of read from the disk cache")
    dispatch.generate_gradient = refuse
import cached_module
df = sg.grad(cached_module.{function})
x = np.linspace(0.0, 1.0, 4)
value = df(x)
print(json.dumps({{"analysis": type(df.__wrapped_transform__.analysis).__name__,
                   "libcst": "libcst" in sys.modules,
                   "value": value.tolist(),
                   "source": sg.source(df, x)}}))
"""


def _run(folder, cache, forbid_generation=False, function="f"):
    env = {**os.environ, "PYTHONPATH": REPO, disk_cache.ENVIRONMENT_VARIABLE: str(cache)}
    code = PROGRAM.format(
        folder=str(folder), forbid_generation=forbid_generation, function=function
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _expected(x, scale=2.0):
    return scale * (np.cos(x) * x + np.sin(x))


def test_a_second_process_reads_the_cache(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "cached_module.py").write_text(MODULE)
    first = _run(tmp_path, cache)
    assert first["analysis"] == "Analysis"
    second = _run(tmp_path, cache, forbid_generation=True)
    assert second["analysis"] == "CachedAnalysis"
    assert not second["libcst"]  # a hit loads neither libcst nor the compiler's passes
    np.testing.assert_array_equal(second["value"], first["value"])
    assert second["source"] == first["source"]
    np.testing.assert_allclose(second["value"], _expected(np.linspace(0.0, 1.0, 4)))
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert entries and all(p.suffix == ".json" for p in entries)
    for entry in entries:
        json.loads(entry.read_text())  # text, not pickles
    # an edited source is a different key: transformed again, with the new result
    (tmp_path / "cached_module.py").write_text(MODULE.replace("SCALE = 2.0", "SCALE = 3.0"))
    changed = _run(tmp_path, cache)
    np.testing.assert_allclose(changed["value"], _expected(np.linspace(0.0, 1.0, 4), 3.0))


def test_concurrent_writers_leave_valid_entries(tmp_path):
    cache = tmp_path / "cache"
    (tmp_path / "cached_module.py").write_text(MODULE)
    env = {**os.environ, "PYTHONPATH": REPO, disk_cache.ENVIRONMENT_VARIABLE: str(cache)}
    code = PROGRAM.format(folder=str(tmp_path), forbid_generation=False, function="f")
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        for _ in range(4)
    ]
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()
    assert not [p for p in cache.rglob(".tmp-*")]  # no temporary file left behind
    assert _run(tmp_path, cache, forbid_generation=True)["analysis"] == "CachedAnalysis"


def _write_module(tmp_path, name: str, text: str):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv(disk_cache.ENVIRONMENT_VARIABLE, str(folder))
    return folder


def test_a_changed_captured_value_is_a_miss(tmp_path, cache):
    module = _write_module(
        tmp_path, "captures", "import numpy as np\nW = 2.0\ndef f(x):\n    return np.sum(W * x)\n"
    )
    sg.grad(module.f)(np.ones(3))
    spec = GradSpec(wrt=("x",))
    assert disk_cache.lookup(module.f, spec) is not None
    module.W = np.ones(3)  # now an array: generated code may differ (shapes)
    assert disk_cache.lookup(module.f, spec) is None
    module.W = 3.0  # another value of the same kind is a miss too
    assert disk_cache.lookup(module.f, spec) is None
    module.W = 2.0
    hit = disk_cache.lookup(module.f, spec)
    assert hit is not None and hit.namespace == {"W": 2.0}


def test_corrupt_entries_are_misses(tmp_path, cache):
    module = _write_module(tmp_path, "corrupt", "def f(x):\n    return x * x\n")
    assert sg.grad(module.f)(3.0) == 6.0
    for entry in cache.rglob("*.json"):
        entry.write_text("{not json")
    assert disk_cache.lookup(module.f, GradSpec(wrt=("x",))) is None
    entry = next(cache.rglob("*.json"))
    fields = {"format": disk_cache._FORMAT, "entry": "dfdx", "params": []}  # "functions" missing
    entry.write_text(json.dumps(fields))
    assert disk_cache.lookup(module.f, GradSpec(wrt=("x",))) is None


CALLEES = """
import numpy as np

SCALE = 2.0


def helper(v):
    return np.sin(v) * SCALE


def power(v, n=3):
    if n == 0:
        return v
    return power(v, n - 1) * v


def f(x):
    return np.sum(helper(x) * x)


def g(x):
    return np.sum(power(x, 3) + helper(x))
"""


@pytest.mark.parametrize("function", ["f", "g", "power"])
def test_functions_with_callees_are_cached_across_processes(tmp_path, function):
    cache = tmp_path / "cache"
    (tmp_path / "cached_module.py").write_text(CALLEES)
    first = _run(tmp_path, cache, function=function)
    assert first["analysis"] == "Analysis"
    second = _run(tmp_path, cache, forbid_generation=True, function=function)
    assert second["analysis"] == "CachedAnalysis"
    assert not second["libcst"]
    np.testing.assert_array_equal(second["value"], first["value"])
    assert second["source"] == first["source"]  # the callees' halves are shown as before
    x = np.linspace(0.0, 1.0, 4)
    expected = {
        "f": 2.0 * (np.cos(x) * x + np.sin(x)),
        "g": 4.0 * x**3 + 2.0 * np.cos(x),
        "power": 4.0 * x**3,  # recursive itself
    }[function]
    np.testing.assert_allclose(second["value"], expected)
    # a callee's edited source is a different key: transformed again, with the new result
    (tmp_path / "cached_module.py").write_text(CALLEES.replace("np.sin(v) * SCALE", "v * SCALE"))
    changed = _run(tmp_path, cache, function=function)
    assert changed["analysis"] == ("CachedAnalysis" if function == "power" else "Analysis")
    edited = {"f": 4.0 * x, "g": 4.0 * x**3 + 2.0, "power": 4.0 * x**3}[function]
    np.testing.assert_allclose(changed["value"], edited)


def test_callees_values_are_checked_on_load(tmp_path, cache):
    module = _write_module(tmp_path, "calling", CALLEES)
    spec = GradSpec(wrt=("x",))
    x = np.linspace(0.0, 1.0, 3)
    sg.grad(module.g)(x)
    hit = disk_cache.lookup(module.g, spec)
    assert hit is not None and [fn.__name__ for fn in hit.functions] == ["g", "power", "helper"]
    module.SCALE = 3.0  # a callee's captured constant: a miss
    assert disk_cache.lookup(module.g, spec) is None
    module.SCALE = 2.0
    assert disk_cache.lookup(module.g, spec) is not None
    original = module.helper
    module.helper = lambda v: v  # another function behind the callee's name: another key
    assert disk_cache.lookup(module.g, spec) is None
    module.helper = original


def test_specializations_written_under_other_values_are_not_loaded(tmp_path, cache):
    module = _write_module(
        tmp_path, "stale", "import numpy as np\nW = 2.0\ndef f(x):\n    return np.sum(W * x)\n"
    )
    spec = GradSpec(wrt=("x",))
    df = sg.grad(module.f)
    df(0.5), df(np.ones(3))  # two specializations on disk, written while W is a number
    module.W = np.ones(3)
    sg.grad(module.f)(0.5)  # transformed again: the description on disk now has W an array
    hit = disk_cache.lookup(module.f, spec)
    assert hit is not None
    assert disk_cache.load(hit, (frozenset({"x"}), (), frozenset())) is not None
    assert disk_cache.load(hit, (frozenset(), (("x", 1),), frozenset())) is None


def test_custom_gradient_callees_and_disabled_caches_write_nothing(tmp_path, cache, monkeypatch):
    module = _write_module(
        tmp_path,
        "custom_callee",
        """
        import numpy as np
        import s2sgrad as sg

        @sg.custom_gradient
        def clipped(v):
            def backward(g):
                return np.clip(g, -1.0, 1.0)
            return v, backward

        def f(x):
            return clipped(x) * x

        def g(x):
            return x ** 3
        """,
    )
    assert sg.grad(module.f)(0.5) == pytest.approx(1.0)
    assert not cache.exists() or not list(cache.rglob("*.json"))
    for off in ("off", "0", ""):
        monkeypatch.setenv(disk_cache.ENVIRONMENT_VARIABLE, off)
        assert disk_cache.directory() is None
        assert sg.grad(module.g, optimize=off == "0")(2.0) == 12.0
    assert not cache.exists() or not list(cache.rglob("*.json"))


def test_default_location_is_the_user_cache(monkeypatch, tmp_path):
    monkeypatch.delenv(disk_cache.ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert disk_cache.directory() == os.path.join(str(tmp_path), "s2sgrad")
