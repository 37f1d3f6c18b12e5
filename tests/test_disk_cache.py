"""The on-disk cache of generated source: a second process compiles the stored text instead of
transforming again; changed source, changed captured values, corrupt entries and concurrent
writers are all handled; entries are JSON text, never pickles. Every test uses its own
temporary cache directory."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from s2sgrad.transforms.pipeline import GradSpec

import s2sgrad as sg
from s2sgrad import disk_cache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODULE = """
import numpy as np

SCALE = 2.0


def f(x):
    return np.sum(np.sin(x) * x * SCALE)
"""

# Run in a fresh interpreter: transform f, call it, and say whether the transform and the
# specialization came from disk (generate_gradient is replaced by a function that fails).
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
df = sg.grad(cached_module.f)
value = df(np.linspace(0.0, 1.0, 4))
print(json.dumps({{"analysis": type(df.__wrapped_transform__.analysis).__name__,
                   "value": value.tolist()}}))
"""


def _run(folder, cache, forbid_generation=False):
    env = {**os.environ, "PYTHONPATH": REPO, disk_cache.ENVIRONMENT_VARIABLE: str(cache)}
    code = PROGRAM.format(folder=str(folder), forbid_generation=forbid_generation)
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
    np.testing.assert_array_equal(second["value"], first["value"])
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
    code = PROGRAM.format(folder=str(tmp_path), forbid_generation=False)
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
    entry.write_text(json.dumps({"format": 1, "entry": "dfdx", "params": []}))  # fields missing
    assert disk_cache.lookup(module.f, GradSpec(wrt=("x",))) is None


def test_functions_with_callees_and_disabled_caches_write_nothing(tmp_path, cache, monkeypatch):
    module = _write_module(
        tmp_path,
        "callees",
        """
        import numpy as np

        def helper(v):
            return np.sin(v)

        def f(x):
            return helper(x) * x

        def g(x):
            return x ** 3
        """,
    )
    assert sg.grad(module.f)(0.5) == pytest.approx(np.cos(0.5) * 0.5 + np.sin(0.5))
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
