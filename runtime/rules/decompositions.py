"""Rules of NumPy's matrix decompositions: cholesky, eigh, eigvalsh, eig, eigvals, svd, svdvals,
qr.

Every template here is straight-line NumPy over primitives that have rules of their own (``@``,
``np.swapaxes``, ``np.einsum``, the helpers of ``runtime/matrix_helpers.py``), so the code the
compiler inlines can be differentiated again: Hessians need no hand-written second derivative.
All rules accept stacks of matrices (leading batch axes), as NumPy does. Real matrices only,
except ``eig``/``eigvals``, which take complex ones too.

Conventions (tests/test_decompositions.py checks each):

- **Which entries are read.** ``cholesky`` and ``eigh``/``eigvalsh`` read one triangle of their
  argument (the lower one by default; ``upper=True`` / ``UPLO="U"``: the upper one). Their
  derivative is that of the function NumPy computes, so the adjoint lives on that triangle
  (off-diagonal entries count for both mirrored entries). For a symmetric argument built by
  the user (``A = B @ B.T``) the chain rule gives the usual symmetric gradient.
- **Tuple results.** ``w, v = np.linalg.eigh(a)``, ``u, s, vh = np.linalg.svd(a)`` and ``q, r =
  np.linalg.qr(a)`` are registered without ``output=``: the compiler reads the components
  of the tuple and passes the rule the adjoint of the whole tuple (`adjoint_part` reads one
  component; an unused one is zero). Forward rules return a tuple of tangents.
- **Eigenvector and singular-vector signs.** LAPACK fixes each vector only up to its sign.
  The derivative is that of the vector continued smoothly from the one returned (``v_i . dv_i
  = 0``): exact for any function that does not depend on the signs (``v @ diag(f(w)) @ v.T``,
  ``abs(v)``, ``u[:, 0] * vh[0]``), and for sign-dependent ones wherever LAPACK's choice does not
  flip (it does not under small perturbations). Eigenvalues come ascending (``eigh``),
  singular values descending (``svd``), as NumPy returns them.
- **Repeated eigenvalues (singular values).** Eigenvectors of a repeated eigenvalue are not
  differentiable. `inverse_gaps` drops the coupling of exactly tied pairs instead of dividing
  by 0: the result is finite (never NaN), exact for functions of the eigenvalues alone, and
  for eigenvector-dependent functions it is the derivative with the tied pairs' rotation
  ignored (a documented limit: near, not at, a tie the derivative is exact and large).
  Zero singular values make the ``U``/``Vh`` terms of the SVD derivative infinite.
- **SVD shapes.** ``full_matrices=True`` (NumPy's default) is differentiable for square
  matrices only (the extra columns of a non-square one are arbitrary): a ValueError says to
  pass ``full_matrices=False``. ``compute_uv=False`` (and ``np.linalg.svdvals``) works.
- **QR.** ``mode="reduced"`` (the default) for ``m >= n``; other modes are a ValueError.
- **eig, eigvals.** Real or complex matrices, real or complex eigenvalues (the complex
  convention of README.md: ``Re(sum(g * dz))``, a real input's gradient real). NumPy returns
  each eigenvector with unit 2-norm and, for a complex one, its largest entry real (LAPACK's
  ``geev``); the derivative is that of this vector: ``Re(v_i^H dv_i) = 0`` and the largest
  entry's tangent is real (``largest_entries`` finds it; for a real eigenvector this is ``v_i .
  dv_i = 0``, as for ``eigh``). What LAPACK leaves to chance is a sign (a real matrix's
  vectors, real or complex; a complex matrix's largest entry is real and positive): exact for
  sign-invariant functions (``|v|**2``, ``v v^H``, ``v**2``, functions of ``w``), and for
  sign-dependent ones wherever LAPACK does not flip it (a flip is a jump in NumPy's result,
  not something a derivative can follow). Ties are handled by `inverse_gaps` as above, and a
  tie in the largest entry's modulus is a point where NumPy's phase jumps. The rules solve
  with ``V`` (O(n^3)), so a defective (non-diagonalizable) matrix makes them fail or blow up,
  as its eigenvectors do.
"""

import numpy as np

from ..array_helpers import safe_divide
from ..fft_helpers import real_like
from ..matrix_helpers import (
    adjoint_part,
    batch_adjoint_part,
    eig_factors,
    half_triangle,
    inverse_gaps,
    largest_entries,
    other_trans,
    phase_unit,
    qr_factors,
    real_factors,
    svd_factors,
    svd_factors_tangent,
    svd_outputs,
    symmetric_from_triangle,
    transpose_if,
    triangle,
    triangle_adjoint,
    triangular_rhs,
    triangular_solve,
    triangular_solve_adjoint_a,
)
from ..registry import registry

vjp = registry.vjp
jvp = registry.jvp

# -- cholesky ------------------------------------------------------------------------------------
# A = L L^T read from the lower triangle. Forward: dL = L Phi(L^-1 dA L^-T), Phi taking the lower
# triangle with the diagonal halved; reverse (its transpose): S = L^-T Phi(L^T gL) L^-1, then
# the adjoint of the triangle read.


@vjp(np.linalg.cholesky)
def cholesky(g, ans, a, upper=False):
    lower = transpose_if(real_factors(ans, a, "cholesky"), upper)
    p = half_triangle(np.swapaxes(lower, -1, -2) @ transpose_if(g, upper))
    x = triangular_solve(lower, p, 1, True)
    s = np.swapaxes(triangular_solve(lower, np.swapaxes(x, -1, -2), 1, True), -1, -2)
    return triangle_adjoint(s, upper)


@jvp(np.linalg.cholesky)
def cholesky_(tangents, ans, a, upper=False):
    lower = transpose_if(real_factors(ans, a, "cholesky"), upper)
    x = triangular_solve(lower, symmetric_from_triangle(tangents[0], upper), 0, True, False, a)
    y = triangular_solve(lower, np.swapaxes(x, -1, -2), 0, True, False, a)
    return transpose_if(lower @ half_triangle(y), upper)


# -- eigh, eigvalsh ------------------------------------------------------------------------------
# a = V diag(w) V^T. Forward, with M = V^T dS V: dw = diag(M), dV = V (F * M), F = inverse_gaps(w).
# Reverse: V (diag(gw) + F * (V^T gV - gV^T V) / 2) V^T, then the adjoint of the triangle read.


@vjp(np.linalg.eigh)
def eigh(g, ans, a, UPLO="L"):
    f = real_factors(ans, a, "eigh")
    w = f[0]
    v = f[1]
    vt = np.swapaxes(v, -1, -2)
    m = vt @ adjoint_part(g, 1, v)
    gw = np.expand_dims(adjoint_part(g, 0, w), -1) * np.eye(np.shape(w)[-1])
    k = 0.5 * inverse_gaps(w) * (m - np.swapaxes(m, -1, -2)) + gw
    return triangle_adjoint(v @ k @ vt, UPLO)


@jvp(np.linalg.eigh)
def eigh_(tangents, ans, a, UPLO="L"):
    f = real_factors(ans, a, "eigh")
    w = f[0]
    v = f[1]
    m = np.swapaxes(v, -1, -2) @ symmetric_from_triangle(tangents[0], UPLO) @ v
    out = (np.einsum("...ii->...i", m), v @ (inverse_gaps(w) * m))
    return out


@vjp(np.linalg.eigvalsh)
def eigvalsh(g, ans, a, UPLO="L"):
    v = np.linalg.eigh(real_factors(a, a, "eigvalsh"), UPLO)[1]
    return triangle_adjoint((v * np.expand_dims(g, -2)) @ np.swapaxes(v, -1, -2), UPLO)


@jvp(np.linalg.eigvalsh)
def eigvalsh_(tangents, ans, a, UPLO="L"):
    v = np.linalg.eigh(real_factors(a, a, "eigvalsh"), UPLO)[1]
    s = symmetric_from_triangle(tangents[0], UPLO)
    return np.einsum("...ji,...jk,...ki->...i", v, s, v)


# -- eig, eigvals --------------------------------------------------------------------------------
# a = V diag(w) V^-1 (complex when w is), columns of V of unit 2-norm, the largest entry of each
# real (LAPACK's phase). Forward, with M = V^-1 da V, F = inverse_gaps(w): dw = diag(M),
# D = V (F * M), dV = D + V diag(c) where c_i = -Re(v_i^H D_i) keeps |v_i| = 1 and
# -i Im(D_ki / v_ki) (k the largest entry) keeps v_ki real. Reverse, the transpose of each step
# under Re(sum(g * dz)): s = diag(V^T gV), gD = gV - conj(V) Re(s) - i E_k Im(s) / v_k,
# K = F * (V^T gD) + diag(gw), ga = V^-T K V^T (its real part for a real a).


@vjp(np.linalg.eig)
def eig(g, ans, a):
    f = eig_factors(ans, a)
    v = f[1]
    vt = np.swapaxes(v, -1, -2)
    gv = adjoint_part(g, 1, v)
    s = np.expand_dims(np.einsum("...ji,...ji->...i", v, gv), -2)
    top = largest_entries(v)
    phase = top * (np.imag(s) / np.expand_dims(np.sum(top * v, axis=-2), -2))
    gd = gv - np.conj(v) * np.real(s) - phase_unit(v) * phase
    gw = np.expand_dims(adjoint_part(g, 0, f[0]), -1) * np.eye(np.shape(v)[-1])
    return real_like(np.linalg.solve(vt, (inverse_gaps(f[0]) * (vt @ gd) + gw) @ vt), a)


@jvp(np.linalg.eig)
def eig_(tangents, ans, a):
    f = eig_factors(ans, a)
    v = f[1]
    m = np.linalg.solve(v, tangents[0] @ v)
    d = v @ (inverse_gaps(f[0]) * m)
    top = largest_entries(v)
    turn = np.imag(np.sum(top * d, axis=-2) / np.sum(top * v, axis=-2))
    c = -np.real(np.einsum("...ki,...ki->...i", np.conj(v), d)) - phase_unit(v) * turn
    out = (np.einsum("...ii->...i", m), d + v * np.expand_dims(c, -2))
    return out


@vjp(np.linalg.eigvals)
def eigvals(g, ans, a):
    vt = np.swapaxes(eig_factors(np.linalg.eig(a), a, ans)[1], -1, -2)
    return real_like(np.linalg.solve(vt, np.expand_dims(g, -1) * vt), a)


@jvp(np.linalg.eigvals)
def eigvals_(tangents, ans, a):
    v = eig_factors(np.linalg.eig(a), a, ans)[1]
    return np.einsum("...ii->...i", np.linalg.solve(v, tangents[0] @ v))


# -- svd, svdvals --------------------------------------------------------------------------------
# Thin a = U S V^T, F = inverse_gaps(s^2), dP = U^T da V:
#   ds = diag(dP), dU = U (F * (dP S + S dP^T)) + (I - U U^T) da V S^-1, dV likewise.
# Reverse: U (F * (U^T gU - gU^T U) S + S F * (V^T gV - gV^T V) + diag(gs)) V^T
#          + (I - U U^T) gU S^-1 V^T + U S^-1 gV^T (I - V V^T).


@vjp(np.linalg.svd)
def svd(g, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    f = svd_factors(ans, a, full_matrices, compute_uv, hermitian)
    u = f[0]
    s = f[1]
    vh = f[2]
    gu = adjoint_part(g, 0, u, compute_uv, 1)
    gv = np.swapaxes(adjoint_part(g, 2, vh, compute_uv, 1), -1, -2)
    gs = adjoint_part(g, 1, s, compute_uv, 1)
    gaps = inverse_gaps(s * s)
    ug = np.swapaxes(u, -1, -2) @ gu
    vg = vh @ gv
    s_row = np.expand_dims(s, -2)
    inner = (
        gaps * (ug - np.swapaxes(ug, -1, -2)) * s_row
        + np.expand_dims(s, -1) * gaps * (vg - np.swapaxes(vg, -1, -2))
        + np.expand_dims(gs, -1) * np.eye(np.shape(s)[-1])
    )
    left = safe_divide(gu - u @ ug, s_row)
    right = safe_divide(gv - np.swapaxes(vh, -1, -2) @ vg, s_row)
    return (u @ inner + left) @ vh + u @ np.swapaxes(right, -1, -2)


@jvp(np.linalg.svd)
def svd_(tangents, ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    f = svd_factors(ans, a, full_matrices, compute_uv, hermitian)
    u = f[0]
    s = f[1]
    v = np.swapaxes(f[2], -1, -2)
    dp = np.swapaxes(u, -1, -2) @ tangents[0] @ v
    dpt = np.swapaxes(dp, -1, -2)
    gaps = inverse_gaps(s * s)
    s_row = np.expand_dims(s, -2)
    s_col = np.expand_dims(s, -1)
    du = u @ (gaps * (dp * s_row + s_col * dpt)) + safe_divide(tangents[0] @ v - u @ dp, s_row)
    dv = v @ (gaps * (s_col * dp + dpt * s_row)) + safe_divide(
        np.swapaxes(tangents[0], -1, -2) @ u - v @ dpt, s_row
    )
    out = svd_outputs((du, np.einsum("...ii->...i", dp), np.swapaxes(dv, -1, -2)), compute_uv)
    return out


@vjp(np.linalg.svdvals)
def svdvals(g, ans, x):
    f = np.linalg.svd(x, full_matrices=False)
    return (f[0] * np.expand_dims(g, -2)) @ f[2]


@jvp(np.linalg.svdvals)
def svdvals_(tangents, ans, x):
    f = np.linalg.svd(x, full_matrices=False)
    return np.einsum("...ji,...jk,...ik->...i", f[0], tangents[0], f[2])


# -- qr ------------------------------------------------------------------------------------------
# a = Q R (reduced, m >= n). Forward: C = Q^T da R^-1, W = tril(C, -1) - tril(C, -1)^T,
# dQ = Q W + (I - Q Q^T) da R^-1, dR = (C - W) R. Reverse: M = R gR^T - gQ^T Q,
# ga = (gQ + Q copyltu(M)) R^-T, copyltu mirroring the lower triangle.


@vjp(np.linalg.qr)
def qr(g, ans, a, mode="reduced"):
    f = qr_factors(ans, a, mode)
    q = f[0]
    r = f[1]
    gq = adjoint_part(g, 0, q)
    m = r @ np.swapaxes(adjoint_part(g, 1, r), -1, -2) - np.swapaxes(gq, -1, -2) @ q
    b = gq + q @ symmetric_from_triangle(m)
    return np.swapaxes(triangular_solve(r, np.swapaxes(b, -1, -2)), -1, -2)


@jvp(np.linalg.qr)
def qr_(tangents, ans, a, mode="reduced"):
    f = qr_factors(ans, a, mode)
    q = f[0]
    r = f[1]
    dar = np.swapaxes(
        triangular_solve(r, np.swapaxes(tangents[0], -1, -2), 1, False, False, a), -1, -2
    )
    c = np.swapaxes(q, -1, -2) @ dar
    w = triangle(c, True, True) - np.swapaxes(triangle(c, True, True), -1, -2)
    out = (q @ w + dar - q @ c, (c - w) @ r)
    return out


# -- the helpers' own rules (second order) -------------------------------------------------------

registry.register_nondiff([other_trans, largest_entries, phase_unit])
registry.linear(
    transpose_if,
    triangle,
    symmetric_from_triangle,
    triangle_adjoint,
    half_triangle,
    adjoint_part,
    svd_outputs,
)
registry.linear(triangular_solve_adjoint_a, positions=(0, 1))


@vjp(transpose_if)
def transpose_if_(g, ans, x, flag):
    return transpose_if(g, flag), None


@vjp(triangle)
def triangle_(g, ans, x, lower=True, unit_diagonal=False):
    return triangle(g, lower, unit_diagonal)


@vjp(symmetric_from_triangle)
def symmetric_from_triangle_(g, ans, t, upper=False):
    return triangle_adjoint(g, upper)


@vjp(triangle_adjoint)
def triangle_adjoint_(g, ans, s, upper=False):
    return symmetric_from_triangle(g, upper)


@vjp(half_triangle)
def half_triangle_(g, ans, x, upper=False):
    return half_triangle(g, upper)  # a mask: its own transpose


@registry.batched(adjoint_part)
def adjoint_part_(tangents, ans, g, k, like, packed=True, alone=0):
    return batch_adjoint_part(tangents[0], k, like, packed, alone)


@jvp(inverse_gaps)
def inverse_gaps_(tangents, ans, w):
    return -(ans * ans) * (np.expand_dims(tangents[0], -2) - np.expand_dims(tangents[0], -1))


@vjp(inverse_gaps)
def inverse_gaps_vjp(g, ans, w):
    h = -(ans * ans * g)
    return np.sum(h, axis=-2) - np.sum(h, axis=-1)


@jvp(triangular_solve)
def triangular_solve_(tangents, ans, a, b, trans=0, lower=False, unit_diagonal=False, like=None):
    rhs = triangular_rhs(tangents[0], tangents[1], a, b, ans, trans, lower, unit_diagonal)
    return triangular_solve(a, rhs, trans, lower, unit_diagonal, b)


@vjp(triangular_solve)
def triangular_solve_vjp(g, ans, a, b, trans=0, lower=False, unit_diagonal=False, like=None):
    gb = triangular_solve(a, g, other_trans(trans), lower, unit_diagonal)
    return (
        triangular_solve_adjoint_a(gb, ans, a, b, trans, lower, unit_diagonal),
        gb,
        None,
        None,
        None,
        None,
    )


@jvp(triangular_rhs)
def triangular_rhs_(tangents, ans, ta, tb, a, b, x, trans=0, lower=False, unit_diagonal=False):
    return triangular_rhs(
        tangents[0], tangents[1], a, b, x, trans, lower, unit_diagonal
    ) + triangular_rhs(ta, None, a, b, tangents[4], trans, lower, unit_diagonal)


@jvp(svd_factors)
def svd_factors_(tangents, ans, result, a, full_matrices=True, compute_uv=True, hermitian=False):
    # the tangent of the thin SVD along a's tangent (the result's, when the compiler has it,
    # is the same); svd_factors_tangent has no rules: third derivatives of svd stop there
    return svd_factors_tangent(tangents[1], ans)


@jvp(qr_factors)
def qr_factors_(tangents, ans, result, a, mode="reduced"):
    return tangents[0]


@jvp(real_factors)
def real_factors_(tangents, ans, result, a, name):
    return tangents[0]


@jvp(eig_factors)
def eig_factors_(tangents, ans, result, a, w=None):
    return tangents[0]
