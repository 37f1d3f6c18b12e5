"""The `s2sgrad` command: dump reads files without running them, check runs them, errors are one
line with exit status 2. A few tests go through a real subprocess (``python -m s2sgrad``, the
terminal colouring through a pseudo-terminal); the rest call `cli.main` in this process."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

UNTRUSTED = """
import numpy as np
import math
import json
from os import path

SCALE = 2.0
open(MARKER, "w").write("ran")  # noqa
raise RuntimeError("importing this file runs code")


def helper(v):
    return np.sin(v) * SCALE


def accumulate(v):
    total = v * 1.0
    total += np.cos(v)  # (an update in place: the call stays a call)
    return total


@decorator_that_does_not_exist
def f(x: np.ndarray, y=float("nan")) -> float:
    return np.sum(helper(x) * x) + np.sum(accumulate(x)) + math.cos(1.0)


def sigmoidish(x):
    return x**2 * np.sin(x) / (1 + np.exp(-x))


def pair(x, y):
    return x * y + np.sin(x)


def uses_with(x):
    with open("f") as handle:
        return x


def uses_json(x):
    return json.loads("1.0") * x
"""


@pytest.fixture
def untrusted(tmp_path):
    marker = tmp_path / "marker.txt"
    path = tmp_path / "untrusted.py"
    path.write_text(UNTRUSTED.replace("MARKER", repr(str(marker))))
    return path, marker


def run(*args, cwd=None):
    env = {**os.environ, "PYTHONPATH": REPO, "S2SGRAD_CACHE_DIR": "off"}
    return subprocess.run(
        [sys.executable, "-m", "s2sgrad", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )


def main(capsys, *args):
    status = cli.main(list(args))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("s2sgrad: error: "), err
    return lines[0]


# -- through a subprocess ---------------------------------------------------------------------


def test_dump_does_not_run_the_file(untrusted):
    path, marker = untrusted
    result = run("dump", f"{path}:f")
    assert result.returncode == 0, result.stderr
    assert not marker.exists()
    assert "def dfdx(x, y):" in result.stdout
    assert "of helper: return np.sin(v) * SCALE" in result.stdout  # the callee, inlined
    assert "def _bwd_accumulate(" in result.stdout  # a callee kept a call, transformed too
    assert "\x1b[" not in result.stdout  # a pipe gets no colour codes
    compile(result.stdout.split("# _fwd_accumulate")[0], "dumped", "exec")


def test_errors_exit_2_with_one_line(untrusted, tmp_path):
    path, _ = untrusted
    result = run("dump", f"{path}:uses_with")
    assert result.returncode == 2
    line = one_error_line(result.stderr)
    lineno = path.read_text().splitlines().index('    with open("f") as handle:') + 1
    assert f"{path}:{lineno}:5:" in line and "with" in line
    result = run("dump", f"{tmp_path / 'missing.py'}:f")
    assert result.returncode == 2
    assert "no such file" in one_error_line(result.stderr)


def test_help_for_every_command():
    outputs = {}
    for args in (["--help"], ["dump", "--help"], ["check", "--help"], ["cache", "--help"]):
        result = run(*args)
        assert result.returncode == 0, result.stderr
        assert "usage: s2sgrad" in result.stdout
        outputs[args[0]] = result.stdout
    assert "this runs it" in outputs["check"]  # check says it runs the file
    assert "not run" in outputs["dump"]


def test_terminal_output_is_highlighted(untrusted):
    path, _ = untrusted
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": REPO, "S2SGRAD_CACHE_DIR": "off", "TERM": "xterm"}
    process = subprocess.Popen(
        [sys.executable, "-m", "s2sgrad", "dump", f"{path}:sigmoidish"],
        stdout=follower,
        stderr=subprocess.PIPE,
        env=env,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the other end closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    assert process.wait(timeout=120) == 0, process.stderr.read()
    output = b"".join(chunks).decode()
    assert "\x1b[" in output
    assert "dsigmoidishdx" in output


def test_check_prints_a_table_and_exits_1_on_a_mismatch(tmp_path):
    path = tmp_path / "checked.py"
    path.write_text(
        textwrap.dedent(
            """
            import numpy as np
            print("this file was imported")

            def f(x, y):
                return np.sum(np.sin(x) * y ** 2)

            def step(x):
                return np.floor(x) + x
            """
        )
    )
    result = run("check", f"{path}:f", "--at", "x=[1, 2, 3]", "--at", "y=0.5")
    assert result.returncode == 0, result.stderr
    assert "this file was imported" in result.stdout
    assert "x[2]" in result.stdout and "finite diff." in result.stdout
    # floor jumps at 1.0: finite differences see the jump, the derivative does not
    result = run("check", f"{path}:step", "--at", "x=1.0")
    assert result.returncode == 1
    assert "MISMATCH" in result.stdout


def test_check_order_2_runs_check_grads_on_second_derivatives(tmp_path):
    path = tmp_path / "second.py"
    path.write_text(
        textwrap.dedent(
            """
            import numpy as np
            import s2sgrad as sg

            def f(x):
                return np.sum(np.sin(x) * x)

            def half_square(x):
                # the value and slope of sum(x**2) / 2, but a slope whose derivative is 0
                frozen = sg.stop_gradient(x)
                return np.sum(x * frozen) - 0.5 * np.sum(frozen * frozen)
            """
        )
    )
    result = run("check", f"{path}:f", "--at", "x=[0.3, 0.7]", "--order", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "sg.check_grads, derivatives up to order 2, forward and reverse mode: ok" in (
        result.stdout
    )
    result = run("check", f"{path}:half_square", "--at", "x=[0.3, 0.7]")
    assert result.returncode == 0, result.stdout + result.stderr  # first derivatives agree
    result = run("check", f"{path}:half_square", "--at", "x=[0.3, 0.7]", "--order", "2")
    assert result.returncode == 1
    assert "derivative order 2" in result.stdout and "MISMATCH" in result.stdout


# -- in this process ----------------------------------------------------------------------


def test_dump_to_a_file_gives_a_module_that_runs(untrusted, tmp_path, capsys):
    path, _ = untrusted
    out = tmp_path / "out.py"
    status, stdout, _ = main(capsys, "dump", f"{path}:sigmoidish", "-o", str(out))
    assert status == 0 and stdout == ""
    namespace: dict = {}
    exec(compile(out.read_text(), str(out), "exec"), namespace)
    x = np.linspace(-2.0, 2.0, 7)
    expected = 2 * x * np.sin(x) / (1 + np.exp(-x)) + x**2 * np.cos(x) / (1 + np.exp(-x))
    expected += x**2 * np.sin(x) * np.exp(-x) / (1 + np.exp(-x)) ** 2
    np.testing.assert_allclose(namespace["dsigmoidishdx"](x), expected, rtol=1e-12)


def test_wrt_several_names_and_no_optimize(untrusted, capsys):
    path, _ = untrusted
    status, out, _ = main(capsys, "dump", f"{path}:pair", "--wrt", "x,y")
    assert status == 0
    assert "def dpairdx_y(x, y):" in out and "return (dx, " in out
    status, raw, _ = main(capsys, "dump", f"{path}:pair", "--wrt", "y", "--no-optimize")
    assert status == 0
    status, optimized, _ = main(capsys, "dump", f"{path}:pair", "--wrt", "y")
    assert len(raw.splitlines()) > len(optimized.splitlines())


def test_forward_mode(untrusted, capsys):
    path, _ = untrusted
    status, out, err = main(capsys, "dump", f"{path}:sigmoidish", "--mode", "forward")
    assert status == 0, err
    namespace: dict = {}
    exec(compile(out, "forward", "exec"), namespace)
    value, tangent = namespace["jvp_sigmoidish"](0.3, 1.0)
    expected = sg.jvp(_sigmoidish, (0.3,), (1.0,))
    assert value == pytest.approx(expected[0]) and tangent == pytest.approx(expected[1])


def test_second_order(untrusted, capsys):
    path, _ = untrusted
    status, out, err = main(capsys, "dump", f"{path}:sigmoidish", "--order", "2")
    assert status == 0, err
    namespace: dict = {}
    exec(compile(out, "second", "exec"), namespace)
    entry = namespace[namespace["__all__"][0]]  # the second derivative, calling the sweep
    second = sg.grad(sg.grad(_sigmoidish))(0.7)
    assert entry(0.7) == pytest.approx(second, rel=1e-12)
    sweep = namespace["jvp_dsigmoidishdx"]  # forward over reverse, in the same module
    assert sweep(0.7, 1.0)[1] == pytest.approx(second, rel=1e-12)
    h = 1e-4
    numeric = (_sigmoidish(0.7 + h) - 2 * _sigmoidish(0.7) + _sigmoidish(0.7 - h)) / h**2
    assert second == pytest.approx(numeric, rel=1e-5)
    # the code is for Python numbers: an array gave one wrong number, silently (hunt, repro_3)
    with pytest.raises(TypeError, match="argument 'x' is an array"):
        entry(np.array([0.3, 0.7]))


def _sigmoidish(x):
    return x**2 * np.sin(x) / (1 + np.exp(-x))


def test_dump_after_a_pass(untrusted, capsys):
    path, _ = untrusted
    status, out, _ = main(capsys, "dump", f"{path}:sigmoidish", "--dump-after", "normalize")
    assert status == 0
    assert out.startswith("def sigmoidish(x):")  # the primal in normal form, before reverse
    status, _, err = main(capsys, "dump", f"{path}:sigmoidish", "--dump-after", "nosuchpass")
    assert status == 2
    assert "passes: parse" in one_error_line(err)


@pytest.mark.parametrize(
    ("target_suffix", "message"),
    [
        (":nope", "no top-level function named 'nope'"),
        ("", "expected FILE.py:FUNC"),
        (":uses_json", "name 'json' is not defined"),  # only numpy, math, scipy imports run
    ],
)
def test_usage_errors(untrusted, capsys, target_suffix, message):
    path, _ = untrusted
    status, _, err = main(capsys, "dump", f"{path}{target_suffix}")
    assert status == 2
    assert message in one_error_line(err)


def test_syntax_error_names_the_line(tmp_path, capsys):
    path = tmp_path / "broken.py"
    path.write_text("import numpy as np\n\ndef f(x):\n    return x +\n")
    status, _, err = main(capsys, "dump", f"{path}:f")
    assert status == 2
    assert f"{path}:4:" in one_error_line(err)


def test_check_argument_errors(tmp_path, capsys):
    path = tmp_path / "checked.py"
    path.write_text("def f(x, y):\n    return x * y\n")
    for at, message in (
        (["--at", "x=1.0"], "missing a value for y"),
        (["--at", "x=1.0", "--at", "z=2.0"], "has no parameter 'z'"),
        (["--at", "x=open('f')", "--at", "y=1.0"], "is not a number or a nested list"),
        (["--at", "x", "--at", "y=1.0"], "expects NAME=VALUE"),
    ):
        status, _, err = main(capsys, "check", f"{path}:f", *at)
        assert status == 2
        assert message in one_error_line(err)
    raising = tmp_path / "raising.py"
    raising.write_text("raise RuntimeError('boom')\ndef f(x):\n    return x\n")
    status, _, err = main(capsys, "check", f"{raising}:f", "--at", "x=1.0")
    assert status == 2
    assert "raised RuntimeError on import: boom" in one_error_line(err)


COMPUTED_CONSTANTS = """\
import numpy as np

A = np.eye(3) * 2.0  # computed when the file runs: dump does not run it
act = np.tanh
open(MARKER, "w").write("the file ran")


def energy(x):
    return np.sum(act(x) * x) + x @ A @ x
"""


def test_dump_reads_computed_constants_by_name(tmp_path, capsys):
    marker = tmp_path / "marker.txt"
    path = tmp_path / "weights.py"
    path.write_text(COMPUTED_CONSTANTS.replace("MARKER", repr(str(marker))))
    status, out, err = main(capsys, "dump", f"{path}:energy")
    assert status == 0, err
    assert not marker.exists()
    assert "A" in out and "np.tanh" in out
    namespace = {"A": np.diag([1.0, 2.0, 3.0])}
    exec(compile(out, "dumped", "exec"), namespace)  # the dumped gradient, with a value for A
    x = np.array([0.3, -0.5, 0.9])
    expected = np.tanh(x) + x * (1 - np.tanh(x) ** 2) + (namespace["A"] + namespace["A"].T) @ x
    np.testing.assert_allclose(namespace["denergydx"](x), expected, rtol=1e-12)


# Modules a directory may hold that share a name with what `s2sgrad dump` imports: importing one
# leaves a marker and fails.
PLANTED = ("numpy", "libcst", "argparse", "sympy", "pygments", "linecache", "json", "textwrap")


def test_dump_imports_nothing_from_the_current_directory(tmp_path):
    marker = tmp_path / "planted-imported.txt"
    for name in PLANTED:
        (tmp_path / f"{name}.py").write_text(
            f"open({str(marker)!r}, 'a').write({name!r} + '\\n')\n"
            f"raise ImportError('the planted {name}.py was imported')\n"
        )
    (tmp_path / "model.py").write_text(
        "import numpy as np\n\ndef f(x):\n    return np.sum(np.sin(x) * x)\n"
    )
    for options in ([], ["--simplify"], ["--mode", "forward"]):
        result = run("dump", "model.py:f", *options, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "np.cos(x)" in result.stdout
        assert not marker.exists(), marker.read_text()


def test_check_imports_the_files_neighbours(tmp_path, capsys):
    (tmp_path / "neighbour_helper.py").write_text("SCALE = 3.0\n")
    path = tmp_path / "uses_neighbour.py"
    path.write_text(
        "import numpy as np\nfrom neighbour_helper import SCALE\n\n"
        "def f(x):\n    return SCALE * np.sin(x)\n"
    )
    before = list(sys.path)
    status, out, err = main(capsys, "check", f"{path}:f", "--at", "x=0.5")
    assert status == 0, err
    assert f"{3.0 * np.cos(0.5):.10g}"[:8] in out  # d(3 sin x)/dx at 0.5
    assert sys.path == before
    sys.modules.pop("neighbour_helper", None)
