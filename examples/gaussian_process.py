"""A Gaussian-process regression fitted by its marginal likelihood: the gradient and the
Hessian with respect to the log hyperparameters go through a Cholesky factor, each checked
against finite differences, then a few Newton steps.

The kernel is a squared exponential with a length scale, a signal variance and a noise
variance, all positive, so they are optimized as logarithms. The negative log marginal
likelihood of observations ``y`` at points ``x`` is

    0.5 y^T K^-1 y + sum(log(diag(L))) + n/2 log(2 pi),    K = L L^T,

with ``K^-1 y`` from two solves with ``L`` and ``L^T``. Newton steps with the exact Hessian
then fit the hyperparameters (quadratic convergence shows the Hessian is right).
"""

import numpy as np

import s2sgrad as sg

rng = np.random.default_rng(0)
X = np.sort(rng.uniform(-3.0, 3.0, 25))
Y = np.sin(1.3 * X) + 0.1 * rng.normal(size=X.shape)
SQUARED_DISTANCES = (X[:, None] - X[None, :]) ** 2


def negative_log_likelihood(log_params):
    length, signal, noise = np.exp(log_params[0]), np.exp(log_params[1]), np.exp(log_params[2])
    k = signal * np.exp(-0.5 * SQUARED_DISTANCES / length**2) + noise * np.eye(len(X))
    lower = np.linalg.cholesky(k)
    z = np.linalg.solve(lower, Y)  # L z = y
    alpha = np.linalg.solve(lower.T, z)  # L^T alpha = z: alpha = K^-1 y
    log_det = 2.0 * np.sum(np.log(np.diagonal(lower)))
    return 0.5 * Y @ alpha + 0.5 * log_det + 0.5 * len(X) * np.log(2 * np.pi)


def finite_difference_gradient(f, x, eps=1e-6):
    steps = np.eye(len(x)) * eps
    return np.array([(f(x + s) - f(x - s)) / (2 * eps) for s in steps])


grad = sg.grad(negative_log_likelihood)
hessian = sg.hessian(negative_log_likelihood)

theta = np.log(np.array([0.5, 2.0, 0.3]))  # length scale, signal variance, noise variance
g = grad(theta)
h = hessian(theta)
print("negative log likelihood:", negative_log_likelihood(theta))
print("gradient w.r.t. log(length, signal, noise):", g)
print("Hessian:\n", h)

g_fd = finite_difference_gradient(negative_log_likelihood, theta)
h_fd = np.array([finite_difference_gradient(lambda t, i=i: grad(t)[i], theta) for i in range(3)])
print("gradient matches finite differences:", np.allclose(g, g_fd, rtol=1e-5, atol=1e-6))
print("Hessian matches finite differences of the gradient:", np.allclose(h, h_fd, atol=1e-5))
assert np.allclose(g, g_fd, rtol=1e-5, atol=1e-6)
assert np.allclose(h, h_fd, rtol=1e-5, atol=1e-5) and np.allclose(h, h.T)

for step in range(10):  # Newton's method, shifted where the Hessian is not positive definite
    g, h = grad(theta), hessian(theta)
    shift = max(0.0, 0.1 - np.linalg.eigvalsh(h)[0])
    direction = -np.linalg.solve(h + shift * np.eye(3), g)
    rate = min(1.0, 1.0 / np.linalg.norm(direction))  # at most a factor e per step
    while negative_log_likelihood(theta + rate * direction) > negative_log_likelihood(theta):
        rate /= 2  # backtracking: only steps that lower the likelihood's negative log
    theta = theta + rate * direction
    nll, slope = negative_log_likelihood(theta), np.linalg.norm(grad(theta))
    print(f"Newton step {step + 1}: nll {nll:.6f}, |gradient| {slope:.2e}")
print("fitted length scale, signal variance, noise variance:", np.exp(theta))
