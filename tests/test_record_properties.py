"""A property (or another attribute that is no field) of a record being differentiated.

s2sgrad differentiates a NamedTuple, a dataclass or a class registered with
``sg.tree.register`` through its fields. ``p.scaled`` (a ``@property`` computed from
``p.w``) was read as if it were a field: its derivative went to a key no field has and was
lost, a zero gradient in every mode, silently (two hunts: dataclass, NamedTuple, registered
class, a record built inside the function, a registered class's child read through a dict
attribute). Now a TypeError naming the attribute and the fields, in every mode.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import numpy as np
import pytest

import s2sgrad as sg


@dataclasses.dataclass
class Params:
    w: np.ndarray
    b: float

    @property
    def scaled(self):
        return self.w * self.b


class Pair(NamedTuple):
    w: np.ndarray
    b: float

    @property
    def scaled(self):
        return self.w * self.b


def loss(p):
    return np.sum(p.scaled**2)


def built_inside(x):
    return np.sum(Pair(x * 2.0, 1.5).scaled ** 2)


def fields_only(p):
    return np.sum((p.w * p.b) ** 2)


RECORDS = [Params(np.array([0.3, -0.5]), 1.5), Pair(np.array([0.3, -0.5]), 1.5)]
NOT_A_FIELD = r"\.scaled is not a field of the (Params|Pair)"


@pytest.mark.parametrize("p", RECORDS, ids=["dataclass", "NamedTuple"])
def test_a_property_of_a_record_argument_is_refused_in_every_mode(p):
    for transform in (
        lambda: sg.grad(loss)(p),
        lambda: sg.value_and_grad(loss)(p),
        lambda: sg.vjp(loss, p)[1](1.0),
        lambda: sg.jvp(loss, (p,), (p,)),
        lambda: sg.hessian(loss)(p),
        lambda: sg.jacobian(loss, mode="forward")(p),
    ):
        with pytest.raises(TypeError, match=NOT_A_FIELD):
            transform()
    # its fields, read as fields: right (against the closed form)
    grads = sg.grad(fields_only)(p)
    np.testing.assert_allclose(grads.w, 2 * p.b**2 * p.w)
    assert grads.b == pytest.approx(2 * p.b * np.sum(p.w**2))


def test_a_property_of_a_record_built_inside_is_refused():
    with pytest.raises(TypeError, match=NOT_A_FIELD):
        sg.grad(built_inside)(np.array([0.3, -0.5]))


@dataclasses.dataclass
class Scaled:
    w: np.ndarray
    SCALE = 2.0  # a class attribute: a constant, no field

    @property
    def double(self):
        return self.w * 2.0


def scaled_loss(p):
    return np.sum((p.w * p.SCALE) ** 2)


def test_a_constant_attribute_is_no_field_and_no_error():
    p = Scaled(np.array([0.3, -0.5]))
    np.testing.assert_allclose(sg.grad(scaled_loss)(p).w, 8.0 * p.w)
    np.testing.assert_allclose(sg.hessian(scaled_loss)(p).w.w, 8.0 * np.eye(2))


class Layer:
    """A registered class whose constant P is auxiliary data, no child."""

    def __init__(self, W, b, P):
        self.W, self.b, self.P = W, b, P


sg.tree.register(Layer, lambda l: ((l.W, l.b), l.P), lambda P, ch: Layer(ch[0], ch[1], P))


class Holder:
    """A registered class whose children sit in a dict attribute."""

    def __init__(self, params):
        self.params = params


sg.tree.register(
    Holder,
    lambda h: ((h.params["W"], h.params["b"]), None),
    lambda _, ch: Holder({"W": ch[0], "b": ch[1]}),
)


def layer_loss(layer, x):
    return np.sum(np.tanh(x @ layer.W @ layer.P + layer.b) ** 2)


def holder_loss(h, x):
    return np.sum((x @ h.params["W"] + h.params["b"]) ** 2)


def test_a_registered_class_with_a_constant_array_in_its_auxiliary_data():
    # the constant's tangent was a number 0, which matmul cannot take (a crash in every
    # forward mode); comparing two structures' auxiliary arrays with == raised (sg.hessian)
    rng = np.random.default_rng(0)
    x, w, b, p = (rng.standard_normal(s) for s in [(4, 2), (2, 3), 3, (3, 3)])
    layer, tangent = Layer(w, b, p), Layer(np.ones_like(w), np.ones_like(b), p)
    step = 1e-6
    moved = [Layer(w + s, b + s, p) for s in (step, -step)]
    want = (layer_loss(moved[0], x) - layer_loss(moved[1], x)) / (2 * step)
    grads = sg.grad(layer_loss)(layer, x)
    assert np.sum(grads.W) + np.sum(grads.b) == pytest.approx(want, rel=1e-6)
    assert sg.jvp(layer_loss, (layer, x), (tangent, np.zeros_like(x)))[1] == pytest.approx(
        want, rel=1e-6
    )
    hvp = sg.hvp(layer_loss)(layer, x, tangent)
    hessian = sg.hessian(layer_loss)(layer, x)
    assert np.sum(hessian.W.W) + 2 * np.sum(hessian.W.b) + np.sum(hessian.b.b) == pytest.approx(
        np.sum(hvp.W) + np.sum(hvp.b), rel=1e-6
    )


def test_children_read_through_a_dict_attribute_are_refused():
    h = Holder({"W": np.ones((2, 3)), "b": np.zeros(3)})
    with pytest.raises(TypeError, match=r"Holder\.params is not a field"):
        sg.grad(holder_loss)(h, np.ones((4, 2)))
