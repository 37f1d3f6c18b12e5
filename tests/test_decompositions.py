"""Decompositions, scipy.linalg's matrix functions, FFT and convolutions through whole
programs: every derivative against central finite differences (reverse and forward) and
checked to second order, plus the conventions `runtime/rules/decompositions.py` and
`runtime/rules/scipy_linalg.py` document (reconstructions, signs, ties, refusals), and
np.linalg.norm with random ord/axis/keepdims.

The rule-table rows check each primitive alone; these programs use several components of a
tuple result at once (``w`` and ``v`` of ``eigh``), the ``c = cho_factor(a)`` idiom and
real-to-complex-to-real FFT pipelines (the complex convention is right when they agree with
finite differences of a real function of real inputs).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg
import scipy.signal
from numerical import numerical_gradient
from rule_table_matrix import distinct_singular, real_eigen, small, spd, symmetric

import s2sgrad as sg
from s2sgrad import runtime
from s2sgrad.checks import check_grads

RNG = np.random.default_rng(0)
W4 = RNG.normal(size=(4, 4))
R53 = RNG.normal(size=(5, 3))
B4 = RNG.normal(size=4)
B42 = RNG.normal(size=(4, 2))
H5 = RNG.normal(size=5) + 1j * RNG.normal(size=5)
W8 = RNG.normal(size=8)
W46 = RNG.normal(size=(4, 6))


def eigh_both(a):
    w, v = np.linalg.eigh(a)
    return np.sum(w * np.arange(4.0)) + np.sum(v[:, 1] * v[:, 2] * W4[0])


def eigh_upper(a):
    w, v = np.linalg.eigh(a, UPLO="U")
    return np.sum(w**2) + np.sum(((v * w) @ v.T) * W4)


def svd_thin(a):
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    return np.sum(s**2 * np.arange(3.0)) + np.sum(u[:, 0:1] * vh[0:1, :] * R53)


def qr_both(a):
    q, r = np.linalg.qr(a)
    return np.sum(q * R53) + np.sum(r**2 * np.arange(3.0))


def cholesky_logdet(a):
    lower = np.linalg.cholesky(a)
    return 2 * np.sum(np.log(np.einsum("ii->i", lower))) + np.sum(lower * W4)


def cho_idiom(a):
    c = scipy.linalg.cho_factor(a)
    return np.sum(scipy.linalg.cho_solve(c, B4) * B4) + np.sum(c[0] * W4)


def cho_pair(a):
    c, low = scipy.linalg.cho_factor(a, lower=True)
    return np.sum(scipy.linalg.cho_solve((c, low), B42) ** 2)


def triangular(a):
    x = scipy.linalg.solve_triangular(a, B4, lower=True)
    return np.sum(x**2) + np.sum(scipy.linalg.solve_triangular(a, B42, trans=1) * B42)


def filter_signal(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * H5, 8) * W8)


def complex_round_trip(x):
    z = np.fft.ifft(np.fft.fft(x, 10) * np.arange(10.0), 10)
    return np.sum(np.fft.irfft(z[:6], 10) ** 2)


def two_dimensional(x):
    z = np.fft.fft2(x) * np.arange(6.0)
    return np.sum(np.fft.irfftn(np.fft.ifft2(z)[:, :4], (4, 6), axes=(0, 1)) * W46)


def shifted_spectrum(x):
    spectrum = np.fft.rfftn(x, axes=(0, 1), norm="ortho")
    return np.sum(np.fft.irfftn(spectrum**2, x.shape, axes=(0, 1), norm="ortho") * W46)


def convolutions(x):
    t = np.sum(np.convolve(x, x[:3] * 2) ** 2) + np.sum(np.correlate(x[1:4], x, "full") ** 2)
    t = t + np.sum(np.convolve(x[:3], x * 2, "same") ** 2)
    return t + np.sum(np.correlate(x[1:3], x, "same") ** 2) + np.sum(np.correlate(x, x[1:4]) ** 2)


def eig_both(a):
    w, v = np.linalg.eig(a)
    return np.sum(w * np.arange(4.0)) + np.sum(v**2 * W4) + np.sum(np.linalg.eigvals(a) ** 3)


def lu_pipeline(a):
    lu, piv = scipy.linalg.lu_factor(a)
    x = scipy.linalg.lu_solve((lu, piv), B42)
    y = scipy.linalg.lu_solve((lu, piv), a[:, 0], trans=1)
    return np.sum(x * B42) + np.sum(y**2) + np.sum(lu * W4)


def lu_factors(a):
    p, low, up = scipy.linalg.lu(a)
    return np.sum((p @ low) * W4) + np.sum(up**2)


def matrix_functions(a):
    e = scipy.linalg.expm(0.5 * a)
    root = scipy.linalg.sqrtm(a @ a.T + 4.0 * np.eye(4))
    x = scipy.linalg.solve_sylvester(e, root, W4 + a)
    return np.sum(x * W4) + np.sum(root * e)


def signal_programs(x):
    m = np.reshape(x, (2, 4))
    t = np.sum(scipy.signal.convolve(m, m[:, :3] * W4[:2, :3], "same") ** 2)
    return t + np.sum(scipy.signal.correlate(x, x[1:4] * 2.0, "valid") ** 2)


PROGRAMS = [
    (eigh_both, symmetric(RNG, (4, 4))),
    (eigh_upper, symmetric(RNG, (4, 4)) + np.triu(RNG.normal(size=(4, 4)), 1)),
    (svd_thin, distinct_singular(RNG, (5, 3))),
    (qr_both, RNG.normal(size=(5, 3))),
    (cholesky_logdet, spd(RNG, (4, 4))),
    (cho_idiom, spd(RNG, (4, 4))),
    (cho_pair, spd(RNG, (4, 4))),
    (triangular, spd(RNG, (4, 4))),
    (filter_signal, RNG.normal(size=8)),
    (complex_round_trip, RNG.normal(size=7)),
    (two_dimensional, RNG.normal(size=(4, 6))),
    (shifted_spectrum, RNG.normal(size=(4, 6))),
    (convolutions, RNG.normal(size=7)),
    (eig_both, real_eigen(RNG, (4, 4))),
    (lu_pipeline, RNG.normal(size=(4, 4)) + 2.0 * np.eye(4)),
    (lu_factors, RNG.normal(size=(4, 4))),
    (matrix_functions, small(RNG, (4, 4))),
]
PROGRAMS.append((signal_programs, RNG.normal(size=8)))
IDS = [f.__name__ for f, _ in PROGRAMS]


@pytest.mark.parametrize(("f", "x"), PROGRAMS, ids=IDS)
def test_reverse_and_forward_match_finite_differences(f, x):
    np.testing.assert_allclose(sg.grad(f)(x), numerical_gradient(f, [x], 0), atol=1e-6, rtol=1e-6)
    direction = np.random.default_rng(1).normal(size=x.shape)
    _, tangent = sg.jvp(f, (x,), (direction,))
    eps = 1e-6
    want = (f(x + eps * direction) - f(x - eps * direction)) / (2 * eps)
    np.testing.assert_allclose(tangent, want, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(("f", "x"), PROGRAMS, ids=IDS)
def test_second_order(f, x):
    check_grads(f, (x,), order=2, rtol=1e-4, atol=1e-4, eps=1e-5)


# -- conventions -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(3, 3), (5, 2), (2, 4, 3)])
def test_reconstructions_hold_for_random_shapes(shape):
    rng = np.random.default_rng(sum(shape))
    a = distinct_singular(rng, shape)
    u, s, vh = np.linalg.svd(a, full_matrices=False)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, atol=1e-12)
    assert np.all(np.diff(s, axis=-1) <= 0)  # descending
    square = spd(rng, (*shape[:-1], shape[-2]))
    lower = np.linalg.cholesky(square)
    np.testing.assert_allclose(lower @ np.swapaxes(lower, -1, -2), square, atol=1e-12)
    w, v = np.linalg.eigh(square)
    np.testing.assert_allclose((v * w[..., None, :]) @ np.swapaxes(v, -1, -2), square, atol=1e-10)
    assert np.all(np.diff(w, axis=-1) >= 0)  # ascending


def test_eigenvector_sign_convention_is_the_smooth_continuation():
    """The tangent of each eigenvector is orthogonal to it (v . dv = 0), so a sign-invariant
    function of v (the projector v v^T) has the derivative of the projector."""
    a = symmetric(np.random.default_rng(3), (4, 4))
    t = np.random.default_rng(4).normal(size=(4, 4))

    def vectors(m):
        return np.linalg.eigh(m)[1]

    v, tv = sg.jvp(vectors, (a,), (t,))
    np.testing.assert_allclose(np.einsum("ij,ij->j", v, tv), 0.0, atol=1e-12)


def test_projector_gradient_does_not_depend_on_the_sign_lapack_picks():
    def projector(m):
        _w, v = np.linalg.eigh(m)
        return np.sum((v[:, 0:1] * v[:, 0:1].T) * W4)

    a = symmetric(np.random.default_rng(5), (4, 4))
    np.testing.assert_allclose(
        sg.grad(projector)(a), numerical_gradient(projector, [a], 0), atol=1e-6
    )


def test_repeated_eigenvalues_give_finite_exact_eigenvalue_gradients():
    """At an exact tie the eigenvector coupling of the tied pair is dropped: no NaN, and the
    gradient of a symmetric function of the eigenvalues is exact (here: the identity)."""

    def total(m):
        w, v = np.linalg.eigh(m)
        return np.sum(w) + 0.0 * np.sum(v)

    grad = sg.grad(total)(np.eye(3))
    assert np.all(np.isfinite(grad))
    np.testing.assert_allclose(grad, np.eye(3))
    assert np.all(np.isfinite(runtime.inverse_gaps(np.array([1.0, 1.0, 2.0]))))


def test_fft_adjoint_is_the_transpose_of_the_dense_dft():
    """The complex convention: the adjoint of the C-linear fft is its transpose (no
    conjugation), checked against the dense DFT matrix."""
    n = 6
    dft = np.fft.fft(np.eye(n), axis=0)
    g = RNG.normal(size=n) + 1j * RNG.normal(size=n)
    x = RNG.normal(size=n) + 1j * RNG.normal(size=n)
    rule = runtime.registry.lookup(np.fft.fft).vjp
    np.testing.assert_allclose(rule(g, np.fft.fft(x), x), dft.T @ g, atol=1e-12)


def test_unsupported_modes_raise_clear_errors():
    def thin_full(m):
        _u, s, _vh = np.linalg.svd(m)
        return np.sum(s)

    with pytest.raises(ValueError, match="full_matrices=False"):
        sg.grad(thin_full)(RNG.normal(size=(4, 3)))

    def wide_qr(m):
        _q, r = np.linalg.qr(m)
        return np.sum(r)

    with pytest.raises(ValueError, match="m >= n"):
        sg.grad(wide_qr)(RNG.normal(size=(2, 4)))


def test_eig_conventions():
    """Each eigenvector keeps unit length (v . dv = 0); complex eigenvalues: see
    tests/test_eig_complex.py."""
    a = real_eigen(np.random.default_rng(6), (4, 4))
    t = np.random.default_rng(7).normal(size=(4, 4))

    def vectors(m):
        return np.linalg.eig(m)[1]

    v, tv = sg.jvp(vectors, (a,), (t,))
    np.testing.assert_allclose(np.einsum("ij,ij->j", v, tv), 0.0, atol=1e-12)


W3 = np.random.default_rng(33).normal(size=(3, 3))


def stacked_lu(m):
    lu, piv = scipy.linalg.lu_factor(m)
    _, low, up = scipy.linalg.lu(m)
    x = scipy.linalg.lu_solve((lu, piv), np.ones((np.shape(m)[0], 3, 2)))
    return np.sum(lu**2) + np.sum(low * W3) + np.sum(up) + np.sum(x * W3[:, :2])


def test_lu_of_a_stack_of_matrices_to_second_order():
    m = RNG.normal(size=(2, 3, 3))  # (pivoting: rows swap in each matrix differently)
    assert scipy.linalg.lu_factor(m)[1].tolist() != [[0, 1, 2], [0, 1, 2]]
    sg.check_grads(stacked_lu, (m,), order=2)
    one_by_one = [sg.grad(stacked_lu)(m[k : k + 1]) for k in range(2)]
    np.testing.assert_allclose(sg.grad(stacked_lu)(m), np.concatenate(one_by_one), rtol=1e-10)


def test_lu_refusals_are_clear():
    def permuted(m):
        pl, up = scipy.linalg.lu(m, permute_l=True)
        return np.sum(pl) + np.sum(up)

    with pytest.raises(ValueError, match="default result"):
        sg.grad(permuted)(RNG.normal(size=(3, 3)))


def test_expm_adjoint_is_the_frechet_derivative_at_the_transpose():
    """<G, L(A, E)> = <L(A^T, G), E>, with SciPy's expm_frechet as the reference."""
    a = small(np.random.default_rng(8), (4, 4))
    e = RNG.normal(size=(4, 4))

    def weighted(m):
        return np.sum(scipy.linalg.expm(m) * W4)

    want = np.sum(scipy.linalg.expm_frechet(a, e, compute_expm=False) * W4)
    np.testing.assert_allclose(np.sum(sg.grad(weighted)(a) * e), want, rtol=1e-10)


NORM_ORDS = {
    1: [None, 1, 2, 3, 0.5, -1, -2, np.inf, -np.inf, 0],
    2: [None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf],
}


@pytest.mark.parametrize("seed", range(20))
def test_random_norm_combinations(seed):
    """np.linalg.norm with a random shape, ord, axis and keepdims, in both modes and to second
    order (inputs away from ties and zeros, where every ord is smooth)."""
    rng = np.random.default_rng(100 + seed)
    ndim = int(rng.integers(1, 4))
    shape = tuple(int(k) for k in rng.integers(2, 5, ndim))
    kind = 2 if ndim >= 2 and rng.random() < 0.5 else 1
    ord_ = NORM_ORDS[kind][int(rng.integers(len(NORM_ORDS[kind])))]
    axes = [int(k) for k in rng.permutation(ndim)[:kind]]
    axis = axes[0] if kind == 1 else tuple(axes)
    keepdims = bool(rng.integers(2))
    x = rng.uniform(0.5, 2.0, shape) * rng.choice([-1.0, 1.0], shape)
    x = x + 0.01 * np.arange(x.size).reshape(shape)  # no ties among entries or sums

    def case(v):
        return np.sum(np.linalg.norm(v, ord_, axis, keepdims) ** 2)

    np.testing.assert_allclose(
        sg.grad(case)(x), numerical_gradient(case, [x], 0), rtol=1e-5, atol=1e-6
    )
    check_grads(case, (x,), order=2, rtol=1e-4, atol=1e-4, eps=1e-5)
