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


# -- sg.tree in the transforms: registered classes, records as outputs, nested Jacobians --------


def tree_numerical_jacobian(f, arg, eps=1e-6):
    """Central differences of f (any pytree output) in every element of the pytree `arg`:
    blocks in the output's structure, each holding the argument's structure (JAX's layout);
    an array output gives the argument's structure alone."""
    leaves, treedef = sg.tree.flatten(arg)
    out_leaves, out_def = sg.tree.flatten(f(arg))
    blocks = [[None] * len(leaves) for _ in out_leaves]
    for j, leaf in enumerate(leaves):
        base = np.array(leaf, dtype=float)
        columns = []
        for k in np.ndindex(base.shape):
            sides = []
            for sign in (1, -1):
                moved = base.copy()
                moved[k] += sign * eps
                changed = list(leaves)
                changed[j] = moved if base.shape else float(moved)
                sides.append(sg.tree.leaves(f(sg.tree.unflatten(treedef, changed))))
            columns.append([(np.asarray(a) - b) / (2 * eps) for a, b in zip(*sides, strict=True)])
        for i, o in enumerate(out_leaves):
            stacked = np.moveaxis(np.array([c[i] for c in columns]), 0, -1)
            blocks[i][j] = stacked.reshape(np.shape(o) + base.shape)
    inner = [sg.tree.unflatten(treedef, row) for row in blocks]
    return inner[0] if out_def.kind == "leaf" else sg.tree.unflatten(out_def, inner)


def assert_tree_close(got, want, rtol=1e-5, atol=1e-7):
    got_leaves, got_def = sg.tree.flatten(got)
    want_leaves, want_def = sg.tree.flatten(want)
    assert got_def == want_def, (got_def, want_def)
    for g, w in zip(got_leaves, want_leaves, strict=True):
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


class Layer:
    """A user's own parameter class, registered with sg.tree.register."""

    def __init__(self, W, b):
        self.W, self.b = W, b


sg.tree.register(Layer, lambda layer: ((layer.W, layer.b), None), lambda _, ch: Layer(*ch))


def layer_loss(layer, x):
    return np.sum(np.tanh(x @ layer.W + layer.b) ** 2)


def test_registered_class_gradient_of_its_own_type():
    layer, x = Layer(rng.normal(size=(3, 2)), rng.normal(size=2)), rng.normal(size=(4, 3))
    got = sg.grad(layer_loss)(layer, x)
    want = tree_numerical_jacobian(lambda p: layer_loss(p, x), layer)
    assert type(got) is Layer
    assert_tree_close(got, want)
    check_grads(layer_loss, (layer, x), order=2)


class Split(typing.NamedTuple):
    low: np.ndarray
    total: float


@dataclasses.dataclass
class Moments:
    mean: float
    spread: np.ndarray


def split(x):
    return Split(np.sin(x[:2]), np.sum(x**2))


def moments(x):
    return Moments(mean=np.mean(x), spread=np.exp(x) * x[0])


def keyed_out(x):
    return {"low": np.sin(x), "total": np.sum(x**3)}


@pytest.mark.parametrize("f", [split, moments, keyed_out])
def test_record_outputs_checked(f):
    check_grads(f, (rng.normal(size=3),), order=2)


@pytest.mark.parametrize("f", [split, moments])
def test_jvp_gives_a_tangent_of_the_output_type(f):
    x, v = rng.normal(size=3), rng.normal(size=3)
    out, tangent = sg.jvp(f, (x,), (v,))
    assert type(out) is type(tangent) is type(f(x))
    eps = 1e-6
    want = sg.tree.map(lambda a, b: (a - b) / (2 * eps), f(x + eps * v), f(x - eps * v))
    assert_tree_close(tangent, want, rtol=1e-6)


def test_vjp_takes_a_cotangent_of_the_output_type():
    x = rng.normal(size=3)
    _, back = sg.vjp(split, x)
    u = Split(rng.normal(size=2), 0.7)
    (gx,) = back(u)
    J = tree_numerical_jacobian(split, x)
    np.testing.assert_allclose(gx, u.low @ J.low + u.total * J.total, rtol=1e-6)
    with pytest.raises(ValueError, match="cotangent must have the output's structure"):
        back({"low": u.low, "total": 0.7})
    with pytest.raises(ValueError, match=r"cotangent must have the output's shape \(2,\)"):
        back(Split(np.ones(3), 0.7))


@pytest.mark.parametrize("mode", ["reverse", "forward"])
@pytest.mark.parametrize("f", [split, moments, keyed_out])
def test_jacobian_of_a_container_output(f, mode):
    x = rng.normal(size=3)
    got = sg.jacobian(f, mode=mode)(x)
    assert type(got) is type(f(x))
    assert_tree_close(got, tree_numerical_jacobian(f, x))


def record_layer(p, x):
    return np.tanh(x @ p.W + p.b)


def keyed_layer(p, x):
    return np.tanh(x @ p["W"] + p["b"])


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_jacobian_with_respect_to_records_and_dicts(mode):
    x = rng.normal(size=(2, 3))
    for f, p in [
        (record_layer, params()),
        (keyed_layer, {"W": rng.normal(size=(3, 2)), "b": rng.normal(size=2)}),
        (layer_loss, Layer(rng.normal(size=(3, 2)), 0.3)),
    ]:
        got = sg.jacobian(f, mode=mode)(p, x)
        assert type(got) is type(p)
        assert_tree_close(got, tree_numerical_jacobian(lambda q, f=f: f(q, x), p))


def quartic(p):
    """A scalar of a pytree with a closed-form gradient (`quartic_gradient`)."""
    return np.sum(p["W"] ** 2 * p["b"]) + np.sum(np.sin(p["W"])) + p["b"] ** 3


def quartic_gradient(p):
    return {
        "W": 2 * p["W"] * p["b"] + np.cos(p["W"]),
        "b": np.sum(p["W"] ** 2) + 3 * p["b"] ** 2,
    }


def quartic_record(p):
    return np.sum(p.W**2 * p.b) + np.sum(np.sin(p.W)) + p.b**3


def test_hessian_with_respect_to_a_dict_is_nested_blocks():
    p = {"W": rng.normal(size=(2, 2)), "b": 0.7}
    H = sg.hessian(quartic)(p)
    want = tree_numerical_jacobian(quartic_gradient, p)  # differences of the closed form
    assert H["W"]["b"].shape == (2, 2) and H["W"]["W"].shape == (2, 2, 2, 2)
    assert_tree_close(H, want)


WB = dataclasses.make_dataclass("WB", ["W", "b"])  # (fields named as quartic_record reads)


@pytest.mark.parametrize("kind", [Params, WB])
def test_hessian_with_respect_to_records(kind):
    W, b = rng.normal(size=(2, 2)), 0.4
    p = kind(W, b)
    H = sg.hessian(quartic_record)(p)
    want = tree_numerical_jacobian(quartic_gradient, {"W": W, "b": b})
    assert type(H) is kind and type(H.W) is kind
    for outer in ("W", "b"):
        for inner in ("W", "b"):
            got = getattr(getattr(H, outer), inner)
            np.testing.assert_allclose(got, want[outer][inner], rtol=1e-5, atol=1e-7)


def test_tape_sources_of_records_and_registered_classes():
    W = sg.Variable(rng.normal(size=(3, 2)))
    b = sg.Variable(rng.normal(size=2))
    x = rng.normal(size=(4, 3))
    for sources in (Params(W, b), Layer(W, b), {"W": W, "b": b}):
        with sg.GradientTape() as tape:
            y = np.sum(np.tanh(x @ W + b) ** 2)
        grads = tape.gradient(y, sources)
        assert type(grads) is type(sources)
        want = tree_numerical_jacobian(lambda p: layer_loss(p, x), Layer(W.numpy(), b.numpy()))
        got = grads if not isinstance(grads, dict) else Layer(grads["W"], grads["b"])
        np.testing.assert_allclose(got.W.numpy(), want.W, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(got.b.numpy(), want.b, rtol=1e-5, atol=1e-7)


def test_plain_object_argument_is_a_type_error_naming_it():
    class Plain:
        W = np.ones((3, 2))
        b = np.zeros(2)

    with pytest.raises(TypeError, match=r"argument 'layer' is a Plain.*sg.tree.register"):
        sg.grad(layer_loss)(Plain(), np.ones((4, 3)))
    with pytest.raises(TypeError, match=r"argument 'layer' is a Plain"):
        sg.hessian(layer_loss)(Plain(), np.ones((4, 3)))


def energy_of(x, spring):
    return np.sum(np.sin(x) ** 2 * spring.mass) * spring.k


def pairs_loss(x, layers):
    total = 0.0
    for W, b in layers:
        total = total + np.sum(np.tanh(W @ x + b))
    return total


def ragged_layers():
    return [
        Params(rng.normal(size=(3, 3)), rng.normal(size=3)),
        Params(np.ones((2, 3)), np.ones(2)),
    ]


@pytest.mark.parametrize("f, other", [(energy_of, spring), (pairs_loss, ragged_layers)])
def test_grad_of_grad_with_a_container_beside_the_argument(f, other):
    # once a crash: the specialization of grad(grad(f)) keyed each argument by np.ndim, an
    # error for a record of a number and an array, or a list of (W, b) pairs (found by the
    # fuzzer once its programs took record arguments)
    x = np.array([0.3, -0.7, 1.1])
    extra = other()
    got = sg.grad(sg.grad(f))(x, extra)
    h = 1e-5
    rows = [
        (sg.grad(f)(x + h * e, extra) - sg.grad(f)(x - h * e, extra)) / (2 * h) for e in np.eye(3)
    ]
    np.testing.assert_allclose(got, np.sum(rows, axis=0), rtol=1e-6, atol=1e-8)


def cubes(p):
    return np.sum(p["w"] ** 3) + p["b"] ** 3


def cubes_of_layers(params):
    return sum(np.sum(w**3) + np.sum(b**3) for w, b in params)


@pytest.mark.parametrize(
    ("f", "arg"),
    [
        (cubes, {"w": np.array([1.0, 2.0]), "b": 0.5}),
        (cubes_of_layers, [(np.ones((2, 2)), np.ones(2))]),
    ],
    ids=["dict", "list"],
)
def test_a_gradient_with_respect_to_a_pytree_differentiated_again_is_a_type_error(f, arg):
    # NumPy's "entry not a 2- or 3- tuple" or "inhomogeneous shape" came out of generated
    # code; sg.hessian takes the pytree (its block of w with w checked against 6 w)
    with pytest.raises(TypeError, match=r"use sg\.hessian\(f\) or sg\.hvp\(f\)"):
        sg.grad(sg.grad(f))(arg)
    if f is cubes:
        np.testing.assert_allclose(sg.hessian(f)(arg)["w"]["w"], np.diag(6 * arg["w"]))
