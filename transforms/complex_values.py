"""Whether a function may compute with complex numbers, and which of its names may hold
them, so that the adjoint of a real value is made real (JAX's convention: a real input's
gradient is real).

The adjoint of a real value that met complex arithmetic (``x * (1 + 2j)``, ``np.fft.fft(x)``)
is complex; its real part is the adjoint. Projecting every gradient and every contribution
would cost a check on each call of every function, so the reverse pass does it only where
this says complex values can appear: a complex literal, a complex constant the function reads,
a primitive that makes complex values from real ones, or a call of another user function.
`may_be_complex` says whether the returned gradients need it (`match_shape`);
`complex_names` which results may be complex, so that the contributions of the operations
computing them go through `real_adjoint` (an argument that is real gets a real adjoint, which
the rule of what computed it reads and which adds in place into its real buffer).
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst
import numpy as np

from .activity import Activity
from .walk import visit

# primitives whose results are complex for real arguments (besides complex constants)
_COMPLEX_MAKERS = ("numpy.fft.", "numpy.linalg.eig", "scipy.linalg.sqrtm", "scipy.fft.")
# the same, exactly (``eigh``, ``irfft``, ``hfft`` and ``fftshift`` are not among them)
_TRANSFORMS = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn", "ihfft")
_COMPLEX_RESULTS = frozenset(
    {f"{module}.{name}" for module in ("numpy.fft", "scipy.fft") for name in _TRANSFORMS}
    | {"numpy.linalg.eig", "numpy.linalg.eigvals", "scipy.linalg.sqrtm"}
)
# primitives whose results are real whatever their arguments
_REAL_MAKERS = frozenset(
    {"numpy.real", "numpy.imag", "numpy.absolute", "numpy.angle", "numpy.linalg.norm"}
    | {"builtins.abs", "numpy.fft.irfft", "numpy.fft.irfft2", "numpy.fft.irfftn"}
    | {"numpy.fft.hfft", "scipy.fft.irfft", "scipy.fft.irfft2", "scipy.fft.irfftn"}
    | {"scipy.fft.hfft"}
)
# how a program names a complex type (``dtype=complex``, ``np.complex128``, ``"c16"``)
_COMPLEX_TYPES = ("complex", "cdouble", "csingle", "clongdouble", "c8", "c16", "c32")


class _Reads(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()
        self.imaginary = False

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Imaginary(self, node: cst.Imaginary) -> None:
        self.imaginary = True

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value.startswith(_COMPLEX_TYPES):  # np.complex128
            self.imaginary = True

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        if node.value.strip("'\"").lstrip("<>=").startswith(_COMPLEX_TYPES):  # "complex128"
            self.imaginary = True


def may_be_complex(
    funcdef: cst.FunctionDef,
    activity: Activity,
    namespace: Mapping[str, object],
    complex_params: tuple[str, ...] = (),
) -> bool:
    """Whether the normal form `funcdef` may compute with complex numbers (module docstring);
    `complex_params`: parameters known to hold complex values (a tape's recorded constants)."""
    if complex_params:
        return True
    reads = _Reads()
    visit(funcdef, reads)
    if reads.imaginary or "complex" in reads.names:
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


def complex_names(
    funcdef: cst.FunctionDef,
    activity: Activity,
    namespace: Mapping[str, object],
    complex_params: tuple[str, ...] = (),
) -> frozenset[str]:
    """The names of the normal form `funcdef` that may hold complex values (module docstring):
    results of a primitive that makes them, of a user function, of an operation reading a
    complex literal or constant, a complex type, or a name that may hold one; not those of
    `np.real`, `np.imag`, `np.abs`, `np.angle` and `norm`. Over-approximated: a name wrongly
    here costs a check, one missing a wrong gradient. Repeated until nothing changes, for
    the names a loop carries."""
    names = {
        name
        for name in _read_names(funcdef)
        if name not in _local_names(funcdef, activity) and _is_complex_constant(namespace, name)
    }
    names.update(complex_params)
    complex_type = namespace.get("complex") is complex or "complex" not in namespace
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for _, op in activity.operations:
            if all(t in found for t in op.targets) or not _makes_complex(
                op, names | found, complex_type
            ):
                continue
            found.update(op.targets)
            changed = True
    return frozenset(found)


def _makes_complex(op, names: set[str], complex_type: bool) -> bool:
    rule_name = op.rule.name if op.rule is not None else ""
    if rule_name in _REAL_MAKERS:
        return False
    if op.user or op.primitive is complex or rule_name in _COMPLEX_RESULTS:
        return True
    reads = _Reads()
    for expr in (*op.args, *op.kwargs.values(), *(op.index or ())):
        visit(expr, reads)
    if reads.imaginary or (complex_type and "complex" in reads.names):
        return True
    return bool(reads.names & names)


def _read_names(funcdef: cst.FunctionDef) -> set[str]:
    reads = _Reads()
    visit(funcdef, reads)
    return reads.names


def _local_names(funcdef: cst.FunctionDef, activity: Activity) -> set[str]:
    params = funcdef.params
    local = {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}
    for _, op in activity.operations:
        local.update(op.targets)
    return local


def _is_complex_constant(namespace: Mapping[str, object], name: str) -> bool:
    value = namespace.get(name)
    if isinstance(value, (complex, np.complexfloating)):
        return True
    return isinstance(value, np.ndarray) and np.iscomplexobj(value)
