"""SciPy through s2sgrad as users write it: stability in the tails, NaN safety, how SciPy
functions are spelled, errors for what has no rule, and SciPy staying optional.

The rule table (`tests/rule_table_scipy.py`) checks every rule against finite differences and
sympy; these tests check what the table cannot: extreme inputs, and the library boundary.
"""

from __future__ import annotations

import colorsys
import math
import subprocess
import sys

import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg

pytest.importorskip("scipy")  # SciPy is optional: these tests need it
import scipy.integrate
import scipy.special
import scipy.stats
from scipy.special import gammaln, log_ndtr, log_softmax, logsumexp
from scipy.stats import norm

# -- tails and NaN safety ------------------------------------------------------------------------


def total_log_ndtr(x):
    return np.sum(log_ndtr(x))


def test_log_ndtr_gradient_is_finite_far_in_the_lower_tail():
    x = np.array([-40.0, -20.0, -5.0, 0.0, 8.0])
    got = sg.grad(total_log_ndtr)(x)
    # d/dx log Phi(x) -> -x as x -> -inf (Mills ratio); pdf and cdf both underflow at -40
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[:2], [40.0249, 20.0499], rtol=1e-4)
    want = numerical_gradient(total_log_ndtr, (x,), 0)
    np.testing.assert_allclose(got[2:], want[2:], rtol=1e-6, atol=1e-9)


def norm_logcdf_total(x):
    return np.sum(norm.logcdf(x) + norm.logsf(x))


def test_normal_log_cdf_and_log_sf_are_finite_in_both_tails():
    x = np.array([-30.0, -3.0, 0.5, 30.0])
    got = sg.grad(norm_logcdf_total)(x)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got[[0, 3]], [30.033, -30.033], rtol=1e-3)


def lse_of_large(x):
    return logsumexp(x * 1000.0)


def softmax_entropy(x):
    return -np.sum(np.exp(log_softmax(x)) * log_softmax(x))


def test_logsumexp_and_log_softmax_do_not_overflow():
    x = np.array([1.0, 2.0, 3.0])
    got = sg.grad(lse_of_large)(x)  # exp(3000) overflows; the weights exp(x - ans) do not
    np.testing.assert_allclose(got, [0.0, 0.0, 1000.0])
    big = np.array([800.0, 801.0, 799.0])
    got = sg.grad(softmax_entropy)(big)
    assert np.all(np.isfinite(got))
    np.testing.assert_allclose(got, numerical_gradient(softmax_entropy, (big,), 0), atol=1e-6)


def weighted_lse(a, b):
    return np.sum(logsumexp(a, axis=1, b=b))


def weighted_lse_keepdims(a, b):
    return np.sum(logsumexp(a, axis=(1,), b=b, keepdims=True) ** 2)


def weighted_lse_all(a, b):
    return logsumexp(a, b=b) ** 2


@pytest.mark.parametrize("f", [weighted_lse, weighted_lse_keepdims, weighted_lse_all])
@pytest.mark.parametrize("b_shape", [(3, 4), (4,), (1, 4)])
def test_logsumexp_weights_are_differentiated_to_second_order(f, b_shape):
    rng = np.random.default_rng(0)
    a = rng.uniform(-0.5, 0.5, (3, 4))
    b = np.broadcast_to([3.0, -0.5, 2.0, -0.2], b_shape) * rng.uniform(0.9, 1.1, b_shape)
    sg.check_grads(f, (a, b), order=2)


def test_logsumexp_weights_gradient_is_stable_in_the_tails():
    a = np.array([[1000.0, 999.0, -1000.0], [-800.0, -801.0, -2000.0]])
    b = np.array([2.0, 1.0, 5.0])
    da, db = sg.grad(weighted_lse, wrt=(0, 1))(a, b)
    assert np.all(np.isfinite(da)) and np.all(np.isfinite(db))
    e = np.exp(-1.0)  # the softmax of the two leading entries, weighted 2 and 1
    np.testing.assert_allclose(da[:, :2], [[2 / (2 + e), e / (2 + e)]] * 2, rtol=1e-12)
    np.testing.assert_allclose(da[:, 2], 0.0, atol=1e-300)
    np.testing.assert_allclose(db, [2 / (2 + e), 2 * e / (2 + e), 0.0], rtol=1e-12)


def lse_with_sign(a, b):
    value, sign = logsumexp(a, b=b, return_sign=True)
    return value * sign


def test_logsumexp_return_sign_is_refused_with_a_clear_error():
    message = r"argument 'return_sign' of scipy\.special\.logsumexp"
    with pytest.raises(sg.TransformError, match=message):
        sg.grad(lse_with_sign)(np.zeros(3), np.array([1.0, -2.0, 0.5]))


def test_logsumexp_value_and_gradient_together():
    a = np.array([[0.1, 0.5, -0.3], [1.0, 2.0, 0.0]])
    value, grad = sg.value_and_grad(weighted_lse)(a, np.array([1.0, 2.0, 0.5]))
    assert value == pytest.approx(weighted_lse(a, np.array([1.0, 2.0, 0.5])))
    want = numerical_gradient(weighted_lse, (a, np.array([1.0, 2.0, 0.5])), 0)
    np.testing.assert_allclose(grad, want, rtol=1e-6)


def xlogy_loss(p, q):
    return np.sum(scipy.special.xlogy(p, q))


def test_xlogy_is_nan_free_where_the_first_argument_is_zero():
    p, q = np.array([0.0, 0.5]), np.array([0.0, 0.25])
    got = sg.grad(xlogy_loss, wrt=1)(p, q)  # x / y with x = y = 0: 0, not NaN
    np.testing.assert_array_equal(got, [0.0, 2.0])


# -- spellings ---------------------------------------------------------------------------------


def normal_loglik(x, mu, sigma):
    return np.sum(norm.logpdf(x, loc=mu, scale=sigma))


def normal_loglik_positional(x, mu, sigma):
    return np.sum(scipy.stats.norm.logpdf(x, mu, sigma))


@pytest.mark.parametrize("f", [normal_loglik, normal_loglik_positional])
def test_distribution_methods_with_keyword_and_positional_parameters(f):
    x = np.array([0.3, -1.2, 2.0])
    grads = sg.grad(f, wrt=(0, 1, 2))(x, 0.4, 1.7)
    z = (x - 0.4) / 1.7
    np.testing.assert_allclose(grads[0], -z / 1.7)
    np.testing.assert_allclose(grads[1], np.sum(z) / 1.7)
    np.testing.assert_allclose(grads[2], np.sum(z**2 - 1) / 1.7)
    sg.check_grads(f, (x, 0.4, 1.7), order=2)


def poisson_loglik(rate):
    counts = np.array([0.0, 2.0, 5.0])
    return np.sum(scipy.stats.poisson.logpmf(counts, rate))


def test_a_discrete_distribution_is_differentiated_in_its_rate():
    rate = np.array([0.5, 2.5, 4.0])
    np.testing.assert_allclose(sg.grad(poisson_loglik)(rate), np.array([0.0, 2 / 2.5, 5 / 4]) - 1)
    sg.check_grads(poisson_loglik, (rate,), order=2)


def stirling_gap(x):
    return np.sum(gammaln(x) - (x - 0.5) * np.log(x) + x)


def test_second_derivatives_of_special_functions():
    x = np.array([0.7, 1.5, 6.0])
    sg.check_grads(stirling_gap, (x,), order=2)
    hessian = sg.hessian(stirling_gap)(x)
    trigamma = scipy.special.polygamma(1, x)
    np.testing.assert_allclose(np.diag(hessian), trigamma - 1 / x - 0.5 / x**2, rtol=1e-8)


# -- what has no rule ----------------------------------------------------------------------------


def bessel_in_its_order(v, x):
    return np.sum(scipy.special.jv(v, x))


def test_no_closed_form_derivative_is_a_lookup_error_naming_the_argument():
    x = np.array([0.5, 1.5])
    np.testing.assert_allclose(
        sg.grad(bessel_in_its_order, wrt=1)(1.5, x),
        (scipy.special.jv(0.5, x) - scipy.special.jv(2.5, x)) / 2,
    )
    with pytest.raises(LookupError, match=r"scipy\.special\.jv with respect to its argument 'v'"):
        sg.grad(bessel_in_its_order, wrt=0)(1.5, x)


def uses_owens_t(h):
    return np.sum(scipy.special.owens_t(h, 0.5))


def uses_stdlib(x):
    return math.fsum([x, 1.0]) + statistics_like(x)


def statistics_like(x):
    return colorsys.rgb_to_hsv(x, 0.2, 0.1)[2]


def test_a_scipy_function_without_a_rule_is_a_lookup_error_with_the_fix():
    with pytest.raises(LookupError) as caught:
        sg.grad(uses_owens_t)(np.array([0.1, 0.2]))
    message = str(caught.value)
    assert "no gradient registered for scipy.special.owens_t" in message
    assert "@sg.register_vjp(scipy.special.owens_t)" in message
    assert "def owens_t_vjp(g, ans, " in message


def test_library_python_functions_are_never_transformed():
    # logsumexp is Python code in scipy.special._logsumexp: found by its rule, named publicly
    assert sg.grad(lambda_free_lse)(np.zeros(2)) == pytest.approx([0.5, 0.5])
    with pytest.raises(LookupError, match=r"colorsys\.rgb_to_hsv") as caught:
        sg.grad(statistics_like)(0.3)
    assert "_colorsys" not in str(caught.value) and "register_vjp" in str(caught.value)
    with pytest.raises(LookupError, match=r"no gradient registered for scipy\.special\.spence"):
        sg.grad(scipy.special.spence)(np.array([0.5]))


def lambda_free_lse(x):
    return logsumexp(x)


def test_scipy_ufuncs_are_named_by_their_module():
    from s2sgrad.runtime import qualified_name

    assert qualified_name(scipy.special.gammaln) == "scipy.special.gammaln"
    assert qualified_name(scipy.special.logsumexp) == "scipy.special.logsumexp"
    assert qualified_name(scipy.stats.norm.logpdf) == "scipy.stats.norm.logpdf"
    assert qualified_name(np.sin) == "numpy.sin"


def decay(y, t, k):
    return -k * y


def odeint_decay(k):
    return scipy.integrate.odeint(decay, 1.0, np.array([0.0, 1.0]), args=(k,))[-1, 0]


def test_odeint_has_no_rule_yet():
    with pytest.raises(LookupError, match=r"no gradient registered for scipy\.integrate\.odeint"):
        sg.grad(odeint_decay)(0.5)


def solve_ivp_decay(y0, k):
    return scipy.integrate.solve_ivp(lambda t, y: -k * y, (0.0, 1.0), y0).y[0, -1]


def test_ode_solvers_are_a_lookup_error_that_says_what_to_write_instead():
    # (a later issue: the adjoint method; meanwhile a Python loop is differentiated)
    for f, args in ((odeint_decay, (0.5,)), (solve_ivp_decay, (np.array([1.0]), 0.5))):
        with pytest.raises(LookupError, match="no adjoint ODE solver") as caught:
            sg.grad(f)(*args)
        assert "RK4 in a for loop" in str(caught.value)


def rk4_decay(y0, k):
    """The workaround the error suggests: fixed-step RK4, differentiated as a loop."""
    y, h = y0, 0.05
    for _ in range(20):
        k1 = -k * y
        k2 = -k * (y + h / 2 * k1)
        k3 = -k * (y + h / 2 * k2)
        k4 = -k * (y + h * k3)
        y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


def test_the_suggested_rk4_loop_is_differentiated():
    dy0, dk = sg.grad(rk4_decay, wrt=(0, 1))(1.5, 0.5)
    # y(1) = y0 exp(-k): RK4 with h = 0.05 is exact to ~1e-8 here
    assert dy0 == pytest.approx(math.exp(-0.5), rel=1e-7)
    assert dk == pytest.approx(-1.5 * math.exp(-0.5), rel=1e-7)
    sg.check_grads(rk4_decay, (1.5, 0.5), order=2)


def frozen_named(x, mu, sigma):
    d = norm(mu, sigma)
    return np.sum(d.logpdf(x))


def frozen_inline(x, mu, sigma):
    return np.sum(scipy.stats.gamma(2.0, scale=sigma).logpdf(x) + mu)


def frozen_constant(x, mu, sigma):
    return np.sum(norm(loc=0.0, scale=2.0).cdf(x))


@pytest.mark.parametrize(
    ("f", "wrt", "named"),
    [
        (frozen_named, 1, "scipy.stats.norm"),
        (frozen_named, 0, "array method .logpdf"),
        (frozen_inline, 2, "scipy.stats.gamma"),
        (frozen_constant, 0, "array method .cdf"),
    ],
)
def test_frozen_distributions_are_a_lookup_error_pointing_to_the_method(f, wrt, named):
    x = np.array([0.5, 1.5])
    with pytest.raises(LookupError, match=r"frozen scipy\.stats distribution") as caught:
        sg.grad(f, wrt=wrt)(x, 0.2, 1.5)
    message = str(caught.value)
    assert f"no gradient registered for {named} " in message
    assert ".logpdf(x, loc, scale)" in message and "NamedTuple" not in message


def unfrozen(x, mu, sigma):
    return np.sum(norm.logpdf(x, mu, sigma) + scipy.stats.gamma.logpdf(x, 2.0, scale=sigma))


def test_the_method_the_frozen_error_suggests_is_differentiated():
    sg.check_grads(unfrozen, (np.array([0.5, 1.5]), 0.2, 1.5), order=2)


# -- SciPy stays optional ------------------------------------------------------------------------


def test_importing_s2sgrad_does_not_import_scipy():
    code = (
        "import sys\n"
        "import numpy as np\n"
        "import s2sgrad as sg\n"
        "import s2sgrad.runtime\n"
        "sg.grad(np.sin)(0.5)\n"
        "assert 'scipy' not in sys.modules, sorted(m for m in sys.modules if 'scipy' in m)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=_repository())


def test_scipy_rules_load_once_the_program_imports_scipy():
    code = (
        "import sys\n"
        "from s2sgrad.runtime import registry\n"
        "assert not any(r.name.startswith('scipy') for r in registry)\n"
        "import scipy.special\n"
        "assert registry.lookup(scipy.special.gammaln) is not None\n"
        "assert 'scipy.stats' not in sys.modules  # only the subpackage the program imported\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=_repository())


def _repository() -> str:
    from pathlib import Path

    return str(Path(__file__).parent.parent)
