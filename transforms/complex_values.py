"""Whether a function may compute with complex numbers, so that the gradient of a real input
must be projected to its real part (JAX's convention: a real input's gradient is real).

The adjoint of a real value that met complex arithmetic (``x * (1 + 2j)``, ``np.fft.fft(x)``)
is complex; its real part is the gradient. Projecting every returned gradient would cost a
check on each call of every function, so the reverse pass does it only where this says
complex values can appear: a complex literal, a complex constant the function reads, a
primitive that makes complex values from real ones, or a call of another user function.
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import numpy as np

from .activity import Activity
from .walk import visit

# primitives whose results are complex for real arguments (besides complex constants)
_COMPLEX_MAKERS = ("numpy.fft.", "numpy.linalg.eig", "scipy.linalg.sqrtm", "scipy.fft.")


class _Reads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.imaginary = False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Imaginary(self, node: cst.Imaginary) -> None:
        self.imaginary = True


def may_be_complex(
    funcdef: cst.FunctionDef, activity: Activity, namespace: Mapping[str, object]
) -> bool:
    """Whether the normal form `funcdef` may compute with complex numbers (module docstring)."""
    reads = _Reads()
    visit(funcdef, reads)
    if reads.imaginary:
        return True
    for name in reads.names:
        value = namespace.get(name)
        if isinstance(value, (complex, np.complexfloating)) or (
            isinstance(value, np.ndarray) and np.iscomplexobj(value)
        ):
            return True
    for _, op in activity.operations:
        if op.user or (op.rule is not None and op.rule.name.startswith(_COMPLEX_MAKERS)):
            return True
        if op.primitive is complex:
            return True
    return False
