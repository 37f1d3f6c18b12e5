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
