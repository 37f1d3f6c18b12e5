"""Property test: random programs with if/else, for, while, break and array writes.

Programs are drawn from a small grammar over a vector ``x``, a number ``s`` and an integer
``n``. Branch conditions and trip counts depend on ``n`` and loop indices only, so central
finite differences never cross a branch boundary; values flow through every construct. The
compiled gradient must match finite differences, keep the inputs unchanged, and the compiler
must never fail with anything but the documented errors.
"""

import importlib.util
import itertools

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numerical import numerical_gradient

import s2sgrad as sg

_counter = itertools.count()

SAFE = [
    "np.sin({a})",
    "np.tanh({a}) * {b}",
    "{a} * 0.5 + {b}",
    "{a} - 0.3 * {b}",
    "np.cos({a}) * {b}",
    "{a} * {a} * 0.1",
]


@st.composite
def expressions(draw, names):
    template = draw(st.sampled_from(SAFE))
    a, b = draw(st.sampled_from(names)), draw(st.sampled_from(names))
    return template.format(a=a, b=b)


@st.composite
def statements(draw, depth=0):
    """Lines of one statement (indented by the caller), assigning only ``v`` and ``w``."""
    names = ["v", "w", "s"]
    kind = draw(
        st.sampled_from(["assign", "if", "for", "while", "write"] if depth < 2 else ["assign"])
    )
    target = draw(st.sampled_from(["v", "w"]))
    if kind == "assign":
        return [f"{target} = {draw(expressions(names))}"]
    if kind == "if":
        inner_true = draw(statements(depth + 1))
        inner_false = draw(statements(depth + 1))
        cut = draw(st.integers(0, 3))
        return (
            [f"if n > {cut}:"]
            + ["    " + line for line in inner_true]
            + ["else:"]
            + ["    " + line for line in inner_false]
        )
    if kind == "for":
        inner = draw(statements(depth + 1))
        stop = draw(st.integers(0, 3))
        body = [f"{target} = {target} + x[i] * {draw(expressions(names))}"]
        if draw(st.booleans()):
            body += [f"if i == {stop}:", "    break"]
        return ["for i in range(len(x)):"] + ["    " + line for line in body + inner]
    if kind == "while":
        inner = draw(statements(depth + 1))
        return ["k = 0", "while k < n:"] + ["    " + line for line in inner] + ["    k = k + 1"]
    return [f"y[{draw(st.integers(0, 2))}] = {draw(expressions(names))}", "v = v + np.sum(y)"]


@st.composite
def programs(draw):
    body = ["v = np.sum(x) * s", "w = s * 0.5", "y = x * 1.0"]
    for _ in range(draw(st.integers(1, 4))):
        body += draw(statements())
    body.append("return np.sum(v * w) + np.sum(y * x)")
    return "def f(x, s, n):\n" + "".join(f"    {line}\n" for line in body)


def load(source, directory):
    name = f"random_control_flow_{next(_counter)}"
    path = directory / f"{name}.py"
    path.write_text("import numpy as np\n\n\n" + source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.f


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(source=programs(), n=st.integers(0, 4), seed=st.integers(0, 2**16))
def test_random_control_flow_programs(tmp_path, source, n, seed):
    f = load(source, tmp_path)
    rng = np.random.default_rng(seed)
    x, s = rng.uniform(-1.0, 1.0, 3), float(rng.uniform(0.2, 1.0))
    before = x.copy()
    try:
        dx, ds = sg.grad(f, wrt=(0, 1))(x, s, n)
    except (sg.TransformError, LookupError) as error:  # documented refusals are allowed
        raise AssertionError(f"refused a supported program:\n{source}\n{error}") from error
    np.testing.assert_array_equal(x, before)
    want_x = numerical_gradient(f, (x, s, n), 0)
    want_s = numerical_gradient(f, (x, s, n), 1)
    message = f"\n{source}\nn={n}\n{sg.source(sg.grad(f, wrt=(0, 1)), x, s, n)}"
    np.testing.assert_allclose(dx, want_x, rtol=1e-4, atol=1e-6, err_msg=message)
    np.testing.assert_allclose(ds, want_s, rtol=1e-4, atol=1e-6, err_msg=message)


UNSUPPORTED = [
    "try:\n    v = v + 1.0\nexcept ValueError:\n    pass",
    "with open('f') as handle:\n    v = v + 1.0",
    "g = lambda a: a * 2.0\nv = g(v)",
    "del w",
    "x += 1.0",
    "x[0] = 1.0",
    "v.attribute = 1.0",
    "v = undefined_name * 2.0",
    "v = np.fft.fft(x).real.sum() * v",
    "v = {k: v for k in range(2)}[0]",
    "v = [a * b for a in x for b in x][0]",
    "v = v if n > 1 else undefined_other",
    "async def inner():\n    pass",
    "global G\nv = v * 2.0",
    "v = (w := v * 2.0)",
    "class Inner:\n    pass",
]


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    prefix=st.lists(
        st.sampled_from(["v = v * 2.0", "w = np.sin(v)", "v = v + np.sum(x)"]), max_size=2
    ),
    bad=st.sampled_from(UNSUPPORTED),
    suffix=st.lists(st.sampled_from(["v = v * w", "w = w + 1.0"]), max_size=2),
)
def test_unsupported_programs_fail_only_with_documented_errors(
    tmp_path_factory, prefix, bad, suffix
):
    lines = ["v = np.sum(x) * s", "w = s", *prefix, *bad.splitlines(), *suffix]
    source = "def f(x, s, n):\n" + "".join(f"    {line}\n" for line in lines)
    source += "    return np.sum(v * w)\n"
    f = load(source, tmp_path_factory.mktemp("unsupported"))
    try:
        sg.grad(f, wrt=(0, 1))(np.ones(3), 0.5, 2)
    except sg.TransformError as error:
        assert error.filename.endswith(".py") and error.lineno >= 4
        assert str(error).startswith(f"{error.filename}:{error.lineno}:")
    except LookupError as error:  # numpy.fft.fft has no rule: the message names it
        assert "no gradient registered for" in str(error)
