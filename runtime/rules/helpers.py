"""Rules of the helpers generated code calls, so that generated code can be differentiated
again (`sg.jvp` of `sg.grad`, Hessians, `sg.grad(sg.grad(f))`).

Most helpers are linear in the adjoint they move (``unbroadcast``, ``unreduce``,
``matmul_left``...) and read their other arguments only for shapes, so marking them linear
gives their forward rule. Helpers computing constants (``zero_adjoint``, counts, tie weights)
carry no derivative. Batched rules handle a leading axis of directions for the helpers that
reduce or reshape by shape.
"""

import builtins

import numpy as np

from ..adjoint_helpers import (
    accumulate_at,
    backwards,
    fresh_adjoint,
    index_adjoint,
    match_shape,
    matmul_left,
    matmul_right,
    real_adjoint,
    reduced_count,
    saved_slot,
    unbroadcast,
    unreduce,
    written_slots,
    zero_adjoint,
)
from ..array_helpers import (
    absolute_slope_tangent,
    conjugate_if_complex,
    delete_adjoint,
    dot_adjoint_a,
    dot_adjoint_b,
    einsum_adjoint,
    extremum_weights,
    inner_adjoint_a,
    inner_adjoint_b,
    invert_axes,
    linspace_adjoint,
    linspace_weights,
    norm_adjoint,
    prod_of_others,
    real_part_of,
    reverse_cumsum,
    safe_divide,
    scaled_power,
    solve_adjoint_a,
    solve_transposed,
    split_like,
    tie_weights,
    trace_adjoint,
    unstack,
)
from ..boundaries import fresh_containers, unaliased
from ..containers import (
    as_structure,
    batch_by_element,
    batch_container_adjoint,
    batch_joined_part,
    batch_parts_of,
    batch_repeated,
    batch_repeated_part,
    batch_saved_slot,
    batch_split_like,
    batch_unstack,
    batch_written_slots,
    by_element,
    container_adjoint,
    joined_part,
    part,
    parts_of,
    repeated,
    repeated_part,
    slot_key,
    snapshot,
)
from ..helper_tangents import (
    add_to_diagonal_jvp,
    batch_matmul_left_jvp,
    batch_matmul_right_jvp,
    einsum_adjoint_tangent,
    matmul_tangent_jvp,
    norm_adjoint_tangent,
    prod_of_others_tangent,
    solve_jvp_tangent,
    solve_transposed_tangent,
)
from ..registry import registry
from ..tangent_helpers import (
    accumulate_tangent,
    add_to_diagonal,
    batch_array,
    batch_axis,
    batch_concatenate,
    batch_cumsum,
    batch_fresh_adjoint,
    batch_index,
    batch_item_tangent,
    batch_matmul_left,
    batch_matmul_right,
    batch_part,
    batch_permutation,
    batch_shape,
    batch_size,
    batch_sum,
    batch_unbroadcast,
    batch_unreduce,
    broadcast_tangent,
    columns_to_jacobian,
    diagonal_directions,
    diagonal_times,
    identity_directions,
    lift_tangent,
    linspace_tangent,
    list_as_array,
    matmul_tangent,
    norm_axes,
    operand_tangent,
    rows_to_jacobian,
    set_batch_item,
    solve_jvp,
    tangent_sum,
    times_diagonal,
    writable_tangent,
    zero_tangent,
)

registry.register_nondiff(
    [
        zero_adjoint,
        slot_key,
        backwards,
        reduced_count,
        extremum_weights,
        tie_weights,
        invert_axes,
        np.shape,
        builtins.len,
        zero_tangent,
        batch_axis,
        batch_shape,
        batch_size,
        batch_permutation,
        norm_axes,
        identity_directions,
        linspace_weights,
    ]
)
registry.linear(batch_sum, positions=(0, 3))
registry.linear(list_as_array)
registry.linear(
    unbroadcast,
    match_shape,
    unreduce,
    fresh_adjoint,
    saved_slot,
    written_slots,
    index_adjoint,
    reverse_cumsum,
    split_like,
    unstack,
    delete_adjoint,
    trace_adjoint,
    part,
    parts_of,
    repeated,
    joined_part,
    repeated_part,
    as_structure,
    by_element,
    container_adjoint,  # (a NamedTuple's or dataclass's tangent, built by forward code)
    # the helpers of forward-mode code, so that it too can be differentiated again
    broadcast_tangent,
    lift_tangent,
    batch_index,
    batch_unbroadcast,
    batch_unreduce,
    batch_fresh_adjoint,
    writable_tangent,
    tangent_sum,
    batch_cumsum,
    batch_array,
    batch_concatenate,
    operand_tangent,
    # and of the code `sg.jacobian` generates (Jacobians of Jacobians)
    columns_to_jacobian,
    rows_to_jacobian,
)
registry.linear(linspace_adjoint)  # in g (the ends are read for their shapes)
registry.linear(real_part_of, positions=(1,))
registry.linear(real_adjoint, positions=(1,))
registry.linear(conjugate_if_complex)


@registry.jvp(absolute_slope_tangent)
def absolute_slope_tangent_(tangents, ans, t, x, magnitude):
    # linear in t; in x and |x| its derivative is 0 for a real x (the slope of |x| is piecewise
    # constant) and not written yet for a complex one, which says so (as linear, the tangents
    # of x and |x| were dropped: third derivatives through |z| were wrong, silently)
    return absolute_slope_tangent(tangents[0], x, magnitude, tangents[1], tangents[2])

registry.linear(accumulate_at, positions=(0, 2))
registry.linear(fresh_containers, unaliased, snapshot)  # copies


@registry.batched(by_element)
def by_element_batched(tangents, ans, g, value):
    return batch_by_element(tangents[0], value)


@registry.batched(container_adjoint)
def container_adjoint_batched(tangents, ans, g, value):
    return batch_container_adjoint(tangents[0], value)


@registry.vjp(fresh_containers)
def fresh_containers_(g, ans, value):
    return g


@registry.vjp(unaliased)
def unaliased_(g, ans, value, sources):
    return g, None


@registry.batched(fresh_containers)
def fresh_containers_batched(tangents, ans, value):
    return fresh_containers(tangents[0])  # a batched tangent is copied like any value


@registry.batched(unaliased)
def unaliased_batched(tangents, ans, value, sources):
    return unaliased(tangents[0], sources)


@registry.batched(snapshot)
def snapshot_batched(tangents, ans, value):
    return snapshot(tangents[0])  # a batched tangent is copied like any value


registry.linear(diagonal_directions, positions=(1,))
registry.linear(diagonal_times, times_diagonal, positions=(0, 1))
registry.linear(solve_adjoint_a, positions=(0, 1))
registry.linear(matmul_left, dot_adjoint_a, inner_adjoint_a, positions=(0, 2))
registry.linear(matmul_right, dot_adjoint_b, inner_adjoint_b, positions=(0, 1))


@registry.vjp(safe_divide, elementwise=True)
def safe_divide_(g, ans, x, y):
    # -g * ans / y, written so that a zero g gives 0 even where ans / y is infinite (the
    # masked branch of a NaN-safe rule, differentiated again; its forward rule divides by
    # 1 / tangent, which `safe_divide` makes inf for a zero complex tangent too)
    return safe_divide(g, y), -safe_divide(safe_divide(ans, y), safe_divide(1.0, g))


@registry.vjp(scaled_power, elementwise=True)
def scaled_power_(g, ans, c, x, p):
    # c * x ** p: zero where c (or g) is 0 whatever x ** (p - 1) is there
    return (
        scaled_power(g, x, p),
        scaled_power(g * c * p, x, p - 1),
        g * ans * np.log(np.where((ans == 0) | (g == 0), 1.0, x)),  # (see the power rule)
    )


@registry.vjp(index_adjoint)
def index_adjoint_(g, ans, g_at, x, index):
    # index_adjoint(g_at, x, index) scatters g_at into zeros shaped like x: its adjoint reads
    # the same slots back (repeated indices were added, so each reads the same value), summed
    # where g_at was broadcast into them (a sum's scalar adjoint scattered into a slice)
    return unbroadcast(g[index], g_at), None, None


@registry.jvp(accumulate_at)
def accumulate_at_(tangents, ans, dx, index, g):
    return accumulate_tangent(tangents[0], index, tangents[2], dx, g)


@registry.jvp(set_batch_item)
def set_batch_item_(tangents, ans, t, index, value):
    return batch_item_tangent(tangents[0], index, tangents[2], ans, value)


@registry.jvp(accumulate_tangent)
def accumulate_tangent_(tangents, ans, tdx, index, tg, dx, g=None):
    return accumulate_tangent(tangents[0], index, tangents[2], dx, tg, ans)


@registry.batched(part)
def part_(tangents, ans, adjoint, key):
    return batch_part(tangents[0], adjoint, key)


@registry.batched(repeated)
def repeated_(tangents, ans, g, items):
    return batch_repeated(tangents[0], items)


@registry.batched(joined_part)
def joined_part_(tangents, ans, g, joined, a, position):
    return batch_joined_part(tangents[0], joined, a, position)


@registry.batched(repeated_part)
def repeated_part_(tangents, ans, g, repeated, items):
    return batch_repeated_part(tangents[0], repeated, items)


@registry.batched(parts_of)
def parts_of_(tangents, ans, g, value):
    return batch_parts_of(tangents[0], value)


@registry.batched(unstack)
def unstack_(tangents, ans, g, axis=0):
    return batch_unstack(tangents[0], axis)


@registry.batched(split_like)
def split_like_(tangents, ans, g, arrays, axis=0):
    return batch_split_like(tangents[0], arrays, axis)


@registry.jvp(einsum_adjoint)
def einsum_adjoint_(tangents, ans, g, subscripts, operands, argnum, optimize=False):
    return einsum_adjoint_tangent(
        tangents[0], tangents[1], tangents[2], g, subscripts, operands, argnum, optimize
    )


@registry.jvp(linspace_tangent)
def linspace_tangent_(
    tangents, ans, tstart, tstop, start, stop, num=50, endpoint=True, axis=0, a=None
):
    # linear in the two tangents together (the ends are read for their shapes)
    return linspace_tangent(tangents[0], tangents[1], start, stop, num, endpoint, axis, a)


@registry.jvp(prod_of_others)
def prod_of_others_(tangents, ans, a, axis=None):
    return prod_of_others_tangent(tangents[0], a, axis)


@registry.jvp(solve_jvp)
def solve_jvp_(tangents, ans, ta, tb, a, b, x):
    return solve_jvp_tangent(tangents[0], tangents[1], tangents[2], tangents[4], ta, a, b, x, ans)


@registry.jvp(solve_transposed)
def solve_transposed_(tangents, ans, a, g, b):
    return solve_transposed_tangent(tangents[0], tangents[1], a, g, b, ans)


@registry.jvp(norm_adjoint)
def norm_adjoint_(tangents, ans, g, norm, x, ord=None, axis=None, keepdims=False):
    return norm_adjoint_tangent(
        tangents[0], tangents[1], tangents[2], g, norm, x, ord, axis, keepdims
    )


@registry.batched(matmul_left)
def matmul_left_(tangents, ans, g, x, y):
    return batch_matmul_left(tangents[0], tangents[2], g, x, y)


@registry.batched(matmul_right)
def matmul_right_(tangents, ans, g, x, y):
    return batch_matmul_right(tangents[0], tangents[1], g, x, y)


@registry.batched(unbroadcast)
def unbroadcast_(tangents, ans, g, x, *operands):
    return batch_unbroadcast(tangents[0], ans, x, *operands)


@registry.batched(match_shape)
def match_shape_(tangents, ans, g, x):
    return batch_unbroadcast(tangents[0], ans, x)


@registry.batched(unreduce)
def unreduce_(tangents, ans, g, x, axis=None, keepdims=False):
    return batch_unreduce(tangents[0], ans, x, axis, keepdims)


@registry.batched(real_adjoint)
def real_adjoint_(tangents, ans, x, g):
    return real_adjoint(x, tangents[1])  # elementwise: the directions' axis is harmless


@registry.batched(fresh_adjoint)
def fresh_adjoint_(tangents, ans, g, x):
    return batch_fresh_adjoint(tangents[0], x)


@registry.batched(saved_slot)
def saved_slot_(tangents, ans, x, index):
    return batch_saved_slot(tangents[0], index)


@registry.batched(written_slots)
def written_slots_(tangents, ans, g, index):
    return batch_written_slots(tangents[0], index)


@registry.jvp(matmul_tangent)
def matmul_tangent_(tangents, ans, x1, x2, t, position, ans0):
    return matmul_tangent_jvp(tangents[2], tangents[0], tangents[1], x1, x2, t, position, ans0)


@registry.jvp(batch_matmul_left)
def batch_matmul_left_(tangents, ans, tg, ty, g, x, y):
    return batch_matmul_left_jvp(
        tangents[0], tangents[1], tangents[2], tangents[4], tg, ty, g, x, y
    )


@registry.jvp(batch_matmul_right)
def batch_matmul_right_(tangents, ans, tg, tx, g, x, y):
    return batch_matmul_right_jvp(
        tangents[0], tangents[1], tangents[2], tangents[3], tg, tx, g, x, y
    )


@registry.jvp(add_to_diagonal)
def add_to_diagonal_(tangents, ans, t, c, x):
    return add_to_diagonal_jvp(tangents[0], tangents[1], t, c, x)
