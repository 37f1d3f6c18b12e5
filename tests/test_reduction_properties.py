"""Property tests: reductions, statistics and norms over random shapes, axes, keepdims and
orders (hypothesis draws them), each gradient and tangent against central differences.

The functions take `axis`, `keepdims` and `ord` as arguments (constants of the derivative), so
one function covers every combination hypothesis draws."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerical import numerical_gradient

import s2sgrad as sg

REDUCTIONS = {
    "sum": np.sum,
    "mean": np.mean,
    "prod": np.prod,
    "max": np.max,
    "var": np.var,
    "std": np.std,
    "median": np.median,
    "ptp": np.ptp,
    "nansum": np.nansum,
    "nanmean": np.nanmean,
}


def reduce_sum(x, axis, keepdims):
    return np.sum(np.sin(np.sum(x, axis=axis, keepdims=keepdims)))


def reduce_mean(x, axis, keepdims):
    return np.sum(np.sin(np.mean(x, axis=axis, keepdims=keepdims)))


def reduce_prod(x, axis, keepdims):
    return np.sum(np.sin(np.prod(x, axis=axis, keepdims=keepdims)))


def reduce_max(x, axis, keepdims):
    return np.sum(np.sin(np.max(x, axis=axis, keepdims=keepdims)))


def reduce_var(x, axis, keepdims):
    return np.sum(np.sin(np.var(x, axis=axis, keepdims=keepdims)))


def reduce_std(x, axis, keepdims):
    return np.sum(np.sin(np.std(x, axis=axis, keepdims=keepdims)))


def reduce_median(x, axis, keepdims):
    return np.sum(np.sin(np.median(x, axis=axis, keepdims=keepdims)))


def reduce_ptp(x, axis, keepdims):
    return np.sum(np.sin(np.ptp(x, axis=axis, keepdims=keepdims)))


def reduce_nansum(x, axis, keepdims):
    return np.sum(np.sin(np.nansum(x, axis=axis, keepdims=keepdims)))


def reduce_nanmean(x, axis, keepdims):
    return np.sum(np.sin(np.nanmean(x, axis=axis, keepdims=keepdims)))


FUNCTIONS = {name: globals()[f"reduce_{name}"] for name in REDUCTIONS}
TIED = {"max", "median", "ptp"}  # kinks where two elements are equal


@st.composite
def shapes_and_axes(draw):
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=1, max_size=3)))
    ndim = len(shape)
    axis = draw(
        st.one_of(
            st.none(),
            st.integers(-ndim, ndim - 1),
            st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True).map(
                tuple
            ),
        )
    )
    return shape, axis, draw(st.booleans())


PROPERTY = settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)


@PROPERTY
@given(name=st.sampled_from(sorted(REDUCTIONS)), case=shapes_and_axes(), seed=st.integers(0, 99))
def test_reductions_on_random_axes(name, case, seed):
    shape, axis, keepdims = case
    if name in ("median", "ptp") and isinstance(axis, tuple):
        axis = axis[0]  # np.median and np.ptp take one axis (or None) in the definitions' form
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    if name in TIED:
        x = x + np.arange(x.size).reshape(shape) * 1e-2  # apart from ties
    f = FUNCTIONS[name]
    expected = numerical_gradient(f, (x, axis, keepdims), 0)
    np.testing.assert_allclose(sg.grad(f)(x, axis, keepdims), expected, rtol=1e-5, atol=1e-7)
    direction = rng.normal(size=shape)
    _, tangent = sg.jvp(f, (x, axis, keepdims), (direction, None, None))
    assert np.isclose(tangent, np.sum(expected * direction), rtol=1e-5, atol=1e-7)


def vector_norm(x, ord, axis, keepdims):
    return np.sum(np.linalg.norm(x, ord=ord, axis=axis, keepdims=keepdims) ** 2)


@PROPERTY
@given(
    ord=st.sampled_from([None, 1, 2, 3, np.inf, -np.inf, 0.5]),
    shape=st.lists(st.integers(2, 4), min_size=1, max_size=3).map(tuple),
    keepdims=st.booleans(),
    seed=st.integers(0, 99),
)
def test_vector_norms_on_random_axes(ord, shape, keepdims, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    x = x + np.arange(x.size).reshape(shape) * 1e-2  # apart from ties of |x|
    axis = -1
    expected = numerical_gradient(vector_norm, (x, ord, axis, keepdims), 0)
    got = sg.grad(vector_norm)(x, ord, axis, keepdims)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-7)
