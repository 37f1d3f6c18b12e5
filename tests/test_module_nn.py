"""sg.Module variable collection and the sg.nn layers and activations."""

import numpy as np
import pytest

import s2sgrad as sg


class Block(sg.Module):
    def __init__(self):
        super().__init__(name="block")
        self.dense = sg.nn.Dense(3, name="inner", seed=0)
        self.extra = [sg.Variable(1.0, name="a"), {"b": sg.Variable(2.0, name="b")}]
        self.frozen = sg.Variable(0.0, trainable=False, name="frozen")


def test_module_collects_variables_in_attributes_lists_and_dicts():
    block = Block()
    block.dense(np.ones((2, 4)))
    names = [v.name for v in block.variables]
    assert names == ["inner/kernel", "inner/bias", "a", "b", "frozen"]
    assert [v.name for v in block.trainable_variables] == names[:-1]
    assert block.submodules == (block.dense,)


def test_dense_names_shapes_and_seed():
    first, second = sg.nn.Dense(4), sg.nn.Dense(4)
    assert second.name.startswith("dense_")
    assert first.kernel is None  # built lazily
    y = first(np.ones((2, 3)))
    assert y.shape == (2, 4)
    assert [v.name for v in first.trainable_variables] == [
        f"{first.name}/kernel",
        f"{first.name}/bias",
    ]
    a, b = sg.nn.Dense(4, seed=7), sg.nn.Dense(4, seed=7)
    a(np.ones((1, 3)))
    b(np.ones((1, 3)))
    np.testing.assert_array_equal(a.kernel.numpy(), b.kernel.numpy())
    with pytest.raises(ValueError, match="units"):
        sg.nn.Dense(0)
    with pytest.raises(ValueError, match="activation"):
        sg.nn.Dense(2, activation="swishy")
    with pytest.raises(ValueError, match="features"):
        a(np.ones((1, 5)))


@pytest.mark.parametrize("name", ["relu", "elu", "sigmoid", "softplus", "tanh", "softmax"])
def test_activation_gradients_match_finite_differences(name):
    fn = getattr(sg.nn, name)
    xv = np.array([[-1.3, -0.2, 0.4, 2.1]])
    w = np.array([[0.3, -1.0, 2.0, 0.5]])
    x = sg.constant(xv)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(fn(x) * w)
    g = tape.gradient(y, x).numpy()
    eps = 1e-6
    fd = np.zeros_like(xv)
    for i in range(xv.size):
        step = np.zeros_like(xv)
        step.flat[i] = eps
        hi = np.sum(np.asarray(fn(sg.constant(xv + step))) * w)
        lo = np.sum(np.asarray(fn(sg.constant(xv - step))) * w)
        fd.flat[i] = (hi - lo) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)


def test_relu_values_and_derivative_at_zero():
    # relu keeps NaN and gives +0.0 (not -0.0) for negatives; its derivative is 0 at 0 (as
    # TensorFlow's) and 1 / 0 on either side.
    x = sg.constant([-2.0, -0.0, 0.0, 1.5, np.nan])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = sg.nn.relu(x)
    values = y.numpy()
    np.testing.assert_array_equal(values[:4], [0.0, 0.0, 0.0, 1.5])
    assert not np.signbit(values[:4]).any() and np.isnan(values[4])
    np.testing.assert_array_equal(tape.gradient(y, x).numpy()[:4], [0.0, 0.0, 0.0, 1.0])
    np.testing.assert_array_equal(sg.nn.relu(np.array([-1.0, 2.0])), [0.0, 2.0])


def test_dense_on_an_ndarray_matches_closed_form():
    # An ndarray input is a constant of the recording: d/dkernel sum(Dense(x)) = x.T @ ones,
    # d/dbias = the batch size, for relu where the pre-activation is positive.
    rng = np.random.default_rng(4)
    x = rng.normal(size=(5, 3))
    layer = sg.nn.Dense(2, activation="relu", seed=2)
    layer(x)
    for _ in range(2):  # the second step runs the planned backward sweep
        with sg.GradientTape() as tape:
            y = np.sum(layer(x))
        gk, gb = tape.gradient(y, [layer.kernel, layer.bias])
        mask = (x @ layer.kernel.numpy() + layer.bias.numpy()) > 0
        np.testing.assert_allclose(gk.numpy(), x.T @ mask, rtol=1e-12)
        np.testing.assert_allclose(gb.numpy(), mask.sum(axis=0), rtol=1e-12)
        np.testing.assert_allclose(y.numpy(), np.sum(np.maximum(np.asarray(layer(x)), 0.0)))


def test_dense_accepts_activation_by_name_and_callable():
    x = np.array([[1.0, -2.0]])
    by_name = sg.nn.Dense(3, activation="relu", seed=1)
    by_callable = sg.nn.Dense(3, activation=sg.nn.relu, seed=1)
    np.testing.assert_array_equal(by_name(x).numpy(), by_callable(x).numpy())
    assert (by_name(x).numpy() >= 0).all()


def test_batch_normalization_training_and_inference():
    rng = np.random.default_rng(0)
    xv = rng.normal(2.0, 3.0, size=(16, 4))
    bn = sg.nn.BatchNormalization()
    y = bn(xv, training=True).numpy()
    np.testing.assert_allclose(y.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(y.var(axis=0), xv.var(axis=0) / (xv.var(axis=0) + 1e-3))
    assert not np.allclose(bn.moving_mean.numpy(), 0.0)
    assert [v.name.split("/")[1] for v in bn.trainable_variables] == ["gamma", "beta"]
    inference = bn(xv, training=False).numpy()
    expected = (xv - bn.moving_mean.numpy()) / np.sqrt(bn.moving_variance.numpy() + 1e-3)
    np.testing.assert_allclose(inference, expected)


def test_batch_normalization_gradient_matches_finite_differences():
    rng = np.random.default_rng(1)
    xv = rng.normal(size=(5, 3))
    w = rng.normal(size=(5, 3))
    bn = sg.nn.BatchNormalization()
    x = sg.constant(xv)
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(bn(x, training=True) * w)
    g = tape.gradient(y, x).numpy()

    def f(v):
        return np.sum((v - v.mean(0)) / np.sqrt(v.var(0) + 1e-3) * w)

    eps = 1e-6
    fd = np.zeros_like(xv)
    for i in range(xv.size):
        step = np.zeros_like(xv)
        step.flat[i] = eps
        fd.flat[i] = (f(xv + step) - f(xv - step)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7)


def test_training_loop_reduces_the_loss():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(32, 4))
    t = x @ rng.normal(size=(4, 1))
    model = sg.nn.Dense(1, seed=3)
    losses = []
    for _ in range(30):
        with sg.GradientTape() as tape:
            loss = np.mean((model(x) - t) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads, strict=True):
            v.assign_sub(0.1 * g)
        losses.append(float(loss))
    assert losses[-1] < 0.1 * losses[0]


def activations_mix(x):
    return np.sum(
        sg.nn.relu(x) * sg.nn.sigmoid(x) + sg.nn.elu(x) + sg.nn.softplus(x) + sg.nn.tanh(x)
    ) + np.sum(sg.nn.softmax(x) * np.arange(4.0))


def test_nn_activations_inside_sg_grad_match_finite_differences():
    # sg.nn.relu is a primitive with a rule; the other activations are NumPy code, transformed
    x = np.array([0.3, -1.2, 2.0, -0.4])
    g = sg.grad(activations_mix)(x)
    eps = 1e-6
    fd = [
        (activations_mix(x + eps * e) - activations_mix(x - eps * e)) / (2 * eps)
        for e in np.eye(x.size)
    ]
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-9)
