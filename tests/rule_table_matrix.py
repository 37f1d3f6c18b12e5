"""Rows of the rule table (`tests/rule_table.py` explains a row) for matrix decompositions,
FFT, scipy.linalg and signal processing.

`rule_table` imports this module at its top, before it defines `Row`, so the rows cannot be
built when this module runs. `MATRIX` is a sequence that builds them the first time it is
read (``TABLE = [..., *MATRIX, ...]``, at the end of `rule_table`, when `Row` exists).

Rows of primitives returning a tuple of differentiable arrays (``eigh``, ``svd``, ``qr``,
``cho_factor``) pick a component with ``output=``; their rules are registered without
``output=`` (the compiler passes the adjoint of the whole tuple, see
``runtime/rules/decompositions.py``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

try:  # SciPy is optional at run time; the dev extra installs it (its rules load lazily)
    import scipy.linalg
    import scipy.signal
except ImportError:  # pragma: no cover
    scipy = None


def spd(rng, shape):
    """Symmetric positive definite matrices (stacked on leading axes), well conditioned."""
    b = rng.uniform(-1.0, 1.0, shape)
    return b @ np.swapaxes(b, -1, -2) + shape[-1] * np.eye(shape[-1])


def symmetric(rng, shape):
    """Symmetric matrices with well separated eigenvalues (a gap of at least 1)."""
    q = np.linalg.qr(rng.normal(size=shape))[0]
    w = np.arange(shape[-1], dtype=float) * 1.5 - 2.0 + rng.uniform(0.0, 0.3, shape[:-1])
    return (q * w[..., None, :]) @ np.swapaxes(q, -1, -2)


def triangular(rng, shape):
    """Matrices whose triangles are well conditioned (a dominant diagonal of either sign)."""
    a = rng.uniform(-0.5, 0.5, shape)
    return a + np.eye(shape[-1]) * (2.0 + rng.uniform(0.0, 1.0, shape[:-1]))[..., None]


def distinct_singular(rng, shape):
    """Matrices with distinct singular values, apart from each other and from 0."""
    m, n = shape[-2:]
    k = min(m, n)
    u = np.linalg.qr(rng.normal(size=(*shape[:-2], m, k)))[0]
    v = np.linalg.qr(rng.normal(size=(*shape[:-2], n, k)))[0]
    s = 1.0 + 0.8 * np.arange(k)[::-1] + rng.uniform(0.0, 0.2, (*shape[:-2], k))
    return (u * s[..., None, :]) @ np.swapaxes(v, -1, -2)


def real_eigen(rng, shape):
    """Non-symmetric matrices with real eigenvalues at least 1 apart and well-conditioned
    eigenvectors (``q diag(w) q^-1``, ``q`` near the identity)."""
    q = np.eye(shape[-1]) + 0.3 * rng.uniform(-1.0, 1.0, shape)
    w = np.arange(shape[-1], dtype=float) * 1.5 - 2.0 + rng.uniform(0.0, 0.3, shape[:-1])
    return (q * w[..., None, :]) @ np.linalg.inv(q)


def complex_eigen(rng, shape):
    """Real matrices whose eigenvalues are complex-conjugate pairs ``a +- ib`` (and one real
    eigenvalue for an odd size), all at least 1 apart, with well-conditioned eigenvectors:
    blocks ``[[a, -b], [b, a]]`` seen in a basis ``q`` near the identity."""
    n = shape[-1]
    q = np.eye(n) + 0.3 * rng.uniform(-1.0, 1.0, shape)
    block = np.zeros(shape)
    for k in range(0, n - 1, 2):
        a = 1.5 * k - 1.0 + rng.uniform(0.0, 0.3, shape[:-2])
        b = 1.0 + 0.5 * k + rng.uniform(0.0, 0.3, shape[:-2])
        block[..., k, k] = block[..., k + 1, k + 1] = a
        block[..., k, k + 1] = -b
        block[..., k + 1, k] = b
    if n % 2:
        block[..., n - 1, n - 1] = 2.5 + rng.uniform(0.0, 0.3, shape[:-2])
    return q @ block @ np.linalg.inv(q)


def small(rng, shape):
    """Matrices of moderate norm (so that expm's entries stay of order 1)."""
    return rng.uniform(-0.6, 0.6, shape)


SQUARE = (((3, 3),), ((2, 4, 4),))
PIVOTS = np.array([2, 2, 2])  # lu_factor's pivots of a 3 x 3 matrix: rows 0 and 2 swapped
STACKED_PIVOTS = np.array([[2, 2, 2], [1, 2, 2]])  # of a stack of two (0<->2; 0<->1, 1<->2)


def _rows(Row):
    fft = np.fft
    rows = [
        # -- decompositions -------------------------------------------------------------------
        Row(np.linalg.cholesky, SQUARE, domain=spd, tol=1e-5),
        Row(np.linalg.cholesky, (((3, 3),),), kwargs={"upper": True}, domain=spd, tol=1e-5),
        Row(np.linalg.eigvalsh, SQUARE, domain=symmetric, tol=1e-5),
        Row(np.linalg.eigvalsh, (((3, 3),),), kwargs={"UPLO": "U"}, domain=symmetric),
        Row(np.linalg.eigh, SQUARE, domain=symmetric, output=0, tol=1e-5),
        Row(np.linalg.eigh, SQUARE, domain=symmetric, output=1, tol=1e-5),
        Row(np.linalg.svdvals, (((4, 3),), ((2, 3, 5),)), domain=distinct_singular, tol=1e-5),
        Row(
            np.linalg.svd,
            (((4, 3),), ((3, 3),)),
            kwargs={"compute_uv": False},
            domain=distinct_singular,
            tol=1e-5,
        ),
        *[
            Row(
                np.linalg.svd,
                (((4, 3),), ((2, 3, 5),)),
                kwargs={"full_matrices": False},
                domain=distinct_singular,
                output=k,
                tol=1e-5,
            )
            for k in (0, 1, 2)
        ],
        Row(np.linalg.svd, (((3, 3),),), domain=distinct_singular, output=0, tol=1e-5),
        *[
            Row(np.linalg.qr, (((4, 3),), ((3, 3),), ((2, 4, 2),)), output=k, tol=1e-5)
            for k in (0, 1)
        ],
        *[Row(np.linalg.eig, SQUARE, domain=real_eigen, output=k, tol=1e-5) for k in (0, 1)],
        Row(np.linalg.eigvals, SQUARE, domain=real_eigen, tol=1e-5),
        # (complex eigenvectors: LAPACK may flip their signs between nearby matrices, so they
        # are checked through sign-invariant programs in tests/test_decompositions.py)
        Row(np.linalg.eig, SQUARE, domain=complex_eigen, output=0, tol=1e-5),
        Row(np.linalg.eigvals, SQUARE, domain=complex_eigen, tol=1e-5),
        # -- FFT ------------------------------------------------------------------------------
        *[Row(p, (((8,),), ((7,),), ((2, 6),))) for p in (fft.fft, fft.ifft, fft.rfft)],
        Row(fft.fft, (((5, 3),),), args=lambda x: (x, 4, 0)),
        Row(fft.ifft, (((5,),),), args=lambda x: (x, 8), kwargs={"norm": "ortho"}),
        Row(fft.rfft, (((6,),),), args=lambda x: (x, 9), kwargs={"norm": "forward"}),
        Row(fft.rfft, (((3, 5),),), kwargs={"axis": 0}),
        Row(fft.irfft, (((5,),), ((2, 4),))),
        Row(fft.irfft, (((5,),),), args=lambda x: (x, 9)),
        Row(fft.irfft, (((5,),),), args=lambda x: (x, 6), kwargs={"norm": "ortho"}),
        Row(fft.irfft, (((4, 3),),), kwargs={"axis": 0, "norm": "forward"}),
        *[Row(p, (((3, 4),), ((2, 3, 4),))) for p in (fft.fft2, fft.ifft2, fft.fftn, fft.ifftn)],
        Row(fft.fftn, (((3, 4, 2),),), kwargs={"axes": (0, 2), "s": (4, 3)}),
        Row(fft.ifftn, (((3, 4),),), kwargs={"axes": (1,), "norm": "ortho"}),
        Row(fft.fft2, (((3, 4, 2),),), kwargs={"axes": (0, 1), "norm": "forward"}),
        Row(fft.rfftn, (((3, 4),), ((2, 3, 5),))),
        Row(fft.rfftn, (((3, 4, 2),),), kwargs={"axes": (0, 1), "s": (2, 6)}),
        Row(fft.irfftn, (((3, 4),), ((2, 3, 3),))),
        Row(fft.irfftn, (((3, 4, 2),),), kwargs={"axes": (1, 0), "s": (4, 5), "norm": "ortho"}),
        *[Row(p, (((5,),), ((3, 4),))) for p in (fft.fftshift, fft.ifftshift)],
        *[Row(p, (((3, 4, 5),),), kwargs={"axes": (0, -1)}) for p in (fft.fftshift, fft.ifftshift)],
        # -- convolutions ---------------------------------------------------------------------
        *[
            Row(p, (((5,), (3,)), ((3,), (5,)), ((4,), (4,)), ((2,), (7,))), kwargs={"mode": m})
            for p in (np.convolve, np.correlate)
            for m in ("full", "same", "valid")
        ],
        Row(np.convolve, (((5,), (3,)),)),
        Row(np.correlate, (((5,), (3,)),)),
    ]
    rows += _helper_rows(Row) + _norm_rows(Row)
    if scipy is not None:
        rows += _scipy_rows(Row)
    return rows


def _scipy_rows(Row):
    """scipy.linalg and scipy.signal, with the helpers that only their rules call."""
    from s2sgrad import runtime

    linalg = scipy.linalg
    zeros = np.zeros
    square_pair = (((3, 3), (3, 3)), ((2, 3, 3), (2, 3, 3)))
    rows = [
        Row(linalg.cholesky, (((3, 3),),), domain=spd, tol=1e-5),
        Row(linalg.cholesky, (((4, 4),),), kwargs={"lower": True}, domain=spd, tol=1e-5),
        Row(linalg.cho_factor, (((3, 3),),), domain=spd, output=0, tol=1e-5),
        Row(
            linalg.cho_factor,
            (((4, 4),),),
            kwargs={"lower": True},
            domain=spd,
            output=0,
            tol=1e-5,
        ),
        Row(
            linalg.cho_solve,
            (((3, 3), (3,)), ((4, 4), (4, 2))),
            args=lambda c, b: ((c, True), b),
            domain=(triangular, (-2.0, 2.0)),
            tol=1e-5,
        ),
        Row(
            linalg.cho_solve,
            (((3, 3), (3, 2)),),
            args=lambda c, b: ((c, False), b),
            domain=(triangular, (-2.0, 2.0)),
            tol=1e-5,
        ),
        Row(
            linalg.solve_triangular,
            (((3, 3), (3,)), ((4, 4), (4, 2))),
            domain=(triangular, (-2.0, 2.0)),
            tol=1e-5,
        ),
        *[
            Row(
                linalg.solve_triangular,
                (((3, 3), (3, 2)),),
                kwargs=kw,
                domain=(triangular, (-2.0, 2.0)),
                tol=1e-5,
            )
            for kw in (
                {"lower": True},
                {"trans": 1},
                {"trans": "T", "lower": True, "unit_diagonal": True},
            )
        ],
        *[
            Row(linalg.lu_factor, (((3, 3),), ((4, 4),), ((2, 3, 3),)), output=k, tol=1e-5)
            for k in (0,)
        ],
        *[
            Row(
                linalg.lu_solve,
                (((3, 3), (3,)), ((3, 3), (3, 2))),
                args=lambda c, b: ((c, PIVOTS), b),
                kwargs=kw,
                domain=(triangular, (-2.0, 2.0)),
                tol=1e-5,
            )
            for kw in ({}, {"trans": 1})
        ],
        *[
            Row(
                linalg.lu_solve,
                (((2, 3, 3), (2, 3, 2)),),
                args=lambda c, b: ((c, STACKED_PIVOTS), b),
                kwargs=kw,
                domain=(triangular, (-2.0, 2.0)),
                tol=1e-5,
            )
            for kw in ({}, {"trans": 1})
        ],
        *[
            Row(linalg.lu, (((3, 3),), ((4, 4),), ((2, 3, 3),)), output=k, tol=1e-5)
            for k in (1, 2)
        ],
        Row(linalg.expm, (((3, 3),), ((2, 3, 3),)), domain=small, tol=1e-5),
        Row(linalg.sqrtm, (((3, 3),),), domain=spd, tol=1e-5),
        *[
            Row(
                p,
                (((3, 3), (3, 3), (3, 3)), ((3, 3), (2, 2), (3, 2))),
                domain=(triangular, triangular, (-2.0, 2.0)),
                tol=1e-5,
            )
            for p in (linalg.solve_sylvester, runtime.sylvester_solve)
        ],
        Row(runtime.expm_frechet_of, square_pair, domain=small, tol=1e-5),
        Row(runtime.frechet_block, square_pair),
        *[
            Row(p, (((4, 4),), ((2, 6, 6),)))
            for p in (runtime.block_corner, runtime.block_diagonal_sum)
        ],
        Row(
            runtime.permute_rows,
            (((3, 2),),),
            args=lambda x: (x, np.array([2, 0, 1]), zeros((3, 2))),
        ),
        Row(runtime.permute_rows, (((3,),),), args=lambda x: (x, np.array([1, 2, 0]), zeros(3))),
    ]
    if scipy is not None:
        signal = scipy.signal
        rows += [
            Row(p, (((5,), (3,)), ((3,), (5,)), ((4, 5), (2, 3))), kwargs={"mode": m})
            for p in (signal.convolve, signal.correlate)
            for m in ("full", "same", "valid")
        ] + [
            Row(p, (((4,), (3,)), ((3, 4), (2, 2))))
            for p in (runtime.signal_convolve, runtime.signal_correlate)
        ]
    return rows


def _norm_rows(Row):
    """np.linalg.norm's combinations beyond tests/rule_table.py's LINALG rows."""
    norm = np.linalg.norm
    return [
        *[Row(norm, (((5,),),), kwargs={"ord": p}) for p in (-1, -2, 0, -0.5)],
        Row(norm, (((2, 3, 4),),), kwargs={"ord": 2, "axis": 0}),
        Row(norm, (((2, 3, 4),),), kwargs={"ord": 3, "axis": (1,), "keepdims": True}),
        Row(norm, (((2, 3, 4),),), kwargs={"ord": -np.inf, "axis": 2}),
        Row(norm, (((2, 3, 4),),), kwargs={"ord": 0.5, "axis": -2, "keepdims": True}),
        *[
            Row(norm, (((3, 4, 2),),), kwargs={"ord": p, "axis": (0, 1), "keepdims": True})
            for p in ("fro", "nuc", -1, -2, np.inf)
        ],
        Row(norm, (((4, 3),),), kwargs={"ord": -2}, domain=distinct_singular),
        Row(norm, (((2, 3),),), kwargs={"axis": (1, 0)}),
        Row(norm, (((2, 3),),), kwargs={"ord": np.inf, "axis": None}),
    ]


def spread(rng, shape):
    """Eigenvalue-like vectors whose entries are at least 0.5 apart."""
    return np.arange(shape[-1]) * 0.7 + rng.uniform(0.0, 0.2, shape)


def _helper_rows(Row):
    """The helpers the rules above call, differentiated again (they are primitives too)."""
    from s2sgrad import runtime

    zeros = np.zeros
    return [
        Row(runtime.transpose_if, (((3, 4),),), args=lambda x: (x, True)),
        Row(runtime.triangle, (((3, 3),), ((2, 4, 4),)), args=lambda x: (x, True, False)),
        Row(runtime.triangle, (((3, 3),),), args=lambda x: (x, False, True)),
        Row(runtime.symmetric_from_triangle, (((3, 3),), ((2, 4, 4),))),
        Row(runtime.symmetric_from_triangle, (((3, 3),),), args=lambda x: (x, "U")),
        Row(runtime.triangle_adjoint, (((3, 3),), ((2, 4, 4),))),
        Row(runtime.triangle_adjoint, (((3, 3),),), args=lambda x: (x, True)),
        Row(runtime.half_triangle, (((3, 3),),)),
        Row(runtime.half_triangle, (((3, 3),),), args=lambda x: (x, True)),
        Row(runtime.inverse_gaps, (((4,),), ((2, 3),)), domain=spread),
        Row(
            runtime.triangular_solve,
            (((3, 3), (3,)), ((3, 3), (3, 2)), ((2, 3, 3), (2, 3, 2))),
            args=lambda a, b: (a, b, 0, True),
            domain=(triangular, (-2.0, 2.0)),
            tol=1e-5,
        ),
        Row(
            runtime.triangular_solve,
            (((3, 3), (3, 2)),),
            args=lambda a, b: (a, b, 1, False, True),
            domain=(triangular, (-2.0, 2.0)),
            tol=1e-5,
        ),
        Row(runtime.resize_like, (((5,),),), args=lambda t: (t, zeros(3))),
        Row(runtime.resize_like, (((3, 4),),), args=lambda t: (t, zeros((4, 3)))),
        Row(runtime.real_like, (((5,),),), args=lambda t: (t, zeros(5))),
        Row(runtime.real_inputs, (((5,),),)),
        *[
            Row(
                runtime.convolution_embed,
                (((n,),),),
                args=lambda g, m=m: (g, zeros(5), zeros(3), m),
            )
            for n, m in ((7, "full"), (5, "same"), (3, "valid"))
        ],
        *[
            Row(
                runtime.convolution_crop, (((7,),),), args=lambda g, m=m: (g, zeros(5), zeros(3), m)
            )
            for m in ("full", "same", "valid")
        ],
        Row(
            runtime.convolution_embed,
            (((4, 5),),),
            args=lambda g: (g, zeros((4, 5)), zeros((2, 3)), "same", "scipy"),
        ),
    ]


class _Rows(Sequence):
    """The rows, built on first use with `rule_table.Row` (see the module docstring)."""

    def __init__(self) -> None:
        self._rows: list | None = None

    def _built(self) -> list:
        if self._rows is None:
            self._rows = _rows(sys.modules["rule_table"].Row)
        return self._rows

    def __getitem__(self, index):
        return self._built()[index]

    def __len__(self) -> int:
        return len(self._built())

    def __iter__(self):
        return iter(self._built())


MATRIX = _Rows()
