"""s2sgrad: source-to-source automatic differentiation for Python and NumPy.

import numpy as np
import s2sgrad as sg

def f(x):
    return np.sum(np.sin(x) * x)

df = sg.grad(f)          # compiles a new Python function, dfdx
df(np.linspace(0, 1, 5))
print(sg.source(df))     # the generated code
"""

from s2sgrad.transforms.errors import TransformError

# -- GradientTape front door (issue 5) --
from . import nn
from .composed import hessian, hvp, jacobian, vjp
from .custom import custom_gradient, stop_gradient
from .export import export
from .forward_api import jvp
from .module import Module
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, Variable, constant
from .transform_api import grad, source, value_and_grad

__version__ = "0.1.0"

__all__ = [
    "GradientTape",
    "Module",
    "Tensor",
    "TransformError",
    "UnconnectedGradients",
    "Variable",
    "__version__",
    "constant",
    "custom_gradient",
    "export",
    "grad",
    "hessian",
    "hvp",
    "jacobian",
    "jvp",
    "nn",
    "source",
    "stop_gradient",
    "value_and_grad",
    "vjp",
]
