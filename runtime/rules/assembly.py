"""Reverse rules of the functions that assemble, cut and rearrange arrays: tiles, rolls, pads,
diagonals, triangles, stacks, splits, sorts, picks by index.

Almost all of them only move elements, so their adjoints are one mechanism
(`runtime/moved_elements.py`): the function applied to its arguments' element numbers says
where each element went, and `moved_adjoint` adds ``g`` back by that map. Each template is
that one line with the function's own static arguments. Their forward rules are derived: they
are linear (marked below), and `sort`/`partition`, which are linear for a fixed order, pick the
tangent by that order. `tensordot`, `kron`, `cross` and `diff` compute, and have adjoints of
their own (`runtime/assembly_helpers.py`).

``g`` has exactly ``ans``'s shape here (none of these is elementwise); for a function returning
a list (`split`), ``g`` is a container adjoint with a zero for every piece not used.
"""

import numpy as np

from ..adjoint_helpers import unbroadcast
from ..assembly_helpers import (
    cross_adjoint_a,
    cross_adjoint_b,
    diff_adjoint,
    kron_adjoint_a,
    kron_adjoint_b,
    tensordot_adjoint_a,
    tensordot_adjoint_b,
)
from ..moved_elements import (
    copying_pad_mode,
    element_numbers,
    moved_adjoint,
    moved_adjoint_transpose,
    moved_tangent,
    moved_tangent_transpose,
    pad_fill_adjoint,
    pad_fill_tangent,
    picked_adjoint,
    sort_order,
)
from ..registry import registry

vjp = registry.vjp
jvp = registry.jvp

# -- elements moved or copied ---------------------------------------------------------------------


@vjp(np.tile)
def tile(g, ans, A, reps):
    return moved_adjoint(g, A, np.tile(element_numbers(A), reps))


@vjp(np.repeat)
def repeat(g, ans, a, repeats, axis=None):
    return moved_adjoint(g, a, np.repeat(element_numbers(a), repeats, axis))


@vjp(np.roll)
def roll(g, ans, a, shift, axis=None):
    return moved_adjoint(g, a, np.roll(element_numbers(a), shift, axis))


@vjp(np.rollaxis)
def rollaxis(g, ans, a, axis, start=0):
    return moved_adjoint(g, a, np.rollaxis(element_numbers(a), axis, start))


@vjp(np.rot90)
def rot90(g, ans, m, k=1, axes=(0, 1)):
    return moved_adjoint(g, m, np.rot90(element_numbers(m), k, axes))


@vjp(np.flipud)
def flipud(g, ans, m):
    return moved_adjoint(g, m, np.flipud(element_numbers(m)))


@vjp(np.fliplr)
def fliplr(g, ans, m):
    return moved_adjoint(g, m, np.fliplr(element_numbers(m)))


@vjp(np.diag)
def diag(g, ans, v, k=0):
    return moved_adjoint(g, v, np.diag(element_numbers(v), k))


@vjp(np.diagonal)
def diagonal(g, ans, a, offset=0, axis1=0, axis2=1):
    return moved_adjoint(g, a, np.diagonal(element_numbers(a), offset, axis1, axis2))


@vjp(np.tril)
def tril(g, ans, m, k=0):
    return moved_adjoint(g, m, np.tril(element_numbers(m), k))


@vjp(np.triu)
def triu(g, ans, m, k=0):
    return moved_adjoint(g, m, np.triu(element_numbers(m), k))


@vjp(np.take)
def take(g, ans, a, indices, axis=None, mode="raise"):
    return moved_adjoint(g, a, np.take(element_numbers(a), indices, axis, mode=mode)), None


@vjp(np.take_along_axis, broadcast_g=True)
def take_along_axis(g, ans, arr, indices, axis=-1):
    return picked_adjoint(g, arr, indices, axis), None


@vjp(np.pad)
def pad(g, ans, array, pad_width, mode="constant", constant_values=0):
    moved = np.pad(element_numbers(array), pad_width, copying_pad_mode(mode))
    return (
        moved_adjoint(g, array, moved),
        None,
        None,
        pad_fill_adjoint(g, array, pad_width, constant_values),
    )


@jvp(np.pad)
def pad_jvp(tangents, ans, array, pad_width, mode="constant", constant_values=0):
    moved = np.pad(element_numbers(array), pad_width, copying_pad_mode(mode))
    return moved_tangent(tangents[0], array, moved) + pad_fill_tangent(tangents[3], moved)


@vjp(np.append)
def append(g, ans, arr, values, axis=None):
    numbers = element_numbers([arr, values])
    moved = moved_adjoint(g, [arr, values], np.append(numbers[0], numbers[1], axis))
    return moved[0], moved[1]


@jvp(np.append)
def append_jvp(tangents, ans, arr, values, axis=None):
    # linear in both arguments together (not one at a time): the tangents are appended
    numbers = element_numbers([arr, values])
    moved = np.append(numbers[0], numbers[1], axis)
    return moved_tangent((tangents[0], tangents[1]), [arr, values], moved)


@vjp(np.atleast_1d)
def atleast_1d(g, ans, *arys, argnum):
    return moved_adjoint(g, arys[argnum], np.atleast_1d(element_numbers(arys[argnum])))


@vjp(np.atleast_2d)
def atleast_2d(g, ans, *arys, argnum):
    return moved_adjoint(g, arys[argnum], np.atleast_2d(element_numbers(arys[argnum])))


@vjp(np.atleast_3d)
def atleast_3d(g, ans, *arys, argnum):
    return moved_adjoint(g, arys[argnum], np.atleast_3d(element_numbers(arys[argnum])))


@vjp(np.hstack)
def hstack(g, ans, tup):
    return moved_adjoint(g, tup, np.hstack(element_numbers(tup)))


@vjp(np.vstack, np.row_stack)
def vstack(g, ans, tup):
    return moved_adjoint(g, tup, np.vstack(element_numbers(tup)))


@vjp(np.dstack)
def dstack(g, ans, tup):
    return moved_adjoint(g, tup, np.dstack(element_numbers(tup)))


@vjp(np.column_stack)
def column_stack(g, ans, tup):
    return moved_adjoint(g, tup, np.column_stack(element_numbers(tup)))


@vjp(np.split)
def split(g, ans, ary, indices_or_sections, axis=0):
    return moved_adjoint(g, ary, np.split(element_numbers(ary), indices_or_sections, axis))


@vjp(np.array_split)
def array_split(g, ans, ary, indices_or_sections, axis=0):
    return moved_adjoint(g, ary, np.array_split(element_numbers(ary), indices_or_sections, axis))


@vjp(np.hsplit)
def hsplit(g, ans, ary, indices_or_sections):
    return moved_adjoint(g, ary, np.hsplit(element_numbers(ary), indices_or_sections))


@vjp(np.vsplit)
def vsplit(g, ans, ary, indices_or_sections):
    return moved_adjoint(g, ary, np.vsplit(element_numbers(ary), indices_or_sections))


@vjp(np.dsplit)
def dsplit(g, ans, ary, indices_or_sections):
    return moved_adjoint(g, ary, np.dsplit(element_numbers(ary), indices_or_sections))


# -- elements moved by the values' order ---------------------------------------------------------


@vjp(np.sort)
def sort(g, ans, a, axis=-1, kind=None):
    return moved_adjoint(g, a, sort_order(a, axis))


@jvp(np.sort)
def sort_jvp(tangents, ans, a, axis=-1, kind=None):
    return moved_tangent(tangents[0], a, sort_order(a, axis))


@vjp(np.partition)
def partition(g, ans, a, kth, axis=-1):
    return moved_adjoint(g, a, sort_order(a, axis, kth)), None


@jvp(np.partition)
def partition_jvp(tangents, ans, a, kth, axis=-1):
    return moved_tangent(tangents[0], a, sort_order(a, axis, kth))


# -- products and differences ---------------------------------------------------------------------


@vjp(np.tensordot)
def tensordot(g, ans, a, b, axes=2):
    return tensordot_adjoint_a(g, a, b, axes), tensordot_adjoint_b(g, a, b, axes)


@vjp(np.kron)
def kron(g, ans, a, b):
    return kron_adjoint_a(g, a, b), kron_adjoint_b(g, a, b)


@vjp(np.cross)
def cross(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    return (
        cross_adjoint_a(g, a, b, axisa, axisb, axisc, axis),
        cross_adjoint_b(g, a, b, axisa, axisb, axisc, axis),
    )


@vjp(np.diff)
def diff(g, ans, a, n=1, axis=-1):
    # (prepend and append are left out: the compiler rejects calls that pass them)
    return diff_adjoint(g, a, n, axis)


registry.linear(
    np.tile,
    np.repeat,
    np.roll,
    np.rollaxis,
    np.rot90,
    np.flipud,
    np.fliplr,
    np.diag,
    np.diagonal,
    np.tril,
    np.triu,
    np.take,
    np.take_along_axis,
    np.atleast_1d,
    np.atleast_2d,
    np.atleast_3d,
    np.hstack,
    np.vstack,
    np.row_stack,
    np.dstack,
    np.column_stack,
    np.split,
    np.array_split,
    np.hsplit,
    np.vsplit,
    np.dsplit,
    np.diff,
)
registry.linear(np.tensordot, np.kron, np.cross, positions=(0, 1))  # bilinear
for _sequence_function in (np.hstack, np.vstack, np.row_stack, np.dstack, np.column_stack):
    registry.mark_sequences(_sequence_function, "tup")


# batched sweeps (Jacobians): a list of tangents with the directions first in each
@registry.batched(np.hstack)
def hstack_batched(tangents, ans, tup):
    return moved_tangent(tangents[0], tup, np.hstack(element_numbers(tup)))


@registry.batched(np.vstack, np.row_stack)
def vstack_batched(tangents, ans, tup):
    return moved_tangent(tangents[0], tup, np.vstack(element_numbers(tup)))


@registry.batched(np.dstack)
def dstack_batched(tangents, ans, tup):
    return moved_tangent(tangents[0], tup, np.dstack(element_numbers(tup)))


@registry.batched(np.column_stack)
def column_stack_batched(tangents, ans, tup):
    return moved_tangent(tangents[0], tup, np.column_stack(element_numbers(tup)))

# the helpers are linear in the adjoint or tangent they move (the rest is read for shapes or
# an order, constant pieces of the derivative), which is what second order needs of them
registry.linear(moved_adjoint, moved_tangent, diff_adjoint)


# ... and their transposes: their reverse rules, which nested GradientTapes need (the inner
# gradient's code runs on the outer tape's Tensors, which cannot follow `moved_adjoint`'s
# np.bincount or `picked_adjoint`'s scatter; a helper with a reverse rule is recorded whole)


@vjp(moved_adjoint)
def moved_adjoint_vjp(g, ans, g_moved, x, moved):
    return moved_adjoint_transpose(g, g_moved, x, moved), None, None


@vjp(moved_tangent)
def moved_tangent_vjp(g, ans, t, x, moved):
    return moved_tangent_transpose(g, t, x, moved), None, None


# (the transposes are linear in the cotangent they move, which second order needs of them)
registry.linear(moved_adjoint_transpose, moved_tangent_transpose)


@vjp(diff_adjoint)
def diff_adjoint_vjp(g, ans, g_diff, a, n=1, axis=-1):
    return np.diff(g, n, axis), None, None, None


@vjp(picked_adjoint)
def picked_adjoint_vjp(g, ans, g_picked, arr, indices, axis=-1):
    return unbroadcast(np.take_along_axis(g, indices, axis), g_picked), None, None, None


@registry.batched(moved_adjoint)
def moved_adjoint_batched(tangents, ans, g, x, moved):
    return moved_adjoint(tangents[0], x, moved)  # batch axes lead; the map is the same


@registry.batched(moved_tangent)
def moved_tangent_batched(tangents, ans, t, x, moved):
    return moved_tangent(tangents[0], x, moved)


registry.linear(tensordot_adjoint_a, kron_adjoint_a, cross_adjoint_a, positions=(0, 2))
registry.linear(tensordot_adjoint_b, kron_adjoint_b, cross_adjoint_b, positions=(0, 1))
registry.linear(pad_fill_adjoint, pad_fill_tangent, picked_adjoint)


@registry.batched(picked_adjoint)
def picked_adjoint_batched(tangents, ans, g, arr, indices, axis=-1):
    return picked_adjoint(tangents[0], arr, indices, axis)  # batch axes lead
registry.register_nondiff([element_numbers, sort_order, copying_pad_mode])
