"""The assembling functions as users write them (`runtime/rules/assembly.py`,
`runtime/moved_elements.py`, `runtime/cumulative_products.py`), against central differences in
reverse and forward mode and at second order, plus their sharp edges: list results unpacked,
fill values, modes that compute, cumulative products through zeros."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient
from s2sgrad.runtime import cumprod_adjoint, cumprod_tangent

import s2sgrad as sg
from s2sgrad.checks import check_grads

RNG = np.random.default_rng(3)
X = RNG.normal(size=6)
M = RNG.normal(size=(3, 4))


def halves(x):
    left, right = np.split(x, 2)
    return np.sum(left * right) + np.sum(np.array_split(x, 4)[3] ** 2)


def padded_with_a_fill(x, c):
    return np.sum(np.pad(x, (1, 2), constant_values=c) ** 2) + np.sum(np.pad(x, 1, mode="edge"))


def sorted_weights(x):
    return np.sum(np.sort(x) * np.arange(6.0)) + np.sum(np.partition(x, 2)[:2] ** 2)


def tensor_products(a, b):
    return np.sum(np.tensordot(a, b, axes=([0], [0])) ** 2) + np.sum(np.kron(a[0], b[0]))


def items(x):
    return x.item(2) * 3.0 + float(x[0]) ** 2 + np.sum(x[1:3]).item()


def rolled_and_stacked(m):
    stacked = np.vstack([np.roll(m, 1, axis=1), np.fliplr(m)])
    return np.sum(np.tril(stacked[:4]) ** 2) + np.sum(np.diff(m, axis=0) ** 2)


def cumulative_product(x):
    return np.sum(np.cumprod(x)) + np.sum(x.cumprod() ** 2)


CASES = [
    (halves, (X,)),
    (padded_with_a_fill, (X, 0.7)),
    (sorted_weights, (X,)),
    (tensor_products, (M, M * 2.0 + 1.0)),
    (items, (X,)),
    (rolled_and_stacked, (M,)),
    (cumulative_product, (np.array([0.5, 1.5, 0.0, 2.0, -1.0]),)),
]


@pytest.mark.parametrize(("f", "args"), CASES, ids=[f.__name__ for f, _ in CASES])
def test_every_mode_against_finite_differences(f, args):
    wrt = tuple(range(len(args)))
    grads = sg.grad(f, wrt=wrt)(*args)
    grads = grads if isinstance(grads, tuple) else (grads,)
    for k in wrt:
        np.testing.assert_allclose(grads[k], numerical_gradient(f, args, k), rtol=1e-6, atol=1e-7)
    tangents = tuple(np.ones_like(a) if np.ndim(a) else 1.0 for a in args)
    expected = sum(np.sum(numerical_gradient(f, args, k)) for k in wrt)
    assert sg.jvp(f, args, tangents)[1] == pytest.approx(expected, rel=1e-6, abs=1e-7)
    check_grads(f, args, order=2, rtol=1e-5, atol=1e-6)


def padded_by_mean(x):
    return np.sum(np.pad(x, 1, mode="mean"))


def test_a_pad_mode_that_computes_values_is_a_lookup_error():
    with pytest.raises(LookupError, match="mode='mean'"):
        sg.grad(padded_by_mean)(X)


def _brute_force_adjoint(g, a):
    n = len(a)
    return np.array(
        [
            sum(g[i] * np.prod([a[k] for k in range(i + 1) if k != j]) for i in range(j, n))
            for j in range(n)
        ]
    )


def test_cumprod_derivatives_are_exact_through_zeros():
    """The adjoint and tangent divide only by elements before a slice's first zero; checked
    against the product rule written out, with zeros anywhere (several, or first, or last)."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        a = rng.normal(size=int(rng.integers(1, 7)))
        a[rng.random(a.size) < 0.35] = 0.0
        g, t = rng.normal(size=a.size), rng.normal(size=a.size)
        expected = _brute_force_adjoint(g, a)
        np.testing.assert_allclose(cumprod_adjoint(g, a, 0), expected, atol=1e-12)
        # the tangent is the transpose: <g, J t> = <J^T g, t>
        assert np.dot(g, cumprod_tangent(t, a, 0)) == pytest.approx(np.dot(expected, t), abs=1e-12)


@pytest.mark.parametrize(
    "g",
    [np.broadcast_to(1.0, (3, 4)), np.broadcast_to(-2.5, (3, 4)), np.broadcast_to(1.5j, (3, 4))],
    ids=["seed", "a number", "a complex number"],
)
def test_cumprod_adjoint_of_one_value_broadcast(g):
    """The adjoint of ``np.sum(c * k)``, ``c = np.cumprod(a, axis=1)``: `g` one value
    broadcast (applied as a factor after the sweep), against the product rule row by row;
    the forward's cumprod handed in is left as it was."""
    a = np.random.default_rng(3).uniform(0.5, 1.5, size=(3, 4))
    product = np.cumprod(a, axis=1)
    kept = product.copy()
    got = cumprod_adjoint(g, a, 1, product)
    expected = [_brute_force_adjoint(np.asarray(g[0]), row) for row in a]
    np.testing.assert_allclose(got, expected, atol=1e-12)
    np.testing.assert_array_equal(product, kept)


def rows_of_a_difference_updated(m):
    d = np.diff(m)
    for row in d:
        row += 1.0
    return np.sum(d * m[:, 1:])


def test_rows_of_a_2d_difference_are_arrays_not_numbers():
    """np.diff keeps its argument's rank (the mutation analysis took it for flat, like
    np.cumsum with no axis): ``row += 1.0`` changes ``d`` in place, so it is refused at the
    user's line, not differentiated as if it rebound a number."""
    with pytest.raises(sg.TransformError, match="'row' is updated in place"):
        sg.grad(rows_of_a_difference_updated)(np.arange(6.0).reshape(2, 3))
