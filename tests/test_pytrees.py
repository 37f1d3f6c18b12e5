"""NamedTuples and dataclasses as arguments: gradients of the same type, checked against
central differences, in reverse and forward mode and at second order (issue 18)."""

import dataclasses
import typing

import numpy as np
import pytest

import s2sgrad as sg
from s2sgrad.checks import check_grads

rng = np.random.default_rng(18)


class Params(typing.NamedTuple):
    W: np.ndarray
    b: np.ndarray


@dataclasses.dataclass(frozen=True)
class Spring:
    k: float
    mass: np.ndarray
    label: str = "spring"


@dataclasses.dataclass
class Checked:
    """A dataclass whose __post_init__ rejects what a gradient may well be (a negative rate)."""

    rate: float
    offset: np.ndarray

    def __post_init__(self):
        if self.rate <= 0:
            raise ValueError("rate must be positive")


@dataclasses.dataclass
class Network:
    layers: list
    scale: dict

    def energy(self, x):
        return np.sum(x)


@dataclasses.dataclass
class Clashing:
    T: float


def mlp_loss(params, x):
    return np.sum(np.tanh(x @ params.W + params.b) ** 2)


def unpacked_loss(params, x):
    W, b = params
    return np.sum(np.tanh(x @ W + b) ** 2) + np.sum(params[0] * params.W) + np.sum(params.b**3)


def spring_energy(spring, x):
    return np.sum(spring.k * x**2 / spring.mass)


def checked_loss(c, x):
    return np.sum(np.exp(-c.rate * x) + c.offset)


def deep_loss(net, x):
    h = x
    for layer in net.layers:
        h = np.tanh(h @ layer.W + layer.b)
    return np.sum(h**2) * net.scale["out"]


def affine(params, x):
    return x @ params.W + params.b


def calling_loss(params, x):
    return np.sum(np.sin(affine(params, x)))


def weighted(params, x):
    return np.sum(params.W * x)


def method_loss(net, x):
    return net.energy(x)


def field_write(spring, x):
    spring.k = 2.0
    return np.sum(spring.k * x)


def transpose_clash(c, x):
    return np.sum(c.T * x)


def field_gradient(f, args, index, field, eps=1e-6):
    """d f / d (one field of the record args[index]) by central differences."""
    record = args[index]
    value = np.array(getattr(record, field), dtype=float)
    grad = np.zeros_like(value)
    for k in np.ndindex(value.shape):
        sums = []
        for sign in (1, -1):
            moved = value.copy()
            moved[k] += sign * eps
            moved = float(moved) if np.ndim(getattr(record, field)) == 0 else moved
            changed = list(args)
            changed[index] = _replaced(record, field, moved)
            sums.append(np.sum(f(*changed)))
        grad[k] = (sums[0] - sums[1]) / (2 * eps)
    return grad


def _replaced(record, field, value):
    if isinstance(record, tuple):
        return record._replace(**{field: value})
    out = dataclasses.replace(record)
    object.__setattr__(out, field, value)
    return out


def params():
    return Params(rng.normal(size=(3, 2)), rng.normal(size=2))


def spring():
    return Spring(2.0, rng.uniform(1.0, 2.0, size=3))


def network():
    layers = [Params(rng.normal(size=(3, 3)), rng.normal(size=3)), params()]
    return Network(layers, {"out": 1.5})


def test_named_tuple_gradient_is_a_named_tuple():
    p, x = params(), rng.normal(size=(4, 3))
    g = sg.grad(mlp_loss)(p, x)
    assert type(g) is Params
    for field in Params._fields:
        np.testing.assert_allclose(
            getattr(g, field), field_gradient(mlp_loss, (p, x), 0, field), rtol=1e-6, atol=1e-8
        )


def test_named_tuple_read_by_name_and_position():
    # W, b = params; params[0]; params.W: one adjoint per field, whatever the read
    p, x = params(), rng.normal(size=(4, 3))
    g = sg.grad(unpacked_loss)(p, x)
    assert type(g) is Params
    for field in Params._fields:
        np.testing.assert_allclose(
            getattr(g, field),
            field_gradient(unpacked_loss, (p, x), 0, field),
            rtol=1e-6,
            atol=1e-8,
        )


def test_frozen_dataclass_of_physical_parameters():
    s, x = spring(), np.array([0.5, 1.0, 2.0])
    value, g = sg.value_and_grad(spring_energy)(s, x)
    assert value == pytest.approx(spring_energy(s, x))
    assert type(g) is Spring
    assert g.k == pytest.approx(float(field_gradient(spring_energy, (s, x), 0, "k")))
    np.testing.assert_allclose(g.mass, field_gradient(spring_energy, (s, x), 0, "mass"), rtol=1e-6)
    assert g.label is None  # a string field has no derivative


def test_dataclass_gradient_skips_post_init():
    c = Checked(0.7, np.array([0.1, 0.2]))
    g = sg.grad(checked_loss)(c, np.array([1.0, 2.0]))
    assert type(g) is Checked
    assert g.rate < 0  # __post_init__ would have refused it
    np.testing.assert_allclose(
        g.rate, field_gradient(checked_loss, (c, np.array([1.0, 2.0])), 0, "rate")
    )
    np.testing.assert_allclose(g.offset, [1.0, 1.0])


def test_nested_dataclass_of_named_tuples():
    net, x = network(), rng.normal(size=(4, 3))
    g = sg.grad(deep_loss)(net, x)
    assert type(g) is Network
    assert all(type(layer) is Params for layer in g.layers)
    assert g.scale["out"] == pytest.approx(deep_loss(net, x) / 1.5)

    def of_first_weights(W, x):
        layers = [Params(W, net.layers[0].b), net.layers[1]]
        return deep_loss(Network(layers, net.scale), x)

    first = Params(net.layers[0].W, x)  # (field_gradient reads one field of a record)
    want = field_gradient(lambda r, _: of_first_weights(r.W, x), (first, None), 0, "W")
    np.testing.assert_allclose(g.layers[0].W, want, rtol=1e-6, atol=1e-8)


def test_gradient_with_respect_to_record_and_array():
    p, x = params(), rng.normal(size=(4, 3))
    gp, gx = sg.grad(mlp_loss, wrt=(0, 1))(p, x)
    assert type(gp) is Params
    assert gx.shape == x.shape


def test_gradient_shares_no_memory_with_arguments():
    p, x = params(), rng.normal(size=(3, 2))
    g = sg.grad(weighted)(p, x)
    np.testing.assert_array_equal(g.W, x)
    assert not np.shares_memory(g.W, x)


@pytest.mark.parametrize(
    "f, make",
    [
        (mlp_loss, lambda: (params(), rng.normal(size=(4, 3)))),
        (unpacked_loss, lambda: (params(), rng.normal(size=(4, 3)))),
        (spring_energy, lambda: (spring(), rng.normal(size=3))),
        (deep_loss, lambda: (network(), rng.normal(size=(4, 3)))),
        (calling_loss, lambda: (params(), rng.normal(size=(4, 3)))),
    ],
    ids=["mlp", "unpacked", "spring", "nested", "callee"],
)
def test_check_grads_both_modes_second_order(f, make):
    check_grads(f, make(), order=2)


def test_jvp_takes_a_tangent_of_the_record_type():
    p, x = params(), rng.normal(size=(4, 3))
    t = params()
    out, tangent = sg.jvp(mlp_loss, (p, x), (t, np.zeros_like(x)))
    eps = 1e-6
    moved = [Params(p.W + s * eps * t.W, p.b + s * eps * t.b) for s in (1, -1)]
    want = (mlp_loss(moved[0], x) - mlp_loss(moved[1], x)) / (2 * eps)
    assert out == pytest.approx(mlp_loss(p, x))
    assert tangent == pytest.approx(want, rel=1e-6)


def test_vjp_gives_the_record_type():
    s, x = spring(), rng.normal(size=3)
    _, back = sg.vjp(spring_energy, s, x)
    gs, _ = back(1.0)
    assert type(gs) is Spring
    assert gs.k == pytest.approx(float(field_gradient(spring_energy, (s, x), 0, "k")))


def test_hvp_with_a_record_direction():
    p, x = params(), rng.normal(size=(4, 3))
    v = params()
    got = sg.hvp(mlp_loss)(p, x, v)
    eps = 1e-6
    grads = [
        sg.grad(mlp_loss)(Params(p.W + s * eps * v.W, p.b + s * eps * v.b), x) for s in (1, -1)
    ]
    assert type(got) is Params
    np.testing.assert_allclose(got.W, (grads[0].W - grads[1].W) / (2 * eps), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(got.b, (grads[0].b - grads[1].b) / (2 * eps), rtol=1e-5, atol=1e-7)


def test_method_of_a_dataclass_says_what_to_write():
    with pytest.raises(LookupError, match=r"methods of a NamedTuple or dataclass argument"):
        sg.grad(method_loss)


def test_field_write_is_rejected():
    with pytest.raises(sg.TransformError, match="attribute assignment"):
        sg.grad(field_write)


def test_field_named_like_an_array_attribute_is_refused():
    with pytest.raises(TypeError, match=r"field named 'T'.*rename the field"):
        sg.grad(transpose_clash)(Clashing(2.0), np.ones(3))
