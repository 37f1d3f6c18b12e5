"""NamedTuples and dataclasses built inside the differentiated function (issue 18): read by
field, by position and by unpacking, passed to a callee, in reverse and forward mode and at
second order, checked against central differences (`sg.check_grads`) and closed forms."""

from __future__ import annotations

import dataclasses
import typing

import numpy as np
import pytest

import s2sgrad as sg

V = np.array([0.1, 0.2, -0.3])


class Pair(typing.NamedTuple):
    a: float
    b: np.ndarray
    scale: float = 2.0


@dataclasses.dataclass
class Layer:
    w: np.ndarray
    s: float = 1.0
    name: str = "layer"


@dataclasses.dataclass(frozen=True)
class Frozen:
    w: np.ndarray
    s: float


def namedtuple_read_every_way(x, v):
    p = Pair(a=x * 2.0, b=v)
    a, b, scale = p
    return p.a * np.sum(p.b) + a * b[0] * scale + p[0] + p.scale


def dataclass_with_defaults(x, v):
    layer = Layer(v * x, s=x)
    other = Layer(np.sin(v))
    return layer.s * np.sum(layer.w**2) + other.s * np.sum(other.w) + len(other.name)


def frozen_dataclass_positional(x, v):
    f = Frozen(np.cos(v * x), x * x)
    return f.s * np.sum(f.w)


def _energy(layer):
    return layer.s * np.sum(np.tanh(layer.w))


def passed_to_a_callee(x, v):
    return _energy(Layer(w=v * x, s=np.exp(x)))


def built_in_a_loop(x, v):
    total = 0.0
    for k in range(3):
        p = Pair(a=x * k, b=v + k)
        total = total + p.a * np.sum(p.b**2)
    return total


CASES = [
    namedtuple_read_every_way,
    dataclass_with_defaults,
    frozen_dataclass_positional,
    passed_to_a_callee,
    built_in_a_loop,
]


@pytest.mark.parametrize("f", CASES, ids=lambda f: f.__name__)
def test_built_records_are_differentiated_in_every_mode(f):
    sg.check_grads(f, (0.7, V), order=2)


def test_namedtuple_gradient_closed_form():
    dx, dv = sg.grad(namedtuple_read_every_way, wrt=(0, 1))(0.7, V)
    # 2x sum(v) + 2x v0 * 2 + 2x + 2
    np.testing.assert_allclose(dx, 2 * np.sum(V) + 4 * V[0] + 2, rtol=1e-12)
    np.testing.assert_allclose(dv, 1.4 + np.array([2.8, 0.0, 0.0]), rtol=1e-12)


def test_second_derivative_through_a_built_record():
    def f(x):
        p = Pair(a=np.sin(x), b=np.array([x, x * x]))
        return p.a * np.sum(p.b**2)

    x = 0.7
    # f = sin(x) (x^2 + x^4)
    expected = -np.sin(x) * (x**2 + x**4) + 2 * np.cos(x) * (2 * x + 4 * x**3)
    expected += np.sin(x) * (2 + 12 * x**2)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(x), expected, rtol=1e-10)


def test_arguments_that_match_no_field_are_a_clear_error():
    def f(x):
        return Pair(x, V, 1.0, 2.0).a

    with pytest.raises(sg.TransformError, match="do not match the fields of Pair"):
        sg.grad(f)(0.5)


@dataclasses.dataclass
class Squares:
    w: np.ndarray
    c: np.ndarray = dataclasses.field(init=False)

    def __post_init__(self):
        self.c = self.w**2


def through_post_init(x):
    return np.sum(Squares(x).c * x)


def test_a_dataclass_built_with_a_post_init_is_refused():
    # its record was the container of its arguments: c, computed by __post_init__, had the
    # derivative of a constant (x**2 instead of 3 x**2), silently (hunt, repro_8)
    for transform in (sg.grad, lambda f: sg.jacobian(f, mode="forward")):
        with pytest.raises(LookupError, match="__post_init__"):
            transform(through_post_init)(np.array([0.4, -0.7]))


@dataclasses.dataclass
class WithDefault:
    w: np.ndarray
    s: float = 3.0


class PairWithDefault(typing.NamedTuple):
    w: np.ndarray
    s: float = 3.0


def default_left_out(x):
    return np.sum(WithDefault(x).w ** 2) * WithDefault(x).s + np.sum(PairWithDefault(x).w) * (
        PairWithDefault(x * 2.0).s
    )


def test_second_derivatives_of_records_built_leaving_a_default():
    # the packed tangent had no entry for the default: one zero for every direction, which
    # batch_unbroadcast indexed for its directions (IndexError; hunt, variations repro_9)
    x = np.array([0.4, -0.7])
    grad = sg.grad(default_left_out)
    want = np.array([(grad(x + e) - grad(x - e)) / 2e-6 for e in np.eye(2) * 1e-6])
    np.testing.assert_allclose(sg.hessian(default_left_out)(x), want, atol=1e-5)
    np.testing.assert_allclose(sg.jacobian(grad)(x), want, atol=1e-5)
