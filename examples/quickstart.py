"""A gradient and the code that computes it: the first thing to run."""

import numpy as np

import s2sgrad as sg


def loss(w, x):
    h = np.tanh(x @ w)
    return np.mean((h - 1.0) ** 2)


dloss = sg.grad(loss)  # a new Python function, generated from loss's source
w, x = np.full((3, 2), 0.1), np.arange(12.0).reshape(4, 3) / 10
print(dloss(w, x))
print(sg.source(dloss))  # the generated code, comments pointing at loss's lines
