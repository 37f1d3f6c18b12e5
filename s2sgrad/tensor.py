"""`Tensor`, `Variable` and `constant`: NumPy values that active GradientTapes can record.

A Tensor wraps an ndarray (or a NumPy scalar) and implements NumPy's ``__array_ufunc__`` and
``__array_function__`` protocols, so ordinary NumPy code (``np.sin(t)``, ``t @ w + b``,
``np.sum(t, axis=0)``) runs on it and returns Tensors. Every such call goes through `apply`,
which computes the result on the plain values and, when a tape is recording, hands the call to
each active tape (`offer`: `tape.GradientTape._record`, or the check of the trace the tape
replays, `s2sgrad.replay`). Recording is all a Tensor does: derivatives come
later, when a tape lowers what it recorded to Python and compiles the adjoint.

`t.numpy()` gives a copy of the plain value and `np.asarray(t)` a read-only view of it (neither
can change the Tensor or what a tape recorded); what is computed from it is a constant to every
tape (as in TensorFlow, where a value that left through NumPy loses its history).
"""

from __future__ import annotations

import dis
import functools
import operator
import os
import sys
import warnings

import numpy as np

__all__ = ["Tensor", "Variable", "constant"]

# The tapes currently recording, innermost last. `tape.py` pushes and pops them; `apply` only
# reads it, so a call outside any tape costs one truth test.
recording: list = []


def _operator(fn):
    """``Tensor.__add__`` and friends: `_binary` for ``fn(self, other)``, with the common
    operands (a Tensor, an ndarray, a Python number) handled here to save a call per op."""

    def method(self, other):
        cls = other.__class__
        if cls is Tensor or cls is Variable:
            vb = other._value
            inputs = None
        elif cls is float or cls is _ndarray or cls is int:
            vb = other
            inputs = (self,)
        else:
            return _binary(fn, self, other)
        if self.__class__ is not Tensor and self.__class__ is not Variable:
            return _binary(fn, self, other)
        out = fn(self._value, vb)
        if out.__class__ is _ndarray or isinstance(out, np.generic):
            result = _new(Tensor)
            result._value = out
        else:
            result = _wrap(out)
        if recording:
            args = (self, other)
            if inputs is None:
                inputs = args
            for tape in recording:  # `offer`, inline
                check = tape._replay
                if check is None:
                    tape._record(fn, args, None, inputs, result)
                elif not check(fn, args, None, inputs, result, tape):
                    tape._diverged(check, fn, args, None, inputs, result)
        return result

    method.__name__ = f"__{fn.__name__}__"
    return method


def _reflected(fn):
    """``Tensor.__radd__`` and friends: ``fn(other, self)``."""

    def method(self, other):
        return _binary(fn, other, self)

    method.__name__ = f"__r{fn.__name__}__"
    return method


class Tensor:
    """An immutable NumPy value that GradientTapes can record operations on.

    Create one with `sg.constant`. Operators, indexing, array methods and NumPy functions all
    give Tensors. ``.numpy()`` returns the value as NumPy.
    """

    __slots__ = ("__weakref__", "_value")
    __array_priority__ = 1000  # ndarray <op> Tensor defers to the Tensor

    def __init__(self, value, dtype=None):
        self._value = _as_value(value, dtype)

    # -- what the value is ----------------------------------------------------------------------
    def numpy(self):
        """The value as NumPy (an ndarray, or a NumPy scalar for a 0-d Tensor), a copy as
        TensorFlow's ``Variable.numpy()``: the user may change it in place (``arr -= 1``)
        without changing the Tensor, or a value a tape recorded. (s2sgrad's own code reads
        ``_value``.)"""
        value = self._value
        return value.copy() if isinstance(value, _ndarray) else value

    @property
    def value(self):
        """The value, read-only (a view of the buffer, as ``np.asarray(t)``): changed in place
        it changed the Tensor and the values tapes recorded."""
        value = self._value
        if not isinstance(value, _ndarray):
            return value
        view = value.view()
        view.flags.writeable = False
        return view

    @property
    def shape(self) -> tuple:
        return self._value.shape

    @property
    def dtype(self) -> np.dtype:
        return self._value.dtype

    @property
    def ndim(self) -> int:
        return self._value.ndim

    @property
    def size(self) -> int:
        return self._value.size

    def __array__(self, dtype=None, copy=None):
        if recording and _followed(self):
            _leaving()
        value = np.asarray(self._value)
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        # a read-only view, not the buffer: ``a = np.asarray(t); a -= 1`` would change the
        # Tensor and the values tapes recorded (``np.array(t)`` and ``t.numpy()`` copy)
        view = value.view()
        view.flags.writeable = False
        return view

    def __len__(self) -> int:
        return len(self._value)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def __bool__(self) -> bool:
        value = self._value
        if value.__class__ is np.ndarray and value.size > 1 and _user_frame() == _DERIVATIVE_CODE:
            # a helper of derivative code deciding on a whole array, run on an outer tape's
            # Tensors: say what the tape cannot follow, not NumPy's "truth value" error
            raise TypeError(_NESTED_THROUGH_A_HELPER)
        return bool(value)

    def __float__(self) -> float:
        # ``acc[i] = t`` stores a 0-d Tensor through float(): a plain number in a plain array,
        # as ``acc[:] = t`` (through __array__), and a followed one warns the same way;
        # ``float(t)`` itself says a constant is meant and is silent
        if recording and _followed(self):
            frame = sys._getframe(1)
            if frame.f_code.co_code[frame.f_lasti] == _STORE_SUBSCR:
                _leaving()
        return float(self._value)

    def __int__(self) -> int:
        return int(self._value)

    def __index__(self) -> int:
        return operator.index(self._value)

    def __format__(self, spec: str) -> str:
        return format(self._value, spec)

    def __repr__(self) -> str:
        value = self._value
        return f"<sg.Tensor: shape={self.shape}, dtype={self.dtype}, numpy={value!r}>"

    def __str__(self) -> str:
        return f"sg.Tensor({self._value}, shape={self.shape}, dtype={self.dtype})"

    __hash__ = object.__hash__  # by identity: Tensors may be dict keys (like a tape's sources)

    def __init_subclass__(cls, **kwargs):
        """A subclass that defines ``__eq__`` loses its inherited ``__hash__`` (Python sets it
        to None); tapes key their dicts by Tensors, so such a subclass hashes by identity, as
        Tensor does with its own elementwise ``__eq__``."""
        super().__init_subclass__(**kwargs)
        if "__hash__" in cls.__dict__ and cls.__hash__ is None:
            cls.__hash__ = object.__hash__

    def item(self):
        return self._value.item()

    def tolist(self):
        return np.asarray(self._value).tolist()

    # -- NumPy protocols ------------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if method == "__call__" and not kwargs:
            if len(inputs) == 2:
                return _binary(ufunc, inputs[0], inputs[1])
            if len(inputs) == 1:
                return unary(ufunc, inputs[0])
            return _apply_general(ufunc, inputs, None)
        if "out" in kwargs:
            raise TypeError(_in_place(ufunc, inputs, kwargs["out"]))
        if method == "at":  # np.add.at(acc, index, t): writes into its first argument
            return _write(f"numpy.{ufunc.__name__}.at", ufunc.at, inputs, kwargs)
        fn = ufunc if method == "__call__" else getattr(ufunc, method)
        return apply(fn, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        if func is np.mean and not kwargs and len(args) == 1:
            return unary(np.mean, args[0], _full_mean)
        if func in _WRITES:
            return _write(f"numpy.{func.__name__}", func, args, kwargs)
        return apply(func, args, kwargs)

    # -- operators (made by `_operator` and `_reflected` above) -----------------------------------
    __add__ = _operator(operator.add)
    __radd__ = _reflected(operator.add)
    __sub__ = _operator(operator.sub)
    __rsub__ = _reflected(operator.sub)
    __mul__ = _operator(operator.mul)
    __rmul__ = _reflected(operator.mul)
    __truediv__ = _operator(operator.truediv)
    __rtruediv__ = _reflected(operator.truediv)
    __floordiv__ = _operator(operator.floordiv)
    __rfloordiv__ = _reflected(operator.floordiv)
    __mod__ = _operator(operator.mod)
    __rmod__ = _reflected(operator.mod)
    __pow__ = _operator(operator.pow)
    __rpow__ = _reflected(operator.pow)
    __matmul__ = _operator(operator.matmul)
    __rmatmul__ = _reflected(operator.matmul)
    __and__ = _operator(operator.and_)  # masks: (x > 0) & (x < 1), m ^= y > e
    __rand__ = _reflected(operator.and_)
    __or__ = _operator(operator.or_)
    __ror__ = _reflected(operator.or_)
    __xor__ = _operator(operator.xor)
    __rxor__ = _reflected(operator.xor)

    def __invert__(self):
        return unary(operator.invert, self)

    def __neg__(self):
        return unary(operator.neg, self)

    def __pos__(self):
        return unary(operator.pos, self)

    def __abs__(self):
        return unary(np.absolute, self)

    def __lt__(self, other):
        return _binary(operator.lt, self, other)

    def __le__(self, other):
        return _binary(operator.le, self, other)

    def __gt__(self, other):
        return _binary(operator.gt, self, other)

    def __ge__(self, other):
        return _binary(operator.ge, self, other)

    def __eq__(self, other):
        return _binary(operator.eq, self, other)

    def __ne__(self, other):
        return _binary(operator.ne, self, other)

    def __getitem__(self, index):
        return apply(operator.getitem, (self, _plain_index(index)))

    def __setitem__(self, index, value):
        raise TypeError(
            "Tensors are immutable: build a new value (np.where, np.concatenate) or use a "
            "Variable and .assign()"
        )

    # -- array methods (each is the NumPy function, so it is recorded the same way) -----------
    @property
    def T(self):
        return apply(np.transpose, (self,))

    def transpose(self, *axes):
        axes = axes[0] if len(axes) == 1 and not isinstance(axes[0], int) else axes
        return apply(np.transpose, (self, tuple(axes) if axes else None))

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 else shape
        return apply(np.reshape, (self, shape))

    def sum(self, axis=None, keepdims=False):
        return apply(np.sum, (self,), {"axis": axis, "keepdims": keepdims})

    def mean(self, axis=None, keepdims=False):
        return apply(np.mean, (self,), {"axis": axis, "keepdims": keepdims})

    def prod(self, axis=None, keepdims=False):
        return apply(np.prod, (self,), {"axis": axis, "keepdims": keepdims})

    def max(self, axis=None, keepdims=False):
        return apply(np.max, (self,), {"axis": axis, "keepdims": keepdims})

    def min(self, axis=None, keepdims=False):
        return apply(np.min, (self,), {"axis": axis, "keepdims": keepdims})

    def std(self, axis=None, ddof=0, keepdims=False):
        return apply(np.std, (self,), {"axis": axis, "ddof": ddof, "keepdims": keepdims})

    def var(self, axis=None, ddof=0, keepdims=False):
        return apply(np.var, (self,), {"axis": axis, "ddof": ddof, "keepdims": keepdims})

    def any(self, axis=None, keepdims=False):
        return apply(np.any, (self,), {"axis": axis, "keepdims": keepdims})

    def all(self, axis=None, keepdims=False):
        return apply(np.all, (self,), {"axis": axis, "keepdims": keepdims})

    def cumsum(self, axis=None):
        return apply(np.cumsum, (self,), {"axis": axis})

    def dot(self, other):
        return apply(np.dot, (self, other))

    def squeeze(self, axis=None):
        return apply(np.squeeze, (self,), {"axis": axis})

    def ravel(self):
        return apply(np.ravel, (self,))

    flatten = ravel

    def swapaxes(self, axis1, axis2):
        return apply(np.swapaxes, (self, axis1, axis2))

    def clip(self, a_min=None, a_max=None):
        return apply(np.clip, (self, a_min, a_max))

    def copy(self):
        return apply(np.copy, (self,))

    def astype(self, dtype, copy=True):
        """A Tensor of another dtype: floating to floating keeps the gradient, to integer
        drops it (integer values carry no gradient). (`copy`: NumPy's, always a new Tensor.)"""
        kind = np.dtype(dtype).kind
        if kind in "fc" and self.dtype.kind in "fc":
            return apply(_cast_to(np.dtype(dtype)), (self,))
        return Tensor(np.asarray(self._value).astype(dtype))


class Variable(Tensor):
    """A mutable value that tapes watch automatically (when trainable).

    Args:
        initial_value: array-like (or a Tensor) giving the value and shape.
        trainable: whether tapes with ``watch_accessed_variables=True`` watch it on first use.
        name: shown by ``.name`` (``Module`` layers name them ``dense/kernel``).
        dtype: NumPy dtype; default NumPy's (a Python float becomes float64).

    Arithmetic on a Variable gives a `Tensor` (``Variable(2.0) + 1.0`` is not a Variable).
    ``assign``/``assign_add``/``assign_sub`` replace the value in place of the variable; they are
    stateful, so a tape does not see through them (gradients to what was added are None).
    """

    __slots__ = ("_name", "_trainable", "_watchable")
    _counter = 0

    def __init__(self, initial_value, trainable=True, name=None, dtype=None):
        if isinstance(initial_value, Tensor):
            initial_value = initial_value._value
        value = _as_value(initial_value, dtype)
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Variable name must be a str; got {type(name).__name__}")
        self._value = value
        self._trainable = bool(trainable)
        # what a tape's watch_accessed_variables reads on every first access (the dtype
        # never changes: assignments are cast to it)
        self._watchable = self._trainable and value.dtype.kind in "fc"
        if name is None:
            Variable._counter += 1
            name = "Variable" if Variable._counter == 1 else f"Variable_{Variable._counter - 1}"
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def trainable(self) -> bool:
        return self._trainable

    def assign(self, value):
        """Replace the value (same shape; cast to the variable's dtype). Returns the variable."""
        self._value = self._checked(value, "assign")
        return self

    def assign_add(self, delta):
        """Add `delta` to the value. Stateful: no tape sees a path from `delta`."""
        self._value = (self._value + self._checked(delta, "assign_add")).astype(self.dtype)
        return self

    def assign_sub(self, delta):
        """Subtract `delta` from the value. Stateful: no tape sees a path from `delta`."""
        self._value = (self._value - self._checked(delta, "assign_sub")).astype(self.dtype)
        return self

    def _checked(self, value, method: str):
        plain = value._value if isinstance(value, Tensor) else value
        array = np.asarray(plain, dtype=self.dtype)
        if array.shape != self.shape:
            raise ValueError(
                f"Variable.{method}: value has shape {array.shape}, the variable {self.name!r} "
                f"has shape {self.shape}"
            )
        return array.copy() if array is plain or array.base is not None else array

    def __repr__(self) -> str:
        return (
            f"<sg.Variable '{self.name}' shape={self.shape} dtype={self.dtype}, "
            f"numpy={self._value!r}>"
        )


def constant(value, dtype=None, name=None):
    """An immutable `Tensor` holding `value` (array-like; a Tensor's value is copied).

    Args:
        value: a number, nested list or ndarray.
        dtype: NumPy dtype; default NumPy's choice (Python floats give float64, ints int64).
        name: accepted for TensorFlow compatibility; a constant has no name.

    Example:
        >>> x = sg.constant(3.0)
        >>> with sg.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x ** 2
        >>> tape.gradient(y, x).numpy()
        6.0
    """
    if name is not None and not isinstance(name, str):
        raise TypeError(f"constant name must be a str; got {type(name).__name__}")
    if isinstance(value, Tensor):
        value = value._value
    return Tensor(value, dtype)


def _as_value(value, dtype):
    if isinstance(value, Tensor):
        value = value._value
    try:
        array = np.array(value, dtype=dtype)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"cannot make a Tensor of {type(value).__name__}: {exc}") from None
    if array.dtype == object:
        raise TypeError(f"cannot make a Tensor of {type(value).__name__} (object array)")
    return array[()] if array.ndim == 0 else array


_casts: dict = {}


def _cast_to(dtype: np.dtype):
    """``np.float32`` and friends as primitives: calling the scalar type casts an array."""
    fn = _casts.get(dtype)
    if fn is None:
        fn = _casts[dtype] = dtype.type
    return fn


def _plain_index(index):
    """An index with Tensors replaced by their values: indices carry no gradient."""
    if isinstance(index, Tensor):
        return index._value
    if isinstance(index, tuple):
        return tuple(i._value if isinstance(i, Tensor) else i for i in index)
    return index


_new = object.__new__  # a Tensor without __init__ (its value is set next)
_ndarray = np.ndarray  # (a global read in the operators: one lookup instead of two)

# -- applying a primitive -------------------------------------------------------------------------


def _unwrap_args(args) -> tuple[list, list]:
    """Plain values of `args` (Tensors replaced, lists/tuples looked into at any depth:
    ``np.matmul([[x0, x1], [x2, 1.0]], v)``) and the Tensors found, depth first."""
    plain, inputs = [], []
    for arg in args:
        if isinstance(arg, Tensor):
            plain.append(arg._value)
            inputs.append(arg)
        elif (arg.__class__ is list or arg.__class__ is tuple) and holds_tensor(arg):
            plain.append(_unwrap_sequence(arg, inputs))
        else:
            plain.append(arg)
    return plain, inputs


def _unwrap_sequence(sequence, inputs: list):
    parts = []
    for item in sequence:
        if isinstance(item, Tensor):
            parts.append(item._value)
            inputs.append(item)
        elif (item.__class__ is list or item.__class__ is tuple) and holds_tensor(item):
            parts.append(_unwrap_sequence(item, inputs))
        else:
            parts.append(item)
    return type(sequence)(parts)


def holds_tensor(sequence) -> bool:
    """Whether a list or tuple holds a Tensor, in nested lists and tuples too (``[[x0, x1],
    [x2, 1.0]]``: an array-like the tape follows, as `sg.grad` does)."""
    for item in sequence:
        if isinstance(item, Tensor):
            return True
        if (item.__class__ is list or item.__class__ is tuple) and holds_tensor(item):
            return True
    return False


def _as_written(arg):
    """A list argument as it is now, nested lists too: the user may change it after the call
    (``L[2] = ...``), and the recorded call must still say which of its items were Tensors."""
    if arg.__class__ is list:
        return [_as_written(a) if a.__class__ is list or a.__class__ is tuple else a for a in arg]
    if arg.__class__ is tuple and any(a.__class__ is list for a in arg):
        return tuple(_as_written(a) for a in arg)
    return arg


def apply(fn, args: tuple, kwargs: dict | None = None):
    """Call primitive `fn` on the values of `args`, wrap the result, record it on active tapes.

    Tensors may appear as arguments, inside list/tuple arguments (``np.stack([a, b])``) or as
    keyword values. Array results become Tensors (a tuple or list of arrays becomes one of
    Tensors); anything else (a shape, a Python number from ``np.ndim``) is returned as is.
    """
    if len(args) == 2 and not kwargs:  # the common case: operators and binary ufuncs
        return _binary(fn, args[0], args[1])
    return _apply_general(fn, args, kwargs)


def _apply_general(fn, args: tuple, kwargs: dict | None):
    plain, inputs = _unwrap_args(args)
    if kwargs:
        kw = {}
        for key, value in kwargs.items():
            if isinstance(value, Tensor):
                inputs.append(value)
                value = value._value
            kw[key] = value
        out = fn(*plain, **kw)
    else:
        out = fn(*plain)
    result = _wrap(out)
    if recording and inputs:
        args = tuple(_as_written(a) if a.__class__ is list else a for a in args)
        offer(fn, args, kwargs, inputs, result)
    return result


def unary(fn, a, compute=None):
    """`fn(a)` for a Tensor `a`: unary ufuncs and operators. `compute`, if given, computes
    the same value as `fn` (faster) or returns NotImplemented; the call recorded is `fn`'s."""
    if a.__class__ is not Tensor and a.__class__ is not Variable:
        return _apply_general(fn, (a,), None)
    va = a._value
    out = NotImplemented if compute is None else compute(va)
    if out is NotImplemented:
        out = fn(va)
    if out.__class__ is np.ndarray or isinstance(out, np.generic):
        result = _new(Tensor)
        result._value = out
    else:
        result = _wrap(out)
    if recording:
        args = (a,)
        for tape in recording:
            check = tape._replay
            if check is None:
                tape._record(fn, args, None, args, result)
            elif not check(fn, args, None, args, result, tape):
                tape._diverged(check, fn, args, None, args, result)
    return result


def offer(fn, args: tuple, kwargs, inputs, result) -> None:
    """Hand a call to every recording tape: to the check of the trace it replays, if any
    (`s2sgrad.replay`), else to its `_record`. (The operators spell this out, inline.)"""
    for tape in recording:
        check = tape._replay
        if check is None:
            tape._record(fn, args, kwargs, inputs, result)
        elif not check(fn, args, kwargs, inputs, result, tape):
            tape._diverged(check, fn, args, kwargs, inputs, result)


def _full_mean(value):
    """``np.mean(value)`` of a non-empty float64 array, without NumPy's Python layer (the same
    sum and division, so the same bits); NotImplemented for anything else."""
    if value.__class__ is not np.ndarray or value.dtype is not _FLOAT64 or not value.size:
        return NotImplemented
    return _sum(value, axis=None) / value.size  # np.float64 / int: an np.float64


_FLOAT64 = np.dtype(np.float64)
_sum = np.add.reduce


def _binary(fn, a, b):
    """`fn(a, b)` with a Tensor operand: the hot path of every operator and binary ufunc."""
    ca, cb = a.__class__, b.__class__
    if ca is Tensor or ca is Variable:
        va = a._value
        if cb is Tensor or cb is Variable:
            vb = b._value
            inputs = None
        elif cb is list or cb is tuple or isinstance(b, Tensor):
            return _unusual_binary(fn, a, b)
        else:
            vb = b
            inputs = (a,)
    elif cb is Tensor or cb is Variable:
        if ca is list or ca is tuple or isinstance(a, Tensor):
            return _unusual_binary(fn, a, b)
        va, vb = a, b._value
        inputs = (b,)
    else:
        return _apply_general(fn, (a, b), None)
    out = fn(va, vb)
    if out.__class__ is np.ndarray or isinstance(out, np.generic):
        result = _new(Tensor)
        result._value = out
    else:
        result = _wrap(out)
    if recording:
        args = (a, b)
        if inputs is None:
            inputs = args
        for tape in recording:
            check = tape._replay
            if check is None:
                tape._record(fn, args, None, inputs, result)
            elif not check(fn, args, None, inputs, result, tape):
                tape._diverged(check, fn, args, None, inputs, result)
    return result


_OPERATORS = frozenset(
    {
        *(operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv),
        *(operator.mod, operator.pow, operator.matmul, operator.lt, operator.le, operator.gt),
        *(operator.ge, operator.eq, operator.ne),
    }
)


def _unusual_binary(fn, a, b):
    """A list or tuple operand, or a subclass of Tensor. For an operator, a list operand is
    an array (``x * [3.0, 4.0]``), as in NumPy; other functions get it as written."""
    if fn in _OPERATORS or isinstance(fn, np.ufunc):
        if a.__class__ is list or a.__class__ is tuple:
            return _binary(fn, _array_of(a), b)
        if b.__class__ is list or b.__class__ is tuple:
            return _binary(fn, a, _array_of(b))
    return _apply_general(fn, (a, b), None)


def _array_of(sequence):
    """An operand written as a list, as NumPy reads it (an array); one holding Tensors
    (``x * [t, u, 1.0]``, ``np.matmul([[x0, x1], [x2, 1.0]], v)``) is the recorded np.stack
    of its items, which the tape follows (np.asarray of it made them constants, silently)."""
    if not holds_tensor(sequence):
        return np.asarray(sequence)
    items = [
        _array_of(item) if item.__class__ is list or item.__class__ is tuple else item
        for item in sequence
    ]
    return apply(np.stack, (items,))


def _in_place(ufunc, inputs: tuple, out) -> str:
    """What a ufunc writing into `out` is told, with a Tensor among its operands."""
    name = f"numpy.{ufunc.__name__}"
    target = out[0] if isinstance(out, tuple) and len(out) == 1 else out
    if isinstance(target, Tensor):
        return (
            f"{name} with out= a Tensor: Tensors are immutable; write t = {name}(...), a new "
            "value (or use a Variable and .assign())"
        )
    symbol = _AUGMENTED.get(ufunc)
    if symbol is not None and inputs and target is inputs[0]:  # ``acc += t`` (or out=acc)
        return (
            f"acc {symbol}= t with acc a NumPy array and t a Tensor ({name} into acc): a NumPy "
            f"array cannot hold a Tensor; write acc = acc {symbol} t, a new value the tape "
            "follows"
        )
    return f"{name} with out= cannot write a Tensor's result into an array: write t = {name}(...)"


_AUGMENTED = dict(
    zip(
        (np.add, np.subtract, np.multiply, np.true_divide, np.floor_divide, np.remainder),
        ("+", "-", "*", "/", "//", "%"),
        strict=True,
    )
) | {np.power: "**", np.matmul: "@", np.bitwise_and: "&", np.bitwise_or: "|"}


# NumPy functions that write into their first argument (`_write`)
_WRITES = frozenset({np.copyto, np.put, np.putmask, np.place, np.put_along_axis, np.fill_diagonal})


def _write(name: str, fn, args: tuple, kwargs: dict):
    """`fn` (``np.copyto(acc, t)``, ``np.add.at(acc, index, t)``) writing into a plain array
    its first argument: the Tensors written become plain values there, as in ``acc[:] = t``,
    and a followed one warns at the user's line, as `Tensor.__array__` does. Writing into a
    Tensor is refused: it is immutable, and the tape recorded its value."""
    target = args[0] if args else next(iter(kwargs.values()), None)
    if isinstance(target, Tensor):
        raise TypeError(
            f"{name} writes into its first argument, a Tensor; Tensors are immutable: build "
            "a new value (np.where, np.concatenate) or use a Variable and .assign()"
        )
    plain, inputs = _unwrap_args(args)
    kw = {}
    for key, value in kwargs.items():
        if isinstance(value, Tensor):
            inputs.append(value)
            value = value._value
        kw[key] = value
    if recording and any(_followed(tensor) for tensor in inputs):
        _leaving(skip=1)
    return fn(*plain, **kw)


def _leaving(skip: int = 0) -> None:
    """A followed Tensor becomes a plain value where the tape cannot follow it: warn at the
    user's line (`skip` frames above the caller's caller), or refuse in derivative code."""
    level = _user_frame(skip + 1)
    if level == _DERIVATIVE_CODE:
        raise TypeError(_NESTED_THROUGH_A_HELPER)
    if level is not None:
        warnings.warn(_LEFT_THE_TAPE, UserWarning, stacklevel=level)


_LEFT_THE_TAPE = (
    "a Tensor the tape follows became a plain NumPy array (np.asarray or np.array of it, a "
    "list of Tensors given to a NumPy function, a Tensor written into a NumPy array: acc[i] = "
    "t, np.copyto, np.put, np.add.at, or a SciPy function that is not a ufunc): what is "
    "computed from that array is a constant to the tape, and no gradient flows through it. "
    "Keep it a Tensor (np.stack([t, u]) for a list, np.where or np.concatenate instead of "
    "writing into an array, sg.grad for SciPy), or write t.numpy() where a constant is meant"
)


_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep  # s2sgrad's own files


_DERIVATIVE_CODE = -1  # `_user_frame`: derivative code's helpers asked for the plain value
_NESTED_THROUGH_A_HELPER = (
    "a gradient computed while an outer GradientTape records goes through a derivative rule "
    "(a helper of s2sgrad's runtime) that the outer tape cannot follow: its second "
    "derivative would be wrong. Compute second derivatives of such functions with "
    "sg.hessian(f), sg.hvp(f) or sg.jacobian(sg.grad(f))"
)


def refuse_nested_through_a_helper():
    """The TypeError for a derivative helper whose result the outer tape cannot follow (a
    container adjoint, ``np.hstack([v[:1], c])``'s: its Tensors are not recorded)."""
    raise TypeError(_NESTED_THROUGH_A_HELPER)


def _user_frame(skip: int = 0) -> int | None:
    """The `stacklevel` of the first caller outside NumPy, SciPy and s2sgrad: the user's line
    that handed the Tensor over (``np.var([t, u])``, ``scipy.linalg.expm(t)``). None where
    s2sgrad itself asked for the plain value (``sg.nn.softmax``'s constant shift);
    `_DERIVATIVE_CODE` where the helpers derivative code calls did (under a nested tape, the
    inner gradient's code runs on the outer tape's Tensors). The caller is the frame above
    the one asking (`Tensor.__array__`), or `skip` frames further up."""
    runtime = _runtime_folder()
    frame = sys._getframe(2 + skip)
    while frame is not None and frame.f_code.co_filename.startswith(_NUMPY):
        frame = frame.f_back
    if frame is not None and frame.f_code.co_filename.startswith(runtime):
        return _DERIVATIVE_CODE
    libraries = tuple(
        os.path.dirname(module.__file__) + os.sep
        for name in ("numpy", "scipy", "s2sgrad")
        if (module := sys.modules.get(name)) is not None and getattr(module, "__file__", None)
    )
    frame, level = sys._getframe(2 + skip), 2 + skip  # __array__'s caller: stacklevel 2
    if frame.f_code.co_filename.startswith(_OWN):
        return None
    while frame.f_back is not None and frame.f_code.co_filename.startswith(libraries):
        frame, level = frame.f_back, level + 1
    return level


_NUMPY = os.path.dirname(np.__file__) + os.sep
_STORE_SUBSCR = dis.opmap["STORE_SUBSCR"]


@functools.cache
def _runtime_folder() -> str:
    from s2sgrad import runtime

    return os.path.dirname(os.path.abspath(runtime.__file__)) + os.sep


def _followed(tensor) -> bool:
    """Whether a recording tape follows `tensor`: a value it recorded or watches, or a
    trainable Variable it would watch on first use."""
    for tape in recording:
        if tensor in tape._recording.tracked:
            return True
        if tensor.__class__ is Variable and tensor.trainable and tape._watch_accessed:
            return True
    return False


def _wrap(out):
    cls = out.__class__
    if cls is np.ndarray or cls is np.float64 or isinstance(out, np.generic):
        tensor = Tensor.__new__(Tensor)
        tensor._value = out
        return tensor
    if cls is float or cls is complex:
        # a Python number computed from Tensors (a derivative helper returns one for 0-d
        # arguments: ``scaled_power``): left plain, its derivative was silently lost (the
        # Hessian of (1 + y * y) ** 0.5 by nested tapes, for a scalar y; fuzz seed 32000242)
        tensor = Tensor.__new__(Tensor)
        tensor._value = np.float64(out) if cls is float else np.complex128(out)
        return tensor
    if isinstance(out, (tuple, list)) and any(isinstance(o, (np.ndarray, np.generic)) for o in out):
        # every array or NumPy number in it, whatever else it holds: a number left plain
        # (``np.linalg.slogdet(t)``'s log-determinant, ``np.linalg.lstsq(...)``'s solution
        # beside its integer rank) would carry on as a constant, its derivative silently lost
        parts = [_wrap(o) for o in out]
        if cls in (tuple, list):
            return cls(parts)
        return cls(*parts) if hasattr(out, "_fields") else tuple(parts)  # (a named tuple)
    return out


def wrap(value):
    """A Tensor sharing `value` (an ndarray or NumPy scalar), without copying it."""
    tensor = Tensor.__new__(Tensor)
    tensor._value = value
    return tensor


def computed(fn, args: tuple, inputs: tuple, value):
    """A Tensor holding `value`, which the caller computed as ``fn(*args)`` on the plain
    values, recorded as that call on the active tapes. `inputs` are the Tensors among `args`
    in order (`args` itself when every argument is one). A layer's fast path: it skips
    `apply`'s search for Tensors among the arguments."""
    result = _new(Tensor)
    result._value = value
    if recording:
        for tape in recording:
            check = tape._replay
            if check is None:
                tape._record(fn, args, None, inputs, result)
            elif not check(fn, args, None, inputs, result, tape):
                tape._diverged(check, fn, args, None, inputs, result)
    return result


def apply_custom(call, args: tuple, value):
    """Record a call whose result `value` is already computed (a custom-gradient function)."""
    _, inputs = _unwrap_args(args)
    result = _wrap(np.asarray(value) if not isinstance(value, np.generic) else value)
    if isinstance(result, Tensor) and result._value.ndim == 0 and isinstance(value, float):
        result._value = result._value[()]
    if recording and inputs:
        offer(call, args, None, inputs, result)
    return result
