"""Backward sweeps compiled for exact shapes (`lowering.compiled_for`, `transforms/shapes.py`) and
a layer's product and bias recorded as one operation (`recorded_calls.Expression`): what the
generated code leaves out, and that the gradients stay right (closed forms, NumPy's shapes)."""

import numpy as np
import pytest
from s2sgrad.transforms import shapes

import s2sgrad as sg
from s2sgrad import lowering, recorded_calls


def statements(source: str) -> str:
    """The generated code without its docstring and comments."""
    lines = source.split('"""')[-1].splitlines()
    return "\n".join(line for line in lines if not line.strip().startswith("#"))


@pytest.mark.parametrize(
    "a, b",
    [
        ((2, 3), (3, 4)),
        ((3,), (3, 4)),
        ((2, 3), (3,)),
        ((3,), (3,)),
        ((5, 2, 3), (3, 4)),
        ((2, 3), (5, 3, 4)),
        ((5, 1, 2, 3), (4, 3, 2)),
    ],
)
def test_exact_matmul_shape_is_numpys(a, b):
    assert shapes._matmul_shape(a, b) == (np.ones(a) @ np.ones(b)).shape


@pytest.mark.parametrize("a, b", [((2, 3), (4, 2)), ((3,), (4,)), ((), (3,))])
def test_matmul_shapes_that_do_not_combine_give_no_token(a, b):
    assert shapes._exact(shapes._matmul_shape, a, b) is None


def test_same_shapes_need_no_unbroadcast_and_a_bias_is_summed_over_the_batch():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(6, 3))
    w = sg.Variable(rng.normal(size=(3, 4)))
    b = sg.Variable(rng.normal(size=4))
    for _ in range(2):  # the second step runs the planned sweep
        with sg.GradientTape() as tape:
            z = np.tanh(x @ w + b)
            loss = np.sum(z * z)
        dw, db = tape.gradient(loss, [w, b])
        code = statements(sg.source(tape))
        assert "unbroadcast" not in code
        assert ".sum(axis=0)" in code
        zv = np.tanh(x @ w.numpy() + b.numpy())
        dz = 2.0 * zv * (1.0 - zv**2)
        np.testing.assert_allclose(dw.numpy(), x.T @ dz, rtol=1e-12)
        np.testing.assert_allclose(db.numpy(), dz.sum(axis=0), rtol=1e-12)


def test_a_broadcast_that_is_not_a_leading_batch_is_still_reduced():
    rng = np.random.default_rng(1)
    a = sg.Variable(rng.normal(size=(3, 1)))
    c = sg.Variable(rng.normal(size=(3, 4)))
    d = sg.Variable(rng.normal(size=(2, 1, 4)))
    with sg.GradientTape() as tape:
        y = np.sum(np.sin(a + c + d))
    da, dc, dd = tape.gradient(y, [a, c, d])
    slope = np.cos(a.numpy() + c.numpy() + d.numpy())  # (2, 3, 4)
    np.testing.assert_allclose(da.numpy(), slope.sum(axis=(0, 2))[:, None], rtol=1e-12)
    np.testing.assert_allclose(dc.numpy(), slope.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(dd.numpy(), slope.sum(axis=1, keepdims=True), rtol=1e-12)
    assert "unbroadcast" in statements(sg.source(tape))


def test_many_shapes_of_one_structure_share_a_rank_generic_sweep(monkeypatch):
    monkeypatch.setattr(lowering, "SHAPE_VARIANTS", 2)
    rng = np.random.default_rng(2)
    w = sg.Variable(rng.normal(size=(3, 2)))
    b = sg.Variable(rng.normal(size=2))
    before = lowering.cache_size()
    for n in range(1, 7):  # six batch sizes: two exact sweeps, then one for every shape
        x = rng.normal(size=(n, 3))
        with sg.GradientTape() as tape:
            loss = np.sum(np.arctan(x @ w + b) * 0.625)
        dw, db = tape.gradient(loss, [w, b])
        dz = 0.625 / (1.0 + (x @ w.numpy() + b.numpy()) ** 2)
        np.testing.assert_allclose(dw.numpy(), x.T @ dz, rtol=1e-12)
        np.testing.assert_allclose(db.numpy(), dz.sum(axis=0), rtol=1e-12)
        generic = "unbroadcast" in statements(sg.source(tape))
        assert generic == (n > 2)
    assert lowering.cache_size() - before == 3


def test_dense_records_its_product_and_bias_as_one_operation():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 2))
    layer = sg.nn.Dense(3, seed=0)
    with sg.GradientTape() as tape:
        y = layer(x)
        assert len(tape._nodes) == 1  # x @ kernel + bias
        loss = np.sum(y * y)
    dk, db = tape.gradient(loss, [layer.kernel, layer.bias])
    assert "t0 = c2 @ x0 + x1" in sg.source(tape)  # the lowered line the adjoint comments name
    dy = 2.0 * (x @ layer.kernel.numpy() + layer.bias.numpy())
    np.testing.assert_allclose(dk.numpy(), x.T @ dy, rtol=1e-12)
    np.testing.assert_allclose(db.numpy(), dy.sum(axis=0), rtol=1e-12)


def test_dense_of_a_watched_input_gives_its_gradient_too():
    rng = np.random.default_rng(4)
    x = sg.constant(rng.normal(size=(5, 3)))
    layer = sg.nn.Dense(2, activation="tanh", seed=1)
    with sg.GradientTape() as tape:
        tape.watch(x)
        loss = np.sum(layer(x))
    dx, dk = tape.gradient(loss, [x, layer.kernel])
    z = np.tanh(x.numpy() @ layer.kernel.numpy() + layer.bias.numpy())
    dz = 1.0 - z**2
    np.testing.assert_allclose(dx.numpy(), dz @ layer.kernel.numpy().T, rtol=1e-12)
    np.testing.assert_allclose(dk.numpy(), x.numpy().T @ dz, rtol=1e-12)


def test_exact_matrix_shapes_multiply_directly_and_other_shapes_keep_the_helper():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 3))
    w = sg.Variable(rng.normal(size=(3, 2)))
    v = sg.Variable(rng.normal(size=3))
    with sg.GradientTape() as tape:
        loss = np.sum(np.sin(x @ w))
    (dw,) = tape.gradient(loss, [w])
    code = statements(sg.source(tape))
    assert "matmul_right" not in code and ".T @ " in code
    np.testing.assert_allclose(dw.numpy(), x.T @ np.cos(x @ w.numpy()), rtol=1e-12)
    with sg.GradientTape() as tape:  # a matrix times a vector: the helper's other cases
        loss = np.sum(np.sin(x @ v))
    (dv,) = tape.gradient(loss, [v])
    assert "matmul_right" in statements(sg.source(tape))
    np.testing.assert_allclose(dv.numpy(), x.T @ np.cos(x @ v.numpy()), rtol=1e-12)


@pytest.mark.parametrize("other", [2, 2.5, -0.0, np.ones((2, 3)), float("inf"), (1, 2)])
def test_signature_of_a_tensor_and_a_static_value_is_the_patterns_one(other):
    x = sg.constant(np.ones(3))
    sig, constants = recorded_calls.signature(np.power, (x, other), None)
    found: list = []
    assert sig == (np.power, (None, recorded_calls._pattern(other, found, True)))
    assert len(constants) == len(found)
    assert all(np.array_equal(a, b) for a, b in zip(constants, found, strict=True))
    assert not any(a is other for a in constants if isinstance(a, np.ndarray))  # copies


def test_signature_of_a_layer_on_an_input_array_is_the_patterns_one():
    x, w, b = np.ones((4, 3)), sg.Variable(np.ones((3, 2))), sg.Variable(np.ones(2))
    sig, constants = recorded_calls.signature(sg.nn.AFFINE, (x, w, b), None)
    found: list = []
    patterns = tuple(recorded_calls._pattern(a, found, True) for a in (x, w, b))
    assert sig == (sg.nn.AFFINE, patterns)
    assert len(constants) == len(found)
    assert all(np.array_equal(a, b) for a, b in zip(constants, found, strict=True))
    assert constants[0] is not x  # a copy: the user may change the input array


def test_a_mean_over_an_exact_shape_divides_by_a_number():
    w = sg.Variable(np.linspace(-1.0, 1.0, 12).reshape(3, 4))
    with sg.GradientTape() as tape:
        loss = np.mean(np.sin(w))
    dw = tape.gradient(loss, w)
    assert "reduced_count" not in statements(sg.source(tape))
    np.testing.assert_allclose(dw.numpy(), np.cos(w.numpy()) / 12.0, rtol=1e-12)


def test_shapes_are_read_from_recorded_values_not_recomputed():
    # the loss's shape is the Dense output's: the sweep reads it from a recorded value; the
    # product and sum inside the layer (not recorded on their own) are not computed again
    layer = sg.nn.Dense(2, activation="relu", seed=0)
    x = sg.constant([[1.0, 2.0, 3.0]])
    with sg.GradientTape() as tape:
        loss = np.mean(layer(x) ** 2)
    assert len(tape._nodes) == 3  # the layer and its relu are one operation
    dk, db = tape.gradient(loss, layer.trainable_variables)
    code = statements(sg.source(tape))
    assert code.count("@") == 1  # the kernel's adjoint, x.T @ g
    for line in ["_dt2 = t0 * (t0 > 0.0)", "dx2 = _dt2.sum(axis=0)", "dx1 = c0.T @ _dt2"]:
        assert line in code  # as docs/generated-code.md shows it
    y = np.maximum(x.numpy() @ layer.kernel.numpy() + layer.bias.numpy(), 0.0)
    dz = y * (y > 0)  # d mean(y ** 2) / dy = 2 y / 2 elements
    np.testing.assert_allclose(dk.numpy(), x.numpy().T @ dz, rtol=1e-12)
    np.testing.assert_allclose(db.numpy(), dz.sum(axis=0), rtol=1e-12)


def test_a_training_steps_key_is_the_general_plan_key():
    # `_planned_gradient` looks plans up under `step_key`; `backprop` makes them under
    # `plan_key`: the two must agree, or no training step would find its plan
    v, w = sg.Variable(np.ones(3)), sg.Variable(np.full(3, 2.0))
    c = sg.constant(np.arange(3.0))
    with sg.GradientTape(persistent=True) as tape:
        y = v * w
        tape.watch(c)
        v.assign(np.full(3, 4.0))  # v gets a second leaf
        loss = np.sum(y * v + c)
    recording = tape._recording
    for sources, target in [([v, w], loss), ([w, c], loss), ([y, v], y), ([loss, w], loss)]:
        key = recording.step_key(target, sources)
        assert key is not None and key == recording.plan_key([target], [None], sources)
        tape.gradient(target, sources)
        assert lowering.planned(key) is not None
    repeated = recording.step_key(loss, [v, v])  # repeated sources: the general path
    assert repeated is None or repeated != recording.plan_key([loss], [None], [v, v])
    tape.gradient(loss, [v, v])
    assert repeated is None or lowering.planned(repeated) is None
    assert recording.step_key(loss, [[v]]) is None  # a nested structure too
    assert recording.step_key(loss, [sg.constant(1.0)]) is None  # and an untracked source
    assert recording.step_key(loss, [v, w]) != recording.step_key(loss, [w, v])
