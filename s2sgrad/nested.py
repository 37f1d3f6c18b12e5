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
which no tape can record; on Tensors those raise `LookupError` rather than losing the second
derivative without a word.
"""

from __future__ import annotations

import types

import numpy as np

import s2sgrad.runtime as runtime
from s2sgrad.runtime import registry

from .tensor import Tensor, apply

_variants: dict[int, types.FunctionType] = {}


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


def _no_scatter(*args):
    raise LookupError(
        "second derivatives through indexing (x[...]) are not supported by nested tapes yet: "
        "the backward code of x[...] adds into its adjoint in place, which no tape can record"
    )


class _ScatterGuard(np.ndarray):
    """The zeros `zero_adjoint` gives for a Tensor: adding a Tensor into them in place (what
    the adjoint of ``x[index]`` does) would hide it from the tapes, so it raises instead."""

    def __setitem__(self, index, value):
        if isinstance(value, Tensor):
            _no_scatter()
        super().__setitem__(index, value)

    def __iadd__(self, other):
        if isinstance(other, Tensor):
            _no_scatter()
        return super().__iadd__(other)


def _zero_adjoint(x):
    return runtime.zero_adjoint(np.asarray(x)).view(_ScatterGuard)


_SAFE = {
    "unreduce": _unreduce,
    "matmul_left": _matmul_left,
    "matmul_right": _matmul_right,
    "index_adjoint": _no_scatter,
    "accumulate_at": _no_scatter,
    "fresh_adjoint": _no_scatter,
    "zero_adjoint": _zero_adjoint,
}


def _tensor_aware(name: str, helper):
    rule = registry.lookup(helper)
    recorded = rule is not None and rule.vjp is not None
    fallback = _SAFE.get(name, helper)

    def call(*args):
        if not any(isinstance(a, Tensor) for a in args):
            return helper(*args)
        if recorded:
            return apply(helper, args)
        return fallback(*args)

    call.__name__ = name
    return call


def tensor_adjoint(adjoint, plain_args) -> types.FunctionType:
    """The specialization of `adjoint` (an `sg.grad` function) for `plain_args`, with globals
    in which the runtime helpers accept Tensors."""
    function = adjoint.__wrapped_transform__.specialize(*plain_args)
    variant = _variants.get(id(function))
    if variant is None or variant.__code__ is not function.__code__:
        helpers = set(runtime.__all__)
        namespace = dict(function.__globals__)
        for name, value in function.__globals__.items():
            if name in helpers and callable(value) and not isinstance(value, type):
                namespace[name] = _tensor_aware(name, value)
        variant = types.FunctionType(function.__code__, namespace, function.__name__)
        _variants[id(function)] = variant
    return variant
