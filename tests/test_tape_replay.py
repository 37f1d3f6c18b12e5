"""Replayed training steps (`s2sgrad.replay`): a tape that records what an earlier step
recorded checks each call against that step instead of analysing it again. Every gradient here
is compared with a hand-written backward pass or with finite differences, step by step, on loops
where the replay holds, ends, or must not start."""

import gc
import weakref

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numerical import numerical_gradient
from s2sgrad.runtime import registry

import s2sgrad as sg
from s2sgrad import replay


@pytest.fixture(autouse=True)
def no_traces():
    replay.forget()
    yield
    replay.forget()


def _model(seed=0, batch=8):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, 5))
    t = rng.normal(size=(batch, 3))
    l1 = sg.nn.Dense(4, activation="relu", seed=seed)
    l2 = sg.nn.Dense(3, seed=seed + 1)
    l2(l1(x))
    return x, t, l1, l2


def _hand(x, t, w1, b1, w2, b2):
    """The closed-form gradients of mean((relu(x w1 + b1) w2 + b2 - t)^2)."""
    z1 = x @ w1 + b1
    h = np.maximum(z1, 0.0)
    out = h @ w2 + b2
    d = 2.0 * (out - t) / out.size
    dz1 = (d @ w2.T) * (z1 > 0)
    return [x.T @ dz1, dz1.sum(axis=0), h.T @ d, d.sum(axis=0)]


def _check(grads, expected):
    assert len(grads) == len(expected)
    for g, e in zip(grads, expected, strict=True):
        assert isinstance(g, sg.Tensor)
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g.numpy(), e, rtol=1e-10, atol=1e-12)


def _replayed(tape) -> bool:
    """Whether `tape` has replayed a trace to its end (asked before its `gradient` call: a
    non-persistent tape records nothing after it)."""
    return tape._trace is not None and tape._replay is replay.END


def _step(x, t, l1, l2, variables):
    with sg.GradientTape() as tape:
        loss = np.mean((l2(l1(x)) - t) ** 2)
    replayed = _replayed(tape)
    return tape, tape.gradient(loss, variables), replayed


def test_a_training_loop_replays_from_its_third_step_with_the_same_gradients():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    replayed = []
    for _ in range(6):
        expected = _hand(x, t, *(v.numpy() for v in variables))
        _, grads, was_replayed = _step(x, t, l1, l2, variables)
        _check(grads, expected)
        replayed.append(was_replayed)
        for v, g in zip(variables, grads, strict=True):  # the values change every step
            v.assign_sub(0.1 * g)
    assert replayed == [False, False, True, True, True, True]


def test_a_modules_trainable_variables_tuple_replays_and_gets_a_tuple():
    class Model(sg.Module):
        def __init__(self):
            super().__init__()
            self.hidden = sg.nn.Dense(4, activation="relu", seed=0)
            self.out = sg.nn.Dense(3, seed=1)

        def __call__(self, x):
            return self.out(self.hidden(x))

    x, t, _, _ = _model()
    model = Model()
    model(x)
    for _ in range(4):
        with sg.GradientTape() as tape:
            loss = np.mean((model(x) - t) ** 2)
        replayed = _replayed(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        assert isinstance(grads, tuple)
        _check(list(grads), _hand(x, t, *(v.numpy() for v in model.trainable_variables)))
    assert replayed


def test_a_new_batch_of_the_same_shape_replays_and_another_shape_does_not():
    x, t, l1, l2 = _model(batch=8)
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    rng = np.random.default_rng(5)
    for batch in (8, 8, 8, 8, 6, 8):
        x, t = rng.normal(size=(batch, 5)), rng.normal(size=(batch, 3))
        _, grads, replayed = _step(x, t, l1, l2, variables)
        _check(grads, _hand(x, t, *(v.numpy() for v in variables)))
        if batch == 6:
            assert not replayed


def test_a_float32_batch_does_not_replay_a_float64_step():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    for _ in range(3):
        _step(x, t, l1, l2, variables)
    x32, t32 = x.astype(np.float32), t.astype(np.float32)
    _, grads, replayed = _step(x32, t32, l1, l2, variables)
    assert not replayed  # the constant's dtype is checked
    _check(grads, _hand(x32, t32, *(v.numpy() for v in variables)))


def test_a_step_that_records_something_else_ends_the_replay_and_is_still_right():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    for step in range(7):
        with sg.GradientTape() as tape:
            loss = np.mean((l2(l1(x)) - t) ** 2)
            if step % 3 == 2:  # weight decay on some steps: one more recorded operation
                loss = loss + 0.5 * np.sum(l1.kernel**2)
        grads = tape.gradient(loss, variables)
        expected = _hand(x, t, *(v.numpy() for v in variables))
        if step % 3 == 2:
            expected[0] = expected[0] + l1.kernel.numpy()
        _check(grads, expected)


def test_calls_the_tape_does_not_record_leave_the_replay_going():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    for _ in range(4):
        with sg.GradientTape() as tape:
            out = l2(l1(x))
            scaled = sg.constant(t) * 2.0  # no tracked input: not recorded
            predicted = np.argmax(out, axis=1)  # not differentiable: not recorded
            loss = np.mean((out - t) ** 2)
        replayed = _replayed(tape)
        grads = tape.gradient(loss, variables)
        _check(grads, _hand(x, t, *(v.numpy() for v in variables)))
    assert replayed  # to its end
    assert scaled.shape == t.shape and predicted.shape == (8,)


def test_a_variable_assigned_between_two_reads_ends_the_replay():
    w = sg.Variable(np.array([0.5, -1.0, 2.0]))
    x = np.array([1.0, 2.0, 3.0])

    def step(assign: bool):
        with sg.GradientTape() as tape:
            a = np.sum(x * w)
            if assign:
                w.assign(w.numpy() * 3.0)
            b = np.sum(np.sin(x * w))
            loss = a + b
        return _replayed(tape), tape.gradient(loss, [w])

    for _ in range(3):
        _, (g,) = step(False)
        np.testing.assert_allclose(g.numpy(), x + x * np.cos(x * w.numpy()))
    before = w.numpy()
    replayed, (g,) = step(True)
    assert not replayed
    # the gradient flows to the value each read saw: the first read's, as TensorFlow has it
    # for a Variable assigned in between (the second read is a new leaf of the same Variable)
    after = w.numpy()
    np.testing.assert_allclose(after, before * 3.0)
    np.testing.assert_allclose(g.numpy(), x + x * np.cos(x * after))


def test_another_model_of_the_same_shapes_does_not_replay_the_first_ones_steps():
    x, t, l1, l2 = _model(seed=0)
    _, _, m1, m2 = _model(seed=3)
    first = [*l1.trainable_variables, *l2.trainable_variables]
    second = [*m1.trainable_variables, *m2.trainable_variables]
    for _ in range(3):
        _step(x, t, l1, l2, first)
    for _ in range(4):
        _, grads, replayed = _step(x, t, m1, m2, second)
        _check(grads, _hand(x, t, *(v.numpy() for v in second)))
    assert replayed  # its own trace, made from its own steps
    _, grads, replayed = _step(x, t, l1, l2, first)  # and the first model still replays its own
    assert replayed
    _check(grads, _hand(x, t, *(v.numpy() for v in first)))


def test_a_different_literal_or_source_list_is_not_taken_for_the_traced_one():
    w = sg.Variable(np.array([0.3, -0.7]))
    v = sg.Variable(np.array([1.5, 0.5]))
    for power in (2, 2, 2, 2, 3, 2):
        with sg.GradientTape() as tape:
            loss = np.sum((w * v) ** power)
        gw, gv = tape.gradient(loss, [w, v])
        p = w.numpy() * v.numpy()
        np.testing.assert_allclose(gw.numpy(), power * p ** (power - 1) * v.numpy())
        np.testing.assert_allclose(gv.numpy(), power * p ** (power - 1) * w.numpy())
    for _ in range(2):  # the trace's sources were [w, v]: [v, w] must not get them in order
        with sg.GradientTape() as tape:
            loss = np.sum((w * v) ** 2)
        gv, gw = tape.gradient(loss, [v, w])
        p = w.numpy() * v.numpy()
        np.testing.assert_allclose(gw.numpy(), 2 * p * v.numpy())
        np.testing.assert_allclose(gv.numpy(), 2 * p * w.numpy())


def test_watching_an_input_every_step_replays_alike_watches_only():
    x0, t, l1, l2 = _model()
    rng = np.random.default_rng(2)
    replayed = []
    for step in range(7):
        x = sg.constant(x0 + 0.1 * rng.normal(size=x0.shape) if step % 2 else x0)
        with sg.GradientTape() as tape:
            tape.watch(x)  # a new Tensor every step
            if step == 5:
                tape.watch(sg.constant(1.0))  # two watched Tensors: not the trace's step
            loss = np.mean((l2(l1(x)) - t) ** 2)
        replayed.append(_replayed(tape))
        (gx,) = tape.gradient(loss, [x])
        x0_step = x.numpy()

        def f(xv):
            return np.mean((l2(l1(xv)).numpy() - t) ** 2)

        np.testing.assert_allclose(gx.numpy(), numerical_gradient(f, [x0_step], 0), atol=1e-7)
    assert replayed == [False, False, True, True, True, False, True]


def test_second_derivatives_through_a_replaying_inner_tape():
    w = sg.Variable(np.array([0.4, -1.2, 0.9]))
    v = w.numpy()
    first = np.cos(v) * v + np.sin(v)
    second = -np.sin(v) * v + 2.0 * np.cos(v)
    for _ in range(3):  # steps of the inner computation alone: traced
        with sg.GradientTape() as tape:
            y = np.sum(np.sin(w) * w)
        (g,) = tape.gradient(y, [w])
        np.testing.assert_allclose(g.numpy(), first)
    for _ in range(2):  # inside an outer tape, which records the inner gradient's work
        with sg.GradientTape() as outer:
            with sg.GradientTape() as inner:
                y = np.sum(np.sin(w) * w)
            (g,) = inner.gradient(y, [w])
            z = np.sum(g * g)
        (h,) = outer.gradient(z, [w])
        assert inner._trace is not None
        np.testing.assert_allclose(g.numpy(), first)
        np.testing.assert_allclose(h.numpy(), 2.0 * first * second)


def test_a_persistent_replayed_tape_answers_other_questions_the_usual_way():
    w = sg.Variable(np.array([0.5, 1.5]))
    v = sg.Variable(np.array([2.0, -1.0]))
    for _ in range(4):
        with sg.GradientTape(persistent=True) as tape:
            y = np.sum(np.exp(w) * v)
        replayed = _replayed(tape)
        gw, gv = tape.gradient(y, [w, v])
        (only_v,) = tape.gradient(y, [v])
        np.testing.assert_allclose(gw.numpy(), np.exp(w.numpy()) * v.numpy())
        np.testing.assert_allclose(gv.numpy(), np.exp(w.numpy()))
        np.testing.assert_allclose(only_v.numpy(), np.exp(w.numpy()))
        assert [x.name for x in tape.watched_variables()] == [w.name, v.name]
    assert replayed


def test_a_registry_change_retires_the_traces():
    w = sg.Variable(np.array([0.5, 1.5]))
    for _ in range(3):
        with sg.GradientTape() as tape:
            y = np.sum(np.tanh(w))
        replayed = _replayed(tape)
        tape.gradient(y, [w])
    assert replayed
    version = registry.version
    registry.version += 1  # what a registration does
    try:
        with sg.GradientTape() as tape:
            y = np.sum(np.tanh(w))
        (g,) = tape.gradient(y, [w])
        assert tape._trace is None
        np.testing.assert_allclose(g.numpy(), 1.0 - np.tanh(w.numpy()) ** 2)
    finally:
        registry.version = version


def test_a_scalar_variable_replays_through_its_value_changing_class():
    w = sg.Variable(0.7)  # a NumPy scalar value; assign makes it a 0-d array
    for step in range(5):
        with sg.GradientTape() as tape:
            y = np.sin(w) * w
        (g,) = tape.gradient(y, [w])
        value = float(w.numpy())
        np.testing.assert_allclose(float(g.numpy()), np.cos(value) * value + np.sin(value))
        assert g.shape == ()
        if step == 2:
            w.assign(0.3)


def test_traces_hold_their_variables_weakly():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    for _ in range(3):
        _step(x, t, l1, l2, variables)
    assert replay._traces
    held = weakref.ref(l1.kernel)
    del l1, l2, variables
    gc.collect()
    assert held() is None


def test_the_checks_are_readable_python():
    x, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    for _ in range(3):
        tape, _, _ = _step(x, t, l1, l2, variables)
    source = tape._trace.source
    assert "def op0(fn, args, kwargs, inputs, result, tape):" in source
    assert "c0.shape != (8, 5)" in source  # the input batch: a constant of this shape
    assert "if args[1] != 2:" in source  # ``** 2``


def test_a_variable_read_twice_by_one_call_replays():
    w = sg.Variable(np.array([0.5, -1.5, 2.0]))
    for _ in range(4):
        with sg.GradientTape() as tape:
            y = np.sum(w * w + np.sin(w))
        replayed = _replayed(tape)
        (g,) = tape.gradient(y, [w])
        np.testing.assert_allclose(g.numpy(), 2.0 * w.numpy() + np.cos(w.numpy()))
    assert replayed
    assert "is not v0" in tape._trace.source  # the second operand: the first one's Variable


# -- random training loops ------------------------------------------------------------------------

_UNARY = {"sin": np.sin, "tanh": np.tanh}
_BINARY = {"add": np.add, "sub": np.subtract, "mul": np.multiply}


@st.composite
def _programs(draw):
    """A straight-line program over three Variables and a constant: ``(kind, ...)`` steps,
    each making a new value from earlier ones (values 0-2 are the Variables)."""
    steps = []
    for _ in range(draw(st.integers(2, 6))):
        n = 3 + len(steps)
        kind = draw(st.sampled_from(["unary", "binary", "scalar", "power", "constant"]))
        a = draw(st.integers(0, n - 1))
        if kind == "unary":
            steps.append((kind, draw(st.sampled_from(sorted(_UNARY))), a))
        elif kind == "binary":
            steps.append(
                (kind, draw(st.sampled_from(sorted(_BINARY))), a, draw(st.integers(0, n - 1)))
            )
        elif kind == "scalar":
            steps.append((kind, a, draw(st.sampled_from([0.5, -2.0, 3]))))
        elif kind == "power":
            steps.append((kind, a, draw(st.sampled_from([2, 3]))))
        else:
            steps.append((kind, a))
    return steps


def _run(steps, values, constant):
    """The program on Tensors/Variables (under a tape) or on arrays (for finite differences):
    the sum of every value it reads or makes."""
    values = list(values)
    for step in steps:
        kind = step[0]
        if kind == "unary":
            values.append(_UNARY[step[1]](values[step[2]]))
        elif kind == "binary":
            values.append(_BINARY[step[1]](values[step[2]], values[step[3]]))
        elif kind == "scalar":
            values.append(values[step[1]] * step[2])
        elif kind == "power":
            values.append(values[step[1]] ** step[2])
        else:
            values.append(values[step[1]] * constant)
    total = np.sum(values[0])  # (every Variable is read: a source the loss does not read
    for value in values[1:]:  # gets None, and a step with one is not replayed)
        total = total + np.sum(value)
    return total


@settings(max_examples=40, deadline=None, derandomize=True)
@given(
    program=_programs(),
    changes=st.lists(
        st.sampled_from(["same", "same", "assign", "batch", "extra", "float32", "tensor"]),
        min_size=6,
        max_size=9,
    ),
)
def test_random_training_loops_match_finite_differences_every_step(program, changes):
    replay.forget()
    rng = np.random.default_rng(len(program))
    variables = [sg.Variable(rng.uniform(-1.0, 1.0, size=3)) for _ in range(3)]
    constant = rng.normal(size=3)
    for change in changes:
        steps = program
        if change == "assign":
            variables[1].assign(rng.uniform(-1.0, 1.0, size=3))
        elif change == "extra":
            steps = [*program, ("unary", "sin", 0)]
        elif change == "batch":
            constant = rng.normal(size=3)
        step_constant = constant.astype(np.float32) if change == "float32" else constant
        if change == "tensor":  # the constant wrapped as a Tensor: a constant leaf
            step_constant = sg.constant(constant)
        with sg.GradientTape() as tape:
            y = _run(steps, variables, step_constant)
        grads = tape.gradient(y, variables)
        values = [v.numpy() for v in variables]
        plain = np.asarray(step_constant)

        def f(*vs, steps=steps, plain=plain):
            return _run(steps, vs, plain)

        for i, g in enumerate(grads):
            expected = numerical_gradient(f, values, i)
            if g is None:
                np.testing.assert_allclose(expected, 0.0, atol=1e-6)
            else:
                assert g.shape == (3,)
                np.testing.assert_allclose(g.numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_tensor_watched_before_the_traced_calls_is_not_taken_for_a_variable():
    w = sg.Variable(np.array([0.5, -1.0]))
    c = np.array([2.0, 3.0])
    for _ in range(3):  # traced: w * c, then times the result
        with sg.GradientTape() as tape:
            y = np.sum((w * c) * (w * c))
        tape.gradient(y, [w])
    x = sg.constant([1.5, -0.5])
    with sg.GradientTape() as tape:
        tape.watch(x)  # leaf 0 is x: the trace's first call must not make w leaf 0
        y = np.sum((w * c) * x)
    gw, gx = tape.gradient(y, [w, x])
    np.testing.assert_allclose(gw.numpy(), c * x.numpy())
    np.testing.assert_allclose(gx.numpy(), w.numpy() * c)


def test_a_used_tape_records_nothing_more_and_reset_makes_it_fresh():
    from s2sgrad import tape as tape_module

    w = sg.Variable(np.array([1.0, 2.0]))
    with sg.GradientTape() as tape:
        y = np.sum(w * w)
        (g,) = tape.gradient(y, [w])  # inside the block: the tape is released, still active
        z = np.sum(np.sin(w))  # not recorded anywhere
        tape.watch(sg.constant(1.0))  # nor does watching put anything in the released one
    np.testing.assert_allclose(g.numpy(), 2.0 * w.numpy())
    released = tape_module._RELEASED
    assert not released.nodes and not released.tracked and not released.leaf_values
    with pytest.raises(RuntimeError, match="only be called once"):
        tape.gradient(z, [w])
    tape.reset()
    with tape:
        y = np.sum(np.sin(w))
    (g,) = tape.gradient(y, [w])
    np.testing.assert_allclose(g.numpy(), np.cos(w.numpy()))


def test_leaves_made_before_a_call_read_them_are_not_traced():
    # Found in review: the traced steps logged np.argmax of two Variables (a call the tape
    # does not record, but it makes their leaves) or watched them: leaf numbers out of read
    # order. A step without that must not replay those numbers (wrong gradients before).
    a = sg.Variable(np.array([1.0, 2.0]))
    q = sg.Variable(np.array([5.0, 6.0]))
    b = sg.Variable(np.array([3.0, -1.0]))
    c = sg.Variable(np.array([10.0, 20.0]))
    for step in range(5):
        with sg.GradientTape() as tape:
            if step < 2:
                np.argmax(a), np.argmax(q)
            elif step < 4:
                tape.watch([a, q, b])
            y = np.sum(a * b) + np.sum(c * c)
        ga, gb, gc = tape.gradient(y, [a, b, c])
        np.testing.assert_allclose(ga.numpy(), b.numpy())
        np.testing.assert_allclose(gb.numpy(), a.numpy())
        np.testing.assert_allclose(gc.numpy(), 2.0 * c.numpy())


def test_a_non_trainable_variable_watched_by_the_traced_steps_only_stays_unwatched():
    w = sg.Variable(np.array([0.5, -1.0, 2.0]), name="w")
    u = sg.Variable(np.array([1.5, 0.5, -0.3]), trainable=False, name="u")
    for step in range(4):
        with sg.GradientTape() as tape:
            if step < 2:
                tape.watch(u)
            y = np.sum(np.sin(u * w))
        gw, gu = tape.gradient(y, [w, u])
        product = u.numpy() * w.numpy()
        np.testing.assert_allclose(gw.numpy(), np.cos(product) * u.numpy())
        if step < 2:
            np.testing.assert_allclose(gu.numpy(), np.cos(product) * w.numpy())
        else:
            assert gu is None  # not trainable, not watched: no gradient, as in TensorFlow
            assert [v.name for v in tape.watched_variables()] == ["w"]


def test_a_static_argument_equal_to_the_traced_one_but_another_key_is_not_replayed():
    w = sg.Variable(np.array([[2.0, 3.0], [0.5, 1.5]]))
    for dtype in (np.dtype("f8"), np.dtype("f8"), np.dtype("f8"), float):
        with sg.GradientTape() as tape:
            y = np.sum(np.sum(w * w, axis=0, dtype=dtype))
        recorded = tape._recording.nodes[1][9]  # the signature of the inner np.sum
        (g,) = tape.gradient(y, [w])
        np.testing.assert_allclose(g.numpy(), 2.0 * w.numpy())
    keywords = dict(recorded[2])
    assert keywords["dtype"][1] is float  # what the usual path records (== np.dtype("f8") too)


def test_inputs_wrapped_with_constant_replay_new_or_the_same_each_step():
    x0, t, l1, l2 = _model()
    variables = [*l1.trainable_variables, *l2.trainable_variables]
    fixed = sg.constant(x0)
    rng = np.random.default_rng(3)
    replayed = []
    for step in range(6):
        xv = x0 if step % 2 else rng.normal(size=x0.shape)
        x = fixed if step % 2 else sg.constant(xv)  # the same Tensor, or a new one
        with sg.GradientTape() as tape:
            loss = np.mean((l2(l1(x)) - t) ** 2)
        replayed.append(_replayed(tape))
        grads = tape.gradient(loss, variables)
        _check(grads, _hand(xv, t, *(v.numpy() for v in variables)))
    assert replayed[2:] == [True] * 4


def test_a_constant_read_twice_or_replaced_by_a_recorded_value_is_checked():
    w = sg.Variable(np.array([0.5, -1.0]))
    c = np.array([2.0, 3.0])
    for step in range(6):
        x = sg.constant(c)
        with sg.GradientTape() as tape:
            h = w * x
            other = h if step == 5 else x  # the last step: a recorded value where x was
            y = np.sum(h * other)
        (g,) = tape.gradient(y, [w])
        if step == 5:  # y = sum((w c)^2)
            np.testing.assert_allclose(g.numpy(), 2.0 * w.numpy() * c * c)
        else:  # y = sum(w c c), x read twice
            np.testing.assert_allclose(g.numpy(), c * c)


def test_a_watched_input_is_checked_as_the_watched_one():
    w = sg.Variable(np.array([0.5, -1.0]))
    for step in range(5):
        x = sg.constant([1.0, 2.0])
        other = sg.constant([3.0, -2.0])  # not watched
        with sg.GradientTape() as tape:
            tape.watch(x)
            y = np.sum(np.sin((other if step == 4 else x) * w))
        replayed = _replayed(tape)
        gx, gw = tape.gradient(y, [x, w])
        used = other if step == 4 else x
        np.testing.assert_allclose(gw.numpy(), np.cos(used.numpy() * w.numpy()) * used.numpy())
        if step == 4:  # the product read an unwatched Tensor where the trace had the watched one
            assert gx is None and not replayed
        else:
            np.testing.assert_allclose(gx.numpy(), np.cos(x.numpy() * w.numpy()) * w.numpy())
    with sg.GradientTape() as tape:  # a watched input of another shape: not the trace's step
        x = sg.constant([1.0, 2.0, 3.0])
        tape.watch(x)
        y = np.sum(np.sin(x * 2.0))
    assert not _replayed(tape)
    (gx,) = tape.gradient(y, [x])
    np.testing.assert_allclose(gx.numpy(), 2.0 * np.cos(2.0 * x.numpy()))


def test_an_array_where_a_watched_or_constant_tensor_was_does_not_raise_in_a_check():
    # Found in review: the checks looked such an argument up in a dict (unhashable ndarray)
    cond = np.array([True, False, True])
    w = sg.Variable(np.array([1.5, -2.0, 0.5]))  # (none at a bound of the clip)
    for i in range(5):
        x = sg.constant(np.arange(3.0) + i)
        c = sg.constant(np.ones(3))
        with sg.GradientTape() as tape:
            tape.watch(x)
            if i == 4:  # an untracked call, same primitive and layout as the traced ones
                np.where(cond, np.zeros(3), c)
                np.clip(w * c, np.zeros(3), 5.0)
            y = np.where(cond, x, c)
            z = np.clip(w * c, c, 5.0)
            loss = np.sum(y * y) + np.sum(z)
        gx, gw = tape.gradient(loss, [x, w])
        np.testing.assert_allclose(gx.numpy(), np.where(cond, 2.0 * x.numpy(), 0.0))
        inside = (w.numpy() > 1.0) & (w.numpy() < 5.0)
        np.testing.assert_allclose(gw.numpy(), np.where(inside, 1.0, 0.0))


def test_one_constant_where_the_trace_had_two_is_one_leaf():
    # Found in review: both new-constant checks passed, two leaves for one object (KeyError later)
    w = sg.Variable(np.array([1.0, 2.0, 3.0]))
    for i in range(4):
        a, b = sg.constant(np.full(3, 1.0 + i)), sg.constant(np.full(3, 2.0 + i))
        if i == 3:
            b = a
        with sg.GradientTape(persistent=True) as tape:
            loss = np.sum(np.stack([w, a, b]) ** 2)
        if i < 3:
            tape.gradient(loss, [w])
            continue
        assert tape._recording.nodes[0][5] == (-1, -2, -2)  # as `_record` makes it
        np.testing.assert_allclose(tape.jacobian(loss, w).numpy(), 2.0 * w.numpy())
        tape.watch(a)
        (ga,) = tape.gradient(loss, [a])
        np.testing.assert_allclose(ga.numpy(), 4.0 * a.numpy())
