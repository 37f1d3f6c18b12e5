"""Helpers that generated adjoint code calls: shape bookkeeping the rules share.

Adjoints in generated code may be *lazily broadcast*: the adjoint ``dx`` of ``x`` is any value
that broadcasts to ``x``'s shape (the seed of ``np.sum(x)`` is the float ``1.0``, not an array of
ones). These helpers move between that convention and exact shapes. Each one returns its input
untouched when nothing needs doing, because the compiler emits them only where it cannot prove
the shapes already agree.
"""

from __future__ import annotations

import math

import numpy as np

from .containers import (
    ContainerAdjoint,
    concatenation_error,
    container_adjoint,
    field_key,
    is_container,
    is_record,
    positions_of,
)

# Arguments each helper reads only for their shape (by position). The compiler may pass any value
# of the same shape there, such as an earlier one, so the adjoint keeps fewer values alive.
SHAPE_ONLY_ARGUMENTS = {
    "unbroadcast": (1, 2, 3, 4),
    "match_shape": (1,),
    "unreduce": (1,),
    "reduced_count": (0,),
    "np.size": (0,),
    "np.shape": (0,),
}

__all__ = [
    "SHAPE_ONLY_ARGUMENTS",
    "accumulate_at",
    "backwards",
    "custom_cotangents",
    "fresh_adjoint",
    "index_adjoint",
    "kept_entries",
    "match_shape",
    "matmul_left",
    "matmul_right",
    "real_adjoint",
    "reduced_count",
    "saved_slot",
    "unbroadcast",
    "unreduce",
    "written_slots",
    "zero_adjoint",
]


def backwards(indices):
    """The iterations of a primal loop (a ``range``), last first, as an adjoint loop runs
    them. A primitive without derivative (unlike the builtin ``reversed``), so that when
    generated code is transformed again its loop variable is known to be a constant index
    even where `indices` arrives in a saved tuple or off a stack. A range again, so it has a
    length and items like the range it reverses."""
    return indices[::-1]


def custom_cotangents(grads, count: int) -> tuple:
    """What the ``backward`` of an ``@sg.custom_gradient`` function returned, as one gradient
    per parameter: a single value stands for the only parameter, ``None`` for zero."""
    if isinstance(grads, list) and count > 1:
        grads = tuple(grads)
    if not isinstance(grads, tuple):
        grads = (grads,)
    if len(grads) != count:
        raise ValueError(
            f"a custom_gradient backward function returned {len(grads)} gradients for a "
            f"function of {count} parameters"
        )
    return tuple(0.0 if g is None else g for g in grads)


def _shape(value) -> tuple:
    """The shape of a value, or the value itself if it is already a shape: a loop's adjoint
    gets the shapes, not the values, of intermediates it reads only for their shape."""
    if value.__class__ is tuple:
        if all(isinstance(n, (int, np.integer)) for n in value):
            return value
        # a tuple of values, read as one array (``y[:2] + (a, 2.0)`` in a callee that cannot
        # tell it from a shape; hunt, variations repro_4): a shape holds only integers
        return np.shape(value)
    if value.__class__ is list:  # a list of numbers (or arrays) read as one array
        return np.shape(value)
    return getattr(value, "shape", ())


def unbroadcast(g, x, *operands):
    """Reduce `g`, the contribution for `x` of an elementwise call on `x` and `operands`, so
    that it broadcasts to ``x``'s shape.

    The call's result has the broadcast shape of `x` and `operands`; `g` broadcasts to it but
    may be smaller (lazily broadcast, like the seed ``1.0``). Along an axis where `x` was
    broadcast, `g` is summed if it has that axis and multiplied by the axis length if it is
    itself still broadcast there: in ``np.sum(x + b)`` with ``b`` of shape (4,) and ``x`` of
    shape (3, 4), ``b``'s adjoint is ``3.0``, not ``1.0``. Without `operands`, `g` is taken to
    have the full result shape. Operands are read only for their shapes.
    """
    if isinstance(g, ContainerAdjoint):  # the adjoint of xs + ys or xs * 3 on lists
        raise concatenation_error()
    if g.__class__ is list:  # a list operand's values times 1.0 (folded away): an array
        g = np.asarray(g)
    gshape = getattr(g, "shape", ())
    shape = _shape(x)
    if x.__class__ is list and _joined_or_repeated(shape, gshape, operands):
        raise concatenation_error()
    if not operands:
        ashape = gshape
    else:
        others = [_shape(o) for o in operands]
        ashape = shape if all(o == shape for o in others) else np.broadcast_shapes(shape, *others)
    if gshape == shape == ashape:
        return g
    nd = len(ashape)
    if gshape == ashape and shape == ashape[nd - len(shape) :]:
        return g.sum(axis=tuple(range(nd - len(shape))))  # the bias case: leading axes only
    gpad = (1,) * (nd - len(gshape)) + tuple(gshape)
    xpad = (1,) * (nd - len(shape)) + tuple(shape)
    summed = tuple(i for i in range(nd) if xpad[i] == 1 and gpad[i] != 1)
    count = 1
    for i in range(nd):
        if xpad[i] == 1 and gpad[i] == 1:
            count *= ashape[i]
    out = g
    if summed:
        out = np.sum(np.reshape(g, gpad), axis=summed, keepdims=True)
    extra = np.ndim(out) - len(shape)
    if extra > 0:  # the leading axes x lacks have length 1 by now
        out = np.reshape(out, np.shape(out)[extra:])
        if not shape:
            out = out[()]  # a number for a number
    out = out * count if count != 1 else out
    if x.__class__ is list and np.shape(out) != shape:
        # a list's adjoint is its elements': never lazily broadcast, so that adding it to
        # the adjoint of a slot of the list (a container adjoint) knows every element
        out = np.broadcast_to(out, shape).copy()
    return out


def _joined_or_repeated(shape: tuple, gshape: tuple, operands) -> bool:
    """Whether the adjoint `gshape` of an operation on a list of `shape` belongs to a join
    or repeat the compiler did not see (see ``transforms/sequences.py``): another list
    operand, or a result the list does not broadcast to."""
    if any(o.__class__ is list for o in operands):
        return True
    try:
        np.broadcast_shapes(shape, gshape)
    except ValueError:
        return True
    return False


def match_shape(g, x):
    """`g` broadcast to exactly ``x``'s shape, as a fresh array when broadcasting was needed.

    A real `x` gets the real part of a complex `g`: the adjoint of a real value that met
    complex arithmetic (JAX's convention: a real input's gradient is real)."""
    if g.__class__ is float and x.__class__ is float:
        return g  # two real numbers (the common case of a gradient of Python floats)
    if np.iscomplexobj(g) and _is_real_value(x):
        g = np.real(g)
    shape = _shape(x)
    if g.__class__ is list:
        g = np.asarray(g)
    if _shape(g) == shape:
        return g
    if len(_shape(g)) > len(shape):
        return unbroadcast(g, x)
    if x.__class__ is tuple:  # only the shape was kept (a loop's stack): g's floating type
        return _filled(shape, g, np.result_type(g, 1.0))
    if x.__class__ is list:
        x = np.asarray(x)
    dtype = np.result_type(g, x) if np.issubdtype(np.result_type(x), np.inexact) else None
    return _filled(shape, g, dtype)


def _filled(shape, g, dtype):
    """``np.full(shape, g, dtype)``; for a `g` that is no NumPy value (an outer tape's Tensor,
    when a gradient is computed under another tape), ``g`` plus zeros, an operation the outer
    tape records: np.full read it as a constant, and the Hessian of sum(x)**2 by nested tapes
    was None."""
    if isinstance(g, (np.ndarray, np.generic, float, int, complex)):
        return np.full(shape, g, dtype=dtype)
    return g + np.zeros(shape, dtype=dtype)


def real_adjoint(x, g):
    """`g`, a contribution to the adjoint of `x`, as `x`'s kind of number: its real part when
    `x` is a real number or array and `g` is complex, `g` itself otherwise.

    The compiler wraps the contributions of an operation whose result may be complex
    (``x * c`` with a complex ``c``, ``np.fft.fft(x)``) to each of its arguments, so that the
    adjoint of a real value is real wherever it is read: added in place into the real buffer
    of ``x`` (``dx[::-1] += g``) and by the rule of what computed ``x`` (``|z|``'s rule
    multiplies its adjoint by ``conj(z) / |z|``). The imaginary part points off the real line
    `x` lives on (README, "Complex numbers"). Linear in `g`; no broadcasting, so a lazily
    broadcast `g` stays lazy."""
    if np.iscomplexobj(g) and _is_real_value(x):
        return np.real(g)
    return g


def _is_real_value(x) -> bool:
    """`x` is a real number or array (not a shape kept in its place, not a container), or
    a real Tensor: under a nested GradientTape the adjoint's code runs on the outer tape's
    Tensors, and a real Tensor's adjoint came back complex (a Hessian by nested tapes through
    ``|z|`` of a complex `z` was complex and wrong)."""
    if isinstance(x, (float, int, np.floating, np.integer)):
        return True
    if isinstance(x, np.ndarray) or getattr(x, "__array_ufunc__", None) is not None:
        dtype = getattr(x, "dtype", None)
        return dtype is not None and dtype.kind in "biuf"
    return False


def zero_adjoint(x):
    """Zero with `x`'s shape and floating type (float32 stays float32, integers give float64):
    the adjoint of a value the output does not depend on, or a buffer to scatter into."""
    if isinstance(x, (float, int)) and not isinstance(x, np.generic):
        return 0.0  # a NumPy scalar gets a 0-d array: ``np.mean(v)[None]`` scatters into it
    if is_container(x):
        return container_adjoint(0.0, x)
    return np.zeros(np.shape(x), dtype=np.result_type(x, 1.0))


def unreduce(g, x, axis=None, keepdims=False):
    """Expand the adjoint of a reduction of `x` over `axis` so that it broadcasts to `x`."""
    if axis is None or keepdims:
        return g
    ndim = len(_shape(x))
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(sorted(a % ndim for a in axes))
    g = np.asarray(g)
    reduced_ndim = ndim - len(axes)
    if g.ndim < reduced_ndim:
        # a lazily broadcast adjoint: give it its full reduced shape before inserting axes
        reduced_shape = tuple(n for i, n in enumerate(_shape(x)) if i not in axes)
        g = np.broadcast_to(g, reduced_shape)
    return np.expand_dims(g, axes)


def reduced_count(x, axis=None):
    """How many elements of `x` each result of a reduction over `axis` combines (for mean)."""
    shape = _shape(x)
    if axis is None:
        count = math.prod(shape)
    else:
        axes = (axis,) if isinstance(axis, int) else axis
        count = math.prod(shape[a] for a in axes)
    return np.float64(count)  # a NumPy number: dividing by an empty count gives nan, as mean


def saved_slot(x, index):
    """A copy of ``x[index]``, taken before an item assignment overwrites it (the adjoint
    puts it back so that earlier adjoints read what they read going forward)."""
    if isinstance(x, dict) and not isinstance(x, ContainerAdjoint) and index not in x:
        return None  # a new key: nothing to put back
    old = x[index]
    return old.copy() if isinstance(old, np.ndarray) else old


def written_slots(g, index):
    """The adjoint an item assignment ``y[index] = v`` gives ``v``: a copy of ``g[index]``
    (`saved_slot`), but where an integer array in `index` names one slot several times, only
    the entry whose value NumPy kept (the last) gets that slot's adjoint; the others were
    overwritten and get 0 (``y[[0, 0, 1]] = v`` depends on v[1] and v[2] only)."""
    slots = saved_slot(g, index)
    if not isinstance(g, np.ndarray) or not _advanced(index):
        return slots
    return slots * kept_entries(g.shape, index)


def _advanced(index) -> bool:
    """Whether `index` holds an integer array or list (which may repeat a slot)."""
    parts = index if isinstance(index, tuple) else (index,)
    return any(
        isinstance(part, list) or (isinstance(part, np.ndarray) and part.dtype != bool)
        for part in parts
    )


def kept_entries(shape: tuple, index) -> np.ndarray:
    """A mask shaped like ``y[index]`` for an array ``y`` of `shape`: True where the entry of
    an assignment ``y[index] = v`` is the one left in its slot. Asked of NumPy itself (number
    the entries, assign the numbers, read them back), so it is whatever NumPy does."""
    numbers = np.arange(math.prod(shape), dtype=np.intp).reshape(shape)
    order = np.arange(numbers[index].size, dtype=np.intp).reshape(numbers[index].shape)
    numbers[index] = order
    return numbers[index] == order


def index_adjoint(g, x, index):
    """The adjoint of ``x[index]``: zeros shaped like `x` with `g` added at `index`.

    Repeated integer indices accumulate (``np.add.at``), as the derivative requires.
    """
    if is_container(x):  # (a NamedTuple's adjoint takes its field names too: ``dp["W"]``)
        if isinstance(index, str) and is_record(x):
            field_key(x, index)
        return ContainerAdjoint({index: g}, positions=positions_of(x))
    dx = np.zeros(_shape(x), dtype=np.result_type(x, g, 1.0))
    accumulate_at(dx, index, g)
    return dx


def accumulate_at(dx, index, g):
    """Add `g` into the array `dx` at `index` in place, accumulating repeated indices; return
    `dx` (generated code writes ``dx = accumulate_at(dx, index, g)``, which a second
    transformation reads as the linear function it is)."""
    if isinstance(dx, ContainerAdjoint):  # an element of a dict, list or tuple
        # (a missing element is a zero, one number per direction in a batched sweep, which
        # an element's array tangent does not broadcast against: sg.hessian of a dict read
        # in a loop, hunt-edge repro_6)
        missing = not isinstance(index, slice) and index not in dx
        dx[index] = g if missing else dx[index] + g
    elif _is_basic_index(index):
        dx[index] += g
    else:
        np.add.at(dx, index, g)
    return dx


def _is_basic_index(index) -> bool:
    items = index if isinstance(index, tuple) else (index,)
    for item in items:
        if item is None or item is Ellipsis or isinstance(item, (slice, int, np.integer)):
            continue
        if isinstance(item, np.ndarray) and item.dtype == np.bool_:
            continue  # a mask selects each element at most once
        return False
    return True


def matmul_left(g, x, y):
    """The adjoint of `x` in ``x @ y``."""
    if y.__class__ is list:  # a list operand is an array to ``@``
        y = np.asarray(y)
    if getattr(x, "ndim", 0) == 2 and getattr(y, "ndim", 0) == 2:
        return g @ y.T
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if x_nd == 1 and y_nd == 1:
        return g * y
    g = np.asarray(g)
    if x_nd == 1 and y_nd == 2 and g.ndim == 1:
        return y @ g  # (n,) @ (n, m) -> (m,)
    if y_nd == 1:
        # (..., n) @ (n,) -> (...): outer product of g with y
        return unbroadcast(np.expand_dims(g, -1) * y, x)
    if x_nd == 1:
        # (n,) @ (..., n, m) -> (..., m)
        return unbroadcast(np.expand_dims(g, -2) @ np.swapaxes(y, -1, -2), x).reshape(np.shape(x))
    return unbroadcast(g @ np.swapaxes(y, -1, -2), x)


def matmul_right(g, x, y):
    """The adjoint of `y` in ``x @ y``."""
    if x.__class__ is list:  # a list operand is an array to ``@``
        x = np.asarray(x)
    if getattr(x, "ndim", 0) == 2 and getattr(y, "ndim", 0) == 2:
        return x.T @ g
    x_nd, y_nd = np.ndim(x), np.ndim(y)
    if x_nd == 1 and y_nd == 1:
        return g * x
    g = np.asarray(g)
    if x_nd == 2 and y_nd == 1 and g.ndim == 1:
        return x.T @ g  # (k, n) @ (n,) -> (k,)
    if x_nd == 1:
        # (n,) @ (..., n, m) -> (..., m): outer product of x with g
        return unbroadcast(np.expand_dims(x, -1) * np.expand_dims(g, -2), y)
    if y_nd == 1:
        # (..., k, n) @ (n,) -> (..., k)
        out = np.swapaxes(x, -1, -2) @ np.expand_dims(g, -1)
        return unbroadcast(out[..., 0], y)
    return unbroadcast(np.swapaxes(x, -1, -2) @ g, y)


def fresh_adjoint(g, x):
    """A new writable array shaped like `x` holding `g` (broadcast): a buffer to scatter into."""
    if is_container(x):
        return container_adjoint(g, x)
    out = np.zeros(_shape(x), dtype=np.result_type(x, g, 1.0))
    out += g
    return out
