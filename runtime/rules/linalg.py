"""Reverse rules of products and `numpy.linalg`: dot, matmul, einsum, outer, inner, trace, inv,
solve, det, slogdet, norm.

None of these is elementwise: ``g`` has exactly ``ans``'s shape. Contractions (dot, inner,
einsum) delegate to helpers because their adjoints depend on the operands' ranks. Matrix
functions accept stacks of matrices (leading batch axes) as NumPy does.

Choices worth knowing:

- ``det``: the adjoint is ``g * det(A) * inv(A)^T``. It needs ``inv(A)``, so it fails (or returns
  inf/NaN) at a singular ``A``, where the true adjoint (the adjugate) is still finite.
- ``slogdet`` returns a pair ``(sign, logabsdet)``. Its rule treats ``g`` as the adjoint of the
  **logabsdet component only** (``sign`` is piecewise constant, so it carries no gradient), and
  is registered with ``output=1`` so the compiler passes the adjoint of ``ans[1]`` (of
  ``logdet`` in ``sign, logdet = np.linalg.slogdet(A)``) as ``g``. The adjoint is
  ``g * inv(A)^T``.
- ``norm``: the adjoint is 0 where the norm is 0 (a subgradient), never NaN.
- ``einsum``: the string form (``np.einsum('ij,jk->ik', a, b)``, implicit output and ``...``
  allowed) and the sublist form (``np.einsum(a, [0, 1], b, [1, 2], [0, 2])``); the template
  is instantiated once per differentiated operand (``argnum`` counts positional arguments of
  the call, so the first operand is 1 in the string form, 0 in the sublist form).
"""

import operator

import numpy as np

from ..adjoint_helpers import matmul_left, matmul_right, unbroadcast
from ..array_helpers import (
    dot_adjoint_a,
    dot_adjoint_b,
    einsum_adjoint,
    inner_adjoint_a,
    inner_adjoint_b,
    norm_adjoint,
    solve_adjoint_a,
    solve_transposed,
    trace_adjoint,
)
from ..registry import registry

vjp = registry.vjp

# -- products -------------------------------------------------------------------------------------


@vjp(np.matmul, operator.matmul)
def matmul(g, ans, x1, x2):
    return matmul_left(g, x1, x2), matmul_right(g, x1, x2)


@vjp(np.dot)
def dot(g, ans, a, b):
    return dot_adjoint_a(g, a, b), dot_adjoint_b(g, a, b)


@vjp(np.inner)
def inner(g, ans, a, b):
    return inner_adjoint_a(g, a, b), inner_adjoint_b(g, a, b)


@vjp(np.outer)
def outer(g, ans, a, b):
    return np.reshape(g @ np.ravel(b), np.shape(a)), np.reshape(np.ravel(a) @ g, np.shape(b))


@vjp(np.einsum)
def einsum(g, ans, subscripts, *operands, optimize=False, argnum):
    return einsum_adjoint(g, subscripts, operands, argnum, optimize)


@vjp(np.trace)
def trace(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None):
    return trace_adjoint(g, a, offset, axis1, axis2)


# -- matrix functions -----------------------------------------------------------------------------


@vjp(np.linalg.inv)
def inv(g, ans, a):
    ans_t = np.swapaxes(ans, -1, -2)
    return -(ans_t @ g @ ans_t)


@vjp(np.linalg.solve)
def solve(g, ans, a, b):
    gb = solve_transposed(a, g, b)
    return solve_adjoint_a(gb, ans, a, b), unbroadcast(gb, b)


@vjp(np.linalg.det)
def det(g, ans, a):
    return np.expand_dims(g * ans, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@vjp(np.linalg.slogdet, output=1)
def slogdet(g, ans, a):
    # g is the adjoint of ans[1] (logabsdet, output=1); sign has no gradient
    return np.expand_dims(g, (-2, -1)) * np.swapaxes(np.linalg.inv(a), -1, -2)


@vjp(np.linalg.norm, reduction=True)
def norm(g, ans, x, ord=None, axis=None, keepdims=False):
    return norm_adjoint(g, ans, x, ord, axis, keepdims)
