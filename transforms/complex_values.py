"""Whether a function may compute with complex numbers, and which of its names may hold
them, so that the adjoint of a real value is made real (JAX's convention: a real input's
gradient is real).

The adjoint of a real value that met complex arithmetic (``x * (1 + 2j)``, ``np.fft.fft(x)``)
is complex; its real part is the adjoint. Projecting every gradient and every contribution
would cost a check on each call of every function, so the reverse pass does it only where
this says complex values can appear: a complex literal, a complex constant the function reads,
a primitive that makes complex values from real ones, or a call of another user function whose
own code (or that of a function it calls) may make them (`callee_may_make_complex`).
`may_be_complex` says whether the returned gradients need it (`match_shape`);
`complex_names` which results may be complex, so that the contributions of the operations
computing them go through `real_adjoint` (an argument that is real gets a real adjoint, which
the rule of what computed it reads and which adds in place into its real buffer).
"""

from __future__ import annotations

import types
from collections.abc import Mapping

import libcst as cst
import numpy as np

from . import transform_cache
from .activity import Activity
from .operations import FUNCTION_VALUE
from .walk import visit

# primitives whose results are complex for real arguments (besides complex constants)
_COMPLEX_MAKERS = ("numpy.fft.", "numpy.linalg.eig", "scipy.linalg.sqrtm", "scipy.fft.")
# the same, exactly (``eigh``, ``irfft``, ``hfft`` and ``fftshift`` are not among them)
_TRANSFORMS = ("fft", "ifft", "fft2", "ifft2", "fftn", "ifftn", "rfft", "rfft2", "rfftn", "ihfft")
_COMPLEX_RESULTS = frozenset(
    {f"{module}.{name}" for module in ("numpy.fft", "scipy.fft") for name in _TRANSFORMS}
    | {"numpy.linalg.eig", "numpy.linalg.eigvals", "scipy.linalg.sqrtm"}
)
_FFT_RESULTS = frozenset(
    f"{module}.{name}" for module in ("numpy.fft", "scipy.fft") for name in _TRANSFORMS
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
    callee_may=None,
) -> bool:
    """Whether the normal form `funcdef` may compute with complex numbers (module docstring);
    `complex_params`: parameters known to hold complex values (a tape's recorded constants);
    `callee_may`: whether a user function it calls may (`callee_may_make_complex`)."""
    if complex_params:
        return True
    reads = _Reads()
    visit(funcdef, reads)
    if reads.imaginary or "complex" in reads.names:
        return True
    for name in reads.names:
        if _holds_complex(namespace.get(name)):
            return True
    callee_may = callee_may or callee_may_make_complex
    for _, op in activity.operations:
        if op.user and callee_may(op.primitive):
            return True
        if op.rule is not None and op.rule.name.startswith(_COMPLEX_MAKERS):
            return True
        if op.primitive is complex:
            return True
    return False


_MAKES_COMPLEX = ("may make complex values",)  # what is cached, in the transform cache's key


def callee_may_make_complex(fn) -> bool:
    """Whether the user function `fn` may return a complex value for real arguments: its own
    code, or that of a user function it calls (transitively), makes one as `may_be_complex`
    says. A real function's results are then real for real arguments, and a caller needs no
    `real_adjoint` for them (every caller of a user function paid one per contribution when
    all user functions' results counted as maybe complex). Cached in the transform cache,
    whose entries are checked against every callee's definition and globals."""
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__sg_custom_gradient__"):
        return True  # (code of its own we do not read: supposed to make complex values)
    return transform_cache.cached(fn, _MAKES_COMPLEX, lambda: _reaches_complex(fn, set()))


def _reaches_complex(fn, asked: set[int]) -> bool:
    """`callee_may_make_complex`, without the cache: a function already being asked about
    (recursion) adds nothing of its own; one that calls a function it was given, or that
    the compiler cannot analyze (the caller's own compilation reports why), may."""
    if id(fn) in asked:
        return False
    if not isinstance(fn, types.FunctionType) or hasattr(fn, "__sg_custom_gradient__"):
        return True
    asked.add(id(fn))
    from .call_kinds import parameters  # (the pipeline imports this module)
    from .pipeline import GradSpec, analyze

    try:
        analysis = analyze(fn, GradSpec(wrt=parameters(fn)))
    except Exception:  # (a refusal: reported when the caller compiles the call)
        return True
    operations = analysis.activity.operations
    if any(op.primitive is None or op.primitive is FUNCTION_VALUE for _, op in operations):
        return True
    return may_be_complex(
        analysis.nf.funcdef,
        analysis.activity,
        analysis.namespace,
        callee_may=lambda callee: _reaches_complex(callee, asked),
    )


def surely_complex_names(activity: Activity) -> frozenset[str]:
    """The names only FFTs assign, complex whatever their arguments (not ``eig``'s results,
    real for a real matrix with real eigenvalues): their adjoints need no check."""
    assigned_by: dict[str, set[bool]] = {}
    for _, op in activity.operations:
        fft = op.rule is not None and op.rule.name in _FFT_RESULTS
        for target in op.targets:
            assigned_by.setdefault(target, set()).add(fft)
    return frozenset(name for name, ffts in assigned_by.items() if ffts == {True})


def complex_names(
    funcdef: cst.FunctionDef,
    activity: Activity,
    namespace: Mapping[str, object],
    complex_params: tuple[str, ...] = (),
) -> frozenset[str]:
    """The names of the normal form `funcdef` that may hold complex values (module docstring):
    results of a primitive that makes them, of a user function that may make them or is given
    a complex argument, of an operation reading a
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
    if op.primitive is complex or rule_name in _COMPLEX_RESULTS:
        return True
    if op.user and callee_may_make_complex(op.primitive):
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
    return _holds_complex(namespace.get(name))


def _holds_complex(value, depth: int = 3) -> bool:
    """A complex number or array, or a list, tuple or dict holding one (``ARGS = [x0, M]``
    with a complex ``M``, unpacked into a call: its contribution met a real buffer)."""
    if isinstance(value, (complex, np.complexfloating)):
        return True
    if isinstance(value, np.ndarray):
        return np.iscomplexobj(value)
    if depth and isinstance(value, (list, tuple, dict)):
        items = value.values() if isinstance(value, dict) else value
        return any(_holds_complex(item, depth - 1) for item in items)
    return False
