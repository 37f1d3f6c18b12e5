"""if/elif/else, conditional expressions, and/or and early returns, against finite differences."""

import branch_programs as bp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(1)

# every program at points that take each of its paths
CASES = [
    ("branch_on_array", (rng.random(3),)),
    ("branch_on_array", (-rng.random(3),)),
    ("elif_chain", (1.5,)),
    ("elif_chain", (0.5,)),
    ("elif_chain", (-0.5,)),
    ("elif_chain", (np.array(0.5),)),
    ("nested", (rng.random(3), rng.random(3))),
    ("nested", (rng.random(3), -rng.random(3))),
    ("nested", (-rng.random(3), rng.random(3))),
    ("early_returns", (-1.0,)),
    ("early_returns", (1.0,)),
    ("early_returns", (3.0,)),
    ("conditional_expression", (0.5,)),
    ("conditional_expression", (-0.5,)),
    ("conditional_expression", (1.5,)),
    ("boolean_operators", (0.5, 2.0)),
    ("boolean_operators", (-0.5, 2.0)),
    ("one_branch_assigns", (rng.random(3) + 0.6,)),
    ("one_branch_assigns", (rng.random(3) * 0.4,)),
    ("raises_in_branch", (1.5,)),
    ("assigned_in_both", (rng.random(3), 0.5)),
    ("assigned_in_both", (rng.random(3), -0.5)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_each_path_matches_finite_differences(name, args):
    f = getattr(bp, name)
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, got in enumerate(grads):
        assert np.shape(got) == np.shape(args[i])
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [1, 3])
def test_a_condition_on_a_constant_argument(n):
    x = rng.random(3)
    got = sg.grad(bp.branch_without_gradient)(x, n)
    scale = 3.0 if n > 2 else 0.5
    np.testing.assert_allclose(got, 2 * scale * x)


def test_raise_in_a_branch_still_raises():
    with pytest.raises(ValueError, match="too small"):
        sg.grad(bp.raises_in_branch)(-20.0)


def test_value_and_grad_through_early_returns():
    for x in (-1.0, 1.0, 3.0):
        value, grad = sg.value_and_grad(bp.early_returns)(x)
        assert value == pytest.approx(bp.early_returns(x))
        assert grad == pytest.approx(numerical_gradient(bp.early_returns, (x,), 0), rel=1e-6)


def test_branch_code_is_readable():
    text = sg.source(sg.grad(bp.early_returns), 1.0)
    body = text[text.index("def ") :]
    assert "if _t1:" in body and "else:" in body  # the adjoint mirrors the branches
    assert "# adjoint of line" in body
    assert "pass" not in body  # an empty branch is written as `if not ...`
    assert "dy = np.cos(y)" in body  # no copies into the joined name
