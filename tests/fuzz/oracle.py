"""The fuzzer's judge: one program checked in every mode against finite differences.

`check(program, directory)` writes the program to a module file (s2sgrad reads source), draws
inputs away from every kink the check twin reports, computes the Jacobian of every parameter
and the Hessian of the summed output by central differences, then asks s2sgrad for each mode
in `MODES` and compares. Besides the numbers it checks that no transform changed its inputs or
the module's globals, that no result is (or shares memory with) an input or a global, and that
``value_and_grad``'s value is the function's. Every failure is a `Failure` whose `signature`
(mode, kind, exception and where it was raised) is what the reducer keeps constant.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import importlib
import importlib.util
import itertools
import os
import sys
import traceback
import warnings
from pathlib import Path

import numpy as np
from s2sgrad.runtime import registry

import s2sgrad as sg
from s2sgrad import tensor as tensor_module
from s2sgrad.tensor import Tensor

from . import recorder
from .program import Program

MODES = (
    "grad",
    "value_and_grad",
    "vjp",
    "jvp",
    "jacobian_reverse",
    "jacobian_forward",
    "hessian",
    "hvp",
    "grad_of_grad",
    "grad_of_grad_mixed",
    "grad_unoptimized",
    "grad_simplified",
    "has_aux",
    "tape",
    "tape_hessian",
    "export",
)
SECOND_ORDER = ("hessian", "hvp", "grad_of_grad", "grad_of_grad_mixed", "tape_hessian")
# modes with refusals of their own for programs the transforms take: a followed Tensor made a
# plain value leaves the tape (TensorFlow's semantics), a module cannot hold an object
MODE_SPECIFIC = ("tape", "tape_hessian", "export")
REFUSED_INSIDE = "refused inside s2sgrad's generated code: "  # a crash's detail, then the error
_modules = itertools.count()
# The judge tells a crash inside the compiler from the program's own error by the compiler's
# frames, which s2sgrad hides from users (s2sgrad/traceback_filter.py): keep every frame, here
# and in the worker processes (they inherit the environment). test_random_programs too.
os.environ["S2SGRAD_TRACEBACK"] = "full"
_COMPILER = tuple(
    str(Path(importlib.import_module(name).__file__).resolve().parent) + os.sep
    for name in ("s2sgrad", "s2sgrad.transforms", "s2sgrad.runtime")
)


@dataclasses.dataclass(frozen=True)
class Failure:
    mode: str
    kind: str  # wrong, crash, rejected, mutated, aliased, value, hang, invalid
    detail: str
    where: str = ""

    @property
    def signature(self) -> tuple:
        return (self.mode, self.kind, self.detail.split(":")[0], self.where)

    def __str__(self) -> str:
        where = f" at {self.where}" if self.where else ""
        return f"{self.mode}: {self.kind}{where}: {self.detail}"


@dataclasses.dataclass
class Outcome:
    status: str  # ok, skipped, failed
    failures: list = dataclasses.field(default_factory=list)
    modes: tuple = ()


class Mismatch(Exception):
    """A check that found a wrong number (or a changed input, an aliased result...)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


def load(source: str, directory: Path):
    name = f"fuzz_program_{os.getpid()}_{next(_modules)}"
    path = directory / f"{name}.py"
    path.write_text(source)
    return load_file(path)


def load_file(path) -> object:
    """Import the module at `path` (a program, or a module sg.export wrote)."""
    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _arguments(program: Program, rng, record) -> tuple:
    def draw(kind):
        if kind == "S":
            return float(rng.uniform(-1.2, 1.2))
        if kind in ("R", "RD"):  # Rec(a, b, c), the program's NamedTuple, or its dataclass
            made = record[kind]
            return made(float(rng.uniform(-1.2, 1.2)), rng.uniform(-1.2, 1.2, 3), 0.5)
        if kind == "X":
            return rng.uniform(-1.2, 1.2, (3, 3))
        return rng.uniform(-1.2, 1.2, 3)

    return tuple(draw(kind) for _, kind in program.params)


def _twin(program: Program):
    """The program's check twin (`recorder`): its `f`, recording every kink it meets."""
    namespace = dict(recorder.NAMESPACE)
    exec(compile(program.render(check=True), "<check twin>", "exec"), namespace)
    return namespace["f"]


def _point(program: Program, twin, rng, record=None):
    """Arguments where the program is smooth and moderate, or None."""
    for _ in range(6):
        args = _arguments(program, rng, record)
        recorder.reset()
        with np.errstate(all="ignore"):
            out = twin(*copy.deepcopy(args))
        if recorder.margin() < 0.03 or not np.all(np.isfinite(out)) or np.max(np.abs(out)) > 1e4:
            continue
        return args
    return None


class TwinMismatch(Exception):
    """The check twin computes another function than the program: finite differences of it
    would judge s2sgrad against the wrong function (a bug of the grammar)."""


class KinkCrossed(Exception):
    """A point finite differences evaluate is on another side of a kink than the point they
    differentiate at: their quotient measures the jump, not the derivative."""


def _replace(args: tuple, index: int, value) -> tuple:
    args = list(args)
    args[index] = value if np.ndim(value) else float(value)
    return tuple(args)


def jacobians(f, args: tuple, eps: float = 1e-6) -> list:
    """d out / d args[i] for every i, by central differences: shape out.shape + arg.shape."""
    out_shape = np.shape(f(*copy.deepcopy(args)))
    result = []
    for i, arg in enumerate(args):
        base = np.array(arg, dtype=float)
        jac = np.zeros(out_shape + base.shape)
        for k in np.ndindex(base.shape):
            step = np.zeros_like(base)
            step[k] = eps
            hi = np.asarray(f(*_replace(copy.deepcopy(args), i, base + step)), dtype=float)
            lo = np.asarray(f(*_replace(copy.deepcopy(args), i, base - step)), dtype=float)
            jac[(Ellipsis, *k)] = (hi - lo) / (2 * eps)
        result.append(jac)
    return result


def hessian(f, args: tuple, index: int, h: float = 1e-4, other: int | None = None) -> np.ndarray:
    """The Hessian of sum(f) in args[index], by second central differences; with `other`,
    its mixed block in args[index] and args[other] (shape: both shapes)."""
    if other is not None and other != index:
        return _mixed_hessian(f, args, index, other, h)
    base = np.array(args[index], dtype=float)
    n = base.size
    total = lambda x: float(np.sum(f(*_replace(copy.deepcopy(args), index, x.reshape(base.shape)))))  # noqa: E731
    flat = base.ravel()
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            H[i, j] = H[j, i] = (
                total(flat + ei + ej)
                - total(flat + ei - ej)
                - total(flat - ei + ej)
                + total(flat - ei - ej)
            ) / (4 * h * h)
    return H.reshape(base.shape + base.shape)


def _mixed_hessian(f, args: tuple, a: int, b: int, h: float) -> np.ndarray:
    first, second = np.array(args[a], dtype=float), np.array(args[b], dtype=float)

    def total(x, y) -> float:
        moved = _replace(_replace(copy.deepcopy(args), a, x.reshape(first.shape)), b, y)
        return float(np.sum(f(*moved)))

    x0, y0 = first.ravel(), second.ravel()
    H = np.zeros((x0.size, y0.size))
    for i in range(x0.size):
        for j in range(y0.size):
            ei, ej = np.eye(x0.size)[i] * h, np.eye(y0.size)[j] * h
            moves = [(x0 + ei, y0 + ej), (x0 + ei, y0 - ej), (x0 - ei, y0 + ej), (x0 - ei, y0 - ej)]
            plus_plus, plus_minus, minus_plus, minus_minus = (
                total(x, y.reshape(second.shape)) for x, y in moves
            )
            H[i, j] = (plus_plus - plus_minus - minus_plus + minus_minus) / (4 * h * h)
    return H.reshape(first.shape + second.shape)


JACOBIAN_STEPS = (1e-6, 1e-7, 1e-8)
HESSIAN_STEPS = (1e-4, 1e-5, 1e-6, 1e-7)
TRUSTED_NOISE = 0.05  # the most two steps may disagree, relative to the derivative's size


def first_differences(f, args: tuple) -> tuple[list | None, float]:
    """The Jacobians of f in every argument and how far they may be off, or (None, inf)
    where no step can be trusted: as `second_differences`, a step too coarse for the
    function's curvature, or that crosses a kink (`KinkCrossed`), is refined rather than
    taken as the truth."""
    for eps in JACOBIAN_STEPS:
        try:
            jac, twice = jacobians(f, args, eps), jacobians(f, args, 2 * eps)
        except KinkCrossed:
            continue
        noise = max(
            (float(np.max(np.abs(a - b), initial=0.0)) for a, b in zip(jac, twice, strict=True)),
            default=0.0,
        )
        size = max((float(np.max(np.abs(j), initial=0.0)) for j in jac), default=0.0)
        if noise <= TRUSTED_NOISE * max(1.0, size):
            return jac, noise
    return None, float("inf")


def second_differences(
    f, args: tuple, index: int, other: int | None = None
) -> tuple[np.ndarray | None, float]:
    """The Hessian of sum(f) in args[index] (with `other`, its mixed block in args[index] and
    args[other]) and how far it may be off, or (None, inf) where no step can be trusted.

    Second differences at steps h and 2h, extrapolated (Richardson): their truncation error
    alone was 3e-4 of a steep Hessian, the tolerance; what is left of it is noise. Where the
    two steps disagree by more than `TRUSTED_NOISE` of the Hessian the step is too coarse for
    the function's curvature (np.sin of values near 1e5 turned a Hessian of 7e9 into 2e5 at
    h=1e-4, fuzz seed 3305595): smaller steps are tried, down to where rounding takes over.
    """
    for h in HESSIAN_STEPS:
        try:
            coarse = hessian(f, args, index, h=2 * h, other=other)
            fine = hessian(f, args, index, h=h, other=other)
        except KinkCrossed:
            continue
        if not (np.all(np.isfinite(coarse)) and np.all(np.isfinite(fine))):
            return None, float("inf")
        noise = float(np.max(np.abs(fine - coarse), initial=0.0))
        if noise <= TRUSTED_NOISE * max(1.0, float(np.max(np.abs(fine), initial=0.0))):
            return (4.0 * fine - coarse) / 3.0, noise
    return None, float("inf")


@dataclasses.dataclass
class Reference:
    """What finite differences say, and what the checks need besides."""

    args: tuple
    value: object
    jac: list  # per leaf of the arguments (a record argument has several): out + leaf shape
    noise: float
    wrt: int  # the argument the single-argument modes differentiate (never a record)
    hess: np.ndarray | None  # None where finite differences cannot tell it (second order unchecked)
    protected: list  # arrays no result may be or share memory with
    pristine: tuple  # (args, globals) copies to compare against afterwards
    module: object
    hess_noise: float = 0.0  # how far the Hessian's two difference steps disagree
    groups: list = dataclasses.field(default_factory=list)  # per argument: its leaves' indices
    leaves: tuple = ()  # the arguments' leaves (sg.tree), which finite differences move
    # the mixed second derivative: of sum(f) in args[wrt] and args[mixed_wrt], another plain
    # argument (None where there is none, or no step can tell it)
    mixed_wrt: int | None = None
    mixed: np.ndarray | None = None
    mixed_noise: float = 0.0
    # the program rendered with ``f`` returning ``(value, aux)`` (`Program.render`), or None
    aux_module: object = None

    @property
    def wrt_leaf(self) -> int:
        return self.groups[self.wrt][0]

    def gradient(self, leaf: int) -> np.ndarray:
        j = self.jac[leaf]
        return j.reshape((-1, *np.shape(self.leaves[leaf]))).sum(axis=0)

    def per_leaf(self, results, what: str) -> list[tuple[int, object]]:
        """(leaf index, value) for one result per argument (a gradient, a cotangent), whose
        record arguments' results must be records of the same type."""
        found = []
        for i, got in enumerate(results):
            if _is_record(self.args[i]) and type(got) is not type(self.args[i]):
                raise Mismatch("wrong", f"{what} {i}: a {type(got).__name__}, expected a record")
            parts = sg.tree.leaves(got)
            if len(parts) != len(self.groups[i]):
                raise Mismatch("wrong", f"{what} {i}: {len(parts)} leaves")
            found += list(zip(self.groups[i], parts, strict=True))
        return found

    def tolerance(self, want) -> float:
        return 1e-5 * max(1.0, float(np.max(np.abs(want), initial=0.0))) + 10 * self.noise


def _same(got, want, tol: float, what: str) -> None:
    if np.shape(got) != np.shape(want):
        raise Mismatch("wrong", f"{what}: shape {np.shape(got)}, expected {np.shape(want)}")
    got = np.asarray(got, dtype=float)
    error = float(np.max(np.abs(got - want), initial=0.0)) if got.size else 0.0
    if not error <= tol:
        raise Mismatch(
            "wrong",
            f"{what}: off by {error:.3g} (tol {tol:.2g})\n got {got!r}\n"
            f" expected {np.asarray(want)!r}",
        )


def _leaves(value):
    if isinstance(value, (tuple, list)):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    else:
        yield value


def _after(ref: Reference, result) -> None:
    """Inputs and globals unchanged; no result aliases an input or a global."""
    args, globals_ = ref.pristine
    for i, (now, before) in enumerate(zip(ref.args, args, strict=True)):
        if not all(map(np.array_equal, sg.tree.leaves(now), sg.tree.leaves(before))):
            raise Mismatch("mutated", f"argument {i} changed: {before!r} -> {now!r}")
    _unchanged(ref.module, globals_)
    _not_sharing(result, ref.protected)


def _module_state(module) -> dict:
    """Copies of a module's data globals (what no transform may change)."""
    return {
        name: copy.deepcopy(value)
        for name, value in vars(module).items()
        if isinstance(value, (float, list, np.ndarray))
    }


def _unchanged(module, globals_: dict) -> None:
    for name, before in globals_.items():
        now = getattr(module, name)
        if type(now) is not type(before) or not np.array_equal(np.asarray(now), np.asarray(before)):
            raise Mismatch("mutated", f"global {name} changed: {before!r} -> {now!r}")


def _not_sharing(result, protected: list) -> None:
    for leaf in _leaves(result):
        if isinstance(leaf, np.ndarray):
            for array in protected:
                if leaf is array or np.shares_memory(leaf, array):
                    raise Mismatch("aliased", "a result shares memory with an input or global")


class Refusal(Exception):
    """A documented refusal a mode meets (not a TransformError or LookupError)."""


class ExportRefused(Refusal):
    """sg.export cannot write a value the code reads (an object of the program's own class)."""


class LeftTheTape(Refusal):
    """The program made a Tensor the tape follows a plain value: NumPy turned it into an array
    (s2sgrad warns), or `float()`/`.item()`/`.tolist()` did. What it computes from that value
    is a constant to the tape, as in TensorFlow: a refusal, not a verdict on the gradient."""


@contextlib.contextmanager
def _said_conversions():
    """Note every conversion of a followed Tensor to a Python value (the tape's own warning
    covers conversions to arrays)."""
    said: list[str] = []
    originals = {name: getattr(Tensor, name) for name in ("__float__", "item", "tolist")}

    def noting(name, original):
        def method(self, *args):
            if tensor_module._followed(self):
                said.append(name)
            return original(self, *args)

        return method

    for name, original in originals.items():
        setattr(Tensor, name, noting(name, original))
    try:
        yield said
    finally:
        for name, original in originals.items():
            setattr(Tensor, name, original)


def _wrote_into_a_view(error: ValueError, caught) -> bool:
    """The program wrote into ``np.asarray`` of a followed Tensor: a read-only view, after the
    tape's warning that the Tensor became a plain array (writing it changed the Tensor and
    what the tape recorded, until the view was read-only)."""
    return "read-only" in str(error) and any("the tape follows" in str(w.message) for w in caught)


def _mode_tape(f, ref, rng):
    # the same program run on Variables under a GradientTape: `gradient` lowers what the tape
    # recorded to Python and compiles its adjoint with the same compiler
    variables = [sg.Variable(np.array(arg, dtype=float)) for arg in ref.args]
    with _said_conversions() as said, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sg.GradientTape() as tape:
                out = f(*variables)
        except TypeError as error:
            if _raised_in(error, tensor_module.__file__):  # Tensors are immutable, no out=
                raise LeftTheTape(f"TypeError: {error}") from None
            raise
        except ValueError as error:
            if _wrote_into_a_view(error, caught):
                raise LeftTheTape(f"ValueError: {error}") from None
            raise
        grads = tape.gradient(out, variables, unconnected_gradients="zero")
    value = out.numpy() if isinstance(out, Tensor) else out
    _same(value, ref.value, 1e-9 * max(1.0, float(np.max(np.abs(ref.value)))), "tape value")
    left = [str(w.message)[:60] for w in caught if "the tape follows" in str(w.message)]
    try:
        for i, got in enumerate(grads):
            want = ref.gradient(ref.groups[i][0])
            _same(got.numpy(), want, ref.tolerance(want), f"tape gradient {i}")
    except Mismatch as mismatch:
        if said or left:  # a constant where the program made one: what the tape documents
            message = f"a followed Tensor became a plain value ({(left + said)[0]})"
            raise LeftTheTape(message) from mismatch
        raise
    return [g.numpy() for g in grads]


def _mode_tape_hessian(f, ref, rng):
    # nested tapes, the TensorFlow guide's Hessian: the inner gradient's code runs on the
    # outer tape's Tensors, so the outer tape records the backward pass and differentiates it
    variables = [sg.Variable(np.array(arg, dtype=float)) for arg in ref.args]
    x = variables[ref.wrt]
    with _said_conversions() as said, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            with sg.GradientTape() as outer:
                with sg.GradientTape() as inner:
                    out = f(*variables)
                g = inner.gradient(out, x, unconnected_gradients="zero")
            got = outer.jacobian(g, x, unconnected_gradients="zero")
        except TypeError as error:
            if _raised_in(error, tensor_module.__file__):  # immutable, or through a helper
                raise LeftTheTape(f"TypeError: {error}") from None
            raise
        except ValueError as error:
            if _wrote_into_a_view(error, caught):
                raise LeftTheTape(f"ValueError: {error}") from None
            raise
    left = [str(w.message)[:60] for w in caught if "the tape follows" in str(w.message)]
    got = np.reshape(got.numpy(), np.shape(ref.hess))
    try:
        _same(got, ref.hess, _hess_tol(ref), f"nested tapes' Hessian in argument {ref.wrt}")
    except Mismatch as mismatch:
        if said or left:  # a constant where the program made one: what the tape documents
            message = f"a followed Tensor became a plain value ({(left + said)[0]})"
            raise LeftTheTape(message) from mismatch
        raise
    return got


def _mode_export(f, ref, rng):
    # sg.export's standalone modules give what the functions they were written from give:
    # the gradient in every argument (the general code, for numbers and arrays; the code for
    # these arguments where one is a record) and, where there is one, the Hessian
    wrt = tuple(range(len(ref.args)))
    records = any(_is_record(arg) for arg in ref.args)
    exported = [(sg.grad(f, wrt=wrt), copy.deepcopy(ref.args) if records else ())]
    if ref.hess is not None and np.ndim(ref.value) == 0:
        exported.append((sg.hessian(f, wrt=ref.wrt), copy.deepcopy(ref.args)))
    results = []
    for k, (fn, example) in enumerate(exported):
        want = fn(*copy.deepcopy(ref.args))
        path = Path(ref.module.__file__).parent / f"{ref.module.__name__}_export_{k}.py"
        try:
            try:
                written = sg.export(fn, path, *example)
            except sg.TransformError:
                if example:
                    raise
                # the general code refuses what only numbers allow (``x += 1`` on a float
                # argument, which the code for Python numbers rebinds): these arguments' code
                written = sg.export(fn, path, *copy.deepcopy(ref.args))
        except ValueError as error:
            if not str(error).startswith("cannot export"):
                raise
            raise ExportRefused(str(error)) from None
        entry = _entry_of(load_file(written))
        got = entry(*copy.deepcopy(ref.args))
        if type(got) is not type(want):
            raise Mismatch(
                "wrong", f"export {k}: a {type(got).__name__}, not {type(want).__name__}"
            )
        for a, b in zip(sg.tree.leaves(got), sg.tree.leaves(want), strict=True):
            _same(
                a, np.asarray(b, dtype=float), 1e-9 * max(1.0, float(np.max(np.abs(b)))), "export"
            )
        results.append(got)
    return results


def _entry_of(module):
    return getattr(module, module.__all__[0])


def _raised_in(error: BaseException, filename: str) -> bool:
    frames = traceback.extract_tb(error.__traceback__)
    return bool(frames) and frames[-1].filename == filename


def _mode_grad(f, ref, rng, **options):
    wrt = tuple(range(len(ref.args)))
    grads = sg.grad(f, wrt=wrt, **options)(*ref.args)
    for leaf, got in ref.per_leaf(grads, "gradient"):
        want = ref.gradient(leaf)
        _same(got, want, ref.tolerance(want), f"gradient of leaf {leaf}")
    return grads


def _mode_has_aux(f, ref, rng):
    # f returning (value, aux) at each of its returns: the value is differentiated and the
    # aux comes back as f computed it (JAX's has_aux), from value_and_grad and grad alike
    module = ref.aux_module
    before = _module_state(module)
    want_value, want_aux = module.f(*copy.deepcopy(ref.args))
    if not np.allclose(want_value, ref.value, rtol=1e-12, atol=1e-12, equal_nan=True):
        raise Mismatch("invalid", f"f with an aux computes {want_value!r}, f {ref.value!r}")
    wrt = tuple(range(len(ref.args)))
    (value, aux), grads = sg.value_and_grad(module.f, wrt=wrt, has_aux=True)(*ref.args)
    _same(value, ref.value, 1e-9 * max(1.0, float(np.max(np.abs(ref.value)))), "value")
    for leaf, got in ref.per_leaf(grads, "gradient"):
        want = ref.gradient(leaf)
        _same(got, want, ref.tolerance(want), f"gradient of leaf {leaf} (has_aux)")
    single, aux_again = sg.grad(module.f, wrt=ref.wrt, has_aux=True)(*ref.args)
    want = ref.gradient(ref.wrt_leaf)
    _same(single, want, ref.tolerance(want), f"gradient {ref.wrt} (has_aux)")
    for got in (aux, aux_again):
        if not isinstance(got, dict) or sorted(got) != ["tag", "twice"] or got["tag"] != "aux":
            raise Mismatch("wrong", f"aux {got!r}, expected {want_aux!r}")
        twice = want_aux["twice"]
        _same(got["twice"], twice, 1e-9 * max(1.0, float(np.max(np.abs(twice)))), "aux")
    _unchanged(module, before)
    arrays = [v for v in vars(module).values() if isinstance(v, np.ndarray)]
    _not_sharing([grads, single], arrays)
    return grads, single


def _mode_value_and_grad(f, ref, rng):
    value, got = sg.value_and_grad(f, wrt=ref.wrt)(*ref.args)
    _same(value, ref.value, 1e-9 * max(1.0, float(np.max(np.abs(ref.value)))), "value")
    want = ref.gradient(ref.wrt_leaf)
    _same(got, want, ref.tolerance(want), f"gradient {ref.wrt}")
    return value, got


def _mode_vjp(f, ref, rng):
    out, pullback = sg.vjp(f, *ref.args)
    _same(out, ref.value, 1e-9 * max(1.0, float(np.max(np.abs(ref.value)))), "value")
    cotangent = rng.normal(size=np.shape(ref.value))
    cotangent = float(cotangent) if not np.shape(ref.value) else cotangent
    grads = pullback(cotangent)
    for leaf, got in ref.per_leaf(grads, "vjp"):
        want = np.tensordot(cotangent, ref.jac[leaf], axes=np.ndim(ref.value))
        _same(got, want, ref.tolerance(want) * 3, f"vjp of leaf {leaf}")
    return out, grads


def _mode_jvp(f, ref, rng):
    directions = [
        float(rng.normal()) if not np.shape(a) else rng.normal(size=np.shape(a)) for a in ref.leaves
    ]
    tangents = tuple(  # a record argument's tangent is a record
        sg.tree.unflatten(sg.tree.structure(a), [directions[k] for k in group])
        for a, group in zip(ref.args, ref.groups, strict=True)
    )
    out, tangent = sg.jvp(f, ref.args, tangents)
    _same(out, ref.value, 1e-9 * max(1.0, float(np.max(np.abs(ref.value)))), "value")
    want = sum(
        np.tensordot(j, t, axes=np.ndim(t)) for j, t in zip(ref.jac, directions, strict=True)
    )
    _same(tangent, want, ref.tolerance(want) * 3, "tangent")
    return out, tangent


def _mode_jacobian(mode):
    def run(f, ref, rng):
        got = sg.jacobian(f, wrt=ref.wrt, mode=mode)(*ref.args)
        want = ref.jac[ref.wrt_leaf]
        _same(got, want, ref.tolerance(want), f"jacobian ({mode}) in argument {ref.wrt}")
        return got

    return run


def _hess_tol(ref, hess=None, noise=None) -> float:
    hess, noise = (ref.hess, ref.hess_noise) if hess is None else (hess, noise)
    scale = max(1.0, float(np.max(np.abs(hess))), float(np.max(np.abs(ref.value))))
    return 3e-4 * scale + noise


def _mode_hessian(f, ref, rng):
    got = sg.hessian(f, wrt=ref.wrt)(*ref.args)
    _same(got, ref.hess, _hess_tol(ref), f"hessian in argument {ref.wrt}")
    return got


def _mode_hvp(f, ref, rng):
    shape = np.shape(ref.args[ref.wrt])
    vector = float(rng.normal()) if not shape else rng.normal(size=shape)
    got = sg.hvp(f, wrt=ref.wrt)(*ref.args, vector)
    want = np.tensordot(ref.hess, vector, axes=len(shape))
    _same(got, want, _hess_tol(ref) * 3, f"hvp in argument {ref.wrt}")
    return got


def _mode_grad_of_grad(f, ref, rng):
    shape = np.shape(ref.args[ref.wrt])
    got = sg.grad(sg.grad(f, wrt=ref.wrt), wrt=ref.wrt)(*ref.args)
    want = ref.hess.reshape((-1, *shape)).sum(axis=0)
    _same(got, want, _hess_tol(ref) * 3, f"grad of grad in argument {ref.wrt}")
    return got


def _mode_grad_of_grad_mixed(f, ref, rng):
    # the gradient in one argument, differentiated in another: generated code transformed
    # again with respect to what the first transform held constant
    shape = np.shape(ref.args[ref.mixed_wrt])
    inner = sg.grad(f, wrt=ref.wrt)
    got = sg.grad(inner, wrt=ref.mixed_wrt)(*ref.args)
    first = np.shape(ref.args[ref.wrt])
    want = ref.mixed.reshape((-1, *shape)) if first else ref.mixed.reshape((1, *shape))
    tol = _hess_tol(ref, ref.mixed, ref.mixed_noise) * 3
    _same(got, want.sum(axis=0), tol, f"grad in {ref.mixed_wrt} of grad in {ref.wrt}")
    return got


RUNNERS = {
    "grad": _mode_grad,
    "value_and_grad": _mode_value_and_grad,
    "has_aux": _mode_has_aux,
    "vjp": _mode_vjp,
    "jvp": _mode_jvp,
    "jacobian_reverse": _mode_jacobian("reverse"),
    "jacobian_forward": _mode_jacobian("forward"),
    "hessian": _mode_hessian,
    "hvp": _mode_hvp,
    "grad_of_grad": _mode_grad_of_grad,
    "grad_of_grad_mixed": _mode_grad_of_grad_mixed,
    "grad_unoptimized": lambda f, ref, rng: _mode_grad(f, ref, rng, optimize=False),
    "grad_simplified": lambda f, ref, rng: _mode_grad(f, ref, rng, simplify=True),
    "tape": _mode_tape,
    "tape_hessian": _mode_tape_hessian,
    "export": _mode_export,
}


def _where(error: BaseException) -> str:
    """The innermost frame in the compiler or in generated code: 'module:function'."""
    found = ""
    for frame in traceback.extract_tb(error.__traceback__):
        name = frame.filename
        if name.startswith("<s2sgrad"):
            found = "generated:" + frame.name
        elif name.startswith(_COMPILER):
            found = f"{Path(name).stem}:{frame.name}"
    return found


def _run(mode: str, f, ref: Reference, rng) -> Failure | None:
    try:
        with np.errstate(all="ignore"):
            result = RUNNERS[mode](f, ref, rng)
        _after(ref, result)
    except Mismatch as mismatch:
        return Failure(mode, mismatch.kind, str(mismatch))
    except Refusal as refusal:
        return Failure(mode, "rejected", f"{type(refusal).__name__}: {refusal}")
    except (sg.TransformError, LookupError) as error:
        if type(error) not in (sg.TransformError, LookupError):  # KeyError, IndexError
            return _crash(mode, error)
        if _refused_inside_generated_code(error):
            return Failure(
                mode,
                "crash",
                f"{REFUSED_INSIDE}{type(error).__name__}: {str(error)[:300]}",
                "generated code",
            )
        return Failure(mode, "rejected", f"{type(error).__name__}: {str(error)[:300]}")
    except Exception as error:
        return _crash(mode, error)
    return None


def _refused_inside_generated_code(error: Exception) -> bool:
    """A refusal that points into code s2sgrad generated, not into the program.

    A clear refusal names the user's construct at the user's line (API.md). A second-order
    mode transforms the code the first order generated, and a refusal located there (or a
    missing rule "used at" a generated line) is the compiler failing on its own output: the
    program was accepted at first order, so the refusal is no answer the user can act on.
    """
    if isinstance(error, sg.TransformError):
        return str(error.filename).startswith("<")
    return "(used at <" in str(error)


def _crash(mode: str, error: BaseException) -> Failure:
    text = "".join(traceback.format_exception(error)[-6:])
    return Failure(
        mode, "crash", f"{type(error).__name__}: {str(error)[:200]}\n{text}", _where(error)
    )


def modes_for(program: Program, seed: int) -> tuple:
    """The modes a program is checked in: all, but sympy simplification on a share only."""
    modes = [m for m in MODES if m != "grad_simplified" or seed % 7 == 0]
    if program.out_kind != "S":
        modes.remove("hessian")
        modes.remove("hvp")
        modes.remove("tape_hessian")
    return tuple(modes)


def check(program: Program, directory: Path, modes: tuple | None = None) -> Outcome:
    """Check `program` in `modes` (default: `modes_for`). The rules a program registers for
    its own primitives are forgotten afterwards (the registry's meta-tests list every rule)."""
    with registry.scratch():
        return _check(program, directory, modes)


def _check(program: Program, directory: Path, modes: tuple | None) -> Outcome:
    rng = np.random.default_rng(program.seed)
    source = program.render()
    try:
        module = load(source, directory)
        f = module.f
        records = {"R": getattr(module, "Rec", None), "RD": getattr(module, "RecD", None)}
        twin = _twin(program)
        args = _point(program, twin, rng, records)
    except Exception as error:
        return Outcome("failed", [Failure("program", "invalid", repr(error))])
    if args is None:
        return Outcome("skipped")
    modes = modes_for(program, program.seed) if modes is None else modes
    try:
        ref = reference(program, module, f, args, rng, twin)
    except TwinMismatch as error:
        return Outcome("failed", [Failure("program", "invalid", f"TwinMismatch: {error}")])
    if ref is None:
        return Outcome("skipped")
    if ref.hess is None:
        modes = tuple(mode for mode in modes if mode not in SECOND_ORDER)
    if ref.mixed is None:
        modes = tuple(mode for mode in modes if mode != "grad_of_grad_mixed")
    if "has_aux" in modes:
        if getattr(program, "returns_aux", False):
            ref.aux_module = load(program.render(aux=True), directory)
        else:  # a fixed snippet, or a program kept from before `Return` existed
            modes = tuple(mode for mode in modes if mode != "has_aux")
    if not all(isinstance(arg, (float, np.ndarray)) for arg in args):  # records: no Variables
        modes = tuple(mode for mode in modes if mode not in ("tape", "tape_hessian"))
    failures = [failure for mode in modes if (failure := _run(mode, f, ref, rng))]
    if failures:
        return Outcome("failed", failures, modes)
    return Outcome("ok" if ref.hess is not None else "first order only", failures, modes)


def right_or_refused_by_its_mode(outcome: Outcome) -> bool:
    """Every mode right, but for the tape's and export's own refusals: what a reduced fuzz
    program kept as a regression test must stay."""
    return outcome.status != "skipped" and all(
        f.kind == "rejected" and f.mode in MODE_SPECIFIC for f in outcome.failures
    )


def _is_record(value) -> bool:
    """A record argument: the program's NamedTuple or frozen dataclass."""
    return isinstance(value, tuple) or dataclasses.is_dataclass(value)


def reference(program: Program, module, f, args: tuple, rng, twin) -> Reference | None:
    # finite differences move the arguments' leaves (a record argument has three)
    leaves, treedef = sg.tree.flatten(args)
    groups, start = [], 0
    for arg in args:
        count = len(sg.tree.leaves(arg))
        groups.append(list(range(start, start + count)))
        start += count
    flat = tuple(leaves)

    def f_flat(*moved):
        # the check twin computes what f computes (its kinks through the recorder), and
        # says which side of each kink it was on
        recorder.reset()
        out = twin(*sg.tree.unflatten(treedef, list(moved)))
        if recorder.decisions() != sides:
            raise KinkCrossed
        return out

    with np.errstate(all="ignore"):
        recorder.reset()
        twinned = twin(*copy.deepcopy(args))
        sides = recorder.decisions()
        value = f(*copy.deepcopy(args))
        if not np.allclose(twinned, value, rtol=1e-12, atol=1e-12, equal_nan=True):
            raise TwinMismatch(f"the check twin computes {twinned!r}, the program {value!r}")
        jac, noise = first_differences(f_flat, flat)
        if jac is None:
            return None
        plain = [i for i, arg in enumerate(args) if not _is_record(arg)]
        wrt = plain[int(rng.integers(len(plain)))]
        leaf = groups[wrt][0]
        hess, hess_noise = second_differences(f_flat, flat, leaf)
        others = [i for i in plain if i != wrt]
        mixed_wrt = others[int(rng.integers(len(others)))] if others else None
        mixed, mixed_noise = (
            second_differences(f_flat, flat, leaf, groups[mixed_wrt][0])
            if mixed_wrt is not None and hess is not None
            else (None, float("inf"))
        )
    if max(float(np.max(np.abs(j), initial=0.0)) for j in jac) > 1e4:
        return None
    globals_ = _module_state(module)
    protected = [a for a in leaves if isinstance(a, np.ndarray)]
    protected += [v for v in vars(module).values() if isinstance(v, np.ndarray)]
    pristine = (copy.deepcopy(args), globals_)
    return Reference(
        args,
        value,
        jac,
        noise,
        wrt,
        hess,
        protected,
        pristine,
        module,
        hess_noise,
        groups,
        flat,
        mixed_wrt=mixed_wrt if mixed is not None else None,
        mixed=mixed,
        mixed_noise=mixed_noise,
    )
