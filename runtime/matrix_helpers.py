"""Helpers the rules of matrix decompositions call (`runtime/rules/decompositions.py`,
`runtime/rules/scipy_linalg.py`).

The decomposition rules are written as straight-line NumPy over primitives that have rules
(``@``, ``np.swapaxes``, ``np.einsum``, ...), so that the compiler can differentiate the code it
inlines again (Hessians) without a hand-written second derivative. What cannot be written that
way lives here, each helper small and with rules of its own (registered next to the rules that
call it):

- triangle maps (`symmetric_from_triangle` and its transpose `triangle_adjoint`,
  `half_triangle`, `triangle`): NumPy's ``cholesky`` and ``eigh`` read one triangle of their
  argument, so their derivatives are those of functions of that triangle;
- `inverse_gaps`, the ``1 / (w_j - w_i)`` matrix of eigenvalue (or squared singular value)
  gaps, 0 on exact ties instead of inf (the documented limit at repeated eigenvalues);
- `adjoint_part`, one component of the adjoint of a tuple result (``w, v = eigh(a)``: the
  adjoint of an unused component is a missing entry, which reads as zeros here);
- `triangular_solve`, SciPy's ``solve_triangular`` when SciPy is installed (NumPy's general
  solve otherwise, and for stacks of matrices);
- LU pivots as row orders (`lu_rows`, `permute_rows`), the Fréchet derivative of the matrix
  exponential (`expm_frechet_of` and the block matrices its own derivatives need) and
  Sylvester solves (`sylvester_solve`) for the rules of ``scipy.linalg``.

NumPy only at module level: SciPy is imported inside the one helper that uses it.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "adjoint_part",
    "batch_adjoint_part",
    "block_corner",
    "block_diagonal_sum",
    "eig_factors",
    "expm_frechet_of",
    "frechet_block",
    "half_triangle",
    "inverse_gaps",
    "largest_entries",
    "lu_result",
    "lu_rows",
    "other_trans",
    "pair_adjoint",
    "pair_part",
    "permute_rows",
    "phase_unit",
    "qr_factors",
    "real_factors",
    "svd_factors",
    "svd_factors_tangent",
    "svd_outputs",
    "sylvester_rhs",
    "sylvester_solve",
    "symmetric_from_triangle",
    "transpose_if",
    "triangle",
    "triangle_adjoint",
    "triangular_rhs",
    "triangular_solve",
    "triangular_solve_adjoint_a",
    "upper_from_lower",
]


def _upper(flag) -> bool:
    """``upper=True`` or ``UPLO="U"``: the upper triangle is the one read."""
    return flag in ("U", "u") if isinstance(flag, str) else bool(flag)


def _swap(x):
    return np.swapaxes(x, -1, -2)


def transpose_if(x, flag):
    """``x`` with its last two axes swapped when `flag` is true (an upper Cholesky factor is
    the transpose of the lower one; None stays None). Linear, its own transpose."""
    return _swap(x) if flag and x is not None else x


def triangle(x, lower=True, unit_diagonal=False):
    """The triangle of `x` that a triangular solve reads: lower (or upper), without the
    diagonal when it is taken to be ones. A projection, so its own transpose."""
    k = -1 if unit_diagonal else 0
    if lower:
        return np.tril(x, k)
    return np.triu(x, -k)


def symmetric_from_triangle(t, upper=False):
    """The symmetric matrix NumPy's ``cholesky``/``eigh`` see in `t`: its lower triangle (the
    upper with ``upper``/``UPLO="U"``) mirrored. Linear; its transpose is `triangle_adjoint`."""
    if _upper(upper):
        return np.triu(t) + _swap(np.triu(t, 1))
    return np.tril(t) + _swap(np.tril(t, -1))


def triangle_adjoint(s, upper=False):
    """The transpose of `symmetric_from_triangle`: the adjoint of the triangle read, from the
    adjoint `s` of the symmetric matrix (off-diagonal entries count twice when `s` is
    symmetric, and the other triangle gets nothing)."""
    if _upper(upper):
        return np.triu(s) + np.triu(_swap(s), 1)
    return np.tril(s) + np.tril(_swap(s), -1)


def half_triangle(x, upper=False):
    """The lower triangle of `x` with its diagonal halved (``Phi`` of the Cholesky derivative;
    the upper triangle when `upper`). A mask, so its own transpose."""
    if _upper(upper):
        return np.triu(x, 1) + 0.5 * np.triu(np.tril(x))
    return np.tril(x, -1) + 0.5 * np.triu(np.tril(x))


def inverse_gaps(w):
    """``F[..., i, j] = 1 / (w[..., j] - w[..., i])`` for eigenvalues `w`; 0 where they are
    equal (the diagonal, and exact ties). The derivative of an eigenvector divides by the gaps;
    on an exact tie the eigenvectors are not differentiable, and dropping the tied pair keeps
    the result finite (see `runtime/rules/decompositions.py`)."""
    w = np.asarray(w)
    gaps = w[..., None, :] - w[..., :, None]
    tied = gaps == 0
    return np.where(tied, 0.0, 1.0 / np.where(tied, 1.0, gaps))


def adjoint_part(g, k, like, packed=True, alone=0):
    """Component `k` of the adjoint `g` of a tuple result (zeros shaped like `like` when the
    output never used it). With ``packed=False`` the primitive returned a single array (``svd``
    with ``compute_uv=False``) that stands for component `alone`: `g` is that adjoint."""
    if not packed:
        return g if k == alone else np.zeros(np.shape(like))
    part = g[k] if isinstance(g, (dict, list, tuple)) else None
    if part is None or (np.ndim(part) == 0 and np.ndim(like) > 0):
        part = np.broadcast_to(0.0 if part is None else part, np.shape(like))
    return part


def batch_adjoint_part(t, k, like, packed=True, alone=0):
    """`adjoint_part` of a batched tangent `t` (directions on a leading axis)."""
    if not packed:
        if k == alone:
            return t
        return np.zeros((_directions(t), *np.shape(like)))
    part = t[k] if isinstance(t, (dict, list, tuple)) else None
    if part is None or (np.ndim(part) <= 1 and np.ndim(like) > 0):
        count = _directions(t) if part is None or np.ndim(part) == 0 else len(part)
        base = np.zeros((count, *np.shape(like)))
        if part is not None:
            base = base + np.reshape(part, (count,) + (1,) * np.ndim(like))
        return base
    return part


def _directions(t) -> int:
    batch = getattr(t, "batch", None)
    if batch is not None:
        return int(batch)
    if isinstance(t, dict):
        t = next(iter(t.values()))
    elif isinstance(t, (list, tuple)):
        t = t[0]
    return int(np.shape(t)[0])


def svd_factors(ans, a, full_matrices=True, compute_uv=True, hermitian=False):
    """The thin SVD ``(u, s, vh)`` of `a` that the rules of ``np.linalg.svd`` work with: the
    result itself, or (``compute_uv=False``) computed again. Full matrices of a non-square
    `a` hold columns that are not determined by `a` (not differentiable): a ValueError."""
    shape = np.shape(a)
    if compute_uv and full_matrices and shape[-1] != shape[-2]:
        raise ValueError(
            "the derivative of np.linalg.svd(a, full_matrices=True) is not defined for a "
            f"non-square a (shape {shape}): the extra singular vectors are arbitrary; pass "
            "full_matrices=False"
        )
    if np.iscomplexobj(a):
        raise ValueError("derivatives of np.linalg.svd are implemented for real matrices only")
    if not compute_uv:
        return np.linalg.svd(a, full_matrices=False)
    return ans


def svd_outputs(parts, compute_uv=True):
    """The tangent of ``svd(a, compute_uv=...)`` from the tangents ``(du, ds, dvh)`` of the
    thin factors: all three, or ``ds`` alone. Linear."""
    return parts if compute_uv else parts[1]


def svd_factors_tangent(ta, factors):
    """The tangent ``(du, ds, dvh)`` of the thin SVD `factors` of ``a`` along `ta` (the forward
    rule of `svd_factors`; the same formula as np.linalg.svd's forward rule, which is written
    out as a template so that it can be differentiated again). Batched `ta` broadcast."""
    u, s, vh = factors
    if ta is None:
        return tuple(np.zeros_like(f) for f in factors)
    v = _swap(vh)
    dp = _swap(u) @ ta @ v
    dpt = _swap(dp)
    gaps = inverse_gaps(s * s)
    s_row = s[..., None, :]
    s_col = s[..., :, None]
    from .array_helpers import safe_divide

    du = u @ (gaps * (dp * s_row + s_col * dpt)) + safe_divide(ta @ v - u @ dp, s_row)
    dv = v @ (gaps * (s_col * dp + dpt * s_row)) + safe_divide(_swap(ta) @ u - v @ dpt, s_row)
    return (du, np.einsum("...ii->...i", dp), _swap(dv))


def qr_factors(ans, a, mode="reduced"):
    """The factors ``(q, r)`` of ``np.linalg.qr(a, mode)`` that its rules support: reduced
    (or complete, for a square or wide `a`... only where it equals reduced) of a real matrix
    with at least as many rows as columns; a ValueError otherwise."""
    m, n = np.shape(a)[-2:]
    if mode not in ("reduced", "complete") or (mode == "complete" and m != n):
        raise ValueError(
            f"derivatives of np.linalg.qr(a, mode={mode!r}) are not implemented; use "
            "mode='reduced' (the default)"
        )
    if m < n:
        raise ValueError(
            f"derivatives of np.linalg.qr are implemented for m >= n only (a has shape "
            f"{np.shape(a)}): R is not square and its trailing columns are not determined"
        )
    if np.iscomplexobj(a):
        raise ValueError("derivatives of np.linalg.qr are implemented for real matrices only")
    return ans


def real_factors(ans, a, name):
    """`ans`, the result of ``np.linalg.{name}(a)``, for rules written for real symmetric
    matrices (cholesky, eigh, eigvalsh): a complex Hermitian `a` is a ValueError (their
    derivatives there need conjugates and a phase the rules do not have; they were wrong)."""
    if np.iscomplexobj(a):
        raise ValueError(
            f"derivatives of np.linalg.{name} are implemented for real matrices only "
            f"(a is complex)"
        )
    return ans


# -- triangular solves ---------------------------------------------------------------------------


def _transposed(trans) -> bool:
    return trans in (1, 2, "T", "C")


def other_trans(trans):
    """The `trans` flag of the transposed solve (the adjoint of a triangular solve)."""
    return 0 if _transposed(trans) else 1


def _solve_one(a, b, trans, lower, unit_diagonal):
    if a.ndim == 2:
        try:
            from scipy.linalg import solve_triangular
        except ImportError:  # pragma: no cover (the dev extra installs SciPy)
            pass
        else:
            flag = 1 if _transposed(trans) else 0
            return solve_triangular(a, b, trans=flag, lower=lower, unit_diagonal=unit_diagonal)
    t = triangle(a, lower, unit_diagonal)
    if unit_diagonal:
        t = t + np.eye(a.shape[-1])
    if _transposed(trans):
        t = _swap(t)
    if np.ndim(b) == a.ndim - 1:
        return np.linalg.solve(t, np.asarray(b)[..., None])[..., 0]
    return np.linalg.solve(t, b)


def triangular_solve(a, b, trans=0, lower=False, unit_diagonal=False, like=None):
    """``scipy.linalg.solve_triangular(a, b, trans, lower, unit_diagonal)``: ``op(T) x = b``
    where ``T`` is the lower (or upper) triangle of `a` and ``op`` transposes it when `trans`
    is 1/'T'. SciPy when it is installed and `a` is one matrix; otherwise (stacks of matrices,
    no SciPy) NumPy's general solve on the triangle, which gives the same result.

    `like` is the right side of the call being differentiated: a `b` with one more axis is a
    batch of right sides (directions of a batched forward sweep), solved one by one."""
    a = np.asarray(a)
    if like is not None and np.ndim(b) > np.ndim(like):
        return np.stack([_solve_one(a, each, trans, lower, unit_diagonal) for each in b])
    return _solve_one(a, b, trans, lower, unit_diagonal)


def _vector(like, a) -> bool:
    return np.ndim(like) == np.ndim(a) - 1


def triangular_solve_adjoint_a(gb, x, a, b, trans=0, lower=False, unit_diagonal=False):
    """The adjoint of `a` in ``x = solve_triangular(a, b, trans, lower, unit_diagonal)`` from
    ``gb``, the adjoint of `b` (``op(T)^-T`` applied to x's adjoint): ``-gb x^T`` (its
    transpose when ``trans``), restricted to the triangle that was read. Bilinear in `gb`
    and `x` (either may carry a leading batch axis)."""
    if _vector(b, a):
        outer = np.einsum("...i,...j->...ij", gb, x)
    else:
        outer = gb @ _swap(x)
    if _transposed(trans):
        outer = _swap(outer)
    return -triangle(outer, lower, unit_diagonal)


def triangular_rhs(ta, tb, a, b, x, trans=0, lower=False, unit_diagonal=False):
    """``tb - op(tT) x``: the right side whose triangular solve is the tangent of ``x =
    solve_triangular(a, b)`` (`ta`, `tb` the tangents of `a`, `b`, `x` the solution or its
    tangent; None: none)."""
    out = 0.0 if tb is None else tb
    if ta is not None and x is not None:
        t = triangle(ta, lower, unit_diagonal)
        if _transposed(trans):
            t = _swap(t)
        if _vector(b, a):
            out = out - np.einsum("...ij,...j->...i", t, x)
        else:
            out = out - t @ x
    return out


def upper_from_lower(lower):
    """``not lower``: SciPy names the triangle by ``lower``, the helpers by ``upper``."""
    return not lower


def pair_part(t, k):
    """Item `k` of `t` (the tangent of SciPy's ``(c, lower)`` pair), None when `t` is None
    (the pair does not vary). Linear."""
    return None if t is None else t[k]


def pair_adjoint(gc, batch=None):
    """The adjoint of SciPy's ``(c, lower)`` pair whose ``c`` has adjoint `gc` (``lower`` has
    none): a container adjoint, which sums with other adjoints of the pair by key. Linear.
    `batch`: the number of directions of a batched tangent `gc` (on its leading axis)."""
    from .containers import ContainerAdjoint

    return ContainerAdjoint({0: gc}, batch=batch)


# -- eig -----------------------------------------------------------------------------------------


def eig_factors(result, a, w=None):
    """``(w, v) = np.linalg.eig(a)`` as its rules use it: when `w` is given (the result of
    ``np.linalg.eigvals(a)``), in the same order as `w` (LAPACK computes both the same way; a
    ValueError rather than a wrong derivative if they ever differ)."""
    if w is not None and not np.allclose(result[0], w, rtol=1e-10, atol=1e-12):
        raise ValueError("np.linalg.eig and np.linalg.eigvals ordered the eigenvalues differently")
    return result


def largest_entries(v):
    """A mask (of `v`'s shape, ones and zeros) of the entry of largest modulus in each column
    of the eigenvectors `v`: LAPACK's ``geev`` makes that entry real, which fixes the phase
    of a complex eigenvector (a real one has no phase to fix). Piecewise constant: no
    derivative."""
    v = np.asarray(v)
    rows = np.argmax(np.abs(v), axis=-2)
    return (np.arange(v.shape[-2])[:, None] == rows[..., None, :]).astype(float)


def phase_unit(v):
    """``1j`` for complex eigenvectors `v`, ``0.0`` for real ones: the factor of the terms of
    the rules of ``eig`` that keep each vector's largest entry real (for real vectors they
    vanish and the rules stay real). A constant."""
    return 1j if np.iscomplexobj(v) else 0.0


# -- LU ------------------------------------------------------------------------------------------


def lu_rows(piv, apply=True, lu=None):
    """The row order of ``P @ a`` for the pivots `piv` of ``scipy.linalg.lu_factor(a)``
    (``P a = L U``: ``a[lu_rows(piv)]``): LAPACK swapped row ``i`` with row ``piv[i]``, one
    after the other. ``apply=False``: the identity order. A stack of factors (pivots of shape
    ``(..., n)``) gives a stack of orders; a non-square `lu` is a ValueError."""
    piv = np.asarray(piv)
    shape = np.shape(lu) if lu is not None else (*np.shape(piv), np.shape(piv)[-1])
    if piv.ndim < 1 or len(shape) != piv.ndim + 1 or shape[-1] != shape[-2] or (
        shape[:-1] != piv.shape
    ):
        raise ValueError(
            "derivatives of scipy.linalg.lu_factor/lu_solve are implemented for square "
            f"matrices (factor of shape {shape}, pivots of shape {piv.shape})"
        )
    n = piv.shape[-1]
    if piv.ndim == 1:
        rows = np.arange(n)
        if apply:
            for i, j in enumerate(piv):
                rows[i], rows[j] = rows[j], rows[i]
        return rows
    rows = np.broadcast_to(np.arange(n), piv.shape).copy()
    if apply:  # the same swaps, matrix by matrix
        for i in range(n):
            j = piv[..., i : i + 1]
            here = rows[..., i : i + 1].copy()
            rows[..., i : i + 1] = np.take_along_axis(rows, j, -1)
            np.put_along_axis(rows, j, here, -1)
    return rows


def permute_rows(x, rows, like):
    """The rows of `x` taken in the order `rows`: axis -2 when `like` (the array whose rows
    these are) is a matrix, -1 when it is a vector, so a leading axis of directions passes.
    A stack of orders (`rows` of shape ``(..., n)``) permutes each matrix of a stack by its
    own (`like` then a stack of matrices, or of vectors with `rows`' shape). None stays None.
    Linear; its transpose takes the rows back (``np.argsort(rows)``)."""
    if x is None:
        return None
    rows = np.asarray(rows)
    if rows.ndim == 1:
        return np.take(x, rows, axis=-2 if np.ndim(like) >= 2 else -1)
    x = np.asarray(x)
    matrix = np.ndim(like) > rows.ndim
    index = rows[..., :, None] if matrix else rows
    index = np.reshape(index, (1,) * (x.ndim - index.ndim) + index.shape)
    return np.take_along_axis(x, index, axis=-2 if matrix else -1)


def lu_result(result, a, permute_l=False, p_indices=False):
    """The result ``(p, l, u)`` of ``scipy.linalg.lu(a)``, after checking that the call is one
    the rules cover: square matrices (one, or a stack), the default ``(p, l, u)`` result
    (``p`` a matrix)."""
    shape = np.shape(a)
    if permute_l or p_indices or len(shape) < 2 or shape[-1] != shape[-2]:
        raise ValueError(
            "derivatives of scipy.linalg.lu are implemented for square matrices and the "
            f"default result (p, l, u); got a of shape {shape}, permute_l={permute_l}, "
            f"p_indices={p_indices}"
        )
    return result


# -- expm ----------------------------------------------------------------------------------------


def expm_frechet_of(a, e):
    """``scipy.linalg.expm_frechet(a, e, compute_expm=False)``: the derivative of ``expm`` at
    `a` along `e` (stacks on leading axes broadcast; None: no `e`, zeros). Its own
    derivatives are Fréchet derivatives of twice the size: ``L(a, e)`` is the top-right block
    of ``expm([[a, e], [0, a]])`` (see `frechet_block`)."""
    from scipy.linalg import expm_frechet

    if e is None:
        return np.zeros(np.shape(a))
    a, e = np.broadcast_arrays(np.asarray(a, dtype=float), np.asarray(e))
    return expm_frechet(a, e, compute_expm=False)


def frechet_block(a, e):
    """``[[a, e], [0, a]]`` for matrices on the last two axes (None: zeros), whose exponential
    holds ``L(a, e)`` top right. Linear in ``(a, e)`` together; its transpose is
    ``(block_diagonal_sum(g), block_corner(g))``."""
    like = e if a is None else a
    a = np.zeros(np.shape(like)) if a is None else np.asarray(a)
    e = np.zeros(np.shape(like)) if e is None else np.asarray(e)
    a, e = np.broadcast_arrays(a, e)
    top = np.concatenate([a, e], axis=-1)
    return np.concatenate([top, np.concatenate([np.zeros_like(a), a], axis=-1)], axis=-2)


def block_corner(m):
    """The top-right quarter of the matrices `m` (even size). Linear."""
    n = np.shape(m)[-1] // 2
    return m[..., :n, n:]


def block_diagonal_sum(m):
    """The sum of the two diagonal quarters of the matrices `m` (even size). Linear."""
    n = np.shape(m)[-1] // 2
    return m[..., :n, :n] + m[..., n:, n:]


# -- Sylvester equations -------------------------------------------------------------------------


def sylvester_solve(a, b, q):
    """``scipy.linalg.solve_sylvester(a, b, q)``: ``x`` with ``a x + x b = q`` (stacks on
    leading axes broadcast, so a leading axis of directions in `q` passes)."""
    from scipy.linalg import solve_sylvester

    return solve_sylvester(a, b, q)


def sylvester_rhs(tq, ta, tb, x):
    """``tq - ta x - x tb`` (None: no such term): the right side whose Sylvester solve is the
    tangent of ``x = solve_sylvester(a, b, q)``."""
    out = 0.0 if tq is None else tq
    if x is None:
        return out
    if ta is not None:
        out = out - ta @ x
    if tb is not None:
        out = out - x @ tb
    return out
