"""Callees specialized per call site (issue 18, "calls cost what inlined code costs"): for the
arguments the caller knows are numbers or arrays of a rank, and with adjoints and tangents only
for the parameters whose arguments carry a derivative there. Every derivative is checked
against central differences, in reverse and forward mode and at second order; the generated
code of a callee called with a constant argument is read for that argument's adjoint."""

import math
import re

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.forward_api import forward_transform
from tests.numerical import numerical_gradient, numerical_jacobian

# what is read here is the code of calls that stay calls (small callees are otherwise inlined)
pytestmark = pytest.mark.usefixtures("calls_stay_calls")

W = np.array([0.3, -0.7, 1.1])


def step(x, v, k, dt):
    a = -k * x
    v = v + dt * a
    x = x + dt * v
    return x, v


def spring(x, v, k, dt):
    for _ in range(20):
        x, v = step(x, v, k, dt)
    return x * x + v * v


def spring_total(x, v, k, dt):
    # the same `step`, on arrays this time, inside a callee with the loop
    return np.sum(spring(x, v, k, dt))


def scaled(a, w, c):
    return np.tanh(a * w) + c * a


def mixed(x, w, c):
    return np.sum(scaled(x, w, c) ** 2)


def constant_arguments(x, c):
    # `scaled` three times: with a literal and a global (constants), and with `x` twice
    return np.sum(scaled(x, W, 3.0)) + np.sum(scaled(x, x, c)) * c + np.sum(scaled(W, x, 0.5))


def inner(x, y):
    return x * math.sin(y) + y * y


def middle(x, y):
    return inner(x, y) + inner(y, 2.0) * inner(1.5, x)


def nested(x, y):
    return middle(x, y) * middle(y, x)


def power(x, n):
    if n == 0:
        return 1.0
    return x * power(x, n - 1)


def recursive(x, y):
    return power(x, 3) + power(np.sin(y), 2) * x


def pair(a, b):
    return a * a * b + math.cos(b)


def element_loop(x):
    total = 0.0
    for i in range(len(x) - 1):
        total = total + pair(x[i], x[i + 1])
    return total


def keywords(x, y):
    return inner(y=x, x=y) + inner(x, y=3.0)


def with_default(x, s=2.0):
    return x * s


def leaves_default(x, y):
    return np.sum(with_default(x) * y) + np.sum(with_default(y, x))


def two(x, y):
    return x * y, x + y


def product_of(p):
    return p[0] * p[1]


def whole_and_parts(x, y):
    # a returned tuple read element by element and passed on whole
    t = two(x, y)
    a, b = t
    return a * b + product_of(t) * a


def as_list(x, y):
    return [x * y, x - y]


def list_parts(x, y):
    a, b = as_list(x, y)
    return a * b + math.sin(a)


def reads_in_loop(x, v):
    # the tuple a callee returned, read by parts inside a loop after the call
    t = step(x, v, 2.0, 0.1)
    s = 0.0
    for i in range(3):
        s = s + t[0] * t[1] * i
    return s


def reads_in_branch(x, v):
    a, b = step(x, v, 2.0, 0.1)
    if x > 0:
        return a * b
    return b


def nested_closure(x, y):
    def scale(a):
        return a * x

    return scale(y) + scale(2.0)


PROGRAMS = [
    ("spring", spring, (1.0, 0.5, 2.0, 0.01)),
    ("spring_arrays", spring_total, (np.array([1.0, 0.3]), np.array([0.5, -0.2]), 2.0, 0.01)),
    ("mixed", mixed, (np.array([0.2, -0.4, 0.9]), np.array([1.3, 0.5, -0.8]), 0.7)),
    ("constant_arguments", constant_arguments, (np.array([0.2, -0.4, 0.9]), 0.6)),
    ("nested", nested, (0.4, -0.9)),
    ("recursive", recursive, (0.8, 0.3)),
    ("element_loop", element_loop, (np.array([0.2, -0.4, 0.9, 1.3]),)),
    ("keywords", keywords, (0.7, -0.2)),
    ("whole_and_parts", whole_and_parts, (0.7, -1.2)),
    ("whole_and_parts_arrays", whole_and_parts, (np.array([0.7, 0.2]), np.array([-1.2, 0.4]))),
    ("list_parts", list_parts, (0.7, -1.2)),
    ("reads_in_loop", reads_in_loop, (0.7, -1.2)),
    ("reads_in_branch", reads_in_branch, (0.7, -1.2)),
    ("reads_in_other_branch", reads_in_branch, (-0.7, -1.2)),
    ("nested_closure", nested_closure, (0.7, -1.2)),
    ("leaves_default", leaves_default, (np.array([0.5, 1.5]), np.array([-0.3, 0.8]))),
]


def _direction(value, rng):
    return rng.normal(size=np.shape(value)) if isinstance(value, np.ndarray) else 0.7


def _zero(value):
    return np.zeros_like(value) if isinstance(value, np.ndarray) else 0.0


@pytest.mark.parametrize("name, f, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_reverse_mode_against_finite_differences(name, f, args):
    for index in range(len(args)):
        got = sg.grad(f, wrt=index)(*args)
        np.testing.assert_allclose(got, numerical_gradient(f, args, index), rtol=1e-6, atol=1e-8)
    got = sg.grad(f, wrt=tuple(range(len(args))))(*args)
    for index, g in enumerate(got):
        np.testing.assert_allclose(g, numerical_gradient(f, args, index), rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, f, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_forward_mode_against_finite_differences(name, f, args):
    rng = np.random.default_rng(3)
    for index in range(len(args)):  # one argument moving, the others constant
        tangents = tuple(_direction(a, rng) if k == index else _zero(a) for k, a in enumerate(args))
        value, tangent = sg.jvp(f, args, tangents)
        expected = np.sum(numerical_gradient(f, args, index) * tangents[index])
        np.testing.assert_allclose(value, f(*args), rtol=1e-12)
        np.testing.assert_allclose(np.sum(tangent), expected, rtol=1e-6, atol=1e-8)
    tangents = tuple(_direction(a, rng) for a in args)  # every argument moving
    _, tangent = sg.jvp(f, args, tangents)
    expected = sum(np.sum(numerical_gradient(f, args, k) * t) for k, t in enumerate(tangents))
    np.testing.assert_allclose(np.sum(tangent), expected, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("name, f, args", PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_second_order_against_finite_differences(name, f, args):
    for index, value in enumerate(args):
        df = sg.grad(f, wrt=index)
        if isinstance(value, np.ndarray):  # forward over reverse
            hessian = sg.hessian(f, wrt=index)(*args)
        else:  # reverse over reverse
            hessian = sg.grad(df, wrt=index)(*args)
        expected = numerical_jacobian(
            lambda v, df=df, index=index: df(*args[:index], v, *args[index + 1 :]), value, eps=1e-5
        )
        np.testing.assert_allclose(hessian, expected, rtol=1e-5, atol=1e-6)


def _functions(text: str) -> dict[str, str]:
    """Each function defined in generated `text`, by name: its text."""
    parts = re.split(r"\n(?=def )", text)
    return {re.match(r"def (\w+)", p).group(1): p for p in parts if p.startswith("def ")}


def test_a_constant_argument_gets_no_adjoint():
    args = (1.0, 0.5, 2.0, 0.01)
    text = sg.source(sg.grad(spring, wrt=(0, 1, 2)), *args)
    functions = _functions(text)
    (backward,) = [body for name, body in functions.items() if name.startswith("_bwd_step")]
    assert "ddt" not in backward and "dt" in backward  # dt is read, never differentiated
    returned = backward.strip().splitlines()[-1]
    assert re.fullmatch(r"\s*return \(\w+, \w+, \w+\)", returned), returned
    # only x moves: v, k and dt are constants of the call (and v's value carries none: it is
    # an argument of the caller not differentiated)
    text = sg.source(sg.grad(spring, wrt=0), *args)
    (backward,) = [b for n, b in _functions(text).items() if n.startswith("_bwd_step")]
    assert "dk" not in backward and "ddt" not in backward


def test_a_constant_argument_gets_no_tangent():
    args = (1.0, 0.5, 2.0, 0.01)
    text = forward_transform(spring, ("x",)).for_arguments(args).source
    (callee,) = [b for n, b in _functions(text).items() if n.startswith("_jvp_step")]
    header = callee.splitlines()[0]
    assert "tx" in header and "tv" in header  # v moves with x after the first step
    assert "tk" not in callee and "tdt" not in callee


def test_numbers_need_no_shape_bookkeeping_in_a_callee():
    text = sg.source(sg.grad(nested, wrt=(0, 1)), 0.4, -0.9)
    callees = [b for n, b in _functions(text).items() if n.startswith("_bwd_")]
    assert callees and not any("unbroadcast" in b or "match_shape" in b for b in callees)


def test_one_callee_two_specializations_in_one_function():
    x = np.array([0.2, -0.4, 0.9])
    text = sg.source(sg.grad(constant_arguments, wrt=0), x, 0.6)
    names = sorted(n for n in _functions(text) if n.startswith("_bwd_scaled"))
    assert len(names) == len(set(names)) >= 2  # different parameters active: distinct halves
    np.testing.assert_allclose(
        sg.grad(constant_arguments)(x, 0.6), numerical_gradient(constant_arguments, (x, 0.6), 0)
    )


_defined = {}
exec("def no_source(a):\n    return a * 2.0\n", _defined)
no_source = _defined["no_source"]


def calls_without_source(x, y):
    return x * no_source(y)  # a constant of the derivative: never transformed


def test_a_constant_call_of_a_function_without_source_is_not_analyzed():
    assert sg.grad(calls_without_source)(1.5, 2.0) == 4.0
    assert sg.jvp(calls_without_source, (1.5, 2.0), (1.0, None)) == (6.0, 4.0)
