"""A transformed function never changes its inputs and never returns them (API.md, section 1).

Results: ``sg.grad`` of ``np.sum(x * w)`` returned ``w`` itself (so ``g *= lr`` rescaled the
caller's weights), ``value_and_grad``/``jvp``/``vjp`` returned their argument or tangent or
cotangent; now no result shares memory with an input, a global or a view of one, in any mode.
Inputs: ``xs.append``/``p.update`` inside ``f`` changed the caller's list/dict under jvp/vjp;
now every mode leaves arguments (arrays, lists, dicts, nested) and globals as they were.
Derivatives are checked against central differences."""

import copy
import inspect

import numpy as np
import pytest

import s2sgrad as sg
from tests.numerical import numerical_gradient

W = np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
W_BEFORE = W.copy()


def weighted(x, w):
    return np.sum(x * w)


def weighted_transposed(x, w):
    return np.sum(x * w.T)


def weighted_by_global(x):
    return np.sum(x * W)


def identity(x):
    return x


def first_row(x):
    return x[0]


def from_dict(p):
    return np.sum(p["x"] * p["w"])


def _leaves(value):
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaves(item)]
    if isinstance(value, (list, tuple)):
        return [leaf for item in value for leaf in _leaves(item)]
    return [value]


def _assert_unshared(result, *sources):
    for leaf in _leaves(result):
        for source in [*_leaves(sources), W]:
            if isinstance(leaf, np.ndarray) and isinstance(source, np.ndarray):
                assert not np.shares_memory(leaf, source)
            assert leaf is not source or isinstance(leaf, (float, int))


X = np.array([[0.5, 1.5, -2.0], [1.0, -0.5, 2.5]])


def test_a_gradient_is_never_an_argument_or_a_view_of_one():
    w = W.copy()
    gradient = sg.grad(weighted)(X, w)
    _assert_unshared(gradient, X, w)
    np.testing.assert_allclose(gradient, numerical_gradient(weighted, (X, w), 0), rtol=1e-6)
    gradient *= 0.1  # the user's update must not reach w
    np.testing.assert_array_equal(w, W)
    wt = W.T.copy()
    gradient = sg.grad(weighted_transposed)(X, wt)
    _assert_unshared(gradient, X, wt)
    np.testing.assert_allclose(
        gradient, numerical_gradient(weighted_transposed, (X, wt), 0), rtol=1e-6
    )


def test_a_gradient_is_never_a_global():
    gradient = sg.grad(weighted_by_global)(X)
    _assert_unshared(gradient, X)
    gradient *= 3.0
    np.testing.assert_array_equal(W, W_BEFORE)
    np.testing.assert_allclose(sg.grad(weighted_by_global)(X), W)


def test_a_value_is_never_an_argument():
    value, gradient = sg.value_and_grad(identity)(X)
    _assert_unshared(value, X)
    np.testing.assert_array_equal(value, X)
    np.testing.assert_allclose(gradient, np.ones_like(X))
    value, _ = sg.value_and_grad(first_row)(X)
    _assert_unshared(value, X)
    np.testing.assert_array_equal(value, X[0])


def test_jvp_vjp_results_are_never_arguments_tangents_or_cotangents():
    t = np.ones_like(X)
    out, tangent = sg.jvp(identity, (X,), (t,))
    _assert_unshared((out, tangent), X, t)
    np.testing.assert_array_equal(tangent, t)
    out, back = sg.vjp(identity, X)
    cotangent = np.full_like(X, 2.0)
    (gradient,) = back(cotangent)
    _assert_unshared((out, gradient), X, cotangent)
    np.testing.assert_array_equal(gradient, cotangent)
    out, back = sg.vjp(weighted, X, W)
    grads = back(1.0)
    _assert_unshared(grads, X)
    np.testing.assert_allclose(grads[0], numerical_gradient(weighted, (X, W), 0), rtol=1e-6)


def test_jacobian_hessian_hvp_results_are_new():
    x = X[0]
    for mode in ("reverse", "forward"):
        jac = sg.jacobian(identity, mode=mode)(x)
        _assert_unshared(jac, x)
        np.testing.assert_array_equal(jac, np.eye(3))
    v = np.array([1.0, 0.0, -1.0])
    hvp = sg.hvp(weighted, wrt=0)(x, W[0], v)
    _assert_unshared(hvp, x, v)
    np.testing.assert_array_equal(hvp, np.zeros(3))
    _assert_unshared(sg.hessian(weighted)(x, W[0]), x)


def returns_global(x):
    return W


def calls_returning_global(x):
    return returns_global(x)


def scales_by_global(x):
    return x * W


def sums_scaled(x):
    return np.sum(scales_by_global(x))


def test_a_callee_never_hands_out_its_global():
    x = np.ones_like(W)
    out, tangent = sg.jvp(calls_returning_global, (x,), (x,))
    _assert_unshared((out, tangent), x)
    np.testing.assert_array_equal(out, W)
    np.testing.assert_array_equal(tangent, np.zeros_like(W))
    value, gradient = sg.value_and_grad(calls_returning_global)(x)
    _assert_unshared((value, gradient), x)
    np.testing.assert_array_equal(value, W)
    gradient = sg.grad(sums_scaled)(x)
    _assert_unshared(gradient, x)
    np.testing.assert_allclose(gradient, numerical_gradient(sums_scaled, (x,), 0), rtol=1e-6)


def test_gradients_of_containers_hold_no_argument():
    p = {"x": X.copy(), "w": W.copy()}
    gradient = sg.grad(from_dict)(p)
    _assert_unshared(gradient, p)
    np.testing.assert_allclose(gradient["x"], p["w"])
    np.testing.assert_allclose(gradient["w"], p["x"])
    gradient["x"] *= 0.0
    np.testing.assert_array_equal(p["w"], W)


# -- inputs are never changed --------------------------------------------------------------------


def appends(xs):
    xs.append(0.5)
    return xs[0] * xs[1] * xs[-1]


def appends_to_nested(p):
    p["layers"].append(np.ones(3))
    return np.sum(p["layers"][0] * p["w"] * len(p["layers"]))


def updates(p):
    p.update(c=3.0)
    return np.sum(p["a"] * p["b"]) * p["c"]


def _snapshot(value):
    return copy.deepcopy(value)


def _assert_same(value, snapshot):
    if isinstance(value, dict):
        assert isinstance(snapshot, dict) and list(value) == list(snapshot)
        for key in value:
            _assert_same(value[key], snapshot[key])
    elif isinstance(value, (list, tuple)):
        assert type(value) is type(snapshot) and len(value) == len(snapshot)
        for a, b in zip(value, snapshot, strict=True):
            _assert_same(a, b)
    else:
        np.testing.assert_array_equal(value, snapshot)


RUNS = {
    "grad": lambda f, a: sg.grad(f)(a),
    "value_and_grad": lambda f, a: sg.value_and_grad(f)(a)[1],
    "vjp": lambda f, a: sg.vjp(f, a)[1](1.0)[0],
    "jvp": lambda f, a: sg.jvp(f, (a,), (copy.deepcopy(a),))[1],
}


# Changing an argument in place is refused (API.md: in-place mutation of an argument), at the
# line of the change, and the argument is left as it was.
CHANGERS = {
    "appends": (appends, lambda: [1.5, 2.0], "xs.append(0.5)"),
    "appends_to_nested": (
        appends_to_nested,
        lambda: {"layers": [np.array([1.0, 2.0, -1.0])], "w": np.array([3.0, 4.0, 0.5])},
        'p["layers"].append(np.ones(3))',
    ),
    "updates": (updates, lambda: {"a": np.array([1.5, 1.0]), "b": 2.0}, "p.update(c=3.0)"),
}


@pytest.mark.parametrize("mode", list(RUNS))
@pytest.mark.parametrize("name", list(CHANGERS))
def test_changing_an_argument_container_is_refused_and_leaves_it_alone(mode, name):
    f, make, line = CHANGERS[name]
    argument = make()
    snapshot = _snapshot(argument)
    with pytest.raises(sg.TransformError) as refused:
        RUNS[mode](f, argument)
    _assert_same(argument, snapshot)
    source, first = inspect.getsourcelines(f)
    changed = next(i for i, text in enumerate(source) if line in text)
    assert refused.value.lineno == first + changed


def test_jacobian_and_hessian_leave_argument_lists_alone():
    xs = [1.5, 2.0]
    for mode in ("reverse", "forward"):
        with pytest.raises(sg.TransformError):
            sg.jacobian(appends, mode=mode)(xs)
        assert xs == [1.5, 2.0]


def weighted_by_a_global_row(x):
    return np.sum(x * W[0])


def linear_in_both(x, w):
    return np.sum(x * w) + np.sum(w)


def _zero_in_place(value):
    for leaf in _leaves(value):
        if isinstance(leaf, np.ndarray) and leaf.flags.writeable:
            leaf *= 0.0


EVERY_TRANSFORM = {
    "grad": lambda f, *a: sg.grad(f)(*a),
    "value_and_grad": lambda f, *a: sg.value_and_grad(f)(*a),
    "vjp": lambda f, *a: (sg.vjp(f, *a)[0], sg.vjp(f, *a)[1](1.0)),
    "jvp": lambda f, *a: sg.jvp(f, a, tuple(np.ones_like(v) for v in a)),
    "jacobian": lambda f, *a: sg.jacobian(f)(*a),
    "jacobian_forward": lambda f, *a: sg.jacobian(f, mode="forward")(*a),
    "hessian": lambda f, *a: sg.hessian(f)(*a),
    "hvp": lambda f, *a: sg.hvp(f)(*a, np.ones_like(a[0])),
}


@pytest.mark.parametrize("transform", list(EVERY_TRANSFORM))
@pytest.mark.parametrize("f", [weighted_by_a_global_row, linear_in_both], ids=lambda f: f.__name__)
def test_updating_any_result_in_place_changes_no_input_and_no_global(transform, f):
    args = (np.array([0.5, -1.0, 2.0]), np.array([1.5, 0.25, -3.0]))[: f.__code__.co_argcount]
    snapshots = [a.copy() for a in args]
    result = EVERY_TRANSFORM[transform](f, *args)
    _assert_unshared(result, *args)
    _zero_in_place(result)
    for a, snapshot in zip(args, snapshots, strict=True):
        np.testing.assert_array_equal(a, snapshot)
    np.testing.assert_array_equal(W, W_BEFORE)
    gradient = sg.grad(f)(*args)  # and the derivative is still right
    np.testing.assert_allclose(gradient, numerical_gradient(f, args, 0), rtol=1e-6)
