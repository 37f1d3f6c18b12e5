"""Second derivatives through a user function the first order split into a forward half and a
backward half: the positions the forward half saves (a loop's index arithmetic in a branch, an
index computed from the data) reach the backward half inside the one tuple it is handed, and
the second transform took them for values that depend on the input: "no gradient registered
for dy_3[...] with an index that depends on the differentiated input", located in generated
code (a refusal the fuzz oracle now counts as a crash). Checked against second differences of
the function itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import s2sgrad as sg

X = np.array([0.5, 1.2, -0.7])


def scaled_at_the_largest(x):
    y = x.copy()
    for _ in range(2):
        k = int(np.argmax(y))  # a position computed from the data, saved for the backward half
        y[k] = y[k] * 0.5 + np.sin(y[k])
    return y**2


def chained_in_a_branch(x):
    y = x.copy()
    for i in range(1, 3):
        if y[i - 1] > 0:  # i - 1 is computed in a branch: saved, not recomputed
            y[i] = y[i] * y[i - 1]
        else:
            y[i] = np.sin(y[i]) + y[i - 1]
    return y**2


def calls_scaled_at_the_largest(x):
    return np.sum(scaled_at_the_largest(x))


def calls_chained_in_a_branch(x):
    return np.sum(chained_in_a_branch(x))


def _second_differences(f, x, h=1e-4):
    n = x.size
    hessian = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            ei, ej = np.eye(n)[i] * h, np.eye(n)[j] * h
            hessian[i, j] = (f(x + ei + ej) - f(x + ei - ej) - f(x - ei + ej) + f(x - ei - ej)) / (
                4 * h * h
            )
    return hessian


@pytest.mark.parametrize("f", [calls_scaled_at_the_largest, calls_chained_in_a_branch])
def test_second_order_through_a_callee_indexing_by_saved_positions(f):
    want = _second_differences(f, X)
    np.testing.assert_allclose(sg.hessian(f)(X), want, rtol=1e-5, atol=1e-5)
    v = np.array([0.3, -1.0, 2.0])
    np.testing.assert_allclose(sg.hvp(f)(X, v), want @ v, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sg.grad(sg.grad(f))(X), want.sum(axis=0), rtol=1e-5, atol=1e-5)


def mixes_an_index_maker(x, w):
    return np.sum(np.r_[w, 1.0] * x)


def test_an_index_maker_in_generated_code_is_still_refused():
    # np.r_[w, 1.0] is data, not a position: differentiating the generated gradient with
    # respect to w must not treat it as an index (its derivative is not zero)
    with pytest.raises(LookupError, match=r"np\.r_\[\.\.\.\] with an index"):
        sg.grad(sg.grad(mixes_an_index_maker, wrt=0), wrt=1)(np.ones(3), np.ones(2))


def _sin_sum(x):
    return np.sum(np.sin(x) * x)


_gradient_of_sin_sum = sg.grad(_sin_sum)
_hessian_of_sin_sum = sg.hessian(_sin_sum)


def newton_step(x):
    return np.sum(x - 0.1 * _gradient_of_sin_sum(x))


def hessian_trace(x):
    return np.trace(_hessian_of_sin_sum(x))


@pytest.mark.parametrize("f", [newton_step, hessian_trace])
@pytest.mark.parametrize(
    "transform",
    [
        lambda f: sg.grad(f)(X),
        lambda f: sg.jvp(f, (X,), (np.ones(3),)),
        lambda f: sg.jacobian(f, mode="forward")(X),
    ],
    ids=["grad", "jvp", "jacobian"],
)
def test_calling_a_generated_derivative_inside_a_differentiated_function_is_refused_there(
    f, transform
):
    # the generated function is a dispatcher picking compiled code at run time: it was inlined
    # and refused inside s2sgrad's own text ("<s2sgrad dispatcher dfdx #1>:5:12: calling 'fn',
    # a function given as a value"), or looked up as a library function with no rule
    _gradient_of_sin_sum(X)  # (whether or not it ran before)
    with pytest.raises(sg.TransformError, match="a derivative s2sgrad generated") as caught:
        transform(f)
    assert caught.value.filename == __file__
    assert caught.value.lineno == f.__code__.co_firstlineno + 1


def gradient_called_at_once(x):
    return np.sum(sg.grad(_sin_sum)(x) * x)


def gradient_made_inside(x):
    g = sg.grad(_sin_sum)
    return np.sum(g(x))


def jvp_inside(x):
    return sg.jvp(_sin_sum, (x,), (x,))[1]


@pytest.mark.parametrize("f", [gradient_called_at_once, gradient_made_inside, jvp_inside])
def test_calling_a_transform_inside_a_differentiated_function_is_refused_at_the_call(f):
    # it said "only calls of functions and of array methods are supported" (sg.grad(g)(x)),
    # "calling 'g', a function given as a value" (g = sg.grad(...); g(x)), or suggested
    # registering a rule for s2sgrad.forward_api.jvp
    with pytest.raises(sg.TransformError, match=r"calling sg\.(grad|jvp) inside") as caught:
        sg.grad(f)(X)
    assert caught.value.filename == __file__
    assert caught.value.lineno == f.__code__.co_firstlineno + 1  # (where sg.grad is called)
    assert "sg.hessian(f)" in str(caught.value)


@pytest.mark.parametrize(
    "use",
    [
        lambda h: sg.source(h),
        lambda h: sg.source(h, X, X),
        lambda h: sg.export(h, "unused.py", X, X),
        lambda h: sg.jacobian(h)(X, X),
        lambda h: sg.jvp(h, (X, X), (X, X)),
        lambda h: sg.grad(h)(X, X),
    ],
    ids=["source", "source with arguments", "export", "jacobian", "jvp", "grad"],
)
def test_the_function_sg_hvp_returns_says_what_it_is_not(use):
    # "wrt=0 is out of range: hvp_f takes 0 positional argument(s)", a zip() error, or
    # "expects a function returned by an s2sgrad transform" (it is one)
    h = sg.hvp(_sin_sum)
    with pytest.raises(TypeError, match=r"of hvp__sin_sum: the function sg\.hvp returns"):
        use(h)
    np.testing.assert_allclose(h(X, X), sg.hessian(_sin_sum)(X) @ X)


_real_or_sum = lambda x: np.real(x**2 if np.iscomplex(x) else np.sum(x))  # noqa: E731


def squares_a_lambda(x):
    y = _real_or_sum(x)
    return y * y


def test_a_boolean_test_saved_by_a_callee_needs_no_rule_at_second_order():
    # np.iscomplex had no rule: the first order read it only as a condition, but the callee's
    # forward half returns it to the backward half, and forward mode over that asked for its
    # tangent (a LookupError located in generated code); bool-valued functions carry none
    assert sg.grad(squares_a_lambda)(2.0) == pytest.approx(4.0)  # d(x^2) = 2x
    assert sg.hessian(squares_a_lambda)(2.0) == pytest.approx(2.0)
    assert sg.grad(sg.grad(squares_a_lambda))(2.0) == pytest.approx(2.0)


def _cosine_of_square(x):
    return np.cos(np.dot(x, x))


def test_a_jacobian_of_a_jacobian_through_a_helper_without_rules_says_what_to_use():
    # it named s2sgrad.runtime.tangent_helpers.map_examples and suggested registering a rule
    with pytest.raises(LookupError, match=r"map_examples .*helper of code s2sgrad generated"):
        sg.jacobian(sg.jacobian(_cosine_of_square, mode="forward"))(X)
    x = X
    want = -2 * np.sin(x @ x) * np.eye(3) - 4 * np.cos(x @ x) * np.outer(x, x)
    np.testing.assert_allclose(sg.jacobian(sg.grad(_cosine_of_square))(x), want, atol=1e-12)
