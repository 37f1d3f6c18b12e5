"""Rules of ``scipy.linalg``: cholesky, cho_factor, cho_solve, solve_triangular.

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
"""

import numpy as np
import scipy.linalg

from ..matrix_helpers import (
    adjoint_part,
    half_triangle,
    other_trans,
    pair_adjoint,
    pair_part,
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

registry.register_nondiff([upper_from_lower, other_trans])
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
