"""Bound methods, static and class methods, lambdas, functools.partial and callable objects as
the function every transform takes (issue 18), checked against finite differences in reverse
and forward mode and at second order. See transforms/bound.py and transforms/lambdas.py."""

import numpy as np
import pytest

import s2sgrad as sg
from tests import idiom_programs as ip
from tests.numerical import numerical_gradient, numerical_jacobian

W = np.array([0.3, -0.2, 0.5])

CALLABLES = {
    "bound method": ip.MODEL.loss,
    "method calling methods": ip.MODEL.loss,
    "staticmethod": ip.LinearModel.softplus,
    "staticmethod from an instance": ip.MODEL.softplus,
    "classmethod": ip.LinearModel.cubic,
    "callable object": ip.QUADRATIC,
    "callable model": ip.MODEL,
    "lambda": ip.LOSS_OF_W,
    "lambda written here": lambda w: np.sum(np.sin(ip.X @ w) ** 2),
    "partial with keywords": ip.PARTIAL_LOSS,
    "partial of a bound method": ip.PARTIAL_METHOD,
    "partial fixing a keyword-only parameter": ip.PARTIAL_KEYWORD_ONLY,
    "functions calling two lambdas": ip.calls_two_lambdas,
    "function calling a method and an object": ip.calls_a_method,
}


@pytest.mark.parametrize("name", list(CALLABLES))
def test_check_grads_second_order(name):
    sg.check_grads(CALLABLES[name], (W,), order=2)


@pytest.mark.parametrize("name", list(CALLABLES))
def test_every_transform_accepts_it(name):
    f = CALLABLES[name]
    expected = numerical_gradient(f, (W,), 0)
    np.testing.assert_allclose(sg.grad(f)(W), expected, rtol=1e-6, atol=1e-7)
    value, gradient = sg.value_and_grad(f)(W)
    np.testing.assert_allclose(value, f(W))
    np.testing.assert_allclose(gradient, expected, rtol=1e-6, atol=1e-7)
    _, back = sg.vjp(f, W)
    np.testing.assert_allclose(back(1.0)[0], expected, rtol=1e-6, atol=1e-7)
    _, tangent = sg.jvp(f, (W,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(expected), rtol=1e-6, atol=1e-7)
    for mode in ("reverse", "forward"):
        np.testing.assert_allclose(sg.jacobian(f, mode=mode)(W), expected, rtol=1e-6, atol=1e-7)
    hessian = numerical_jacobian(sg.grad(f), W)
    np.testing.assert_allclose(sg.hessian(f)(W), hessian, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sg.hvp(f)(W, W), hessian @ W, rtol=1e-5, atol=1e-6)


def test_partial_fixing_a_positional_argument():
    f = ip.PARTIAL_POSITIONAL
    sg.check_grads(f, (W, 1.5), order=2)
    np.testing.assert_allclose(sg.grad(f, wrt=1)(W, 1.5), np.sum(np.sin(W)))


def test_a_bound_method_reads_the_instance_when_it_runs():
    """The instance is a constant of the derivative; its attributes are read at each call."""
    model = ip.LinearModel(ip.X, ip.Y, penalty=0.0)
    gradient = sg.grad(model.loss)
    before = gradient(W)
    model.penalty = 1.0
    np.testing.assert_allclose(gradient(W), before + 2 * W)
    other = ip.LinearModel(ip.X, 2 * ip.Y, penalty=1.0)
    np.testing.assert_allclose(
        sg.grad(other.loss)(W), numerical_gradient(other.loss, (W,), 0), rtol=1e-6, atol=1e-7
    )
    np.testing.assert_allclose(sg.grad(model.loss)(W), before + 2 * W)


def test_two_lambdas_called_by_one_function_keep_their_own_halves():
    """Both lambdas are named `lambda_`: their generated halves must not share a name."""
    np.testing.assert_allclose(sg.grad(ip.calls_two_lambdas)(W), 2 * W + 3 * W * W)
    _, tangent = sg.jvp(ip.calls_two_lambdas, (W,), (np.ones(3),))
    np.testing.assert_allclose(tangent, np.sum(2 * W + 3 * W * W))


def test_generated_source_of_a_lambda_and_a_method():
    text = sg.source(sg.grad(ip.LOSS_OF_W))
    assert "def dlambda_dw(w):" in text
    text = sg.source(sg.grad(ip.MODEL.loss), W)
    assert "def dlossdw(w):" in text and "self.X" in text and "_fwd_predict" in text


def test_export_of_a_lambda(tmp_path):
    path = tmp_path / "lambda_grad.py"
    sg.export(sg.grad(ip.LOSS_OF_W), path)
    namespace = {}
    exec(compile(path.read_text(), str(path), "exec"), namespace)
    np.testing.assert_allclose(namespace["dlambda_dw"](W), sg.grad(ip.LOSS_OF_W)(W))


def test_export_of_a_bound_method_names_the_instance(tmp_path):
    with pytest.raises(ValueError, match="self"):
        sg.export(sg.grad(ip.MODEL.loss), tmp_path / "method_grad.py")


def test_wrt_by_name_on_a_method():
    np.testing.assert_allclose(
        sg.grad(ip.MODEL.loss, wrt="w")(W),
        numerical_gradient(ip.MODEL.loss, (W,), 0),
        rtol=1e-6,
        atol=1e-7,
    )


@pytest.mark.parametrize(
    "f", [ip.local_lambda, ip.mapped_lambda, ip.mapped_function, ip.sorted_by_lambda]
)
def test_lambdas_inside_a_function(f):
    args = ([W, 2.0 * W],) if f in (ip.mapped_lambda, ip.mapped_function) else (W,)
    sg.check_grads(f, args, order=2)


def test_a_lambda_given_to_a_differentiated_primitive_is_refused_at_its_line():
    with pytest.raises(sg.TransformError, match="lambda passed to max") as caught:
        sg.grad(ip.max_by_key)(1.0, 2.0)
    assert caught.value.lineno == ip.max_by_key.__code__.co_firstlineno + 1


def test_a_class_statement_stays_rejected():
    with pytest.raises(sg.TransformError, match="class definition"):
        sg.grad(ip.class_inside)
