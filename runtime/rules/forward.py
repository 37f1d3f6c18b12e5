"""Forward rules (JVPs): what is not derived automatically.

Most forward rules cost nothing to write. An elementwise reverse rule is a diagonal map, its
own transpose, so the compiler derives the forward rule from it (``g`` replaced by the
argument's tangent). A linear primitive's forward rule is the primitive applied to the
tangent: `registry.linear` marks those once, with the positions of the arguments it is linear
in. This module holds the rest, as templates ``(tangents, ans, *params)``: ``tangents`` has
one entry per positional argument, ``None`` where the argument has no tangent.

Tangents here may carry a leading batch axis (several directions at once, for Jacobians);
the templates are written so that either works (`tangent_sum` and friends tell the two apart
by comparing ranks with the primal). `registry.batched` gives linear primitives whose
arguments name axes or shapes a rule for that batch axis.
"""

import builtins
import operator

import numpy as np

from ..array_helpers import extremum_weights, norm_adjoint, prod_of_others, safe_divide
from ..registry import registry
from ..tangent_helpers import (
    batch_array,
    batch_axis,
    batch_concatenate,
    batch_cumsum,
    batch_permutation,
    batch_shape,
    batch_stack,
    broadcast_tangent,
    lift_tangent,
    linspace_tangent,
    list_as_array,
    matmul_tangent,
    norm_axes,
    solve_jvp,
    tangent_sum,
)

jvp = registry.jvp
batched = registry.batched

# -- linear primitives: the forward rule is the call on the tangent ------------------------------

registry.linear(
    np.sum,
    np.mean,
    np.cumsum,
    np.reshape,
    np.ravel,
    np.transpose,
    np.expand_dims,
    np.squeeze,
    np.swapaxes,
    np.moveaxis,
    np.flip,
    np.broadcast_to,
    np.concatenate,
    np.stack,
    np.trace,
    np.array,
    np.asarray,
    np.delete,
)
registry.linear(np.full, np.full_like, positions=(1,))  # in the fill value
registry.linear(builtins.sum, positions=(0, 1))
registry.linear(np.matmul, operator.matmul, np.dot, np.inner, np.outer, positions=(0, 1))
# (position 0 too: the first operand in the sublist form ``np.einsum(a, [0, 1], b, [1, 2])``;
# a subscripts string there never has a tangent)
registry.linear(np.einsum, positions=tuple(range(32)))

# -- reductions that are not linear ---------------------------------------------------------------


@jvp(np.prod)
def prod(tangents, ans, a, axis=None, dtype=None, keepdims=False):
    return tangent_sum(tangents[0] * prod_of_others(a, axis), a, axis, keepdims)


@jvp(np.max, np.amax, np.min, np.amin)
def extremum(tangents, ans, a, axis=None, keepdims=False):
    return tangent_sum(tangents[0] * extremum_weights(a, ans, axis, keepdims), a, axis, keepdims)


@jvp(np.var)
def var(tangents, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    scale = 2 / (np.size(a) / np.size(ans) - ddof)
    return tangent_sum(tangents[0] * centered, a, axis, keepdims) * scale


@jvp(np.std)
def std(tangents, ans, a, axis=None, dtype=None, ddof=0, keepdims=False):
    centered = a - np.mean(a, axis=axis, keepdims=True)
    scale = 1 / (np.size(a) / np.size(ans) - ddof)
    return safe_divide(tangent_sum(tangents[0] * centered, a, axis, keepdims) * scale, ans)


@jvp(np.linspace)
def linspace(tangents, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    return linspace_tangent(tangents[0], tangents[1], start, stop, num, endpoint, axis, ans)


# -- linear algebra -------------------------------------------------------------------------------


@jvp(np.linalg.inv)
def inv(tangents, ans, a):
    return -(ans @ tangents[0] @ ans)


@jvp(np.linalg.det)
def det(tangents, ans, a):
    return ans * np.trace(np.linalg.solve(a, tangents[0]), axis1=-2, axis2=-1)


@jvp(np.linalg.slogdet)
def slogdet(tangents, ans, a):
    # log|det a| is real: Re(tr(a^-1 da)) (a complex tangent for a complex a before)
    return np.real(np.trace(np.linalg.solve(a, tangents[0]), axis1=-2, axis2=-1))


@jvp(np.linalg.solve)
def solve(tangents, ans, a, b):
    return solve_jvp(tangents[0], tangents[1], a, b, ans)


@jvp(np.linalg.norm)
def norm(tangents, ans, x, ord=None, axis=None, keepdims=False):
    slope = norm_adjoint(np.ones_like(ans), ans, x, ord, axis, keepdims)
    # (Re(conj-slope * dz) for a complex x: the norm is real)
    return tangent_sum(np.real(tangents[0] * slope), x, norm_axes(x, axis), keepdims)


# -- batched forward rules of linear primitives that name axes or shapes -------------------------


@batched(np.sum)
def sum_(tangents, ans, a, axis=None, dtype=None, keepdims=False):
    return np.sum(tangents[0], axis=batch_axis(axis, a), keepdims=keepdims)


@batched(np.mean)
def mean(tangents, ans, a, axis=None, dtype=None, keepdims=False):
    return np.mean(tangents[0], axis=batch_axis(axis, a), keepdims=keepdims)


@batched(np.reshape)
def reshape(tangents, ans, a, shape, order="C"):
    return np.reshape(tangents[0], batch_shape(tangents[0], np.shape(ans)), order=order)


@batched(np.ravel)
def ravel(tangents, ans, a, order="C"):
    return np.reshape(tangents[0], batch_shape(tangents[0], np.shape(ans)), order=order)


@batched(np.expand_dims, np.squeeze)
def unit_axes(tangents, ans, a, axis=None):
    return np.reshape(tangents[0], batch_shape(tangents[0], np.shape(ans)))


@batched(np.broadcast_to)
def broadcast_to(tangents, ans, array, shape, subok=False):
    return broadcast_tangent(lift_tangent(tangents[0], array, ans), ans, True)


@batched(np.transpose)
def transpose(tangents, ans, a, axes=None):
    return np.transpose(tangents[0], batch_permutation(axes, a))


@batched(np.swapaxes)
def swapaxes(tangents, ans, a, axis1, axis2):
    return np.swapaxes(tangents[0], batch_axis(axis1, a), batch_axis(axis2, a))


@batched(np.moveaxis)
def moveaxis(tangents, ans, a, source, destination):
    return np.moveaxis(tangents[0], batch_axis(source, a), batch_axis(destination, ans))


@batched(np.cumsum)
def cumsum(tangents, ans, a, axis=None, dtype=None):
    return batch_cumsum(tangents[0], a, axis)


@batched(np.flip)
def flip(tangents, ans, m, axis=None):
    return np.flip(tangents[0], batch_axis(axis, m))


@batched(np.trace)
def trace(tangents, ans, a, offset=0, axis1=0, axis2=1):
    return np.trace(tangents[0], offset, batch_axis(axis1, a), batch_axis(axis2, a))


@batched(np.concatenate)
def concatenate(tangents, ans, arrays, axis=0):
    return batch_concatenate(tangents[0], axis, ans)


@batched(np.stack)
def stack(tangents, ans, arrays, axis=0):
    return batch_stack(tangents[0], axis, ans)


@batched(np.array, np.asarray)
def array(tangents, ans, object, dtype=None):
    return batch_array(tangents[0])


@batched(list_as_array)
def list_as_array_batched(tangents, ans, x):
    return batch_array(tangents[0])


@batched(np.matmul, operator.matmul)
def matmul(tangents, ans, x1, x2, *, argnum):
    return matmul_tangent(x1, x2, tangents[argnum], argnum, ans)
