"""Regression tests: minimal programs random testing found wrong, against finite differences."""

import numpy as np
import pytest
import random_regressions as rp
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(0)

CASES = [
    ("local_named_like_a_helper", (rng.random(3),)),
    ("constant_named_like_a_helper", (0.7,)),
    ("constant_named_like_a_helper", (rng.random(3),)),
    ("unpack_an_expression", (rng.random(3),)),
    ("unpack_swap_arguments", (0.7, 1.3)),
    ("unpack_swap_with_local", (0.7,)),
    ("unpack_swap_after_self_assignment", (rng.random(3),)),
    ("negated_maximum", (rng.random(4),)),
    ("negated_maximum", (0.3,)),
    ("size_one_axes_broadcast", (rng.random((1, 3)), rng.random((2, 1)))),
    ("size_one_axes_broadcast", (rng.random((2, 1, 3)), rng.random((1, 4, 1)))),
    ("method_of_a_folded_constant", (0.7,)),
    ("mean_of_an_empty_slice", (rng.random(3),)),
    ("loop_then_math_function", (rng.random(3),)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_regression(name, args):
    f = getattr(rp, name)
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, got in enumerate(grads):
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


def test_mean_of_nothing_is_nan_not_an_exception():
    with np.errstate(all="ignore"), pytest.warns(RuntimeWarning):
        value = rp.mean_of_an_empty_slice(np.ones(1))
    assert np.isnan(value)
    with np.errstate(all="ignore"):
        grad = sg.grad(rp.mean_of_an_empty_slice)(np.ones(1))  # no ZeroDivisionError
    assert grad.shape == (1,)
