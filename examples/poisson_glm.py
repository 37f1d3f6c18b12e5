"""A Poisson regression fitted with scipy.optimize, its gradient and Hessian from s2sgrad.

The negative log-likelihood is written as a statistician writes it, with
scipy.special.gammaln for log(y!). sg.grad and sg.hessian compile its derivatives (gammaln's
rule is s2sgrad's; its second derivative goes through polygamma), and Newton-CG uses both.
"""

import numpy as np
import scipy.optimize
from scipy.special import gammaln

import s2sgrad as sg

rng = np.random.default_rng(0)
n, p = 200, 3
X = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
true_w = np.array([0.5, -0.3, 0.8])
y = rng.poisson(np.exp(X @ true_w)).astype(float)


def negative_log_likelihood(w, X, y):
    eta = X @ w
    return np.sum(np.exp(eta) - y * eta + gammaln(y + 1.0)) / len(y)


gradient = sg.grad(negative_log_likelihood)
hessian = sg.hessian(negative_log_likelihood)

w0 = np.zeros(p)
fit = scipy.optimize.minimize(
    negative_log_likelihood, w0, args=(X, y), jac=gradient, hess=hessian, method="Newton-CG"
)
print("converged:", fit.success, "in", fit.nit, "iterations")
print("estimate:", np.round(fit.x, 3), " true:", true_w)

# the closed forms: X^T (mu - y) / n and X^T diag(mu) X / n
mu = np.exp(X @ fit.x)
print("gradient matches X^T (mu - y) / n:", np.allclose(gradient(fit.x, X, y), X.T @ (mu - y) / n))
print(
    "Hessian matches X^T diag(mu) X / n:",
    np.allclose(hessian(fit.x, X, y), X.T @ (mu[:, None] * X) / n),
)
