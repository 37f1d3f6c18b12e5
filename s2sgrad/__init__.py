"""s2sgrad: source-to-source automatic differentiation for Python and NumPy.

import numpy as np
import s2sgrad as sg

def f(x):
    return np.sum(np.sin(x) * x)

df = sg.grad(f)          # compiles a new Python function, dfdx
df(np.linspace(0, 1, 5))
print(sg.source(df))     # the generated code
"""

from s2sgrad.transforms.errors import TransformError as TransformError

__version__ = "0.1.0"

# Public names and the submodule defining each. They are imported on first use (PEP 562), so
# ``import s2sgrad.runtime`` -- all an exported module needs -- loads neither libcst nor sympy
# nor the tape.
_LAZY = {
    "GradientTape": "tape",
    "Module": "module",
    "Tensor": "tensor",
    "UnconnectedGradients": "tape",
    "Variable": "tensor",
    "check_grads": "checks",
    "constant": "tensor",
    "custom_gradient": "custom",
    "primitive": "custom",
    "register_jvp": "custom",
    "register_vjp": "custom",
    "export": "standalone",
    "grad": "transform_api",
    "hessian": "composed",
    "hvp": "composed",
    "jacobian": "composed",
    "jvp": "forward_api",
    "source": "transform_api",
    "stop_gradient": "custom",
    "value_and_grad": "transform_api",
    "vjp": "composed",
}

_SUBMODULES = ("nn", "tree")  # ``sg.nn.Dense``, ``sg.tree.flatten``

__all__ = sorted(["TransformError", "__version__", *_SUBMODULES, *_LAZY])


def __getattr__(name: str):
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module("." + name, __name__)
    if name not in _LAZY:
        raise AttributeError(f"module 's2sgrad' has no attribute {name!r}")
    value = getattr(importlib.import_module("." + _LAZY[name], __name__), name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
