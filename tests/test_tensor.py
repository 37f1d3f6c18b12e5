"""sg.Tensor, sg.constant and sg.Variable: NumPy protocols, operators, indexing, assignment."""

import numpy as np
import pytest

import s2sgrad as sg


def test_numpy_functions_and_operators_return_tensors():
    t = sg.constant([[1.0, 2.0], [3.0, 4.0]])
    w = np.array([[0.5], [-1.0]])
    b = np.array([0.25])
    for value in (
        np.sin(t),
        t @ w + b,
        np.sum(t, axis=0),
        t.T,
        t[0],
        t[:, 1],
        -t,
        abs(t),
        2.0**t,
        np.maximum(t, 2.5),
        t.reshape(4),
        t.mean(axis=1),
        w.T @ t,
    ):
        assert isinstance(value, sg.Tensor)
    np.testing.assert_allclose((t @ w + b).numpy(), t.numpy() @ w + b)
    np.testing.assert_allclose(np.sum(t, axis=0).numpy(), [4.0, 6.0])
    assert t.shape == (2, 2) and isinstance(t.shape, tuple)
    assert t.ndim == 2 and t.dtype == np.float64
    assert isinstance(np.asarray(t), np.ndarray)
    parts = np.split(t, 2)
    assert all(isinstance(p, sg.Tensor) for p in parts)


def test_constant_dtypes_and_immutability():
    assert sg.constant(3.0).dtype == np.float64
    assert sg.constant(3).dtype.kind == "i"
    assert sg.constant([1, 2], dtype=np.float32).dtype == np.float32
    t = sg.constant([1.0, 2.0])
    with pytest.raises(TypeError, match="immutable"):
        t[0] = 5.0
    with pytest.raises(TypeError):
        sg.constant(object())


def test_what_numpy_and_asarray_give_cannot_change_a_tensor_or_a_tape():
    # .numpy() handed out the Tensor's own buffer: ``arr -= arr.mean()`` changed an
    # "immutable" Tensor and the value the tape recorded, and the gradient with it (hunt,
    # repro_4: [4, 32] became [-6, 12]), and ``w.numpy() *= 10`` changed a Variable
    x = sg.constant(np.array([1.0, 2.0]))
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = np.sum(y * y)  # dz/dx = 4 x**3
    arr = y.numpy()
    arr -= arr.mean()
    np.testing.assert_array_equal(y.numpy(), [1.0, 4.0])
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(y)[0] = 7.0  # (a view without a copy, that cannot be written)
    np.array(y)[0] = 7.0  # (np.array copies)
    np.testing.assert_array_equal(tape.gradient(z, x).numpy(), 4 * np.array([1.0, 2.0]) ** 3)
    w = sg.Variable(np.array([1.0, 2.0]))
    w_np = w.numpy()
    w_np *= 10
    np.testing.assert_array_equal(w.numpy(), [1.0, 2.0])
    w.assign(w_np)  # (still the way to change it)
    np.testing.assert_array_equal(w.numpy(), [10.0, 20.0])


def test_variable_assign_and_arithmetic():
    v = sg.Variable([1.0, 2.0], name="v")
    assert v.name == "v" and v.trainable
    assert type(v + 1.0) is sg.Tensor
    v.assign([3.0, 4.0])
    v.assign_add(np.ones(2))
    v.assign_sub(sg.constant([0.5, 0.5]))
    np.testing.assert_array_equal(v.numpy(), [3.5, 4.5])
    with pytest.raises(ValueError, match="shape"):
        v.assign([1.0])
    with pytest.raises(TypeError, match="name"):
        sg.Variable(1.0, name=3)
    frozen = sg.Variable(1.0, trainable=False)
    assert not frozen.trainable


def test_gradient_through_indexing_methods_and_array_functions():
    xv = np.array([[0.5, -1.0, 2.0], [1.5, 0.3, -0.7]])
    x = sg.Variable(xv)
    with sg.GradientTape() as tape:
        a = x[0] * x[1]
        c = np.concatenate([a, x[:, 0]])
        d = np.stack([x.sum(axis=0), np.exp(x[1])])
        y = np.sum(c**2) + np.sum(d * d.T.T) + x.max()
    g = tape.gradient(y, x).numpy()

    def f(v):
        a = v[0] * v[1]
        c = np.concatenate([a, v[:, 0]])
        d = np.stack([v.sum(axis=0), np.exp(v[1])])
        return np.sum(c**2) + np.sum(d * d) + v.max()

    eps = 1e-6
    fd = np.zeros_like(xv)
    for i in range(xv.size):
        step = np.zeros_like(xv)
        step.flat[i] = eps
        fd.flat[i] = (f(xv + step) - f(xv - step)) / (2 * eps)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-7)


def test_mean_gives_numpys_value_and_gradient():
    # np.mean of a float64 Tensor takes a shorter path to the same bits; other dtypes and
    # keyword arguments take NumPy's. d/dx mean(x) = 1/size everywhere.
    rng = np.random.default_rng(5)
    for value in (rng.normal(size=(7, 3)) * 1e3, rng.normal(size=5).astype(np.float32)):
        t = sg.constant(value)
        assert np.mean(t).numpy() == np.mean(value)
        assert np.mean(t).dtype == np.mean(value).dtype
        np.testing.assert_array_equal(np.mean(t, axis=0).numpy(), np.mean(value, axis=0))
        with sg.GradientTape() as tape:
            tape.watch(t)
            y = np.mean(t)
        np.testing.assert_allclose(
            tape.gradient(y, t).numpy(),
            np.full(value.shape, 1.0 / value.size),
            rtol=1e-6,
        )
    assert np.mean(sg.constant([1, 2, 4])).numpy() == np.mean([1, 2, 4])


def test_float32_gradients_keep_their_dtype():
    x = sg.Variable(np.array([1.0, 2.0], dtype=np.float32))
    with sg.GradientTape() as tape:
        y = np.sum(x * x)
    g = tape.gradient(y, x)
    assert g.dtype == np.float32
    np.testing.assert_allclose(g.numpy(), [2.0, 4.0])


def test_a_subclass_with_its_own_eq_still_works_under_a_tape():
    # defining __eq__ makes Python set __hash__ to None; tapes key their dicts by Tensors
    class Elementwise(sg.Tensor):
        def __eq__(self, other):
            return np.equal(self, other)

    x = Elementwise(np.array([1.0, 2.0]))
    assert hash(x) == object.__hash__(x)
    np.testing.assert_array_equal(np.asarray(x == x), [True, True])
    with sg.GradientTape() as tape:
        tape.watch(x)
        y = np.sum(x * x)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [2.0, 4.0])  # d sum(x^2) = 2x


def test_value_is_read_only():
    # (.value handed out the buffer: arr -= 1 changed the Tensor and what tapes recorded)
    t = sg.constant(np.array([1.0, 2.0]))
    view = t.value
    with pytest.raises(ValueError):
        view -= 1.0
    np.testing.assert_array_equal(t.numpy(), [1.0, 2.0])
