"""The disk cache can be trusted and stays bounded: callees' default values survive a second
process; a directory another user could write is refused (a warning, then no disk cache); it is
created 0700; any malformed entry is a miss, whatever it raises; the least recently used
entries are evicted beyond a size bound; `s2sgrad cache info|clear` show and empty it."""

from __future__ import annotations

import importlib.util
import json
import os
import stat
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from numerical import numerical_gradient
from s2sgrad.transforms.spec import GradSpec

import s2sgrad as sg
from s2sgrad import cache_files, cli, disk_cache

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _load(folder, name: str, text: str):
    """A fresh import of `folder/name.py` (new code objects: the in-memory caches miss)."""
    path = folder / f"{name}.py"
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


# -- callees' defaults -------------------------------------------------------------------------

DEFAULTS = """
import numpy as np

OFFSET = np.array([1.0, -2.0, 0.5])


def with_array(x, u0=np.array([1.0, 2.0, 3.0])):
    return x * u0


def with_tuple(x, pair=(2.0, 3.0)):
    return x * pair[0] + pair[1]


def with_global(x, off=OFFSET):
    return np.sin(x) * off


def with_keyword(x, *, scale=np.float64(1.5)):
    return x * x * scale


def f(x):
    return np.sum(with_array(x)) + np.sum(with_tuple(x)) + np.sum(with_global(x)) + np.sum(
        with_keyword(x)
    )
"""

SECOND_PROCESS = """
import json, sys
sys.path.insert(0, {folder!r})
import numpy as np
import s2sgrad as sg
import defaults_module
print(json.dumps(sg.grad(defaults_module.f)(np.array([0.5, -1.0, 2.0])).tolist()))
"""


def test_callees_with_computed_defaults_work_in_later_processes(tmp_path):
    cache = tmp_path / "cache"
    module = _load(tmp_path, "defaults_module", DEFAULTS)
    x = np.array([0.5, -1.0, 2.0])
    expected = numerical_gradient(module.f, (x,), 0)
    env = {**os.environ, "PYTHONPATH": REPO, disk_cache.ENVIRONMENT_VARIABLE: str(cache)}
    code = SECOND_PROCESS.format(folder=str(tmp_path))
    for run in range(3):  # the first process writes the cache, the later ones read it
        done = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300
        )
        assert done.returncode == 0, f"process {run + 1}: {done.stderr}"
        np.testing.assert_allclose(json.loads(done.stdout), expected, rtol=1e-6, atol=1e-8)
    assert list(cache.rglob("*.json"))  # it was cached, and read


@pytest.mark.usefixtures("calls_stay_calls")
def test_callees_defaults_are_the_current_functions_own(tmp_path, cache):
    first = _load(tmp_path, "defaults_module", DEFAULTS)
    x = np.array([0.5, -1.0, 2.0])
    sg.grad(first.f)(x)
    second = _load(tmp_path, "defaults_module", DEFAULTS)
    spec = GradSpec(wrt=("x",))
    hit = disk_cache.lookup(second.f, spec)
    assert hit is not None
    second.with_array.__defaults__ = (np.array([10.0, 20.0, 30.0]),)  # changed after the def
    generated = disk_cache.load(hit, (frozenset(), (("x", 1),), frozenset()))
    assert generated is not None  # from disk
    expected = numerical_gradient(second.f, (x,), 0)
    np.testing.assert_allclose(generated.function(x), expected, rtol=1e-6, atol=1e-8)


def test_an_inlined_callees_defaults_are_checked_on_load(tmp_path, cache):
    # inlined, a callee's defaults are constants of the caller's code: read from the callee
    # as it is now, and code specialized for another kind of default is a miss
    x = np.array([0.5, -1.0, 2.0])
    spec = GradSpec(wrt=("x",))
    kinds = (frozenset(), (("x", 1),), frozenset())
    sg.grad(_load(tmp_path, "defaults_module", DEFAULTS).f)(x)
    second = _load(tmp_path, "defaults_module", DEFAULTS)
    second.with_array.__defaults__ = (np.array([10.0, 20.0, 30.0]),)  # the same kind
    hit = disk_cache.lookup(second.f, spec)
    assert hit is not None
    generated = disk_cache.load(hit, kinds)
    assert generated is not None  # from disk
    expected = numerical_gradient(second.f, (x,), 0)
    np.testing.assert_allclose(generated.function(x), expected, rtol=1e-6, atol=1e-8)
    third = _load(tmp_path, "defaults_module", DEFAULTS)
    third.with_tuple.__defaults__ = ((2.0, 3.0, 4.0),)  # another kind: code for it differs
    assert disk_cache.lookup(third.f, spec) is None


# -- a directory only the user can write ------------------------------------------------------

SIMPLE = "import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) * x)\n"


def _expected_simple(x):
    return np.cos(x) * x + np.sin(x)


def test_the_directory_is_created_0700(tmp_path, cache):
    module = _load(tmp_path, "simple", SIMPLE)
    sg.grad(module.f)(np.ones(2))
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    folders = [p for p in cache.iterdir() if p.is_dir()]
    assert folders and all(stat.S_IMODE(p.stat().st_mode) == 0o700 for p in folders)


@pytest.mark.parametrize("mode", [0o770, 0o702, 0o777, 0o720])
def test_a_directory_others_can_write_is_refused(tmp_path, cache, mode):
    cache.mkdir()
    cache.chmod(mode)
    module = _load(tmp_path, "simple", SIMPLE)
    x = np.linspace(0.1, 1.0, 3)
    with pytest.warns(UserWarning, match="writable by"):
        df = sg.grad(module.f)
        np.testing.assert_allclose(df(x), _expected_simple(x))
    assert not list(cache.rglob("*"))  # nothing written
    assert disk_cache.lookup(module.f, GradSpec(wrt=("x",))) is None


def _owned_by_someone_else(path, monkeypatch):
    if os.geteuid() == 0:
        os.chown(path, 65534, -1)
    else:  # pretend to be another user
        uid = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: uid + 1)


def test_a_directory_of_another_user_is_refused(tmp_path, cache, monkeypatch):
    module = _load(tmp_path, "simple", SIMPLE)
    x = np.linspace(0.1, 1.0, 3)
    sg.grad(module.f)(x)  # entries written while the directory was the user's
    _owned_by_someone_else(cache, monkeypatch)
    again = _load(tmp_path, "simple", SIMPLE)
    with pytest.warns(UserWarning, match="owned by"):
        np.testing.assert_allclose(sg.grad(again.f)(x), _expected_simple(x))
    assert disk_cache.lookup(again.f, GradSpec(wrt=("x",))) is None


def test_planted_entries_in_a_shared_directory_never_run(tmp_path, cache):
    """The attack: another user plants an entry; the victim's process must not run it."""
    module = _load(tmp_path, "simple", SIMPLE)
    x = np.linspace(0.1, 1.0, 3)
    sg.grad(module.f)(x)
    marker = tmp_path / "planted-ran"
    for entry in cache.rglob("*-*.json"):  # specializations
        data = json.loads(entry.read_text())
        data["module"] = f"open({str(marker)!r}, 'w').close()\n" + data["module"]
        entry.write_text(json.dumps(data))
    cache.chmod(0o777)
    again = _load(tmp_path, "simple", SIMPLE)
    with pytest.warns(UserWarning):
        np.testing.assert_allclose(sg.grad(again.f)(x), _expected_simple(x))
    assert not marker.exists()


# -- malformed entries are misses ---------------------------------------------------------------

PLANTED_MODULES = {
    "SyntaxError": "def dfdx(x:\n",
    "RuntimeError": "raise RuntimeError('planted')\n",
    "SystemExit": "raise SystemExit(3)\n",
    "RecursionError": "def again():\n    return again()\nagain()\n",
    "deeply nested": "y = " + "-" * 100000 + "1\n",
    "no entry function": "dfdx = 5\n",
    "NameError": "undefined_name\n",
    "ImportError": "from s2sgrad.runtime import no_such_helper\n",
    "null byte": "\0",
}

CALLER = """
import numpy as np


def helper(v, w=2.0):
    return np.sin(v) * w


def f(x):
    return np.sum(helper(x) * x)
"""


def _expected_caller(x):
    return 2.0 * (np.cos(x) * x + np.sin(x))


@pytest.mark.parametrize("problem", list(PLANTED_MODULES))
@pytest.mark.parametrize("part", ["module", "callee"])
def test_a_specialization_that_does_not_load_is_a_miss(tmp_path, cache, problem, part, request):
    if part == "callee":  # (a callee's halves: a call that stays a call)
        request.getfixturevalue("calls_stay_calls")
    module = _load(tmp_path, "caller", CALLER)
    x = np.linspace(0.1, 1.0, 3)
    sg.grad(module.f)(x)
    planted = PLANTED_MODULES[problem]
    entries = list(cache.rglob("*-*.json"))
    assert entries
    for entry in entries:
        data = json.loads(entry.read_text())
        if part == "module":
            data["module"] = planted
        else:
            assert data["splits"]
            data["splits"][0]["source"] = planted
        entry.write_text(json.dumps(data))
    again = _load(tmp_path, "caller", CALLER)
    hit = disk_cache.lookup(again.f, GradSpec(wrt=("x",)))
    assert hit is not None
    assert disk_cache.load(hit, (frozenset(), (("x", 1),), frozenset())) is None
    np.testing.assert_allclose(sg.grad(again.f)(x), _expected_caller(x))


def _deep_json(depth: int) -> str:
    return '{"format": 2, "entry": ' + "[" * depth + "]" * depth + "}"


PLANTED_DESCRIPTIONS = {
    "deep JSON": lambda meta: _deep_json(100000),
    "not an object": lambda meta: "[1, 2]",
    "huge integer": lambda meta: '{"format": ' + "9" * 5000 + "}",
    "functions missing": lambda meta: json.dumps(
        {k: v for k, v in meta.items() if k != "functions"}
    ),
    "params of another function": lambda meta: json.dumps(
        {**meta, "params": [["x", "normal"], ["y", "normal"]]}
    ),
    "params not pairs": lambda meta: json.dumps({**meta, "params": [1, 2]}),
    "entry not a name": lambda meta: json.dumps(
        {**meta, "entry": "dfdx(x):\n    pass\nimport os\ndef g"}
    ),
    "identity wrong type": lambda meta: json.dumps(
        {**meta, "functions": [{**meta["functions"][0], "identity": 5}]}
    ),
    "free not a list": lambda meta: json.dumps(
        {**meta, "functions": [{**meta["functions"][0], "free": 5}]}
    ),
    "callee out of range": lambda meta: json.dumps(
        {
            **meta,
            "functions": [
                {**meta["functions"][0], "free": [["helper", ["callee", 99]]]},
                *meta["functions"][1:],
            ],
        }
    ),
    "invalid UTF-8": lambda meta: b"\xff\xfe{".decode("latin-1"),
}


@pytest.mark.parametrize("problem", list(PLANTED_DESCRIPTIONS))
def test_a_malformed_transform_description_is_a_miss(tmp_path, cache, problem):
    module = _load(tmp_path, "caller", CALLER)
    x = np.linspace(0.1, 1.0, 3)
    sg.grad(module.f)(x)
    (description,) = [p for p in cache.rglob("*.json") if "-" not in p.stem]
    meta = json.loads(description.read_text())
    description.write_text(PLANTED_DESCRIPTIONS[problem](meta), encoding="latin-1")
    again = _load(tmp_path, "caller", CALLER)
    assert disk_cache.lookup(again.f, GradSpec(wrt=("x",))) is None
    df = sg.grad(again.f)
    np.testing.assert_allclose(df(x), _expected_caller(x))


# -- the size bound ----------------------------------------------------------------------------

MANY = "\n".join(f"def f{i}(x):\n    return x ** {i + 2} * {i + 1.5}\n" for i in range(12))


def _entries(cache):
    return [p for p in cache.rglob("*.json")]


def test_the_least_recently_used_entries_are_evicted_beyond_the_bound(tmp_path, cache, monkeypatch):
    module = _load(tmp_path, "many", MANY)
    sg.grad(module.f0)(1.5)
    one_transform = sum(p.stat().st_size for p in _entries(cache))
    bound = 6 * one_transform
    monkeypatch.setenv(cache_files.SIZE_VARIABLE, str(bound))
    for i in range(1, 12):
        assert sg.grad(getattr(module, f"f{i}"))(1.5) == pytest.approx(
            (i + 2) * (i + 1.5) * 1.5 ** (i + 1)
        )
        for k, path in enumerate(sorted(_entries(cache), key=lambda p: p.stat().st_mtime_ns)):
            os.utime(path, ns=(10**18 + k, 10**18 + k))  # a distinct time per entry, in order
        used = _load(tmp_path, "many", MANY)  # f0, read from disk, is used again every time
        assert disk_cache.lookup(used.f0, GradSpec(wrt=("x",))) is not None
    total = sum(p.stat().st_size for p in _entries(cache))
    assert total <= bound
    fresh = _load(tmp_path, "many", MANY)
    assert disk_cache.lookup(fresh.f0, GradSpec(wrt=("x",))) is not None  # recently used: kept
    assert disk_cache.lookup(fresh.f11, GradSpec(wrt=("x",))) is not None  # the newest: kept
    assert disk_cache.lookup(fresh.f1, GradSpec(wrt=("x",))) is None  # the oldest: evicted


def test_a_full_cache_is_not_scanned_again_on_every_write(tmp_path, monkeypatch):
    """A full cache of small entries took a one-second scan on about one write in ten (the
    per-folder estimate is noisy); now one scan is paid for by many writes, and the bound holds."""
    rng = np.random.default_rng(0)

    def write(key):
        path = cache_files.entry_path(str(tmp_path), key, "")
        cache_files.write_json(str(tmp_path), path, {"pad": "x" * int(rng.integers(800, 1200))})

    monkeypatch.setenv(cache_files.SIZE_VARIABLE, str(10**9))
    for i in range(256 * 30):
        write(f"{i % 256:02x}{i:062x}")
    total = sum(p.stat().st_size for p in _entries(tmp_path))
    limit = int(total / 0.97)  # nearly full
    monkeypatch.setenv(cache_files.SIZE_VARIABLE, str(limit))
    scans = []
    entries = cache_files._entries
    monkeypatch.setattr(cache_files, "_entries", lambda root: scans.append(root) or entries(root))
    for i in range(300):
        write(f"{rng.integers(256):02x}{10**6 + i:062x}")
    assert len(scans) <= 2
    assert sum(p.stat().st_size for p in _entries(tmp_path)) <= limit


def test_a_malformed_bound_warns_and_uses_the_default(monkeypatch):
    monkeypatch.setenv(cache_files.SIZE_VARIABLE, "lots")
    with pytest.warns(UserWarning, match=cache_files.SIZE_VARIABLE):
        assert cache_files.max_bytes() == cache_files.DEFAULT_MAX_BYTES
    for text, expected in [("2k", 2048), ("3M", 3 * 2**20), ("1g", 2**30), ("500", 500)]:
        monkeypatch.setenv(cache_files.SIZE_VARIABLE, text)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert cache_files.max_bytes() == expected


# -- s2sgrad cache info | clear -----------------------------------------------------------------


def _cli(capsys, *args):
    status = cli.main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_cache_info_and_clear(tmp_path, cache, capsys):
    status, out, _ = _cli(capsys, "cache", "info")
    assert status == 0 and str(cache) in out and "entries: 0" in out
    module = _load(tmp_path, "caller", CALLER)
    sg.grad(module.f)(np.ones(2))
    files = _entries(cache)
    size = sum(p.stat().st_size for p in files)
    status, out, _ = _cli(capsys, "cache", "info")
    assert status == 0
    assert f"entries: {len(files)}" in out and f"{size} bytes" in out
    unrelated = [cache / "notes.txt", files[0].parent / "notes.json", cache / "zz" / "a.json"]
    for path in unrelated:  # never ours: clear removes only entries
        path.parent.mkdir(exist_ok=True)
        path.write_text("keep")
    status, out, _ = _cli(capsys, "cache", "clear")
    assert status == 0 and f"removed {len(files)} entries" in out
    assert all(path.exists() for path in unrelated)
    assert not [p for p in _entries(cache) if p not in unrelated]
    again = _load(tmp_path, "caller", CALLER)
    assert disk_cache.lookup(again.f, GradSpec(wrt=("x",))) is None


def test_cache_commands_errors_exit_2_with_one_line(tmp_path, cache, capsys, monkeypatch):
    cache.mkdir()
    cache.chmod(0o777)
    for command in ("info", "clear"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            status, out, err = _cli(capsys, "cache", command)
        assert status == 2, command
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("s2sgrad: error: "), err
        assert str(cache) in lines[0] and "writable by" in lines[0]
    cache.chmod(0o700)
    monkeypatch.setenv(disk_cache.ENVIRONMENT_VARIABLE, str(tmp_path / "a-file"))
    (tmp_path / "a-file").write_text("")
    status, _, err = _cli(capsys, "cache", "info")
    assert status == 2 and "not a directory" in err
    monkeypatch.setenv(disk_cache.ENVIRONMENT_VARIABLE, "off")
    status, out, _ = _cli(capsys, "cache", "info")
    assert status == 0 and "off" in out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["cache"])  # no subcommand: argparse's usage error
    assert exit_info.value.code == 2


# -- the test suite's own cache ----------------------------------------------------------------


def test_a_test_run_leaves_no_cache_directory_behind(tmp_path):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    env = {**os.environ, "TMPDIR": str(temporary)}
    env.pop(disk_cache.ENVIRONMENT_VARIABLE, None)  # as a fresh run would start
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(tmp_path / "basetemp"),
            "tests/test_grad.py::test_value_and_grad",
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert not list(temporary.iterdir())
