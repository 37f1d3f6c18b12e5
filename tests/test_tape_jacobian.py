"""GradientTape.jacobian and batch_jacobian: shapes and values from the TF guide, checked
against finite differences and against gradients (the Jacobian summed over the target)."""

import numpy as np
import pytest

import s2sgrad as sg


def _fd_jacobian(f, x, eps=1e-6):
    x = np.array(x, dtype=float)
    y = np.asarray(f(x))
    jac = np.zeros(y.shape + x.shape)
    for idx in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[idx] = eps
        jac[(..., *idx)] = (np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps)
    return jac


def test_scalar_source():
    x = np.linspace(-10.0, 10.0, 201)
    delta = sg.Variable(0.0)
    with sg.GradientTape() as tape:
        y = sg.nn.sigmoid(x + delta)
    dy_dx = tape.jacobian(y, delta)
    assert y.shape == dy_dx.shape == (201,)
    s = 1 / (1 + np.exp(-x))
    np.testing.assert_allclose(dy_dx.numpy(), s * (1 - s), atol=1e-12)


def test_dense_kernel_jacobian_shape_and_sum():
    x = np.random.default_rng(1).normal(size=(7, 5))
    layer = sg.nn.Dense(10, activation=sg.nn.relu, seed=0)
    with sg.GradientTape(persistent=True) as tape:
        y = layer(x)
    assert y.shape == (7, 10)
    assert layer.kernel.shape == (5, 10)
    j = tape.jacobian(y, layer.kernel)
    assert j.shape == (7, 10, 5, 10)
    g = tape.gradient(y, layer.kernel)
    assert g.shape == (5, 10)
    delta = np.max(np.abs(g.numpy() - np.sum(j.numpy(), axis=(0, 1))))
    assert delta < 1e-12
    kernel, bias = layer.kernel.numpy(), layer.bias.numpy()
    expected = _fd_jacobian(lambda k: np.maximum(x @ k + bias, 0.0), kernel)
    np.testing.assert_allclose(j.numpy(), expected, atol=1e-6)


def test_jacobian_of_nested_sources_and_unconnected():
    a = sg.Variable([1.0, 2.0])
    b = sg.Variable(3.0)
    c = sg.Variable([5.0])
    with sg.GradientTape(persistent=True) as tape:
        y = a * a * b
    j = tape.jacobian(y, {"a": a, "pair": [b, c]})
    np.testing.assert_allclose(j["a"].numpy(), np.diag(2 * a.numpy() * 3.0))
    np.testing.assert_allclose(j["pair"][0].numpy(), a.numpy() ** 2)
    assert j["pair"][1] is None
    z = tape.jacobian(y, c, unconnected_gradients="zero")
    assert z.shape == (2, 1) and not z.numpy().any()


def test_hessian_and_newton_step():
    x = np.random.default_rng(2).normal(size=(7, 5))
    layer1 = sg.nn.Dense(8, activation=sg.nn.relu, seed=1)
    layer2 = sg.nn.Dense(6, activation=sg.nn.relu, seed=2)
    with sg.GradientTape() as t2:
        with sg.GradientTape() as t1:
            h = layer2(layer1(x))
            loss = np.mean(h**2)
        g = t1.gradient(loss, layer1.kernel)
    h = t2.jacobian(g, layer1.kernel)
    assert layer1.kernel.shape == (5, 8)
    assert h.shape == (5, 8, 5, 8)
    n = 5 * 8
    h_mat = np.reshape(h.numpy(), (n, n))
    np.testing.assert_allclose(h_mat, h_mat.T, atol=1e-10)

    def grad_at(kernel):
        hidden = np.maximum(x @ kernel + layer1.bias.numpy(), 0.0)
        out = np.maximum(hidden @ layer2.kernel.numpy() + layer2.bias.numpy(), 0.0)
        d_out = 2 * out / out.size * (out > 0)
        d_hidden = d_out @ layer2.kernel.numpy().T * (hidden > 0)
        return x.T @ d_hidden

    np.testing.assert_allclose(g.numpy(), grad_at(layer1.kernel.numpy()), atol=1e-12)
    expected = _fd_jacobian(grad_at, layer1.kernel.numpy())
    np.testing.assert_allclose(h.numpy(), expected, atol=1e-5)
    update = np.linalg.solve(h_mat + np.eye(n) * 1e-3, np.reshape(g.numpy(), (n, 1)))
    before = layer1.kernel.numpy().copy()
    layer1.kernel.assign_sub(np.reshape(update, layer1.kernel.shape))
    np.testing.assert_allclose(layer1.kernel.numpy(), before - update.reshape(5, 8))


def _two_layers(activation, seed):
    return sg.nn.Dense(8, activation=activation, seed=seed), sg.nn.Dense(
        6, activation=activation, seed=seed + 1
    )


def test_batch_jacobian_is_the_summed_diagonal():
    x = sg.constant(np.random.default_rng(3).normal(size=(7, 5)))
    layer1, layer2 = _two_layers(sg.nn.elu, 3)
    with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer2(layer1(x))
    assert y.shape == (7, 6)
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    j_sum = np.sum(j.numpy(), axis=2)
    j_select = np.einsum("bxby->bxy", j.numpy())
    assert j_sum.shape == j_select.shape == (7, 6, 5)
    jb = tape.batch_jacobian(y, x)
    assert jb.shape == (7, 6, 5)
    assert np.max(np.abs(jb.numpy() - j_sum)) < 1e-12
    np.testing.assert_allclose(jb.numpy(), j_select, atol=1e-12)
    for b in range(7):  # the off-diagonal (batch, batch) blocks are zero
        for c in range(7):
            if b != c:
                assert not j.numpy()[b, :, c, :].any()


def test_batch_jacobian_with_batch_normalization_still_has_its_shape():
    x = sg.constant(np.random.default_rng(4).normal(size=(7, 5)))
    layer1, layer2 = _two_layers(sg.nn.elu, 5)
    bn = sg.nn.BatchNormalization()
    with sg.GradientTape(persistent=True, watch_accessed_variables=False) as tape:
        tape.watch(x)
        y = layer2(bn(layer1(x), training=True))
    j = tape.jacobian(y, x)
    assert j.shape == (7, 6, 7, 5)
    assert np.abs(j.numpy()[0, :, 1, :]).max() > 1e-6  # examples depend on each other now
    assert tape.batch_jacobian(y, x).shape == (7, 6, 5)


def test_batch_jacobian_bad_input():
    x = sg.constant(np.ones((3, 2)))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x[:2] * 2.0
    with pytest.raises(ValueError, match="batch"):
        tape.batch_jacobian(y, x)


def test_jacobian_sweeps_over_the_smaller_of_inputs_and_outputs():
    from s2sgrad import jacobians, lowering

    rng = np.random.default_rng(7)
    x = rng.normal(size=(7, 5))
    layer = sg.nn.Dense(10, activation=sg.nn.relu, seed=0)
    with sg.GradientTape(persistent=True) as tape:
        y = layer(x)  # 70 outputs
        s = np.sum(y * y, axis=1)[:2]  # 2 outputs
    recording = tape._recording
    for target, sweep in [(y, "columns_to_jacobian"), (s, "rows_to_jacobian")]:
        j = tape.jacobian(target, layer.kernel)  # 50 inputs
        key = recording.plan_key([target], [None], [layer.kernel])
        origins, jacobian_of, _ = jacobians._plans[key]
        _, values = lowering.gather(recording, origins, [target], [None])
        assert sweep in sg.source(jacobian_of, *values)
        rows = []  # the reference: one gradient per output element
        for k in range(target.size):
            seed = np.zeros(target.size)
            seed[k] = 1.0
            g = tape.gradient(target, layer.kernel, output_gradients=seed.reshape(target.shape))
            rows.append(g.numpy())
        np.testing.assert_allclose(j.numpy(), np.reshape(rows, j.shape), rtol=1e-12, atol=1e-14)
