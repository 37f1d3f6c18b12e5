"""Reverse rules of functions that only move elements: transposes, reshapes, joins, broadcasts
(and the constructors whose values come from float arguments: linspace, full).

Each adjoint moves ``g`` back the way the elements came: a reshape is undone by reshaping to the
argument's shape, a transpose by the inverse permutation, a join by splitting. None of these is
elementwise: ``g`` has exactly ``ans``'s shape. For a sequence argument (``concatenate``'s and
``stack``'s ``arrays``) the contribution is a list with one adjoint per element.
"""

import builtins

import numpy as np

from ..adjoint_helpers import unbroadcast
from ..array_helpers import delete_adjoint, invert_axes, linspace_adjoint, split_like, unstack
from ..containers import parts_of, repeated
from ..registry import registry

vjp = registry.vjp


@vjp(np.transpose)
def transpose(g, ans, a, axes=None):
    return np.transpose(g, invert_axes(axes, np.ndim(a)))


@vjp(np.reshape)
def reshape(g, ans, a, shape, order="C"):
    return np.reshape(g, np.shape(a), order=order)


@vjp(np.ravel)
def ravel(g, ans, a, order="C"):
    return np.reshape(g, np.shape(a), order=order)


@vjp(np.expand_dims, np.squeeze)
def add_or_drop_unit_axes(g, ans, a, axis=None):
    return np.reshape(g, np.shape(a))


@vjp(np.swapaxes)
def swapaxes(g, ans, a, axis1, axis2):
    return np.swapaxes(g, axis1, axis2)


@vjp(np.moveaxis)
def moveaxis(g, ans, a, source, destination):
    return np.moveaxis(g, destination, source)


@vjp(np.flip)
def flip(g, ans, m, axis=None):
    return np.flip(g, axis)


@vjp(np.broadcast_to)
def broadcast_to(g, ans, array, shape, subok=False):
    return unbroadcast(g, array)


@vjp(np.concatenate)
def concatenate(g, ans, arrays, axis=0):
    return split_like(g, arrays, axis)


@vjp(np.stack)
def stack(g, ans, arrays, axis=0):
    return unstack(g, axis)


@vjp(np.delete)
def delete(g, ans, arr, obj, axis=None):
    return delete_adjoint(g, arr, obj, axis)


@vjp(np.array, np.asarray)
def array(g, ans, object, dtype=None):
    return parts_of(g, object)


@vjp(np.linspace)
def linspace(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    return (
        linspace_adjoint(g, start, stop, num, endpoint, axis, 0),
        linspace_adjoint(g, start, stop, num, endpoint, axis, 1),
    )


@vjp(np.full)
def full(g, ans, shape, fill_value, dtype=None, order="C"):
    return None, unbroadcast(g, fill_value)


@vjp(np.full_like)
def full_like(g, ans, a, fill_value, dtype=None, order="K", subok=True, shape=None):
    return None, unbroadcast(g, fill_value)


@vjp(builtins.sum)
def builtin_sum(g, ans, iterable, start=0):
    return repeated(g, iterable), unbroadcast(g, start)  # (a number starting vectors' sum)


# parameters taking a sequence of arrays: a list passed there is not one array
registry.mark_sequences(np.concatenate, "arrays")
registry.mark_sequences(np.stack, "arrays")
registry.mark_sequences(np.array, "object")
registry.mark_sequences(np.asarray, "object")
registry.mark_sequences(np.einsum, "subscripts", "operands")  # sublists: [0, 1]
