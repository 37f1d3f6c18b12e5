"""What a tape records a call as: the static structure of its arguments (`signature`), and
the two primitives that are not plain functions: `CustomCall` (a `custom_gradient` call, a cut
in the recording) and `Expression` (several operations recorded as one, lowered to their
expression).

A call's signature is computed when it is recorded and, with the refs of its inputs, is its
part of the recording's structure: the key of a compiled backward sweep (see `lowering`).
The constants it reads are copies taken then, as TensorFlow converts them to tensors: an
array or list changed in place after the call (``y = np.dot(w, a); a[0] = 100.0``) must not
change the gradient.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from .tensor import Tensor, Variable, holds_tensor

_LITERAL_TYPES = (bool, int, float, str, type(None))


class CustomCall:
    """The primitive of a recorded `custom_gradient` call: its ``backward`` closure."""

    __slots__ = ("backward", "name")

    def __init__(self, name: str, backward):
        self.name = name
        self.backward = backward


class Expression:
    """A recorded call that lowers to a Python expression of its arguments, not to a call.

    ``Expression("{0} @ {1} + {2}", affine)`` lets a layer record its product and bias as one
    operation (one Tensor, one node: a tape's cost is per operation) while the lowered code,
    ``t0 = c1 @ x0 + x2``, shows the compiler the primitives it is made of, whose rules give
    the derivatives. `compute` computes the same value on plain arguments. `names` are the
    functions the text calls by name (``relu``: a runtime primitive), put in the namespace
    the lowered code is compiled in."""

    __slots__ = ("__name__", "compute", "names", "text")

    def __init__(self, text: str, compute, **names):
        self.text = text
        self.compute = compute
        self.names = names
        self.__name__ = compute.__name__

    def __call__(self, *args):
        return self.compute(*args)

    def __repr__(self) -> str:
        return f"Expression({self.text!r})"


_TENSOR = None  # the pattern of a Tensor argument: its place in the node's inputs says which
_TENSOR_CLASSES = (Tensor, Variable)


def signature(fn, args: tuple, kwargs) -> tuple[tuple, tuple]:
    """The static structure of a call (hashable) and the constants it reads, in order.

    Each argument's pattern is `_TENSOR`, a literal's key (numbers, strings, slices: part of
    the generated code), ``("o", callable)`` for functions, dtypes and types, ``("L"|"T",
    items)`` for a list or tuple holding Tensors, or ``("c", kind)`` for anything else (arrays),
    whose value is a parameter of the lowered function.
    """
    if not kwargs and len(args) == 2 and args[0].__class__ in _TENSOR_CLASSES:
        other = args[1]  # ``x ** 2``, ``x - array``: the general loop's result, directly
        cls = other.__class__
        if cls is int or (cls is float and other - other == 0.0):
            return (fn, (_TENSOR, (cls, other))), ()
        if cls is np.ndarray:
            return (fn, (_TENSOR, ("c", (cls, other.shape)))), (other.copy(),)
    elif not kwargs and len(args) == 3 and args[0].__class__ is np.ndarray:
        if args[1].__class__ in _TENSOR_CLASSES and args[2].__class__ in _TENSOR_CLASSES:
            first = args[0]  # a layer on an input array: ``x @ kernel + bias``
            return (fn, (("c", (np.ndarray, first.shape)), _TENSOR, _TENSOR)), (first.copy(),)
    constants: list = []
    patterns = []
    for arg in args:
        cls = arg.__class__
        if cls is Tensor or cls is Variable:
            patterns.append(_TENSOR)
        elif cls is float and arg - arg == 0.0:  # a finite number (inf - inf is nan)
            patterns.append((float, arg))
        elif cls is int:
            patterns.append((int, arg))
        elif cls is np.ndarray:
            constants.append(arg.copy())
            patterns.append(("c", (cls, arg.shape)))
        else:
            patterns.append(_pattern(arg, constants, True))
    if not kwargs:
        if len(patterns) == 2 and patterns[0] is _TENSOR and patterns[1] is _TENSOR:
            return fn, ()  # what the binary fast path records too
        return (fn, tuple(patterns)), tuple(constants)
    keywords = []
    for key, value in kwargs.items():
        keywords.append((key, _pattern(value, constants, False)))
    return (fn, tuple(patterns), tuple(keywords)), tuple(constants)


def _pattern(value, constants: list, nested: bool):
    if isinstance(value, Tensor):
        return _TENSOR
    cls = value.__class__
    if cls is int or cls is bool or cls is str or value is None:
        return (cls, value)
    if nested and (cls is list or cls is tuple) and holds_tensor(value):
        return ("L" if cls is list else "T", tuple([_pattern(a, constants, True) for a in value]))
    if _is_literal(value):
        return _literal_key(value)
    if isinstance(value, (np.ndarray, np.generic)):
        constants.append(value.copy())
        return ("c", _kind(value))
    if callable(value) or isinstance(value, (np.dtype, type)):
        try:
            hash(value)
        except TypeError:
            return ("o", id(value))
        return ("o", value)
    constants.append(_snapshot(value))
    return ("c", cls)


def _snapshot(value):
    """A constant as it is now (a list of numbers, say): changed after the call, it must not
    change what the backward sweep reads."""
    try:
        return copy.deepcopy(value)
    except Exception:  # (an object that cannot be copied: read as it will be)
        return value


def _is_literal(value) -> bool:
    if value.__class__ in _LITERAL_TYPES:
        return not (value.__class__ is float and not math.isfinite(value))
    if value is Ellipsis:
        return True
    if isinstance(value, slice):
        return all(v is None or v.__class__ is int for v in (value.start, value.stop, value.step))
    if value.__class__ is tuple:
        return all(_is_literal(v) for v in value)
    return False


def _literal_key(value):
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if value.__class__ is tuple:
        return tuple(_literal_key(v) for v in value)
    return (value.__class__, value)


def _kind(value):
    """What a compiled specialization depends on: the class, an array's shape, and whether
    it is complex (its adjoints need their real parts taken where they meet real values)."""
    cls = value.__class__
    if cls is not np.ndarray:
        return cls
    return (cls, value.shape) if value.dtype.kind != "c" else (cls, value.shape, "complex")
