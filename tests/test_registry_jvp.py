"""Every row of `tests/rule_table.py` through forward mode: `sg.jvp` and batched tangents.

The functions are the ones `tests/test_registry_grad.py` writes (the primitive called as users
spell it). For each row, the JVP along a random direction must match the central difference
of the whole output along that direction, and a batched sweep of three directions must give,
direction by direction, what three separate JVPs give. So every forward rule, written or
derived (from linearity, or from an elementwise reverse rule), is checked the moment its
primitive has a row in the table.
"""

from __future__ import annotations

import numpy as np
import pytest
from rule_table import TABLE
from s2sgrad.runtime import registry
from test_registry_grad import CASE_IDS, CASES, function_for, generated_module, make_inputs

import s2sgrad as sg
from s2sgrad.forward_api import forward_transform

__all__ = ["generated_module"]  # the fixture, shared with test_registry_grad


def _directions(inputs, wrt, seed):
    rng = np.random.default_rng(seed)
    out = []
    for i, x in enumerate(inputs):
        if i not in wrt:
            out.append(None)
        elif np.ndim(x) == 0:
            out.append(float(rng.normal()))
        else:
            out.append(rng.normal(size=np.shape(x)))
    return out


def _directional_difference(f, inputs, directions, eps=1e-6):
    def moved(sign):
        return [
            x if v is None else (x + sign * eps * v if np.ndim(x) else float(x + sign * eps * v))
            for x, v in zip(inputs, directions, strict=True)
        ]

    hi = np.asarray(f(*moved(1)))  # complex results (np.fft) keep their imaginary part
    lo = np.asarray(f(*moved(-1)))
    return (hi - lo) / (2 * eps)


@pytest.mark.parametrize(("row", "shapes"), CASES, ids=CASE_IDS)
def test_jvp_matches_directional_differences(row, shapes, generated_module):
    f, g = function_for(generated_module, row, len(shapes))
    inputs = make_inputs(row, shapes)
    directions = _directions(inputs, g.wrt, seed=1)
    value, tangent = sg.jvp(f, tuple(inputs), tuple(directions))
    np.testing.assert_allclose(value, f(*inputs))
    want = _directional_difference(f, inputs, directions)
    source = sg.source(forward_transform(f, _names(g)).wrapper(), *inputs)
    context = f"{row.id} shapes={shapes}\n{g.source}\ngenerated:\n{source}"
    assert np.shape(tangent) == np.shape(want), context
    scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
    np.testing.assert_allclose(tangent, want, rtol=row.tol, atol=row.tol * scale, err_msg=context)


@pytest.mark.parametrize(("row", "shapes"), CASES, ids=CASE_IDS)
def test_batched_tangents_match_one_jvp_per_direction(row, shapes, generated_module):
    f, g = function_for(generated_module, row, len(shapes))
    inputs = make_inputs(row, shapes)
    per_direction = [_directions(inputs, g.wrt, seed=k) for k in range(3)]
    stacked = [
        np.stack([np.asarray(d[i], dtype=np.float64) for d in per_direction])
        for i in range(len(inputs))
        if i in g.wrt
    ]
    compiled = forward_transform(f, _names(g), batched=True)
    function = compiled.specialize(*inputs)
    _, batched = function(*inputs, *stacked)
    context = f"{row.id} shapes={shapes}\n{g.source}\ngenerated:\n{compiled.last.source}"
    for k, directions in enumerate(per_direction):
        _, single = sg.jvp(f, tuple(inputs), tuple(directions))
        np.testing.assert_allclose(
            np.asarray(batched)[k], single, rtol=1e-10, atol=1e-10, err_msg=context
        )


def test_every_differentiable_rule_has_a_forward_rule():
    missing = [
        r.name
        for r in registry
        if r.differentiable
        and r.vjp is not None
        and not r.has_forward_rule
        and r.name != "_operator.getitem"  # indexing: the compiler indexes the tangent
    ]
    assert not missing, f"rules without a forward rule: {missing}"


def test_every_rule_is_in_the_table():
    """Every primitive users call has a row; the helpers generated code calls (forward rules
    only, from linearity) are exercised by `tests/test_higher_order.py` instead."""
    exercised = {id(row.primitive) for row in TABLE}
    missing = [
        r.name
        for r in registry
        if r.has_forward_rule and r.vjp is not None and id(r.primitive) not in exercised
    ]
    assert not missing, f"forward rules never checked: {missing}"


def _names(g) -> tuple[str, ...]:
    return tuple(f"x{i}" for i in g.wrt)
