"""A model class trained with `sg.grad(model.loss)`: a bound method is differentiated as
written.

The instance (`self`) is a constant of the derivative, like a closure variable: its attributes
(the data, the regularization strength) are read when the gradient runs and are not
differentiated. What is differentiated is an argument of the method, here the weights `w`, so
the class keeps its data and the training loop owns the parameters. `self.predict(w)` inside
`loss` is a call to another method, transformed in turn. Run:
``python examples/model_class.py``.
"""

import numpy as np

import s2sgrad as sg


class LogisticRegression:
    """Binary logistic regression with an L2 penalty, on the data it was given."""

    def __init__(self, X, y, l2=1e-2):
        self.X = X
        self.y = y
        self.l2 = l2

    def predict(self, w, b):
        """The probability of class 1 for each row of X."""
        return 1.0 / (1.0 + np.exp(-(self.X @ w + b)))

    def loss(self, w, b):
        """Mean negative log-likelihood plus the L2 penalty."""
        p = self.predict(w, b)
        nll = -np.mean(self.y * np.log(p) + (1.0 - self.y) * np.log(1.0 - p))
        return nll + self.l2 * np.sum(w**2)

    @staticmethod
    def accuracy(p, y):
        return np.mean((p > 0.5) == (y > 0.5))


rng = np.random.default_rng(0)
X = rng.normal(size=(200, 3))
true_w = np.array([2.0, -1.0, 0.5])
y = (X @ true_w + 0.3 + 0.5 * rng.normal(size=200) > 0).astype(float)

model = LogisticRegression(X, y)
grads = sg.grad(model.loss, wrt=("w", "b"))  # a tuple: (dloss/dw, dloss/db)

w, b = np.zeros(3), 0.0
for step in range(201):
    if step % 50 == 0:
        accuracy = model.accuracy(model.predict(w, b), y)
        print(f"step {step:3d}  loss {model.loss(w, b):.4f}  accuracy {accuracy:.2f}")
    dw, db = grads(w, b)
    w, b = w - 0.5 * dw, b - 0.5 * db

print("weights", np.round(w, 3), "bias", round(b, 3))
assert model.accuracy(model.predict(w, b), y) > 0.85

# the method's gradient agrees with finite differences, in both modes and at second order
sg.check_grads(model.loss, (w, b), order=2)

# the instance is read when the gradient runs: new data, same compiled gradient
model.X, model.y = X[:100], y[:100]
print("gradient on the first half of the data:", np.round(grads(w, b)[0], 4))
