"""Forward mode of a linear NumPy function called with an argument that adds a constant.

A linear function's tangent is the function applied to the tangent, its other arguments
kept: ``np.sum(x**2, initial=3.0)``'s tangent came out 3 too large and ``np.diff(x,
prepend=1.0)``'s lost its first entry, silently, in `sg.jvp` and the forward Jacobian, where
reverse mode refuses these arguments (hunt, repro_4). Forward mode refuses what reverse mode
refuses, at the user's line.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.4, 0.7, 1.3])
T = np.array([1.0, 0.0, 0.0])


def sum_with_initial(x):
    return np.sum(x**2, initial=3.0)


def diff_with_prepend(x):
    return np.diff(x, prepend=1.0)


def diff_with_append(x):
    return np.diff(x, append=2.0)


@pytest.mark.parametrize("f", [sum_with_initial, diff_with_prepend, diff_with_append])
def test_forward_mode_refuses_what_reverse_mode_refuses(f):
    for transform in (
        lambda: sg.jvp(f, (X,), (T,)),
        lambda: sg.jacobian(f, mode="forward")(X),
        lambda: sg.jacobian(f, mode="reverse")(X),
    ):
        with pytest.raises(sg.TransformError, match="is not supported when differentiating") as e:
            transform()
        assert e.value.filename == __file__


def test_linear_functions_with_structural_arguments_still_work():
    def f(x):
        return np.sum(np.diff(x, n=2, axis=0) * 3.0) + np.sum(x**2, axis=0, keepdims=True)[0]

    numerical = np.array([(f(X + e) - f(X - e)) / 2e-6 for e in np.eye(3) * 1e-6])
    np.testing.assert_allclose(sg.jvp(f, (X,), (T,))[1], numerical @ T, rtol=1e-6)
    np.testing.assert_allclose(sg.jacobian(f, mode="forward")(X), numerical, rtol=1e-6)
