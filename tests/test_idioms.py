"""Loop, container and numerical idioms of tutorials, written as users write them (issue 18),
checked against finite differences in reverse and forward mode and at second order."""

import numpy as np
import pytest

import s2sgrad as sg
from tests import idiom_programs as ip
from tests.numerical import numerical_gradient

rng = np.random.default_rng(0)
W1, B1 = rng.normal(size=(3, 3)), rng.normal(size=3)
W2, B2 = rng.normal(size=(2, 3)), rng.normal(size=2)
X3 = np.array([0.3, -0.2, 0.5])
PARAMS = {"w": X3, "bias": np.array([0.1, 0.7]), "s": np.array(0.4)}

CASES = {
    "for W, b in params": (ip.mlp_pairs, ([(W1, B1), (W2, B2)], X3)),
    "for layer in params: W, b = layer": (ip.mlp_layers, ([(W1, B1), (W2, B2)], X3)),
    ".items()": (ip.over_items, (PARAMS,)),
    ".values()": (ip.over_values, (PARAMS,)),
    ".keys()": (ip.over_keys, (PARAMS,)),
    "sum over .values() generator": (ip.l2_of_values, (PARAMS,)),
    "comprehension over .items()": (ip.comprehension_of_items, (PARAMS,)),
    "enumerate(zip(a, b))": (ip.enumerate_zip, (X3, 2.0 * X3)),
    "for t in [a, b, c]": (ip.over_list_literal, (X3, B1, 0.7)),
    "unpacking np.exp(log_theta)": (ip.unpack_exp, (X3,)),
    "unpacking rows": (ip.unpack_rows, (W1[:2],)),
    "v += dt * a on floats": (ip.euler, (0.5, 0.3)),
    "with np.errstate": (ip.with_errstate, (np.array([0.5, 1.5, 2.0]),)),
    "with warnings.catch_warnings": (ip.with_catch_warnings, (np.array([0.5, 1.5]),)),
    "with np.printoptions": (ip.with_printoptions, (X3,)),
    "isinstance on a pytree": (ip.isinstance_of_tree, ({"a": X3},)),
    "range(len(...)) on a list": (ip.range_of_len, ([X3, B1],)),
    "dict comprehension": (ip.dict_comprehension, (X3,)),
    "set comprehension of constants": (ip.set_comprehension_of_sizes, (X3,)),
    "nested comprehension": (ip.nested_comprehension, (X3,)),
    "comprehension of comprehensions": (ip.nested_list_of_lists, (W1,)),
    "first, *rest = w": (ip.first_and_rest, (X3,)),
    "head, *middle, tail = ps": (ip.head_middle_tail, ([X3, B1, 2.0 * X3, -B1],)),
    "for first, *rest in W": (ip.loop_over_starred_rows, (W1,)),
    "list(array)": (ip.list_of_an_array, (X3,)),
    "list(zip(a, b))": (ip.list_of_zip, (X3,)),
    "for pair in zip(a, b)": (ip.loop_over_zip_items, (X3,)),
    "f(*args) of a tuple": (ip.spread_a_tuple, (X3,)),
    "f(a, *rest)": (ip.spread_the_rest, (X3,)),
    "f(*literal, **literal)": (ip.spread_literals, (X3,)),
    "zip(*pairs)": (ip.columns_of_pairs, (X3,)),
    # (the keys read back from the list of (key, value) pairs are no values with a
    # derivative: a LookupError "index that depends on the differentiated input" before)
    "dict comprehension over .items()": (ip.dict_comprehension_of_items, (PARAMS,)),
    "dict written by key in a loop over .items()": (ip.dict_built_from_items_in_a_loop, (PARAMS,)),
    "a callee with *args": (ip.calls_varargs, (X3,)),
    "a callee with **kwargs": (ip.calls_kwargs, (X3,)),
    "a callee with every kind of parameter": (ip.calls_every_kind_of_parameter, (X3,)),
    "spreading into *args and **kwargs": (ip.spreads_into_varargs, (X3,)),
    "[a, *xs, b] list literal": (ip.starred_in_a_list_literal, (X3,)),
    "d.get(key, default)": (ip.dict_get_with_defaults, (PARAMS,)),
    "spread numbers into a rebinding callee": (ip.spreads_numbers_into_a_rebinding_callee, (0.7,)),
    "spread items into a rebinding callee": (ip.spreads_an_element_into_a_rebinding_callee, (X3,)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_check_grads_second_order(name):
    f, args = CASES[name]
    sg.check_grads(f, args, order=2)


def test_dict_gradient_has_the_dict_structure():
    gradient = sg.grad(ip.over_items)(PARAMS)
    assert isinstance(gradient, dict) and list(gradient) == list(PARAMS)
    for key, value in PARAMS.items():
        np.testing.assert_allclose(gradient[key], 2 * value * len(key))


def test_list_of_pairs_gradient_has_the_list_structure():
    params = [(W1, B1), (W2, B2)]
    gradient = sg.grad(ip.mlp_pairs)(params, X3)
    assert isinstance(gradient, list) and all(isinstance(g, tuple) for g in gradient)
    flat = lambda w1: ip.mlp_pairs([(w1, B1), (W2, B2)], X3)  # noqa: E731
    np.testing.assert_allclose(gradient[0][0], numerical_gradient(flat, (W1,), 0), atol=1e-7)


def test_context_managers_leave_warning_filters_alone():
    import warnings

    before = list(warnings.filters)
    sg.grad(ip.with_catch_warnings)(np.array([0.5, 1.5]))
    assert list(warnings.filters) == before


@pytest.mark.parametrize(
    "f, message",
    [
        (ip.with_as, "with ... as is not supported"),
        (ip.with_unknown_manager, "context managers that carry no derivative"),
    ],
)
def test_other_with_statements_are_refused_at_the_users_line(f, message):
    with pytest.raises(sg.TransformError, match=message) as caught:
        sg.grad(f)
    assert caught.value.lineno == f.__code__.co_firstlineno + 1


def test_an_argument_array_updated_in_place_is_refused_saying_what_to_write():
    """``v += dt * a`` rebinds a float, but would change the caller's array."""
    with pytest.raises(sg.TransformError, match="write v = v"):
        sg.grad(ip.euler)(X3, B1)


@pytest.mark.parametrize(
    "f, message",
    [
        (ip.spread_with_defaults, "parameters with defaults is ambiguous"),
        (ip.set_of_values, "set"),
    ],
)
def test_unsupported_spreads_and_sets_are_clear_errors(f, message):
    with pytest.raises((sg.TransformError, LookupError), match=message):
        sg.grad(f)(X3, (X3, B1)) if f is ip.spread_with_defaults else sg.grad(f)(X3)


def test_starred_unpacking_keeps_pythons_length_check():
    with pytest.raises(ValueError, match="expected at least 2, got 1"):
        sg.grad(ip.head_middle_tail)([X3])


def test_a_starred_target_is_a_list_and_its_gradient_reaches_each_item():
    """``first, *rest = w`` on an array: rest is the list of w's other elements."""
    gradient = sg.grad(ip.first_and_rest)(X3)
    expected = np.array([np.sum(X3[1:] ** 2), *(2 * X3[0] * X3[1:])])
    np.testing.assert_allclose(gradient, expected)


def test_a_varargs_callee_gets_each_arguments_part():
    """``_sum_of_squares(w, 2w, 3)``: d/dw of w^2 + 4w^2 (closed form), in both modes."""
    np.testing.assert_allclose(sg.grad(ip.calls_varargs)(X3), 10.0 * X3, rtol=1e-12)
    tangent = sg.jvp(ip.calls_varargs, (X3,), (np.ones(3),))[1]
    np.testing.assert_allclose(tangent, np.sum(10.0 * X3), rtol=1e-12)


def test_differentiating_a_varargs_function_itself_says_to_wrap_it():
    with pytest.raises(TypeError, match=r"takes \*args or \*\*kwargs: wrap it"):
        sg.grad(ip.takes_varargs)(X3)


def test_get_on_something_else_than_a_dict_is_a_type_error():
    with pytest.raises(TypeError, match=r"\.get\(key, default\) is differentiated on a dict"):
        sg.grad(ip.dict_get_with_defaults)([X3, B1])
