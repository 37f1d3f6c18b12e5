"""Batched forward rules of the helpers generated code calls, against the same helper applied
to one direction at a time (what a batched sweep must equal)."""

import numpy as np
import pytest
from s2sgrad.runtime import batch_matmul_left, batch_matmul_right, matmul_left, matmul_right

RANKS = {
    "vector@vector": ((3,), (3,)),
    "vector@matrix": ((3,), (3, 5)),
    "matrix@vector": ((2, 3), (3,)),
    "matrix@matrix": ((2, 3), (3, 5)),
    "stack@matrix": ((4, 2, 3), (3, 5)),
    "vector@stack": ((3,), (4, 3, 5)),
}


@pytest.mark.parametrize(("x_shape", "y_shape"), RANKS.values(), ids=RANKS.keys())
def test_batched_matmul_adjoints_equal_one_direction_at_a_time(x_shape, y_shape):
    rng = np.random.default_rng(0)
    batch = 4
    x, y = rng.normal(size=x_shape), rng.normal(size=y_shape)
    g = rng.normal(size=np.shape(x @ y))
    tg = rng.normal(size=(batch, *np.shape(g)))
    tx, ty = rng.normal(size=(batch, *x_shape)), rng.normal(size=(batch, *y_shape))
    left = [matmul_left(tg[b], x, y) + matmul_left(g, x, ty[b]) for b in range(batch)]
    right = [matmul_right(tg[b], x, y) + matmul_right(g, tx[b], y) for b in range(batch)]
    np.testing.assert_allclose(batch_matmul_left(tg, ty, g, x, y), np.stack(left))
    np.testing.assert_allclose(batch_matmul_right(tg, tx, g, x, y), np.stack(right))
    only_g = [matmul_left(tg[b], x, y) for b in range(batch)]
    np.testing.assert_allclose(batch_matmul_left(tg, None, g, x, y), np.stack(only_g))
