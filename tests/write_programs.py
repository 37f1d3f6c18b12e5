"""Functions that write into local arrays."""

import numpy as np


def fill_by_index(x):
    y = np.zeros(len(x))
    for i in range(len(x)):
        y[i] = x[i] ** 2 + 1.0
    return np.sum(np.sin(y))


def slice_update(x):
    y = x.copy()
    y[1:3] += np.exp(x[:2])
    return np.sum(y**2)


def overwrite_a_read_slot(x):
    y = x * 2.0
    a = np.sum(y * y)
    y[0] = a * x[1]
    return np.sum(y * x)


def mask_write(x):
    y = x.copy()
    y[x > 0.5] = 0.0
    return np.sum(y**3)


def fancy_write(v):
    Q = np.zeros((2, 3, 3))
    d = np.arange(3)
    Q[:, d, d] = np.exp(v)
    return np.sum(Q * np.arange(18.0).reshape(2, 3, 3))


def recurrence(x):
    y = np.zeros(len(x))
    y[0] = x[0]
    for i in range(1, len(x)):
        y[i] = 0.5 * y[i - 1] + np.sin(x[i])
    return np.sum(y**2)


def writes_into_argument(x):
    x[0] = 1.0
    return np.sum(x)
