"""Benchmarks of the matrix-decomposition and FFT rules (issue 17): each gradient against the
derivative a person writes by hand with NumPy/SciPy (the formulas of the rules' docstrings,
written once for the case at hand), the issue's target being 1.5x. Included in
`cases.CASES`."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .cases import Case


def _spd(rng, n):
    b = rng.normal(size=(n, n))
    return b @ b.T + n * np.eye(n)


def _lower_adjoint(s):
    """The adjoint of a function of a symmetric matrix that reads its lower triangle."""
    return np.tril(s) + np.tril(s.T, -1)


# ---- cholesky: a log-determinant and a weighted factor -------------------------------------


def cholesky_energy(a, w):
    lower = np.linalg.cholesky(a)
    return 2.0 * np.sum(np.log(np.diagonal(lower))) + np.sum(lower * w)


def cholesky_energy_by_hand(a, w):
    lower = np.linalg.cholesky(a)
    g = w + np.diag(2.0 / np.diagonal(lower))
    p = np.tril(lower.T @ g)
    p[np.diag_indices_from(p)] *= 0.5
    x = scipy.linalg.solve_triangular(lower, p, trans=1, lower=True)  # L^-T P
    s = scipy.linalg.solve_triangular(lower, x.T, trans=1, lower=True).T  # L^-T P L^-1
    return _lower_adjoint(s)


def _cholesky_args(small=False):
    rng = np.random.default_rng(10)
    n = 3 if small else 200
    return _spd(rng, n), rng.normal(size=(n, n))


# ---- eigh: eigenvalues and (sign-free) eigenvector weights ---------------------------------


def eigh_energy(a, c, w):
    values, vectors = np.linalg.eigh(a)
    return np.sum(values**2 * c) + np.sum(vectors**2 * w)


def eigh_energy_by_hand(a, c, w):
    values, vectors = np.linalg.eigh(a)
    gaps = values[None, :] - values[:, None]
    np.fill_diagonal(gaps, np.inf)
    vg = vectors.T @ (2.0 * vectors * w)
    inner = 0.5 * (vg - vg.T) / gaps + np.diag(2.0 * values * c)
    return _lower_adjoint(vectors @ inner @ vectors.T)


def _eigh_args(small=False):
    rng = np.random.default_rng(11)
    n = 3 if small else 120
    b = rng.normal(size=(n, n))
    return b + b.T, rng.normal(size=n), rng.normal(size=(n, n))


# ---- svd: singular values and the left singular vectors ------------------------------------


def svd_energy(a, c, w):
    u, s, _vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s * c) + np.sum(u[:, :4] ** 2 * w)


def svd_energy_by_hand(a, c, w):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    gu = np.zeros_like(u)
    gu[:, :4] = 2.0 * u[:, :4] * w
    gaps = s[None, :] ** 2 - s[:, None] ** 2
    np.fill_diagonal(gaps, np.inf)
    ug = u.T @ gu
    inner = (ug - ug.T) / gaps * s[None, :] + np.diag(c)
    return u @ inner @ vh + ((gu - u @ ug) / s) @ vh


def _svd_args(small=False):
    rng = np.random.default_rng(12)
    m, n = (5, 4) if small else (160, 100)
    return rng.normal(size=(m, n)), rng.normal(size=n), rng.normal(size=(m, 4))


# ---- solve_triangular --------------------------------------------------------------------


def triangular_energy(a, b):
    return np.sum(scipy.linalg.solve_triangular(a, b, lower=True) ** 2)


def triangular_energy_by_hand(a, b):
    x = scipy.linalg.solve_triangular(a, b, lower=True)
    gb = scipy.linalg.solve_triangular(a, 2.0 * x, trans=1, lower=True)
    return -np.tril(gb @ x.T), gb


def _triangular_args(small=False):
    rng = np.random.default_rng(13)
    n, k = (3, 2) if small else (400, 20)
    a = np.tril(rng.uniform(-0.5, 0.5, (n, n))) + 3.0 * np.eye(n)
    return a, rng.normal(size=(n, k))


# ---- fft: a filter applied in the frequency domain ------------------------------------------


def fft_filter(x, h, y):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * h, len(x)) * y)


def fft_filter_by_hand(x, h, y):
    # the adjoint of a circular convolution is the correlation: conjugate the response
    return np.fft.irfft(np.conj(h) * np.fft.rfft(y), len(x))


def _fft_args(small=False):
    rng = np.random.default_rng(14)
    n = 8 if small else 2**16
    h = rng.normal(size=n // 2 + 1) + 1j * rng.normal(size=n // 2 + 1)
    h[0] = h[0].real  # a real response at the zero and Nyquist frequencies (a real filter)
    h[-1] = h[-1].real
    return rng.normal(size=n), h, rng.normal(size=n)


MATRIX_CASES = [
    Case(
        name="cholesky",
        fn=cholesky_energy,
        wrt=0,
        make_args=_cholesky_args,
        by_hand=cholesky_energy_by_hand,
        description="np.linalg.cholesky of a 200 x 200 SPD matrix: log-determinant + weights",
        ratio_target=1.5,
    ),
    Case(
        name="eigh",
        fn=eigh_energy,
        wrt=0,
        make_args=_eigh_args,
        by_hand=eigh_energy_by_hand,
        description="np.linalg.eigh of a 120 x 120 symmetric matrix: eigenvalues and vectors",
        ratio_target=1.5,
    ),
    Case(
        name="svd",
        fn=svd_energy,
        wrt=0,
        make_args=_svd_args,
        by_hand=svd_energy_by_hand,
        description="thin np.linalg.svd of 160 x 100: singular values and 4 left vectors",
        ratio_target=1.5,
    ),
    Case(
        name="solve_triangular",
        fn=triangular_energy,
        wrt=(0, 1),
        make_args=_triangular_args,
        by_hand=triangular_energy_by_hand,
        description="scipy.linalg.solve_triangular, 400 x 400 with 20 right sides, d/d(a, b)",
        ratio_target=1.5,
    ),
    Case(
        name="fft",
        fn=fft_filter,
        wrt=0,
        make_args=_fft_args,
        by_hand=fft_filter_by_hand,
        description="np.fft.rfft, a frequency response, np.fft.irfft; n = 65,536",
        ratio_target=1.5,
    ),
]
