"""Adjoints of the assembling functions that compute (`runtime/rules/assembly.py`): tensor and
Kronecker products, cross products, differences.

Each product has one helper per operand, bilinear in ``g`` and the *other* operand; the
operand itself is read only for its shape. That split is what lets the registry mark them
linear in exactly those two arguments, which is all second order needs.
"""

from __future__ import annotations

import numpy as np

from .adjoint_helpers import unbroadcast

__all__ = [
    "cross_adjoint_a",
    "cross_adjoint_b",
    "diff_adjoint",
    "kron_adjoint_a",
    "kron_adjoint_b",
    "tensordot_adjoint_a",
    "tensordot_adjoint_b",
]


def _tensordot_axes(axes, a_ndim: int, b_ndim: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        return list(range(a_ndim - n, a_ndim)), list(range(n))
    axes_a, axes_b = axes
    axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
    axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    return [int(i) % a_ndim for i in axes_a], [int(i) % b_ndim for i in axes_b]


def tensordot_adjoint_a(g, a, b, axes=2):
    """The adjoint of ``np.tensordot(a, b, axes)`` for `a` (bilinear in `g` and `b`)."""
    axes_a, axes_b = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    out = np.tensordot(g, b, axes=(list(range(len(free_a), np.ndim(g))), free_b))
    # out's axes: a's free axes, then a's contracted axes in the order b holds their partners
    order = free_a + [axes_a[axes_b.index(j)] for j in sorted(axes_b)]
    return np.transpose(out, np.argsort(order))


def tensordot_adjoint_b(g, a, b, axes=2):
    """The adjoint of ``np.tensordot(a, b, axes)`` for `b` (bilinear in `g` and `a`)."""
    axes_a, axes_b = _tensordot_axes(axes, np.ndim(a), np.ndim(b))
    free_a = [i for i in range(np.ndim(a)) if i not in axes_a]
    out = np.tensordot(a, g, axes=(free_a, list(range(len(free_a)))))
    free_b = [i for i in range(np.ndim(b)) if i not in axes_b]
    order = [axes_b[axes_a.index(i)] for i in sorted(axes_a)] + free_b
    return np.transpose(out, np.argsort(order))


def _kron_blocks(g, a, b):
    """`g` as an array of blocks: axes (a0, b0, a1, b1, ...) after both operands get the
    same rank (NumPy prepends ones to the smaller)."""
    nd = max(np.ndim(a), np.ndim(b))
    sa = (1,) * (nd - np.ndim(a)) + np.shape(a)
    sb = (1,) * (nd - np.ndim(b)) + np.shape(b)
    blocks = np.reshape(g, [n for pair in zip(sa, sb, strict=True) for n in pair])
    return blocks, sa, sb, nd


def kron_adjoint_a(g, a, b):
    """The adjoint of ``np.kron(a, b)`` for `a` (bilinear in `g` and `b`)."""
    blocks, _, sb, nd = _kron_blocks(g, a, b)
    out = np.tensordot(blocks, np.reshape(b, sb), axes=(list(range(1, 2 * nd, 2)), list(range(nd))))
    return np.reshape(out, np.shape(a))


def kron_adjoint_b(g, a, b):
    """The adjoint of ``np.kron(a, b)`` for `b` (bilinear in `g` and `a`)."""
    blocks, sa, _, nd = _kron_blocks(g, a, b)
    out = np.tensordot(np.reshape(a, sa), blocks, axes=(list(range(nd)), list(range(0, 2 * nd, 2))))
    return np.reshape(out, np.shape(b))


def _cross_vectors(g, other, axis_other, axisc, axis):
    if axis is not None:
        axis_other = axisc = axis
    v = np.moveaxis(np.asarray(other), axis_other, -1)
    if v.shape[-1] == 2 and np.ndim(g) == np.ndim(v) - 1:  # 2-vectors: a scalar per pair
        return v, np.asarray(g), True
    return v, np.moveaxis(np.asarray(g), axisc, -1), False


def cross_adjoint_a(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The adjoint of ``np.cross(a, b, ...)`` for `a`: ``b x g`` (bilinear in `g` and `b`)."""
    v, w, planar = _cross_vectors(g, b, axisb, axisc, axis)
    if planar:  # a0 b1 - a1 b0
        out = np.stack([v[..., 1] * w, -v[..., 0] * w], axis=-1)
    else:
        out = np.cross(v, w)
        if np.shape(a)[axisa if axis is None else axis] == 2:
            out = out[..., :2]
    out = np.moveaxis(out, -1, axisa if axis is None else axis)
    return unbroadcast(out, a)


def cross_adjoint_b(g, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
    """The adjoint of ``np.cross(a, b, ...)`` for `b`: ``g x a`` (bilinear in `g` and `a`)."""
    v, w, planar = _cross_vectors(g, a, axisa, axisc, axis)
    if planar:
        out = np.stack([-v[..., 1] * w, v[..., 0] * w], axis=-1)
    else:
        out = np.cross(w, v)
        if np.shape(b)[axisb if axis is None else axis] == 2:
            out = out[..., :2]
    out = np.moveaxis(out, -1, axisb if axis is None else axis)
    return unbroadcast(out, b)


def diff_adjoint(g, a, n=1, axis=-1):
    """The adjoint of ``np.diff(a, n, axis)``: each difference's adjoint taken back ``n``
    times (the adjoint of one difference is minus the difference of `g` padded with zeros)."""
    for _ in range(n):
        g = -np.diff(g, axis=axis, prepend=0.0, append=0.0)
    return g
