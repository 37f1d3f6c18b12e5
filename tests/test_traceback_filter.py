"""An error raised through an entry point shows the user's frames and generated code, not the
compiler's (`s2sgrad/traceback_filter.py`); ``S2SGRAD_TRACEBACK=full`` shows every frame."""

import math
import os
import traceback
from pathlib import Path

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad import traceback_filter

ROOT = Path(__file__).resolve().parent.parent
INTERNAL = tuple(str(ROOT / folder) + os.sep for folder in ("s2sgrad", "transforms", "runtime"))
HERE = str(Path(__file__).resolve())


def uses_try(x):
    try:  # REJECTED
        y = x * 2.0
    except ValueError:
        y = x
    return np.sum(y)


def no_rule(x):
    return np.sum(np.i0(x))  # NO RULE


def mutates(x):
    x *= 2.0  # IN PLACE
    return np.sum(x)


def logarithm(x):
    return math.log(x) * x  # DOMAIN


@pytest.fixture
def filtered(monkeypatch):
    """The default a user gets, whatever the test session set (the fuzzer wants full ones)."""
    monkeypatch.delenv(traceback_filter.ENVIRONMENT, raising=False)


def frames_of(error: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(error.__traceback__))


def internal(frames) -> list[str]:
    return [f.filename for f in frames if str(Path(f.filename).resolve()).startswith(INTERNAL)]


def libraries(frames) -> list[str]:
    return [f.filename for f in frames if "site-packages" in f.filename]


def assert_users_frames_only(error: BaseException, line_marker: str | None = None):
    frames = frames_of(error)
    assert not internal(frames), internal(frames)
    assert not libraries(frames), libraries(frames)  # libcst's visitors, inspect, ...
    assert frames[0].filename == HERE  # the test's own frame, calling the entry point
    assert traceback_filter.NOTE in getattr(error, "__notes__", [])
    assert error.__notes__.count(traceback_filter.NOTE) == 1
    if line_marker is not None:  # the offending line is shown, as Python shows a SyntaxError
        text = "".join(traceback.format_exception(error))
        assert line_marker in text


def test_a_transform_error_shows_the_users_frame_and_line(filtered):
    with pytest.raises(sg.TransformError) as info:
        sg.grad(uses_try)(np.ones(3))
    assert_users_frames_only(info.value, "try:  # REJECTED")


@pytest.mark.parametrize(
    "call",
    [
        lambda: sg.jvp(uses_try, (np.ones(3),), (np.ones(3),)),
        lambda: sg.hessian(uses_try)(np.ones(3)),  # nested boundaries: hessian calls grad
        lambda: sg.jacobian(uses_try, mode="forward")(np.ones(3)),
        lambda: sg.vjp(uses_try, np.ones(3)),
        lambda: sg.hvp(uses_try)(np.ones(3), np.ones(3)),
        lambda: sg.value_and_grad(uses_try)(np.ones(3)),
        lambda: sg.check_grads(uses_try, (np.ones(3),)),
    ],
    ids=["jvp", "hessian", "jacobian", "vjp", "hvp", "value_and_grad", "check_grads"],
)
def test_every_transform_filters(filtered, call):
    with pytest.raises(sg.TransformError) as info:
        call()
    frames = frames_of(info.value)
    assert not internal(frames), internal(frames)
    assert not libraries(frames), libraries(frames)


def test_a_missing_rule_shows_the_users_frame(filtered):
    with pytest.raises(LookupError, match=r"numpy\.i0") as info:
        sg.grad(no_rule)(np.ones(3))
    assert_users_frames_only(info.value)
    assert all(
        not internal(frames_of(e)) for e in (info.value.__context__, info.value.__cause__) if e
    )


def test_a_bad_argument_shows_the_users_frame(filtered):
    with pytest.raises(TypeError, match="primals must be a tuple") as info:
        sg.jvp(no_rule, np.ones(3), np.ones(3))
    assert_users_frames_only(info.value)
    with pytest.raises(TypeError, match="wrt must be") as info:
        sg.grad(no_rule, wrt=1.5)
    assert_users_frames_only(info.value)


def test_an_error_at_the_first_call_keeps_the_dispatcher_frame(filtered):
    gradient = sg.grad(mutates)  # refused when the arguments show x is an array
    with pytest.raises(sg.TransformError, match="in-place") as info:
        gradient(np.ones(3))
    assert_users_frames_only(info.value, "x *= 2.0  # IN PLACE")
    names = [f.filename for f in frames_of(info.value)]
    assert names[0] == HERE
    assert names[1].startswith("<s2sgrad dispatcher")  # generated code: kept


def test_a_tape_error_shows_the_users_frame(filtered):
    x = sg.Variable(np.ones(3))
    with sg.GradientTape() as tape:
        y = np.sum(np.i0(x))
    with pytest.raises(LookupError, match="i0") as info:
        tape.gradient(y, x)
    assert_users_frames_only(info.value)


def test_the_users_own_error_keeps_the_generated_and_the_users_frames(filtered):
    with pytest.raises(ValueError, match="math domain error") as info:
        sg.jvp(logarithm, (-1.0,), (1.0,))  # through a boundary: jvp runs the code itself
    frames = frames_of(info.value)
    assert not internal(frames), internal(frames)
    generated = [f for f in frames if f.filename.startswith("<s2sgrad")]
    assert generated and "math.log(x)" in generated[-1].line
    assert frames[0].filename == HERE
    # sg.grad's function is generated code from the first frame on: nothing to filter
    with pytest.raises(ValueError, match="math domain error") as info:
        sg.grad(logarithm)(-1.0)
    frames = frames_of(info.value)
    assert frames[0].filename == HERE and frames[-1].filename.startswith("<s2sgrad")


def test_the_environment_variable_shows_every_frame(monkeypatch):
    monkeypatch.delenv(traceback_filter.ENVIRONMENT, raising=False)
    with pytest.raises(sg.TransformError) as info:
        sg.grad(uses_try)(np.ones(3))
    shown = frames_of(info.value)
    monkeypatch.setenv(traceback_filter.ENVIRONMENT, "full")
    with pytest.raises(sg.TransformError) as info:
        sg.grad(uses_try)(np.ones(3))
    frames = frames_of(info.value)
    assert any("transforms" in name for name in internal(frames))
    # every frame the filter hid is back, and nothing else changed: the user's frames lead
    assert len(frames) > len(shown) and frames[0].filename == shown[0].filename == HERE
    assert traceback_filter.NOTE not in getattr(info.value, "__notes__", [])


def test_successful_calls_are_unchanged(filtered):
    def f(x):
        return np.sum(np.sin(x) * x)

    x = np.linspace(0.0, 1.0, 4)
    np.testing.assert_allclose(sg.grad(f)(x), np.cos(x) * x + np.sin(x))
    assert sg.grad.__name__ == "grad" and "gradient" in sg.grad.__doc__


def test_warnings_still_name_the_users_line():
    """A boundary is one more frame between the user and a warning's `stacklevel`."""
    from s2sgrad.runtime import registry

    with registry.scratch(), pytest.warns(UserWarning, match="replacing") as record:

        @sg.register_vjp(np.sinc)  # replaces the built-in rule
        def sinc_vjp(g, ans, x):
            return g * 0.0

    assert record[0].filename == HERE
    x = sg.constant(np.arange(3))
    with pytest.warns(UserWarning, match="must be floating") as record:
        with sg.GradientTape() as tape:
            tape.watch(x)
    assert record[0].filename == HERE
