"""for loops over range in reverse mode, against finite differences."""

import loop_programs as lp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(2)

CASES = [
    ("sum_of_squares", (rng.random(4),)),
    ("rosenbrock_loop", (rng.random(6),)),
    ("power_by_loop", (1.3, 4)),
    ("power_by_loop", (0.7, 0)),
    ("running_state", (rng.random((4, 3)), rng.random((3, 3)) * 0.5)),
    ("nested_loops", (rng.random((2, 3)),)),
    ("branch_in_loop", (rng.random(6),)),
    ("loop_local_reuse", (rng.random(3),)),
    ("zero_trips", (rng.random(3), 0)),
    ("zero_trips", (rng.random(3), 2)),
    ("over_rows", (rng.random((3, 2)), rng.random(2))),
    ("with_enumerate", (rng.random(4),)),
    ("with_zip", (rng.random(4), rng.random(3))),
    ("halve_until_small", (3.7,)),
    ("halve_until_small", (0.05,)),
    ("newton_sqrt", (2.0,)),
    ("while_over_array", (rng.random(3),)),
    ("stop_at_threshold", (np.array([0.5, 0.6, 0.7, 0.8]),)),
    ("stop_at_threshold", (np.array([0.1, 0.2]),)),
    ("skip_negatives", (np.array([0.5, -0.6, 0.7, -0.1]),)),
    ("while_with_break", (0.7,)),
    ("break_and_continue", (np.array([0.3, 0.5, 0.2, 0.95, 0.4]),)),
    ("break_and_continue", (np.array([0.3, 0.5, 0.2]),)),
    ("first_large", (np.array([0.5, 0.6, 0.9, 0.2]),)),
    ("first_large", (np.array([0.1, 0.2]),)),
    ("search_in_nested", (rng.random((3, 3)),)),
    ("search_in_nested", (rng.random((2, 2)) * 0.2,)),
    ("reversed_list", (rng.random(3),)),
    ("reversed_range", (rng.random(4),)),
    ("in_sorted_order", (rng.random(4),)),
    ("while_return", (0.4,)),
    ("while_return", (2.5,)),
    (
        "rnn_loss",
        (
            rng.standard_normal((3, 4)) * 0.5,
            rng.standard_normal((4, 4)) * 0.5,
            rng.standard_normal(4) * 0.1,
            rng.standard_normal((5, 2, 3)),
            np.zeros((2, 4)),
        ),
    ),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_loop_gradient_matches_finite_differences(name, args):
    f = getattr(lp, name)
    floats = tuple(i for i, a in enumerate(args) if not isinstance(a, int))
    grads = sg.grad(f, wrt=floats)(*args)
    for i, got in zip(floats, grads, strict=True):
        assert np.shape(got) == np.shape(args[i])
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


def test_trip_count_follows_the_argument():
    df = sg.grad(lp.power_by_loop)
    for n in range(5):
        assert df(1.5, n) == pytest.approx(n * 1.5 ** (n - 1) if n else 0.0)


def test_loop_code_pushes_once_per_iteration_and_runs_backwards():
    text = sg.source(sg.grad(lp.running_state, wrt=(0, 1)), np.ones((4, 3)), np.ones((3, 3)))
    body = text[text.index("def ") :]
    assert body.count(".append(") == 1 and body.count(".pop()") == 1
    assert "in backwards(" in body


def test_values_read_only_for_their_shape_are_pushed_as_shapes():
    args = (np.ones((3, 4)), np.ones((4, 4)), np.ones(4), np.ones((5, 2, 3)), np.zeros((2, 4)))
    text = sg.source(sg.grad(lp.rnn_loss, wrt=(0, 1, 2)), *args)
    assert "np.shape(" in text[text.index(".append(") :].split("\n")[0]


def test_scalar_loop_needs_no_stack():
    text = sg.source(sg.grad(lp.rosenbrock_loop), np.ones(5))
    assert "_stack" not in text and "unbroadcast" not in text
    assert "dx[i] +=" in text


def test_inputs_unchanged_by_loops():
    x = rng.random(6)
    before = x.copy()
    sg.grad(lp.rosenbrock_loop)(x)
    np.testing.assert_array_equal(x, before)


def test_unsupported_loops_are_reported():
    with pytest.raises(sg.TransformError, match="looping over the result of this call"):
        sg.grad(over_an_iterator)


def over_an_iterator(x):
    total = 0.0
    for v in iter([x, 2.0 * x]):  # (a loop over a list literal is supported: test_idioms)
        total = total + v
    return total
