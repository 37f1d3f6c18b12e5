"""An MLP whose parameters are a list of ``(W, b)`` tuples, as in JAX's tutorials.

`predict` loops ``for W, b in params[:-1]`` and unpacks the last layer; `sg.grad(loss)` gives
the gradient with the same structure, a list of ``(dW, db)`` tuples, so the update is one
comprehension over both lists. The gradient is checked against finite differences first, then
a few steps of gradient descent fit a noisy sine. Run: ``python examples/mlp_params.py``.
"""

import itertools

import numpy as np
from scipy.special import logsumexp

import s2sgrad as sg


def init_params(sizes, rng):
    """One (W, b) per layer: W of shape (inputs, outputs), scaled for tanh."""
    return [
        (rng.normal(size=(m, n)) / np.sqrt(m), np.zeros(n)) for m, n in itertools.pairwise(sizes)
    ]


def predict(params, x):
    h = x
    for W, b in params[:-1]:
        h = np.tanh(h @ W + b)
    W, b = params[-1]
    return h @ W + b


def loss(params, x, y):
    return np.mean((predict(params, x) - y) ** 2)


def log_softmax_loss(params, x, labels):
    """The classifier's loss of the JAX tutorial: log-probabilities by logsumexp."""
    logits = predict(params, x)
    log_probs = logits - logsumexp(logits, axis=1, keepdims=True)
    return -np.mean(np.sum(log_probs * labels, axis=1))


rng = np.random.default_rng(0)
x = np.linspace(-3.0, 3.0, 64).reshape(-1, 1)
y = np.sin(x) + 0.1 * rng.normal(size=x.shape)
params = init_params([1, 16, 16, 1], rng)

grad_loss = sg.grad(loss)  # d loss / d params: a list of (dW, db) tuples
grads = grad_loss(params, x, y)
print("gradient structure:", [(dW.shape, db.shape) for dW, db in grads])

# against central differences along random directions, both modes (first derivatives)
sg.check_grads(loss, (params, x, y), wrt="params")

step_size = 0.1
for step in range(301):
    grads = grad_loss(params, x, y)
    params = [
        (W - step_size * dW, b - step_size * db)
        for (W, b), (dW, db) in zip(params, grads, strict=True)
    ]
    if step % 100 == 0:
        print(f"step {step:3d}  loss {loss(params, x, y):.4f}")
assert loss(params, x, y) < 0.1

# the classifier's loss of the tutorial, on three classes
labels = np.eye(3)[rng.integers(0, 3, size=32)]
features = rng.normal(size=(32, 4))
classifier = init_params([4, 8, 3], rng)
sg.check_grads(log_softmax_loss, (classifier, features, labels), wrt="params")
print("log-softmax loss:", round(float(log_softmax_loss(classifier, features, labels)), 4))
