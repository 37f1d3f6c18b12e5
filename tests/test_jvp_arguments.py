"""`sg.jvp`'s tangents are checked against their primals: a tangent of another shape was
broadcast without a word (a (2, 2) tangent for a (2,) argument gave a number), and a zero
tangent for an integer argument (labels) was refused as an index depending on the input."""

import numpy as np
import pytest

import s2sgrad as sg


def sines(v):
    return np.sum(np.sin(v))


def nll(w, x, labels):
    logits = x @ w
    logp = logits - np.log(np.sum(np.exp(logits), axis=1, keepdims=True))
    return -np.mean(logp[np.arange(x.shape[0]), labels])


def mixed(p):
    return np.sum(p["a"] * p["b"][0])


@pytest.mark.parametrize("tangent", [np.ones((2, 2)), np.ones(3), 1.0])
def test_a_tangent_of_another_shape_is_a_value_error_naming_it(tangent):
    with pytest.raises(ValueError, match=r"tangents\[0\] must have the shape of primals\[0\]"):
        sg.jvp(sines, (np.array([0.5, -0.2]),), (tangent,))


def test_a_tangent_of_another_structure_is_a_value_error():
    p = {"a": np.ones(2), "b": [np.ones(2)]}
    with pytest.raises(ValueError, match=r"tangents\[0\] must have the structure"):
        sg.jvp(mixed, (p,), ({"a": np.ones(2)},))
    out, tangent = sg.jvp(mixed, (p,), ({"a": np.ones(2), "b": [np.zeros(2)]},))
    assert (out, tangent) == (pytest.approx(2.0), pytest.approx(2.0))


def test_the_zero_tangent_of_an_integer_argument_is_none():
    rng = np.random.default_rng(0)
    w, x, labels = rng.normal(size=(3, 4)), rng.normal(size=(5, 3)), rng.integers(0, 4, 5)
    tw = rng.normal(size=w.shape)
    want = sg.jvp(nll, (w, x, labels), (tw, None, None))[1]
    got = sg.jvp(nll, (w, x, labels), (tw, np.zeros_like(x), np.zeros_like(labels)))[1]
    assert got == pytest.approx(want, rel=1e-12)
    h = 1e-6
    difference = nll(w + h * tw, x, labels) - nll(w - h * tw, x, labels)
    assert want == pytest.approx(difference / (2 * h))


def scaled_tanh(d, x):
    return np.sum(np.tanh(x @ d["W"])) * d["n"]


def test_a_none_leaf_of_a_tangent_is_its_zero():
    # (an integer count's tangent: sg.jvp said "got a dict for a dict", sg.hvp raised a
    # TypeError inside generated code; hunt-edge repro_2)
    rng = np.random.default_rng(0)
    x, w = rng.standard_normal((4, 2)), rng.standard_normal((2, 3))
    d, v = {"W": w, "n": 2}, {"W": np.ones_like(w), "n": None}
    step = 1e-6
    want = (scaled_tanh({"W": w + step, "n": 2}, x) - scaled_tanh({"W": w - step, "n": 2}, x)) / (
        2 * step
    )
    assert sg.jvp(scaled_tanh, (d, x), (v, np.zeros_like(x)))[1] == pytest.approx(want, rel=1e-6)
    gradient = sg.grad(scaled_tanh)
    moved = [gradient({"W": w + s, "n": 2}, x)["W"] for s in (step, -step)]
    hvp = sg.hvp(scaled_tanh)(d, x, v)
    np.testing.assert_allclose(hvp["W"], (moved[0] - moved[1]) / (2 * step), rtol=1e-5)
    with pytest.raises(ValueError, match="must have the structure"):
        sg.jvp(scaled_tanh, (d, x), ({"W": np.ones_like(w)}, np.zeros_like(x)))


def picked_squares(x, labels):
    return np.sum(x[np.arange(len(labels)), labels] ** 2)


def test_a_list_of_integer_indices_has_no_cotangent():
    # a list or tuple was always differentiated, so a list of indices made the read an index
    # depending on the input: a LookupError, though sg.grad and an integer array work (hunt,
    # science3 repro_1); its cotangent is None, as an integer array's
    x = np.arange(6.0).reshape(2, 3)
    for labels in ([0, 2], (0, 2), np.array([0, 2])):
        out, back = sg.vjp(picked_squares, x, labels)
        assert out == picked_squares(x, labels)
        dx, dlabels = back(1.0)
        np.testing.assert_allclose(dx, [[0.0, 0.0, 0.0], [0.0, 0.0, 10.0]])
        assert dlabels is None
