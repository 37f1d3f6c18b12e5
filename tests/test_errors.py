"""Bad input gets a clear error: TransformError with the user's position, LookupError, TypeError."""

import inspect
import linecache

import numpy as np
import pytest
import rejected

import s2sgrad as sg

REJECTED = {
    "uses_try": "try",
    "uses_with": "with",
    "uses_yield": "yield",
    "uses_global": "global",
    "uses_del": "del",
    "uses_class": "class",
    "uses_attribute_write": "attribute assignment",
    "uses_walrus": "assignment expression",
    "undefined_name": "name",
    "uses_async": "async",
    "nested_async": "async",
}


def marked_position(fn, marker):
    """(line, column) of the first token of the line in `fn` marked ``# REJECT <marker>``."""
    lines, start = inspect.getsourcelines(fn)
    for offset, text in enumerate(lines):
        if f"REJECT {marker}" in text:
            return start + offset, len(text) - len(text.lstrip()) + 1
    raise AssertionError(f"no marker {marker!r} in {fn.__name__}")


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_construct_names_file_line_and_column(name):
    fn = getattr(rejected, name)
    marker = REJECTED[name]
    with pytest.raises(sg.TransformError) as info:
        sg.grad(fn)
    error = info.value
    line, col = marked_position(fn, marker)
    assert isinstance(error, SyntaxError)
    assert error.filename == rejected.__file__
    assert error.lineno == line
    if name not in ("uses_walrus", "undefined_name"):
        assert error.offset == col  # statements: the caret is at the statement's start
    assert str(error).startswith(f"{rejected.__file__}:{line}:{error.offset}:")
    keyword = marker.split()[0]
    assert keyword in str(error)


def test_in_place_update_of_an_array_argument_is_refused_at_the_first_call():
    grad = sg.grad(rejected.mutates_argument)  # a Python number is rebound, not changed
    assert grad(2.0) == 1.0
    x = np.ones(3)
    with pytest.raises(sg.TransformError) as info:
        grad(x)
    line, col = marked_position(rejected.mutates_argument, "in-place update")
    assert (info.value.lineno, info.value.offset) == (line, col)
    assert "in-place update" in str(info.value)
    np.testing.assert_array_equal(x, np.ones(3))


def test_walrus_and_name_errors_point_at_the_expression():
    with pytest.raises(sg.TransformError) as info:
        sg.grad(rejected.undefined_name)
    line, _ = marked_position(rejected.undefined_name, "name")
    assert info.value.lineno == line
    source_line = linecache.getline(rejected.__file__, line)
    assert source_line[info.value.offset - 1 :].startswith("not_defined_anywhere")
    assert "not_defined_anywhere" in str(info.value)


def test_function_without_rule_raises_lookup_error_naming_it():
    with pytest.raises(LookupError, match=r"no gradient registered for numpy\.vander"):
        sg.grad(rejected.uses_vander)


def test_function_without_rule_on_constants_is_fine():
    x = np.arange(4.0)
    np.testing.assert_allclose(
        sg.grad(rejected.vander_of_constant)(x), np.vander(2 * np.ones(4))[0]
    )


def test_exec_made_function_is_a_type_error():
    namespace = {}
    exec("def made(x):\n    return x * 2\n", namespace)
    with pytest.raises(TypeError, match="cannot read the source of 'made'"):
        sg.grad(namespace["made"])


def test_builtins_without_rules_are_lookup_errors():
    # builtins with rules (np.sin, len) are differentiated by them: test_primitives_as_functions
    with pytest.raises(LookupError, match=r"no gradient registered for numpy\.vander"):
        sg.grad(np.vander)
    with pytest.raises(LookupError, match="no gradient registered for hash"):
        sg.grad(hash)


@pytest.mark.parametrize("fn", [object(), 3.0, "f"])
def test_objects_that_are_not_functions_are_type_errors(fn):
    with pytest.raises(TypeError, match="transforms Python functions"):
        sg.grad(fn)


def test_lambda_is_differentiated():  # (issue 18: tests/test_callables.py)
    assert sg.grad(lambda x: x * 2)(3.0) == 2.0
    assert sg.grad(rejected.uses_lambda)(3.0) == 1.0


def test_lambda_without_source_is_a_type_error():
    namespace = {}
    exec("f = lambda x: x * 2", namespace)
    with pytest.raises(TypeError, match="source of the lambda"):
        sg.grad(namespace["f"])


def two_args(x, y):
    return x * y


@pytest.mark.parametrize(
    ("wrt", "error", "message"),
    [
        (2, ValueError, "out of range"),
        ("z", ValueError, "not a parameter"),
        ((0, 0), ValueError, "twice"),
        (1.5, TypeError, "argument index or name"),
        ((), ValueError, "names no argument"),
    ],
)
def test_bad_wrt(wrt, error, message):
    with pytest.raises(error, match=message):
        sg.grad(two_args, wrt=wrt)


def test_source_of_a_plain_function_is_a_type_error():
    with pytest.raises(TypeError, match=r"sg\.source expects"):
        sg.source(two_args)


def test_unsupported_keyword_of_a_primitive():
    with pytest.raises(sg.TransformError, match=r"'where' of numpy\.sum"):
        sg.grad(sum_with_where)(np.ones(3))


def sum_with_where(x):
    return np.sum(x, where=x > 0)
