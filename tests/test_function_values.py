"""Functions given as values to functions of the user's (issue 18; found while merging
issue 17): a lambda closing over a differentiated value and passed to a callee made the
callee's result a constant, so ``apply(lambda t: k * t, 2.0)`` had derivative 0.0 in k,
silently. Its closed-over names now flow into the call, and a callee calling a function it
was given is refused at that call; a function defined inside the differentiated function
and used as a value is refused where it is used. A key function of ``sorted`` still only
orders (checked against central differences)."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg


def _apply(fn, x):
    return fn(x)


def lambda_closing_over_the_input(k):
    return _apply(lambda t: k * t, 2.0)


def lambda_of_the_argument(x):
    return _apply(lambda t: t * 2.0, x)


def nested_def_as_a_value(k):
    def scaled(t):
        return k * t

    return _apply(scaled, 2.0)


def named_lambda_as_a_value(k):
    fn = lambda t: k * t * t  # noqa: E731
    return _apply(fn, 3.0)


def sorted_by_a_closing_key(x):
    order = sorted(range(len(x)), key=lambda i: x[i] * x[i])
    return x[order[0]] * 3.0 + np.sum(np.sin(x))


@pytest.mark.parametrize(
    "f, message",
    [
        (lambda_closing_over_the_input, "calling 'fn', a function given as a value"),
        (lambda_of_the_argument, "calling 'fn', a function given as a value"),
        (nested_def_as_a_value, "'scaled', a function defined inside"),
        (named_lambda_as_a_value, "'fn', a function defined inside"),
    ],
)
def test_a_function_given_as_a_value_is_refused_never_a_constant(f, message):
    with pytest.raises(sg.TransformError, match=message):
        sg.grad(f)(0.5)


def test_a_sorting_key_closing_over_the_input_only_orders():
    x = np.array([0.3, -1.2, 0.7])
    expected = numerical_gradient(sorted_by_a_closing_key, (x,), 0)
    np.testing.assert_allclose(sg.grad(sorted_by_a_closing_key)(x), expected, rtol=1e-6)
    sg.check_grads(sorted_by_a_closing_key, (x,), order=2)
