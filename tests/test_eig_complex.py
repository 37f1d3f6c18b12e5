"""np.linalg.eig and eigvals with complex eigenvalues: real matrices with complex-conjugate
pairs and complex matrices, in reverse and forward mode and to second order, against central
finite differences, a closed form (2 x 2) and sympy (its Hessian).

The eigenvector convention (`runtime/rules/decompositions.py`): unit 2-norm and the largest
entry real, as LAPACK returns them. LAPACK leaves the sign of a real matrix's complex
eigenvector to chance (it may flip between nearby matrices), so the programs here depend on
the phase only through sign-invariant quantities (``v**2`` changes with the phase, not the
sign; ``|v|**2`` and ``v v^H`` with neither).
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from numerical import numerical_gradient
from rule_table_matrix import complex_eigen, real_eigen

import s2sgrad as sg

RNG = np.random.default_rng(17)
W4 = RNG.normal(size=(4, 4))
C4 = RNG.normal(size=4)


def eigenvalue_parts(a):
    w = np.linalg.eigvals(a)
    return np.sum(np.real(w) * C4) + np.sum(np.imag(w) ** 2) + np.sum(np.abs(w) * C4[::-1])


def invariant_vectors(a):
    w, v = np.linalg.eig(a)
    projector = v @ np.conj(np.swapaxes(v, -1, -2))  # v v^H: no phase at all
    t = np.sum(np.abs(v) ** 2 * W4) + np.sum(np.real(projector) * W4)
    return t + np.sum(np.imag(projector) * W4.T) + np.sum(np.imag(w) * C4)


def phase_dependent(a):
    # v**2 turns with the phase (twice as fast), not with the sign: LAPACK's largest-entry-real
    # convention is what makes it differentiable
    v = np.linalg.eig(a)[1]
    return np.sum(np.real(v**2) * W4) + np.sum(np.imag(v**2) * W4.T)


def stacked(a):
    w, v = np.linalg.eig(a)
    return np.sum(np.real(w**2)) + np.sum(np.abs(v) ** 2 * W4[:3, :3]) + np.sum(np.real(v**2))


PROGRAMS = [
    (eigenvalue_parts, complex_eigen(RNG, (4, 4))),
    (invariant_vectors, complex_eigen(RNG, (4, 4))),
    (phase_dependent, complex_eigen(RNG, (4, 4))),
    (stacked, complex_eigen(RNG, (2, 3, 3))),
]
IDS = [f.__name__ for f, _ in PROGRAMS]


@pytest.mark.parametrize(("f", "a"), PROGRAMS, ids=IDS)
def test_real_matrix_with_complex_eigenvalues(f, a):
    assert np.iscomplexobj(np.linalg.eigvals(a))
    gradient = sg.grad(f)(a)
    assert gradient.dtype == np.float64  # a real input's gradient is real
    np.testing.assert_allclose(gradient, numerical_gradient(f, [a], 0), rtol=1e-6, atol=1e-6)
    sg.check_grads(f, (a,), order=2, rtol=1e-4, atol=1e-4, eps=1e-5)


def test_tangents_keep_unit_length_and_the_largest_entry_real():
    a = complex_eigen(np.random.default_rng(5), (4, 4))
    t = np.random.default_rng(6).normal(size=(4, 4))

    def vectors(m):
        return np.linalg.eig(m)[1]

    v, tv = sg.jvp(vectors, (a,), (t,))
    np.testing.assert_allclose(np.real(np.einsum("ij,ij->j", np.conj(v), tv)), 0.0, atol=1e-12)
    top = np.argmax(np.abs(v), axis=0)
    np.testing.assert_allclose(np.imag(v[top, range(4)]), 0.0, atol=1e-15)
    np.testing.assert_allclose(np.imag(tv[top, range(4)]), 0.0, atol=1e-12)


def test_real_eigenvalues_keep_real_derivatives():
    a = real_eigen(np.random.default_rng(7), (4, 4))
    t = np.random.default_rng(8).normal(size=(4, 4))

    def both(m):
        return np.linalg.eig(m)

    (_, v), (tw, tv) = sg.jvp(both, (a,), (t,))
    assert tw.dtype == tv.dtype == np.float64
    np.testing.assert_allclose(np.einsum("ij,ij->j", v, tv), 0.0, atol=1e-12)
    assert sg.grad(phase_dependent)(a).dtype == np.float64


def imaginary_part(m):
    return np.imag(np.linalg.eigvals(m)[0])


def real_part(m):
    return np.real(np.linalg.eigvals(m)[0])


def test_two_by_two_closed_form():
    """[[p, q], [r, s]] with u = -((p - s) / 2)**2 - q r > 0 has eigenvalues (p + s) / 2 +- i
    sqrt(u) (LAPACK puts the positive imaginary part first); a rotation-like matrix is one."""
    p, q, r, s = 0.3, -1.2, 0.9, -0.4
    m = np.array([[p, q], [r, s]])
    root = np.sqrt(-(((p - s) / 2) ** 2) - q * r)
    want = np.array([[-(p - s) / 2, -r], [-q, (p - s) / 2]]) / (2 * root)
    np.testing.assert_allclose(sg.grad(imaginary_part)(m), want, rtol=1e-12)
    np.testing.assert_allclose(sg.grad(real_part)(m), np.eye(2) / 2, atol=1e-12)
    rotation = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    np.testing.assert_allclose(
        sg.grad(imaginary_part)(rotation), [[0.0, -0.5], [0.5, 0.0]], atol=1e-12
    )

    symbols = sp.symbols("p q r s", real=True)
    sp_p, sp_q, sp_r, sp_s = symbols
    expr = sp.sqrt(-(((sp_p - sp_s) / 2) ** 2) - sp_q * sp_r)
    hessian = sp.lambdify(symbols, sp.hessian(expr, symbols))(p, q, r, s)
    got = sg.hessian(imaginary_part)(m).reshape(4, 4)
    np.testing.assert_allclose(got, np.array(hessian, dtype=float), rtol=1e-8, atol=1e-10)


def complex_input(x, y):
    return invariant_vectors(x + 1j * y) + phase_dependent(x + 1j * y)


def complex_values(z):
    return eigenvalue_parts(z) + invariant_vectors(z)


def test_complex_matrices():
    """A complex matrix x + iy through every mode (real arguments x, y), and sg.grad of a
    complex argument z: df/dx - i df/dy (README, complex numbers)."""
    rng = np.random.default_rng(9)
    x, y = rng.normal(size=(4, 4)), rng.normal(size=(4, 4))
    sg.check_grads(complex_input, (x, y), order=2, rtol=1e-4, atol=1e-4, eps=1e-5)

    def split(x, y):
        return complex_values(x + 1j * y)

    dx = numerical_gradient(split, [x, y], 0)
    dy = numerical_gradient(split, [x, y], 1)
    np.testing.assert_allclose(sg.grad(complex_values)(x + 1j * y), dx - 1j * dy, atol=1e-6)
