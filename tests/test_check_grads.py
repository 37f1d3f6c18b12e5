"""`sg.check_grads` over the whole rule table and the control-flow programs, and proof that it
catches a wrong derivative (a check that cannot fail is worthless).

Order 2 in both modes: the generated JVP and VJP code is differentiated again in forward mode
(see s2sgrad/checks.py). Cases that do not work yet at second order are marked
``xfail(strict=True)``: the program gaps `tests/test_forward_and_higher_order.py` lists, and
the rows below with the reason observed; a fixed case then fails until it leaves its list.
"""

from __future__ import annotations

import numpy as np
import pytest
from s2sgrad.runtime import registry
from test_forward_and_higher_order import IDS, JACOBIAN_GAPS, PROGRAMS, SECOND_ORDER_GAPS
from test_registry_grad import CASE_IDS, CASES, function_for, generated_module, make_inputs

from s2sgrad.checks import check_grads

__all__ = ["generated_module"]  # the fixture, shared with test_registry_grad

_NO_FORWARD_RULE = "second order: no forward rule for the helper {} (runtime/rules/helpers.py)"

# rule-table primitives whose second-order check fails, and why (observed: LookupError when
# forward mode differentiates the generated derivative code)
RULE_GAPS: dict[object, str] = {}
# single rows known to fail at second order (by case-id prefix), marked strict xfail. Empty:
# the nuclear and spectral norms have second derivatives (from the SVD's derivative)
ROW_GAPS: dict[str, str] = {}
# control-flow programs failing here beyond the lists of test_forward_and_higher_order
PROGRAM_GAPS: dict[str, str] = {}


def _rule_cases():
    """The first and the last shape case of every row (broadcasting cases come last)."""
    for (row, shapes), case_id in zip(CASES, CASE_IDS, strict=True):
        if shapes not in (row.shapes[0], row.shapes[-1]):
            continue
        marks = ()
        if row.primitive in RULE_GAPS:
            marks = pytest.mark.xfail(strict=True, reason=RULE_GAPS[row.primitive])
        for prefix, reason in ROW_GAPS.items():
            if case_id.startswith(prefix):
                marks = pytest.mark.xfail(strict=True, raises=LookupError, reason=reason)
        yield pytest.param(row, shapes, id=case_id, marks=marks)


def _program_cases():
    for case, case_id in zip(PROGRAMS, IDS, strict=True):
        reason = PROGRAM_GAPS.get(case_id)
        if case_id in SECOND_ORDER_GAPS | JACOBIAN_GAPS:
            reason = "gap listed in test_forward_and_higher_order"
        marks = pytest.mark.xfail(strict=True, reason=reason) if reason else ()
        yield pytest.param(*case, id=case_id, marks=marks)


@pytest.mark.parametrize(("row", "shapes"), list(_rule_cases()))
def test_every_rule_to_second_order(row, shapes, generated_module):
    f, g = function_for(generated_module, row, len(shapes))
    inputs = make_inputs(row, shapes)
    tol = max(row.tol, 1e-5)
    check_grads(f, tuple(inputs), order=2, wrt=g.wrt, rtol=tol, atol=tol, eps=1e-5)


@pytest.mark.parametrize(("module", "name", "args"), list(_program_cases()))
def test_every_program_to_second_order(module, name, args):
    check_grads(getattr(module, name), args, order=2, rtol=1e-4, atol=1e-5, eps=1e-5)


# -- it catches wrong derivatives ----------------------------------------------------------------


def wobble(x):
    """A primitive of this test: its rules are registered below, some of them wrong."""
    return np.sin(x)


def uses_wobble(x, y):
    return np.sum(wobble(x) * y)


def uses_wobble_twice(x):
    return np.sum(wobble(x) ** 2)


@pytest.fixture
def scoped_registry(monkeypatch):
    """The global registry, with whatever the test registers removed afterwards."""
    monkeypatch.setattr(registry, "_rules", dict(registry._rules))
    yield registry
    monkeypatch.undo()
    registry.version += 1  # compiled-code caches keyed on the version forget the test's rules


def _register_wobble(reg, vjp, jvp=None):
    reg.register_vjp(wobble, vjp, elementwise=True, warn=False)
    if jvp is not None:
        reg.register_jvp(wobble, jvp, warn=False)


def right_vjp(g, ans, x):
    return g * np.cos(x)


def wrong_vjp(g, ans, x):
    return g * np.cos(x) * 1.001


def right_jvp(tangents, ans, x):
    return tangents[0] * np.cos(x)


X = np.array([0.3, -0.8, 1.4])
Y = np.array([1.5, -0.5, 2.0])


def test_a_right_rule_passes(scoped_registry):
    _register_wobble(scoped_registry, right_vjp)
    check_grads(uses_wobble, (X, Y), order=2)


@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_a_wrong_first_derivative_is_caught_in_each_mode(scoped_registry, mode):
    _register_wobble(scoped_registry, wrong_vjp)  # the forward rule is derived from it
    with pytest.raises(AssertionError) as caught:
        check_grads(uses_wobble, (X, Y), modes=(mode,), seed=7)
    message = str(caught.value)
    assert f"{mode} mode" in message and "derivative order 1" in message
    assert "seed=7" in message and "x, y" in message
    assert "expected (central differences)" in message and "got" in message


def test_a_wrong_forward_rule_is_caught_even_when_the_reverse_rule_is_right(scoped_registry):
    def wrong_jvp(tangents, ans, x):
        return tangents[0] * np.cos(x) * 0.999

    _register_wobble(scoped_registry, right_vjp, wrong_jvp)
    check_grads(uses_wobble, (X, Y), modes="reverse")
    with pytest.raises(AssertionError, match="forward mode"):
        check_grads(uses_wobble, (X, Y), modes="forward")


def test_a_wrong_second_derivative_is_caught_only_at_order_2(scoped_registry):
    # the first derivative of wobble is right, but differentiating its rule again is not:
    # `wrong_cos` has a rule of its own that is off by 1 %
    _register_wobble(scoped_registry, wrong_cos_vjp)
    scoped_registry.register_vjp(wrong_cos, wrong_cos_rule, elementwise=True, warn=False)
    check_grads(uses_wobble_twice, (X,), order=1)
    with pytest.raises(AssertionError, match="derivative order 2"):
        check_grads(uses_wobble_twice, (X,), order=2)


def wrong_cos(x):
    return np.cos(x)


def wrong_cos_vjp(g, ans, x):
    return g * wrong_cos(x)


def wrong_cos_rule(g, ans, x):
    return -g * np.sin(x) * 1.01


# -- arguments ------------------------------------------------------------------------------------


def mlp(params, x, n):
    h = x
    for layer in params["layers"]:
        h = np.tanh(h @ layer[0] + layer[1])
    return np.sum(h**n) * params["scale"]


def pair_out(x, y):
    return np.sin(x) * y, x * y + 1.0


def test_pytrees_integer_constants_and_tuple_outputs():
    rng = np.random.default_rng(0)
    params = {
        "layers": [(rng.normal(size=(3, 4)), rng.normal(size=4)), (rng.normal(size=(4, 2)), 0.1)],
        "scale": 0.7,
    }
    check_grads(mlp, (params, rng.normal(size=(5, 3)), 2), order=2)
    check_grads(mlp, (params, rng.normal(size=(5, 3)), 3), wrt="x")
    check_grads(pair_out, (np.linspace(0.1, 1.0, 3), 2.5), order=2)
    check_grads(pair_out, [np.float32(0.3), np.array([1.0, 2.0], dtype=np.float32)])


def test_generated_functions_can_be_checked():
    import s2sgrad as sg

    check_grads(sg.grad(uses_cos), (np.linspace(-1.0, 1.0, 4),), order=2)


def uses_cos(x):
    return np.sum(np.cos(x) * x)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"order": 0}, ValueError, "order must be an integer >= 1"),
        ({"order": 1.5}, ValueError, "order"),
        ({"modes": ("forward", "sideways")}, ValueError, "modes must be"),
        ({"modes": ()}, ValueError, "modes must be"),
        ({"wrt": "z"}, ValueError, "wrt='z' is not a parameter"),
        ({"wrt": 5}, ValueError, "out of range"),
        ({"wrt": 2}, ValueError, "without floating values"),
        ({"eps": 0.0}, ValueError, "eps must be a positive number"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs, error, match):
    with pytest.raises(error, match=match):
        check_grads(mlp, ({"layers": [], "scale": 1.0}, np.ones((2, 3)), 2), **kwargs)


def test_args_must_be_a_tuple():
    with pytest.raises(TypeError, match="args must be a tuple"):
        check_grads(uses_cos, np.ones(3))
    with pytest.raises(TypeError, match="f must be a function"):
        check_grads(3.0, (1.0,))
