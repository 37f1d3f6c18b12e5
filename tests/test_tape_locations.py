"""Tape errors name the user's line where the operation was recorded, never the lowered code's
``<s2sgrad recorded #N>`` (`s2sgrad/recorded_locations.py`)."""

import inspect

import numpy as np
import pytest
from s2sgrad.runtime import registry

import s2sgrad as sg
from s2sgrad import recorded_locations

HERE = __file__


def line_of(marker: str) -> int:
    """The line of this file ending with the comment ``# marker``."""
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# {marker}"))


def bessel(y):
    return np.sum(np.i0(y))  # NO RULE IN A HELPER


@sg.primitive
def doubled(x):
    return 2.0 * x


def doubled_vjp(g, ans, x):  # registered by its test only (the registry's meta-tests)
    return g @ np.ones((7, 7))  # wrong shape: fails when the backward sweep runs


@sg.custom_gradient
def two_gradients(x):
    def backward(dy):
        return dy, dy  # one input, two gradients

    return x, backward


def assert_names_line(error: BaseException, marker: str):
    text = str(error)
    assert "<s2sgrad recorded" not in text
    assert f"{HERE}:{line_of(marker)}:" in text + "".join(getattr(error, "__notes__", []))


def test_a_missing_rule_names_the_line_that_recorded_it():
    x = sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        y = np.sin(x)
        z = np.sum(np.i0(y))  # NO RULE
    with pytest.raises(LookupError, match=r"numpy\.i0") as info:
        tape.gradient(z, x)
    assert_names_line(info.value, "NO RULE")
    assert f"(used at {HERE}:{line_of('NO RULE')}:" in str(info.value)
    assert "z = np.sum(np.i0(y))" in "".join(info.value.__notes__)  # the user's line, quoted


def test_the_line_is_the_users_innermost_frame():
    x = sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        z = bessel(x * 2.0)
    with pytest.raises(LookupError) as info:
        tape.gradient(z, x)
    assert_names_line(info.value, "NO RULE IN A HELPER")


def test_a_jacobian_names_the_line():
    x = sg.Variable(np.ones((2, 3)))
    with sg.GradientTape(persistent=True) as tape:
        y = np.i0(x) * 2.0  # JACOBIAN
    with pytest.raises(LookupError) as info:
        tape.jacobian(y, x)
    assert_names_line(info.value, "JACOBIAN")
    with pytest.raises(LookupError) as info:
        tape.batch_jacobian(y, x)
    assert_names_line(info.value, "JACOBIAN")


def test_an_error_in_the_backward_sweep_names_the_operation():
    x = sg.Variable(np.ones(3))
    with registry.scratch():
        sg.register_vjp(doubled)(doubled_vjp)
        with sg.GradientTape() as tape:
            z = np.sum(doubled(np.sin(x)))  # FAILING RULE
        with pytest.raises(ValueError) as info:
            tape.gradient(z, x)
    notes = "".join(info.value.__notes__)
    assert f"adjoint of the operation recorded at {HERE}:{line_of('FAILING RULE')}:" in notes


def test_a_custom_backward_with_the_wrong_count_names_its_call():
    x = sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        z = np.sum(two_gradients(x) * 2.0)  # CUSTOM
    with pytest.raises(ValueError, match="returned 2 gradient") as info:
        tape.gradient(z, x)
    assert_names_line(info.value, "CUSTOM")


def test_a_step_after_replayed_steps_names_its_new_line():
    w = sg.Variable(np.ones(3))
    for step in range(4):  # from the third step on, the tape replays the step before
        with sg.GradientTape() as tape:
            loss = np.sum(np.tanh(w) ** 2)
            if step == 3:
                loss = loss + np.sum(np.i0(w))  # AFTER REPLAY
        if step < 3:
            tape.gradient(loss, w)
    with pytest.raises(LookupError) as info:
        tape.gradient(loss, w)
    assert_names_line(info.value, "AFTER REPLAY")


def test_a_transform_error_in_lowered_code_moves_to_the_users_line():
    """(The compiler accepts every lowered recording today; this is the path one would take.)"""
    code = test_a_transform_error_in_lowered_code_moves_to_the_users_line.__code__
    source = '"""doc"""\nimport numpy as np\n\n\ndef recorded(x0):\n    t0 = odd(x0)\n'
    recorded_locations.register("<s2sgrad recorded #test>", source, [(code, 0)])
    error = sg.TransformError("odd is not supported", "<s2sgrad recorded #test>", 6, 4)

    @recorded_locations.naming_recorded_lines
    def failing():
        raise error

    with pytest.raises(sg.TransformError) as info:
        failing()
    assert info.value.filename == HERE
    assert info.value.lineno == code.co_firstlineno
    assert str(info.value).startswith(f"{HERE}:{code.co_firstlineno}:")
