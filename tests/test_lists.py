"""Lists built in loops (append, stack, array, sum), comprehensions, dict and list state."""

import list_programs as lp
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

rng = np.random.default_rng(7)

CASES = [
    ("stack_appended", (rng.random(3), rng.random(3))),
    ("array_of_appended", (rng.random(4),)),
    ("comprehension", (rng.random(5),)),
    ("generator_sum", (rng.random(4),)),
    ("two_value_max", (0.7, 1.3)),
    ("two_value_max", (2.0, 0.3)),
    ("dict_state", (rng.random(3),)),
    ("list_slots", (rng.random(3),)),
    ("tuple_of_slots", (rng.random(3),)),
    ("stack_machine", (np.array([0.3, -0.7, 1.1, 0.4]),)),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[c[0] for c in CASES])
def test_lists_match_finite_differences(name, args):
    f = getattr(lp, name)
    grads = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for i, got in enumerate(grads):
        np.testing.assert_allclose(got, numerical_gradient(f, args, i), rtol=1e-5, atol=1e-6)


def test_comprehension_variables_do_not_leak():
    text = sg.source(sg.grad(lp.comprehension), np.ones(3))
    assert ".append(" in text and "for " in text
