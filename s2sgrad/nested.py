"""Running a compiled adjoint on Tensors, so that an outer tape records the backward pass.

That is how nested tapes give second derivatives: ``t1.gradient(y, x)`` inside ``t2`` runs the
adjoint code of ``y`` on the recorded Tensors, every NumPy call and operator in it is recorded
by ``t2``, and ``t2.gradient(dy_dx, x)`` differentiates that recording like any other.

Generated code also calls the runtime's helpers (``unbroadcast``, ``matmul_left``, ...). With
Tensor arguments, a helper that has a gradient rule of its own is recorded as one operation;
otherwise it runs on the Tensors and its NumPy calls are recorded one by one. Three helpers
convert their argument with ``np.asarray`` (which would drop it from the tape), so this module
gives Tensor-safe versions of them built from recorded NumPy calls.

The adjoint of ``x[index]`` adds into a buffer in place (``dx[1:3] += g``, ``accumulate_at``),
which no tape can record; the variant run on Tensors is rewritten to add functionally
(``dx = _scatter_add(dx, np.s_[1:3], g)``, through `index_adjoint`, which has a reverse rule).
"""

from __future__ import annotations

import linecache
import types

import libcst as cst
import numpy as np

import s2sgrad.runtime as runtime
from s2sgrad.runtime import registry

from .tensor import Tensor, apply, refuse_nested_through_a_helper

_variants: dict[int, tuple] = {}  # id(function) -> (its code, the variant on Tensors)


def _unreduce(g, x, axis=None, keepdims=False):
    if axis is None or keepdims:
        return g
    shape = x if isinstance(x, tuple) else np.shape(x)
    ndim = len(shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(sorted(a % ndim for a in axes))
    reduced_shape = tuple(n for i, n in enumerate(shape) if i not in axes)
    if np.ndim(g) < len(reduced_shape):
        g = np.broadcast_to(g, reduced_shape)
    return np.expand_dims(g, axes)


def _matmul_left(g, x, y):
    if np.ndim(x) == 2 and np.ndim(y) == 2:
        return g @ np.transpose(y)
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * y
    if np.ndim(y) == 1:
        return runtime.unbroadcast(np.expand_dims(g, -1) * y, x)
    if np.ndim(x) == 1:
        out = np.expand_dims(g, -2) @ np.swapaxes(y, -1, -2)
        return np.reshape(runtime.unbroadcast(out, x), np.shape(x))
    return runtime.unbroadcast(g @ np.swapaxes(y, -1, -2), x)


def _matmul_right(g, x, y):
    if np.ndim(x) == 2 and np.ndim(y) == 2:
        return np.transpose(x) @ g
    if np.ndim(x) == 1 and np.ndim(y) == 1:
        return g * x
    if np.ndim(x) == 1:
        return runtime.unbroadcast(np.expand_dims(x, -1) * np.expand_dims(g, -2), y)
    if np.ndim(y) == 1:
        out = np.swapaxes(x, -1, -2) @ np.expand_dims(g, -1)
        return runtime.unbroadcast(out[..., 0], y)
    return runtime.unbroadcast(np.swapaxes(x, -1, -2) @ g, y)


def _scatter_add(dx, index, g):
    """``dx`` with `g` added at `index`, as a new value: ``dx + index_adjoint(g, dx, index)``,
    which tapes record (`index_adjoint` has a reverse rule), unlike an update in place."""
    return dx + _index_adjoint(g, dx, index)


def _fresh_adjoint(g, x):
    shape = x.shape if isinstance(x, Tensor) else np.shape(x)
    return np.zeros(shape) + g


_SAFE = {
    "unreduce": _unreduce,
    "matmul_left": _matmul_left,
    "matmul_right": _matmul_right,
    "accumulate_at": _scatter_add,
    "fresh_adjoint": _fresh_adjoint,
}


def _tensor_aware(name: str, helper):
    rule = registry.lookup(helper)
    recorded = rule is not None and rule.vjp is not None
    fallback = _SAFE.get(name, helper)

    def call(*args):
        if not any(isinstance(a, Tensor) for a in args):
            return helper(*args)
        if recorded:
            out = apply(helper, args)
            if isinstance(out, dict):  # a container adjoint: its arrays are not followed
                refuse_nested_through_a_helper()
            return out
        return fallback(*args)

    call.__name__ = name
    return call


_index_adjoint = _tensor_aware("index_adjoint", runtime.index_adjoint)


def _is_generated(value) -> bool:
    code = getattr(value, "__code__", None)
    return isinstance(value, types.FunctionType) and code.co_filename.startswith("<s2sgrad")


# NumPy's scalar types called as casts (``np.float64(x0)``, how the tape writes a recorded
# ``.astype``): called on a Tensor they make it a plain array, the outer tape's constant
_CASTS = ("float64", "float32", "float16", "longdouble", "complex128", "complex64")


def _cast(kind, value):
    """``kind(value)``, a cast the outer tape records where `value` is a Tensor."""
    return value.astype(np.dtype(kind)) if isinstance(value, Tensor) else kind(value)


class _Functional(cst.CSTTransformer):
    """``dx[index] += g`` (the adjoint of ``x[index]``) becomes
    ``dx = _scatter_add(dx, np.s_[index], g)``, ``dx += g`` becomes ``dx = dx + g``; a cast
    ``np.float64(t)`` becomes ``_cast(np.float64, t)`` (second derivatives through
    ``.astype`` by nested tapes were wrong or None, silently: hunt on the TF guides,
    repro_13)."""

    def leave_Call(self, original, updated):
        func = updated.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "np"
            and func.attr.value in _CASTS
            and len(updated.args) == 1
        ):
            return updated.with_changes(func=cst.Name("_cast"), args=(cst.Arg(func), *updated.args))
        return updated

    def leave_AugAssign(self, original, updated):
        target = updated.target
        if isinstance(target, cst.Name):  # ``dx0 += t3``: into an array, which cannot hold
            # a Tensor (the TypeError told users to rewrite code they never wrote)
            operator = _BINARY_OF.get(type(updated.operator))
            if operator is None:
                return updated
            value = cst.BinaryOperation(target, operator(), updated.value)
            return cst.Assign((cst.AssignTarget(target),), value)
        if not (isinstance(updated.operator, cst.AddAssign) and isinstance(target, cst.Subscript)):
            return updated
        if not isinstance(target.value, cst.Name):
            return updated
        where = cst.Subscript(cst.Attribute(cst.Name("np"), cst.Name("s_")), target.slice)
        call = cst.Call(
            cst.Name("_scatter_add"),
            (cst.Arg(target.value), cst.Arg(where), cst.Arg(updated.value)),
        )
        return cst.Assign((cst.AssignTarget(target.value),), call)


_BINARY_OF = {
    cst.AddAssign: cst.Add,
    cst.SubtractAssign: cst.Subtract,
    cst.MultiplyAssign: cst.Multiply,
    cst.DivideAssign: cst.Divide,
}


def _functional(source: str) -> str:
    return cst.parse_module(source).visit(_Functional()).code


def tensor_adjoint(adjoint, plain_args) -> types.FunctionType:
    """The specialization of `adjoint` (an `sg.grad` function) for `plain_args`, rewritten so
    that it updates no adjoint in place, with globals in which the runtime helpers accept
    Tensors (and so do the generated halves of the callees it calls)."""
    compiled = adjoint.__wrapped_transform__
    function = compiled.specialize(*plain_args)
    generated = compiled.last
    source = generated.source if generated is not None and generated.function is function else None
    return _on_tensors(function, source)


def _on_tensors(function: types.FunctionType, source: str | None = None) -> types.FunctionType:
    """`function` (generated code) as it runs on Tensors: rebuilt from `source` (its module's
    text; by default the text registered for its tracebacks) without in-place adjoint
    updates, in globals where the runtime's helpers are Tensor-aware and each generated half
    of a callee it calls is itself on Tensors (a library function differentiated through its
    definition, ``np.quantile``'s: its helpers ran on Tensors unaware, ``np.bincount`` the
    outer tape could not follow)."""
    cached = _variants.get(id(function))
    if cached is not None and cached[0] is function.__code__:
        return cached[1]
    helpers = set(runtime.__all__)
    overrides = {
        name: _tensor_aware(name, value)
        for name, value in function.__globals__.items()
        if name in helpers and callable(value) and not isinstance(value, type)
    }
    namespace = dict(function.__globals__)
    code = function.__code__
    if source is None:
        source = "".join(linecache.getlines(code.co_filename)) or None
    if source is not None and ("+=" in source or any(f"np.{c}(" in source for c in _CASTS)):
        filename = f"<s2sgrad {function.__name__} on Tensors #{len(_variants)}>"
        source = _functional(source)
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        exec(compile(source, filename, "exec"), namespace)
        code = namespace[function.__name__].__code__
    namespace.update(overrides)
    namespace["_scatter_add"] = _scatter_add
    namespace["_cast"] = _cast
    namespace.setdefault("np", np)
    variant = types.FunctionType(code, namespace, function.__name__, function.__defaults__)
    variant.__kwdefaults__ = function.__kwdefaults__
    _variants[id(function)] = (function.__code__, variant)  # (before the callees: recursion)
    for name, value in function.__globals__.items():
        if value is not function and _is_generated(value):
            namespace[name] = _on_tensors(value)
    return variant
