"""The README's Python examples run as written.

Every ```python block of README.md, in order, is one script (the tour builds on what came
before), written to a file and run in a fresh interpreter, where a UserWarning is an error.
s2sgrad reads the source of the functions it transforms, so they must live in a file. Blocks
fenced ```py are listings (generated code) and are not run; ```bash and bare blocks are shell
commands and output.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parent.parent
README = ROOT / "README.md"
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.MULTILINE | re.DOTALL)


def test_the_readme_has_runnable_examples():
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 8
    assert any("sg.grad(" in block for block in blocks)


def test_the_readme_examples_run(tmp_path):
    script = tmp_path / "readme_examples.py"
    script.write_text("\n\n".join(python_blocks(README.read_text())))
    result = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
        env=ENV,
    )
    assert result.returncode == 0, result.stderr
    # the printed values the README quotes next to its calls
    assert "[1.         3.44561921 2.88647693 2.24564605]" in result.stdout
    assert "[0.   0.   0.25]" in result.stdout
    assert "[2.         3.92384099]" in result.stdout
