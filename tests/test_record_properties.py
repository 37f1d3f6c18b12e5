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
