"""A traceback through the dispatcher `sg.grad` returns (``<s2sgrad dispatcher ...>``) shows its
source line, like every other generated frame (it showed none: its source was not registered
with linecache)."""

import traceback

import s2sgrad as sg


def square(x):
    return x * x


def test_a_traceback_through_the_dispatcher_shows_its_line():
    gradient = sg.grad(square)
    try:
        gradient(None)  # fails inside the generated code, called by the dispatcher
    except TypeError as error:
        frames = traceback.extract_tb(error.__traceback__)
    else:
        raise AssertionError("square(None) should fail")
    dispatcher = [f for f in frames if f.filename.startswith("<s2sgrad dispatcher")]
    assert dispatcher, [f.filename for f in frames]
    assert dispatcher[0].line.strip() == "return fn(x)"
    text = "".join(traceback.format_list(dispatcher))
    assert "return fn(x)" in text
