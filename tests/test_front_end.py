"""Valid code in every shape Python allows differentiates (reverse and forward mode, checked
against central differences), or fails with a TransformError at the user's line: one-line
compound statements, column-0 comments, chained and augmented assignment, overflowing
literals, very long operator chains and deep nesting."""

import importlib.util
import inspect

import front_end_programs as programs
import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

SCALAR_PROGRAMS = [
    "one_line_if",
    "one_line_if_else",
    "one_line_for",
    "one_line_while",
    "one_line_nested_def",
    "one_line_loop_break",
    "comment_at_column_zero",
    "chained",
    "chained_copy",
    "chained_rebinds_source",
    "chained_in_loop",
    "chained_item_and_name",
    "chained_tuple",
    "every_arithmetic_operator",
    "bitwise_integer",
    "overflowing_literal",
    "overflowing_product",
    "huge_integer",
    "mean_indexed",
]


def _check_both_modes(f, x):
    """grad and jvp of `f` at `x` against central differences (and sg.check_grads)."""
    expected = numerical_gradient(f, [x], 0)
    np.testing.assert_allclose(sg.grad(f)(x), expected, rtol=1e-6, atol=1e-6)
    directions = np.eye(np.size(x)).reshape((np.size(x), *np.shape(x)))
    tangents = [
        np.sum(sg.jvp(f, (x,), (d if np.ndim(x) else float(d[()]),))[1]) for d in directions
    ]
    np.testing.assert_allclose(np.ravel(tangents), np.ravel(expected), rtol=1e-6, atol=1e-6)
    sg.check_grads(f, (x,))


@pytest.mark.parametrize("name", SCALAR_PROGRAMS)
@pytest.mark.parametrize("x", [1.3, -0.7])
def test_scalar_program_matches_finite_differences(name, x):
    _check_both_modes(getattr(programs, name), x)


@pytest.mark.parametrize("name", ["mean_indexed", "bitwise_mask", "overflowing_literal"])
def test_array_program_matches_finite_differences(name):
    _check_both_modes(getattr(programs, name), np.array([0.3, 1.2, 1.95, -0.4]))


def test_matmul_augmented_assignment():
    _check_both_modes(programs.matmul_operator, np.array([[0.3, 1.2], [0.5, -2.0]]))


def test_column_zero_comment_in_nested_definition_and_method():
    _check_both_modes(programs.inner_with_column_zero_comment(), 0.8)
    method = programs.Model.energy
    expected = numerical_gradient(lambda x: method(None, x), [0.8], 0)
    np.testing.assert_allclose(sg.grad(method, wrt=1)(None, 0.8), expected, rtol=1e-6)


def test_one_line_statement_keeps_its_source_line_in_comments():
    source = sg.source(sg.grad(programs.one_line_for))
    lines, start = inspect.getsourcelines(programs.one_line_for)
    loop_line = start + next(k for k, text in enumerate(lines) if "for _ in" in text)
    assert f"line {loop_line}:" in source


def _module_from_source(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text("import numpy as np\n\n\n" + text)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def _wrapped(terms, separator, width=8):
    rows = [separator.join(terms[k : k + width]) for k in range(0, len(terms), width)]
    return f"\n        {separator.strip()} ".join(rows)


def test_thousand_term_sum_and_long_chains(tmp_path):
    text = (
        "def long_sum(x):\n    return (\n        " + _wrapped(["x"] * 1000, " + ") + "\n    )\n\n\n"
        "def long_difference(x):\n    return (\n        "
        + _wrapped(["x * x"] * 600, " - ")
        + "\n    )\n\n\n"
        "def long_product(x):\n    return (\n        "
        + _wrapped(["x"] * 300, " * ")
        + "\n    )\n\n\n"
        "def long_mixed(x):\n    return (\n        "
        + _wrapped([f"{k % 7} * x" if k % 3 else "np.sin(x)" for k in range(500)], " + ")
        + "\n    )\n"
    )
    module, _ = _module_from_source(tmp_path, "long_chains", text)
    for name, x in [("long_sum", 0.9), ("long_difference", 0.9), ("long_product", 0.99)]:
        _check_both_modes(getattr(module, name), x)
    _check_both_modes(module.long_mixed, 0.4)
    assert sg.grad(module.long_sum)(0.5) == pytest.approx(1000.0)
    assert sg.grad(module.long_difference)(0.5) == pytest.approx(-598.0)


def test_nesting_deeper_than_supported_is_a_transform_error_at_the_line(tmp_path):
    nested = "np.sin(" * 120 + "x" + ")" * 120
    text = f"def deep(x):\n    y = x * 2.0\n    return {nested}\n\n\ndef fine(x):\n    return x\n"
    module, path = _module_from_source(tmp_path, "deep_nesting", text)
    with pytest.raises(sg.TransformError) as info:
        sg.grad(module.deep)
    assert info.value.filename == str(path)
    assert info.value.lineno == 6  # the return line (three header lines come first)
    assert "nested" in str(info.value) and "intermediate variables" in str(info.value)


def test_moderate_nesting_works(tmp_path):
    nested = "np.sin(" * 40 + "x" + ")" * 40
    text = f"def f(x):\n    return {nested}\n"
    module, _ = _module_from_source(tmp_path, "moderate_nesting", text)
    _check_both_modes(module.f, 0.7)
