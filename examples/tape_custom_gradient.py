"""Custom gradients (TF advanced guide: "Custom gradients"): an identity that clips its
gradient by norm in the backward pass, under a tape; then the same function differentiated by
sg.grad, exported with sg.export and reloaded in a fresh Python process."""

import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import s2sgrad as sg


@sg.custom_gradient
def clip_gradients(y):
    def backward(dy):
        norm = np.sqrt(np.sum(dy * dy))
        return dy * (0.5 / norm) if norm > 0.5 else dy  # clip_by_norm(dy, 0.5)

    return y, backward


v = sg.Variable(2.0)
with sg.GradientTape() as t:
    output = clip_gradients(v * v)
print(t.gradient(output, v))  # backward clips dy = 1 to 0.5; times d(v*v)/dv = 4: 2.0


def squared_then_clipped(x):
    return clip_gradients(x * x)


if not hasattr(sg, "export"):
    print("(sg.export is not available yet: no saved copy)")
else:
    try:
        gradient = sg.grad(squared_then_clipped)
        print("sg.grad:", gradient(2.0))
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "clipped_gradient.py"
            sg.export(gradient, str(path))
            code = (
                f"import importlib.util; spec = importlib.util.spec_from_file_location('m', "
                f"{str(path)!r}); m = importlib.util.module_from_spec(spec); "
                f"spec.loader.exec_module(m); print(getattr(m, m.__all__[0])(2.0))"
            )
            reloaded = subprocess.run(
                [sys.executable, "-c", code], capture_output=True, text=True, check=True
            )
            print("reloaded in a fresh process:", reloaded.stdout.strip())
    except Exception as error:  # the compiler may not support custom_gradient yet
        print(f"(sg.grad/sg.export of a custom gradient failed: {type(error).__name__}: {error})")
