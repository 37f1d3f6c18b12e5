"""Central finite differences: the independent reference every gradient test compares with."""

import numpy as np


def numerical_gradient(f, args, index, eps=1e-6):
    """d(sum(f(*args)))/d(args[index]) by central differences, in float64."""
    x = np.array(args[index], dtype=np.float64)
    grad = np.zeros_like(x)
    for k in np.ndindex(x.shape):
        plus, minus = x.copy(), x.copy()
        plus[k] += eps
        minus[k] -= eps
        hi = list(args)
        lo = list(args)
        hi[index] = plus if x.shape else float(plus)
        lo[index] = minus if x.shape else float(minus)
        grad[k] = (np.sum(f(*hi)) - np.sum(f(*lo))) / (2 * eps)
    return grad


def numerical_jacobian(f, x, eps=1e-6):
    """d f(x) / d x by central differences: shape ``f(x).shape + x.shape`` (x a number or an
    array; a number gives the derivative of f's output)."""
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return (np.asarray(f(float(x) + eps)) - np.asarray(f(float(x) - eps))) / (2 * eps)
    columns = []
    for k in range(x.size):
        step = np.zeros(x.size)
        step[k] = eps
        step = step.reshape(x.shape)
        columns.append((np.asarray(f(x + step)) - np.asarray(f(x - step))) / (2 * eps))
    out_shape = np.shape(f(x))
    return np.moveaxis(np.array(columns), 0, -1).reshape(out_shape + x.shape)
