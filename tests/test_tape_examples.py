"""The GradientTape examples run and print the values of the TensorFlow guides."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"

EXPECTED = {
    "tape_basics.py": ["dy/dx: 6.0", "(3, 2) (3, 2)", "def drecorded"],
    "tape_model.py": ["dense/kernel, shape: (3, 2)", "dense/bias, shape: (2,)"],
    "tape_watching.py": [
        "sg.Tensor(6.0",
        "None\nNone\nNone",
        "['x0']",
        "dy/dx0: None",
        "dy/dx1: 0.99995460",
    ],
    "tape_intermediate.py": ["18.0"],
    "tape_persistent.py": ["[  4. 108.]", "[2. 6.]", "second call: RuntimeError"],
    "tape_nonscalar.py": ["4.0\n-0.25\n3.75\n7.0", "max dy/dx: 0.25"],
    "tape_control_flow.py": ["sg.Tensor(1.0, shape=(), dtype=float64)\nNone\nNone"],
    "tape_none_cases.py": [
        "unconnected: None",
        "Variable : sg.Tensor(1.0",
        "Tensor : None",
        "left through NumPy: None",
        "must be floating",
        "integer: None",
        "through assign_add: None",
        "LookupError: no gradient registered for numpy.unwrap",
        "sg.Tensor([0. 0.]",
    ],
    "tape_recording_control.py": ["dz/dx: sg.Tensor(4.0", "dz/dy: None"],
    "tape_custom_gradient.py": ["sg.Tensor(2.0, shape=()"],
    "tape_multiple.py": ["1.0\n0.25"],
    "tape_higher_order.py": ["dy_dx: 3.0", "d2y_dx2: 6.0", "[(5, 10), (10,)]"],
    "tape_jacobian.py": ["(201,)\n(201,)", "(7, 10, 5, 10)", "g.shape: (5, 10)", "delta: "],
    "tape_hessian.py": ["h.shape: (5, 8, 5, 8)", "symmetric: True", "loss before the Newton"],
    "tape_batch_jacobian.py": [
        "(7, 6, 7, 5)",
        "(7, 6, 5)\n(7, 6, 5)\n(7, 6, 5)",
        "j.shape: (7, 6, 7, 5)",
        "jb.shape: (7, 6, 5)",
    ],
}


def test_every_tape_example_is_listed():
    assert {p.name for p in EXAMPLES.glob("tape_*.py")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_prints_the_guide_values(name, tmp_path):
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    for expected in EXPECTED[name]:
        assert expected in result.stdout, f"{name}: {expected!r} not in\n{result.stdout}"
    if name == "tape_jacobian.py":  # the guide prints float32's 2.4e-07: a rounding difference
        delta = float(result.stdout.split("delta: ")[1].split()[0])
        assert 0.0 <= delta < 1e-12
