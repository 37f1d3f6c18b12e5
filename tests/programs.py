"""Functions the gradient tests differentiate: they need real source, so they live in a file."""

import math

import numpy as np

A = np.arange(6.0).reshape(2, 3)


def f_sum(x):
    return np.sum(x)


def f_bcast(x, b):
    return np.sum(x + b)


def f_bcast2(x, b):
    return np.sum(np.tanh(x * b) ** 2)


def f_aug(x):
    y = x * 1.0
    y += 2.0 * x
    y *= x
    return np.sum(y)


def f_unpack(x, y):
    a, b = y, x
    return np.sum(a * b**3)


def f_index(x):
    return np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def f_fancy(x):
    idx = np.array([0, 0, 2])
    return np.sum(x[idx] ** 2)


def f_mask(x):
    m = x > 0.3
    return np.sum(x[m] ** 3)


def f_matmul(W, x):
    return np.sum(np.tanh(x @ W) ** 2)


def f_mean_axis(x):
    return np.sum(np.mean(x, axis=0) ** 2) + x.sum(axis=1).max()


def f_methods(x):
    return (x.T @ x).sum() + x.reshape(-1).dot(x.reshape(-1))


def f_math(x, y):
    a = math.sin(x) * math.exp(y) + math.log(x * y) - math.sqrt(x + y)
    return a**2 / (1.0 + math.tanh(x) ** 2)


def f_global(x):
    return np.sum(A @ x)


def f_linalg(M):
    return np.linalg.det(M) + np.sum(np.linalg.inv(M)) + np.linalg.norm(M)


def f_slogdet(M):
    _sign, logdet = np.linalg.slogdet(M)
    return logdet * 2.0


def f_concat(x, y):
    z = np.concatenate([x, y * 2.0])
    s = np.stack([x, y], axis=1)
    return np.sum(z**2) + np.sum(s[:, 0] * s[:, 1])


def f_einsum(a, b):
    return np.einsum("ij,jk->ik", a, b).sum()


def f_where(x):
    return (
        np.sum(np.where(x > 0.5, x**2, np.sin(x)))
        + np.sum(np.maximum(x, 0.4))
        + np.sum(np.clip(x, 0.2, 0.7))
    )


def f_nonscalar(x):
    return np.sin(x) * 2.0


def f_unused(x, y):
    return np.sum(y**2)


def f_var(x):
    return np.var(x) + np.std(x, axis=0).sum() + np.prod(x[0])
