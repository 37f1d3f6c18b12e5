"""The function `sg.grad` returns: a thin wrapper that picks a compiled specialization.

Generated gradients are specialized on whether each argument is a Python number (shape
``()``, so no shape bookkeeping is needed) or an array and its number of dimensions (so that
``x[i]`` of a vector is known to be a number) or something else. The wrapper is itself generated
so that it has the user's signature and costs one dictionary lookup per call: its key is the
tuple of argument classes, and a miss compiles (or reuses) the specialization for those kinds.
"""

from __future__ import annotations

import itertools
import linecache
import numbers
import types
from typing import TYPE_CHECKING

import numpy as np

from s2sgrad.runtime import field_name_clash, is_container
from s2sgrad.transforms.spec import Generated

from . import disk_cache
from .traceback_filter import api_boundary

_dispatchers = itertools.count(1)  # numbers the dispatchers' file names (one text each)

if TYPE_CHECKING:
    import libcst as cst

    from s2sgrad.transforms.pipeline import Analysis


def generate_gradient(
    analysis, scalars, ndims, containers=frozenset(), complexes=frozenset()
) -> Generated:
    """Run the compiler for one specialization (imported here, on a miss, so that a process
    whose transforms all come from the disk cache never loads libcst)."""
    from s2sgrad.transforms.pipeline import generate_gradient as generate

    return generate(analysis, scalars, ndims, containers=containers, complex_args=complexes)


class CompiledGradient:
    """The specializations of one transform of one function."""

    def __init__(self, analysis: Analysis):
        self.analysis = analysis
        self._by_kinds: dict[tuple, Generated] = {}
        self._by_classes: dict[tuple, types.FunctionType] = {}
        self.last: Generated | None = None
        cached_params = getattr(analysis, "param_kinds", None)  # a transform found on disk
        self.params = cached_params or _parameter_kinds(analysis.parsed.funcdef.params)

    def generic(self) -> Generated:
        """The specialization that assumes nothing about the arguments (what export writes)."""
        return self._build(frozenset(), ())

    def for_arguments(self, args: tuple) -> Generated:
        pairs = list(zip(self.params, args, strict=True))
        names = [name for name, _ in self.params]
        scalars, ndims, containers = argument_kinds(names, args)
        for (name, _), value in pairs:
            if name in self.analysis.spec.wrt:
                _check_differentiable(name, value)
            if name in containers and name in self.analysis.spec.wrt:
                _check_field_names(name, value)
        return self._build(scalars, ndims, containers, complex_arguments(names, args))

    def _build(
        self, scalars: frozenset[str], ndims: tuple, containers=frozenset(), complexes=frozenset()
    ) -> Generated:
        # (a key of three kinds while no argument is complex: the disk cache's names of the
        # specializations made before complex arguments were a kind stay valid)
        key = (scalars, ndims, containers, complexes) if complexes else (scalars, ndims, containers)
        generated = self._by_kinds.get(key)
        if generated is None:
            generated = disk_cache.load(self.analysis, key)
        if generated is None:
            generated = generate_gradient(
                self.analysis, scalars, dict(ndims), containers, complexes
            )
            disk_cache.store(self.analysis, key, generated, self.params)
        self._by_kinds[key] = generated
        return generated

    def function_for(self, *args) -> types.FunctionType:
        """The specialization for `args`, from the class-keyed cache the wrapper uses when it
        is there (so repeated `sg.jvp`/`sg.jacobian` calls cost a lookup, not a rebuild)."""
        function = self._by_classes.get(_key(args))
        return function if function is not None else self.specialize(*args)

    def specialize(self, *args) -> types.FunctionType:
        """The specialization for `args` (every argument, in parameter order)."""
        generated = self.for_arguments(args)
        self.last = generated
        self._by_classes[_key(args)] = generated.function
        return generated.function

    def wrapper(self) -> types.FunctionType:
        """The user-facing function: the user's signature, the entry function's name.

        It starts as a dispatcher (argument classes -> specialization). On its first call it
        becomes the specialized code itself behind a guard on the argument classes (a
        monomorphic inline cache), so a call costs a class check rather than a dictionary
        lookup and a second call; other argument classes still go through the dispatcher.
        """
        entry = self.analysis.entry
        signature, call = _signature_text(self.params)
        names = ", ".join(name for name, _ in self.params)
        comma = "," if len(self.params) == 1 else ""
        source = (
            f"def {entry}({signature}):\n"
            f"    fn = _specializations.get(_key(({names}{comma})))\n"
            f"    if fn is None:\n"
            f"        fn = _specialize({names})\n"
            f"    return fn({call})\n"
        )
        namespace: dict[str, object] = {"_specializations": self._by_classes, "_key": _key}
        filename = f"<s2sgrad dispatcher {entry} #{next(_dispatchers)}>"
        # registered like generated code, so a traceback through the dispatcher shows its line
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        code = compile(source, filename, "exec")
        exec(code, namespace)
        dispatcher = namespace[entry]
        exec(code, namespace)
        function = namespace[entry]
        namespace["_dispatch"] = dispatcher
        state = {"inlined": False}

        @api_boundary  # the first call of each kind of arguments compiles: a boundary
        def specialize_and_inline(*args):
            specialized = self.specialize(*args)
            if not state["inlined"]:
                state["inlined"] = True
                self._inline(function, namespace, args, call)
            return specialized

        namespace["_specialize"] = specialize_and_inline
        fn = self.analysis.fn
        for target in (function, dispatcher):
            target.__defaults__ = fn.__defaults__
            target.__kwdefaults__ = fn.__kwdefaults__
        function.__doc__ = (
            f"Gradient of {fn.__qualname__} with respect to {', '.join(self.analysis.spec.wrt)}, "
            f"generated by s2sgrad (print it with s2sgrad.source)."
        )
        function.__module__ = fn.__module__
        function.__qualname__ = entry
        function.__wrapped_transform__ = self
        return function

    def _inline(self, function, namespace: dict, args: tuple, call: str) -> None:
        """Make `function` run the specialization for `args` directly, behind a class guard."""
        generated = self.last
        guards = []
        for (name, _), value in zip(self.params, args, strict=True):
            namespace[f"_class_{name}"] = value.__class__
            guards.append(f"{name}.__class__ is not _class_{name}")
            if isinstance(value, np.ndarray):
                namespace[f"_ndim_{name}"] = value.ndim
                guards.append(f"{name}.ndim != _ndim_{name}")
                # (a complex array is another specialization, `complex_arguments`: another
                # dtype goes to the dispatcher, one identity test where a kind test was two
                # attribute reads and a comparison)
                namespace[f"_dtype_{name}"] = value.dtype
                guards.append(f"{name}.dtype is not _dtype_{name}")
        guard = (
            f"    if {' or '.join(guards)}:\n        return _dispatch({call})\n" if guards else ""
        )
        source = _insert_after_header(generated.source, generated.entry, guard)
        filename = f"<s2sgrad {generated.entry} (guarded) #{id(function)}>"
        linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
        namespace.update(self.analysis.namespace)
        namespace.update(  # what the generated module's code reads: callees' halves too
            {k: v for k, v in generated.function.__globals__.items() if not k.startswith("__")}
        )
        scratch = dict(namespace)
        exec(compile(source, filename, "exec"), scratch)
        for key, value in scratch.items():  # the module's imports, for the new code's globals
            namespace.setdefault(key, value)
        function.__code__ = scratch[generated.entry].__code__


def _insert_after_header(source: str, entry: str, lines: str) -> str:
    start = source.index(f"def {entry}(")
    end = source.index("):\n", start) + 3
    return source[:end] + lines + source[end:]


def _key(args: tuple) -> tuple:
    """What selects a specialization: each argument's class, and an array's dimensions and
    whether it is complex."""
    return tuple(
        (a.__class__, (a.ndim, a.dtype.kind == "c") if isinstance(a, np.ndarray) else None)
        for a in args
    )


def _check_differentiable(name: str, value) -> None:
    """A TypeError for a differentiated argument that is no number, array or pytree (an
    object of a class of the user's): its derivative would fail deep inside generated code.
    (Checked per kind of arguments, when a specialization is chosen, not per call.)"""
    if value is None or isinstance(value, (numbers.Number, np.ndarray, np.generic)):
        return  # (None: an empty pytree, as `sg.tree` has it)
    if is_container(value):
        return
    raise TypeError(
        f"argument {name!r} is a {type(value).__name__}, which s2sgrad cannot differentiate "
        f"with respect to: differentiable arguments are floats, NumPy arrays and pytrees of "
        f"them (dict, list, tuple, NamedTuple, dataclass, or a class registered with "
        f"sg.tree.register); register the class with sg.tree.register, or pass its arrays "
        f"as arguments (wrt= names the ones to differentiate)"
    )


def _check_field_names(name: str, value) -> None:
    """A TypeError for a NamedTuple or dataclass argument with a field named like an array
    attribute: the compiler reads ``p.T`` as a transpose and ``p.size`` as a constant (it
    cannot tell a record from an array before the call), which would be a wrong gradient."""
    clash = field_name_clash(value)
    if clash is not None:
        kind, field = clash
        raise TypeError(
            f"argument {name!r}: {kind} has a field named {field!r}, which s2sgrad reads as "
            f"the array attribute .{field} (p.{field}); rename the field (for example "
            f"{field}_) to differentiate with respect to it"
        )


def argument_kinds(names, args: tuple) -> tuple[frozenset, tuple, frozenset]:
    """What a specialization is chosen by (and `sg.export` checks): the parameters given
    Python numbers, the ranks of those given arrays, and those given containers."""
    pairs = list(zip(names, args, strict=True))
    scalars = frozenset(name for name, value in pairs if _is_number(value))
    ndims = tuple((name, value.ndim) for name, value in pairs if isinstance(value, np.ndarray))
    containers = frozenset(name for name, value in pairs if is_container(value))
    return scalars, ndims, containers


def complex_arguments(names, args: tuple) -> frozenset:
    """The parameters given complex numbers or arrays (not differentiated, or differentiated):
    the code for them makes the adjoints of real values that meet them real (JAX's
    convention), which the compiler cannot see from the function's text alone. Without it a
    real argument's gradient came back complex, or a complex contribution was added into a
    real buffer in place (``f(x, c)`` with ``c = 0.5j``)."""
    return frozenset(
        name
        for name, value in zip(names, args, strict=True)
        if isinstance(value, (complex, np.complexfloating))
        or (isinstance(value, np.ndarray) and value.dtype.kind == "c")
    )


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Number) and not hasattr(value, "shape")


def _parameter_kinds(params: cst.Parameters) -> list[tuple[str, str]]:
    kinds = [(p.name.value, "posonly") for p in params.posonly_params]
    kinds += [(p.name.value, "normal") for p in params.params]
    kinds += [(p.name.value, "kwonly") for p in params.kwonly_params]
    return kinds


def _signature_text(params: list[tuple[str, str]]) -> tuple[str, str]:
    parts, call = [], []
    seen_posonly = False
    kwonly_started = False
    for name, kind in params:
        if kind != "posonly" and seen_posonly:
            parts.append("/")
            seen_posonly = False
        if kind == "posonly":
            seen_posonly = True
        if kind == "kwonly" and not kwonly_started:
            parts.append("*")
            kwonly_started = True
        parts.append(name)
        call.append(f"{name}={name}" if kind == "kwonly" else name)
    if seen_posonly:
        parts.append("/")
    return ", ".join(parts), ", ".join(call)
