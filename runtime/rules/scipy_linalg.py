"""Rules of ``scipy.linalg``: cholesky, cho_factor, cho_solve, solve_triangular, lu_factor,
lu_solve, lu, expm, sqrtm, solve_sylvester.

Loaded when SciPy is importable (this module imports it). The templates reuse the helpers
and conventions of ``runtime/rules/decompositions.py``: SciPy's ``cholesky(a, lower=False)``
reads the upper triangle by default (the lower one with ``lower=True``) and its derivative is
that of the factor of that triangle; ``solve_triangular`` reads one triangle of ``a`` (without
the diagonal when ``unit_diagonal``), so the adjoint of ``a`` lives there.

``cho_factor`` returns ``(c, lower)``: the factor in one triangle of ``c`` and the entries of
``a`` untouched in the other (LAPACK leaves them), so its rule passes the other triangle's
adjoint straight through. It is registered as returning a tuple (no ``output=``), so both
``c = cho_factor(a)`` and ``c, lower = cho_factor(a)`` work; ``lower`` has no derivative.
``cho_solve((c, lower), b)`` reads only the factor's
triangle; its rules are the two triangular solves ``x = L^-T (L^-1 b)`` it performs,
differentiated one after the other.

``lu_factor`` returns ``(lu, piv)`` with ``P a = L U`` (``L`` unit lower, ``U`` upper, both
held in ``lu``); like ``cho_factor`` it is registered as returning a tuple, ``piv`` has no
derivative. With ``X = L^-1 P da U^-1``: ``dL = L tril(X, -1)``, ``dU = triu(X) U``. Square
matrices, one or a stack (SciPy's batched calls: each matrix its own pivots, `lu_rows` and
`permute_rows`). ``lu_solve((lu, piv), b, trans)`` is a row permutation and two
triangular solves (in the other order, the permutation last, when ``trans``), differentiated
one after the other like ``cho_solve``. ``lu(a)`` returns ``(p, l, u)``, ``a = p l u``: the
same derivative, ``p`` constant.

``expm``: the derivative along ``e`` is the Fréchet derivative ``L(a, e)`` (SciPy's
``expm_frechet``); the adjoint is ``L(a^T, g)``. ``L`` itself is differentiated as the corner
of ``expm([[a, e], [0, a]])``, so each order doubles the size of the matrices.
``sqrtm``: ``x dx + dx x = da``, a Sylvester equation; the adjoint solves the transposed one.
A complex square root of a real matrix (negative eigenvalues) follows the complex convention
of ``runtime/fft_helpers.py`` (the real part of the adjoint goes to a real ``a``); its own
tangent is right, but np.real/np.imag of it in forward mode are not yet (their forward rules
assume real input).
``solve_sylvester(a, b, q)`` (``a x + x b = q``): the tangent solves the same equation with
``dq - da x - x db`` on the right; ``q``'s adjoint solves the transposed one, and ``a``'s and
``b``'s follow from it (``-gq x^T``, ``-x^T gq``).
"""

import numpy as np
import scipy.linalg

from ..fft_helpers import real_like
from ..matrix_helpers import (
    adjoint_part,
    block_corner,
    block_diagonal_sum,
    expm_frechet_of,
    frechet_block,
    half_triangle,
    lu_result,
    lu_rows,
    other_trans,
    pair_adjoint,
    pair_part,
    permute_rows,
    sylvester_rhs,
    sylvester_solve,
    symmetric_from_triangle,
    transpose_if,
    triangle,
    triangle_adjoint,
    triangular_rhs,
    triangular_solve,
    triangular_solve_adjoint_a,
    upper_from_lower,
)
from ..registry import registry

vjp = registry.vjp
jvp = registry.jvp
linalg = scipy.linalg

registry.register_nondiff([upper_from_lower, other_trans, lu_rows])
registry.linear(pair_part, pair_adjoint)


@registry.batched(pair_adjoint)
def pair_adjoint_batched(tangents, ans, gc, batch=None):
    return pair_adjoint(tangents[0], len(tangents[0]))


@vjp(linalg.solve_triangular)
def solve_triangular(
    g, ans, a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True
):
    gb = triangular_solve(a, g, other_trans(trans), lower, unit_diagonal)
    ga = triangular_solve_adjoint_a(gb, ans, a, b, trans, lower, unit_diagonal)
    return ga, gb, None, None, None, None, None


@jvp(linalg.solve_triangular)
def solve_triangular_(
    tangents,
    ans,
    a,
    b,
    trans=0,
    lower=False,
    unit_diagonal=False,
    overwrite_b=False,
    check_finite=True,
):
    rhs = triangular_rhs(tangents[0], tangents[1], a, b, ans, trans, lower, unit_diagonal)
    return triangular_solve(a, rhs, trans, lower, unit_diagonal, b)


@vjp(linalg.cholesky)
def cholesky(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    upper = upper_from_lower(lower)
    factor = transpose_if(ans, upper)
    p = half_triangle(np.swapaxes(factor, -1, -2) @ transpose_if(g, upper))
    x = triangular_solve(factor, p, 1, True)
    s = np.swapaxes(triangular_solve(factor, np.swapaxes(x, -1, -2), 1, True), -1, -2)
    return triangle_adjoint(s, upper)


@jvp(linalg.cholesky)
def cholesky_(tangents, ans, a, lower=False, overwrite_a=False, check_finite=True):
    upper = upper_from_lower(lower)
    factor = transpose_if(ans, upper)
    x = triangular_solve(factor, symmetric_from_triangle(tangents[0], upper), 0, True, False, a)
    y = triangular_solve(factor, np.swapaxes(x, -1, -2), 0, True, False, a)
    return transpose_if(factor @ half_triangle(y), upper)


@vjp(linalg.cho_factor)
def cho_factor(g, ans, a, lower=False, overwrite_a=False, check_finite=True):
    # the triangle of c that is not the factor holds a's entries (lower has no adjoint)
    upper = upper_from_lower(ans[1])
    gc = adjoint_part(g, 0, ans[0])
    factor = transpose_if(triangle(ans[0], ans[1]), upper)
    gf = transpose_if(triangle(gc, ans[1]), upper)
    p = half_triangle(np.swapaxes(factor, -1, -2) @ gf)
    x = triangular_solve(factor, p, 1, True)
    s = np.swapaxes(triangular_solve(factor, np.swapaxes(x, -1, -2), 1, True), -1, -2)
    return triangle_adjoint(s, upper) + triangle(gc, upper, True)


@jvp(linalg.cho_factor)
def cho_factor_(tangents, ans, a, lower=False, overwrite_a=False, check_finite=True):
    upper = upper_from_lower(ans[1])
    factor = transpose_if(triangle(ans[0], ans[1]), upper)
    x = triangular_solve(factor, symmetric_from_triangle(tangents[0], upper), 0, True, False, a)
    y = triangular_solve(factor, np.swapaxes(x, -1, -2), 0, True, False, a)
    tc = transpose_if(factor @ half_triangle(y), upper) + triangle(tangents[0], upper, True)
    out = (tc, 0.0)
    return out


@vjp(linalg.cho_solve)
def cho_solve(g, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    upper = upper_from_lower(c_and_lower[1])
    factor = transpose_if(c_and_lower[0], upper)
    y = triangular_solve(factor, b, 0, True)
    gy = triangular_solve(factor, g, 0, True)
    gb = triangular_solve(factor, gy, 1, True)
    gl = triangular_solve_adjoint_a(gy, ans, factor, b, 1, True) + triangular_solve_adjoint_a(
        gb, y, factor, b, 0, True
    )
    return pair_adjoint(transpose_if(gl, upper)), gb, None, None


@jvp(linalg.cho_solve)
def cho_solve_(tangents, ans, c_and_lower, b, overwrite_b=False, check_finite=True):
    upper = upper_from_lower(c_and_lower[1])
    factor = transpose_if(c_and_lower[0], upper)
    tl = transpose_if(pair_part(tangents[0], 0), upper)
    y = triangular_solve(factor, b, 0, True)
    ty = triangular_solve(
        factor, triangular_rhs(tl, tangents[1], factor, b, y, 0, True), 0, True, False, b
    )
    return triangular_solve(
        factor, triangular_rhs(tl, ty, factor, b, ans, 1, True), 1, True, False, b
    )


# -- LU ------------------------------------------------------------------------------------------


@vjp(linalg.lu_factor)
def lu_factor(g, ans, a, overwrite_a=False, check_finite=True):
    # piv has no adjoint; X = L^-1 P da U^-1 gets tril(L^T g, -1) + triu(g U^T)
    lu = ans[0]
    gc = adjoint_part(g, 0, lu)
    lower = triangle(lu, True, True) + np.eye(np.shape(lu)[-1])
    gx = triangle(np.swapaxes(lower, -1, -2) @ gc, True, True) + triangle(
        gc @ np.swapaxes(triangle(lu, False), -1, -2), False
    )
    z = triangular_solve(lu, gx, 1, True, True)
    w = triangular_solve(lu, np.swapaxes(z, -1, -2), 0, False)
    return permute_rows(np.swapaxes(w, -1, -2), np.argsort(lu_rows(ans[1], True, lu)), a)


@jvp(linalg.lu_factor)
def lu_factor_(tangents, ans, a, overwrite_a=False, check_finite=True):
    lu = ans[0]
    da = permute_rows(tangents[0], lu_rows(ans[1], True, lu), a)
    y = triangular_solve(lu, da, 0, True, True, a)
    x = np.swapaxes(triangular_solve(lu, np.swapaxes(y, -1, -2), 1, False, False, a), -1, -2)
    lower = triangle(lu, True, True) + np.eye(np.shape(lu)[-1])
    out = (lower @ triangle(x, True, True) + triangle(x, False) @ triangle(lu, False), 0.0)
    return out


# x = Q2 S2^-1 S1^-1 Q1 b: Q1 = P, S1 = L, S2 = U, Q2 = I (trans=0), or Q1 = I, S1 = U^T,
# S2 = L^T, Q2 = P^T (trans=1). `plain` is 1 when not transposed, `tr` 1 when transposed.


@vjp(linalg.lu_solve)
def lu_solve(g, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    lu = lu_and_piv[0]
    plain = other_trans(trans)
    tr = other_trans(plain)
    first = lu_rows(lu_and_piv[1], plain, lu)
    last = lu_rows(lu_and_piv[1], tr, lu)
    pb = permute_rows(b, first, b)
    y = triangular_solve(lu, pb, tr, plain, plain)
    gy = triangular_solve(lu, permute_rows(g, last, b), plain, tr, tr)
    gpb = triangular_solve(lu, gy, plain, plain, plain)
    gl = triangular_solve_adjoint_a(
        gy, permute_rows(ans, last, b), lu, y, tr, tr, tr
    ) + triangular_solve_adjoint_a(gpb, y, lu, pb, tr, plain, plain)
    return pair_adjoint(gl), permute_rows(gpb, np.argsort(first), b), None, None, None


@jvp(linalg.lu_solve)
def lu_solve_(tangents, ans, lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
    lu = lu_and_piv[0]
    plain = other_trans(trans)
    tr = other_trans(plain)
    first = lu_rows(lu_and_piv[1], plain, lu)
    last = lu_rows(lu_and_piv[1], tr, lu)
    tl = pair_part(tangents[0], 0)
    pb = permute_rows(b, first, b)
    y = triangular_solve(lu, pb, tr, plain, plain)
    ty = triangular_solve(
        lu,
        triangular_rhs(tl, permute_rows(tangents[1], first, b), lu, pb, y, tr, plain, plain),
        tr,
        plain,
        plain,
        b,
    )
    rhs = triangular_rhs(tl, ty, lu, y, permute_rows(ans, last, b), tr, tr, tr)
    return permute_rows(triangular_solve(lu, rhs, tr, tr, tr, b), np.argsort(last), b)


@vjp(linalg.lu)
def lu(g, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    f = lu_result(ans, a, permute_l, p_indices)
    low = f[1]
    up = f[2]
    gx = triangle(np.swapaxes(low, -1, -2) @ adjoint_part(g, 1, low), True, True) + triangle(
        adjoint_part(g, 2, up) @ np.swapaxes(up, -1, -2), False
    )
    z = triangular_solve(low, gx, 1, True, True)
    w = triangular_solve(up, np.swapaxes(z, -1, -2), 0, False)
    return f[0] @ np.swapaxes(w, -1, -2)


@jvp(linalg.lu)
def lu_(tangents, ans, a, permute_l=False, overwrite_a=False, check_finite=True, p_indices=False):
    f = lu_result(ans, a, permute_l, p_indices)
    low = f[1]
    up = f[2]
    y = triangular_solve(low, np.swapaxes(f[0], -1, -2) @ tangents[0], 0, True, True, a)
    x = np.swapaxes(triangular_solve(up, np.swapaxes(y, -1, -2), 1, False, False, a), -1, -2)
    out = (np.zeros_like(f[0]), low @ triangle(x, True, True), triangle(x, False) @ up)
    return out


# -- expm, sqrtm, solve_sylvester ----------------------------------------------------------------


@vjp(linalg.expm)
def expm(g, ans, A):
    return expm_frechet_of(np.swapaxes(A, -1, -2), g)


@jvp(linalg.expm)
def expm_(tangents, ans, A):
    return expm_frechet_of(A, tangents[0])


@vjp(linalg.sqrtm)
def sqrtm(g, ans, A, disp=None, blocksize=None):
    return real_like(sylvester_solve(np.swapaxes(ans, -1, -2), np.swapaxes(ans, -1, -2), g), A)


@jvp(linalg.sqrtm)
def sqrtm_(tangents, ans, A, disp=None, blocksize=None):
    return sylvester_solve(ans, ans, tangents[0])


@vjp(linalg.solve_sylvester, sylvester_solve)
def solve_sylvester(g, ans, a, b, q):
    gq = sylvester_solve(np.swapaxes(a, -1, -2), np.swapaxes(b, -1, -2), g)
    return -(gq @ np.swapaxes(ans, -1, -2)), -(np.swapaxes(ans, -1, -2) @ gq), gq


@jvp(linalg.solve_sylvester, sylvester_solve)
def solve_sylvester_(tangents, ans, a, b, q):
    return sylvester_solve(a, b, sylvester_rhs(tangents[2], tangents[0], tangents[1], ans))


# -- the helpers' own rules (second order) -------------------------------------------------------

registry.linear(permute_rows, block_corner, block_diagonal_sum)


@vjp(permute_rows)
def permute_rows_(g, ans, x, rows, like):
    return permute_rows(g, np.argsort(rows), like), None, None


@registry.batched(permute_rows)
def permute_rows_batched(tangents, ans, x, rows, like):
    return permute_rows(tangents[0], rows, like)


@vjp(block_corner)
def block_corner_(g, ans, m):
    return frechet_block(np.zeros_like(g), g)


@registry.batched(block_corner)
def block_corner_batched(tangents, ans, m):
    return block_corner(tangents[0])


@vjp(block_diagonal_sum)
def block_diagonal_sum_(g, ans, m):
    return frechet_block(g, np.zeros_like(g))


@registry.batched(block_diagonal_sum)
def block_diagonal_sum_batched(tangents, ans, m):
    return block_diagonal_sum(tangents[0])


@vjp(frechet_block)
def frechet_block_(g, ans, a, e):
    return block_diagonal_sum(g), block_corner(g)


@jvp(frechet_block)
def frechet_block_jvp(tangents, ans, a, e):
    return frechet_block(tangents[0], tangents[1])


@vjp(expm_frechet_of)
def expm_frechet_of_(g, ans, a, e):
    # L(a, e) is the corner of expm([[a, e], [0, a]]): the adjoint of that composition
    h = expm_frechet_of(
        np.swapaxes(frechet_block(a, e), -1, -2), frechet_block(np.zeros_like(g), g)
    )
    return block_diagonal_sum(h), block_corner(h)


@jvp(expm_frechet_of)
def expm_frechet_of_jvp(tangents, ans, a, e):
    return block_corner(
        expm_frechet_of(frechet_block(a, e), frechet_block(tangents[0], tangents[1]))
    )


@jvp(lu_result)
def lu_result_(tangents, ans, result, a, permute_l=False, p_indices=False):
    return tangents[0]


@jvp(sylvester_rhs)
def sylvester_rhs_(tangents, ans, tq, ta, tb, x):
    return sylvester_rhs(tangents[0], tangents[1], tangents[2], x) + sylvester_rhs(
        None, ta, tb, tangents[3]
    )
