"""Activation functions that are primitives: one recorded operation, one rule.

`sg.nn.relu` records `relu` as a single call (a tape records every operation, so a composite
of comparison, mask and select costs three), and its derivative is one product with a mask of
the result (`rules/elementwise.py`). Generated code may call these like any other runtime name.
"""

import numpy as np

__all__ = ["relu"]


def relu(x):
    """max(x, 0), elementwise; NaN stays NaN. Its derivative is 1 where the result is
    positive and 0 elsewhere (0 at 0, as TensorFlow's and PyTorch's)."""
    return np.maximum(x, 0.0)
