"""Layers and activations on Tensors: `Dense`, `BatchNormalization`, relu, elu, sigmoid, ...

Everything here is ordinary NumPy on Tensors, so a tape records it operation by operation and
the compiler differentiates it with the registry's rules; no layer has a hand-written gradient.
Two things are recorded as one operation each, because a tape's cost is per operation: relu
(a primitive with its rule, `s2sgrad.runtime.relu`) and a Dense layer's ``x @ kernel + bias``,
with its relu if it has that activation (an `Expression`, lowered to the product, the sum and
relu, which the compiler differentiates).
"""

from __future__ import annotations

import numpy as np

from s2sgrad.runtime import registry
from s2sgrad.runtime import relu as runtime_relu
from s2sgrad.runtime.rules.elementwise import relu as relu_rule

from .module import Module, unique_name
from .recorded_calls import Expression
from .tensor import Tensor, Variable, computed, unary

__all__ = ["BatchNormalization", "Dense", "elu", "relu", "sigmoid", "softmax", "softplus", "tanh"]


def relu(x):
    """max(x, 0), elementwise (NaN stays NaN). One primitive (`s2sgrad.runtime.relu`): a tape
    records one operation, and its derivative, 0 at 0 as TensorFlow's, is one product with a
    mask (cheaper than `np.maximum`'s tie weights)."""
    if isinstance(x, Tensor):
        return unary(runtime_relu, x)
    return runtime_relu(x)


# sg.nn.relu inside sg.grad: the primitive's rule (the function itself dispatches Tensors)
registry.register_vjp(relu, relu_rule, elementwise=True, warn=False)


def elu(x, alpha=1.0):
    """x for x > 0, alpha * (exp(x) - 1) otherwise."""
    return np.where(x > 0.0, x, alpha * (np.exp(np.minimum(x, 0.0)) - 1.0))


def sigmoid(x):
    """1 / (1 + exp(-x)), elementwise."""
    return 1.0 / (1.0 + np.exp(-x))


def softplus(x):
    """log(1 + exp(x)), computed without overflow for large x."""
    return np.logaddexp(x, 0.0)


def tanh(x):
    return np.tanh(x)


def softmax(x, axis=-1):
    """exp(x) / sum(exp(x)) along `axis`, shifted by the maximum for stability (the shift is a
    constant of the derivative, so it does not change the gradient)."""
    shift = np.max(np.asarray(x), axis=axis, keepdims=True)
    e = np.exp(x - shift)
    return e / np.sum(e, axis=axis, keepdims=True)


ACTIVATIONS = {
    "relu": relu,
    "elu": elu,
    "sigmoid": sigmoid,
    "softplus": softplus,
    "tanh": tanh,
    "softmax": softmax,
    "linear": None,
}


def _activation(activation):
    if activation is None or callable(activation):
        return activation
    if isinstance(activation, str) and activation in ACTIVATIONS:
        return ACTIVATIONS[activation]
    raise ValueError(
        f"activation must be a callable or one of {sorted(ACTIVATIONS)}; got {activation!r}"
    )


def affine(x, kernel, bias):
    """``x @ kernel + bias`` on plain values."""
    return x @ kernel + bias


def affine_relu(x, kernel, bias):
    """``relu(x @ kernel + bias)`` on plain values."""
    return runtime_relu(x @ kernel + bias)


# What a Dense layer records: one operation, lowered to the product and the sum it is made of
# (and relu, the one activation that is a primitive: its rule reads only the result, so the
# sum inside is not needed by the backward sweep and is not kept).
AFFINE = Expression("{0} @ {1} + {2}", affine)
AFFINE_RELU = Expression("relu({0} @ {1} + {2})", affine_relu, relu=runtime_relu)


class Dense(Module):
    """``activation(x @ kernel + bias)``, with `kernel` (in, units) built on the first call.

    Args:
        units: number of outputs (a positive int).
        activation: None, a callable, or a name: relu, elu, sigmoid, softplus, tanh, softmax.
        use_bias: add a bias vector (zeros initially).
        name: layer name (default ``dense``, ``dense_1``, ...); variables are ``NAME/kernel``
            and ``NAME/bias``.
        seed: seed of the Glorot-uniform kernel initializer (reproducible layers).
    """

    def __init__(self, units, activation=None, use_bias=True, name=None, seed=None):
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"Dense: units must be a positive int; got {units!r}")
        super().__init__(name if name is not None else unique_name("dense"))
        self.units = int(units)
        self.activation = _activation(activation)
        self.use_bias = bool(use_bias)
        self._rng = np.random.default_rng(seed)
        self.kernel = None
        self.bias = None

    def build(self, in_features: int, dtype) -> None:
        limit = np.sqrt(6.0 / (in_features + self.units))
        kernel = self._rng.uniform(-limit, limit, size=(in_features, self.units)).astype(dtype)
        self.kernel = Variable(kernel, name=f"{self.name}/kernel")
        if self.use_bias:
            self.bias = Variable(np.zeros(self.units, dtype=dtype), name=f"{self.name}/bias")

    def __call__(self, x):
        cls = x.__class__
        if cls is np.ndarray:  # used as it is: a constant of the recording
            value = x
        elif cls is Tensor or cls is Variable or isinstance(x, Tensor):
            value = x._value
        else:
            x = Tensor(x)
            value = x._value
        kernel = self.kernel
        if kernel is None:
            kernel = self._build_for(value)
        activation = self.activation
        try:
            if self.use_bias:  # x @ kernel + bias (relu of it): computed, recorded as one call
                bias = self.bias
                args = (x, kernel, bias)
                inputs = (kernel, bias) if value is x else args  # an ndarray is not among them
                if activation is relu:
                    value = affine_relu(value, kernel._value, bias._value)
                    return computed(AFFINE_RELU, args, inputs, value)
                y = computed(AFFINE, args, inputs, affine(value, kernel._value, bias._value))
            else:  # an ndarray input goes to the kernel's operator (not NumPy's lookup)
                y = kernel.__rmatmul__(x) if value is x else x @ kernel
        except ValueError:
            self._check_features(value)  # the layer's message, if that is what is wrong
            raise
        return activation(y) if activation is not None else y

    def _build_for(self, value) -> Variable:
        """Build the variables for inputs like `value` (the first call); the kernel."""
        self._check_features(value)
        self.build(value.shape[-1], value.dtype if value.dtype.kind == "f" else np.float64)
        return self.kernel

    def _check_features(self, value) -> None:
        """Raise ValueError if `value` has no feature axis or not the kernel's number of
        features (checked when the product fails, not on every call)."""
        shape = np.shape(value)
        if not shape:
            raise ValueError(f"Dense {self.name!r}: input must have a feature axis; got shape ()")
        if self.kernel is not None and shape[-1] != self.kernel.shape[0]:
            raise ValueError(
                f"Dense {self.name!r}: input has {shape[-1]} features, the kernel expects "
                f"{self.kernel.shape[0]}"
            )


class BatchNormalization(Module):
    """Normalizes each feature over the batch: ``gamma * (x - mean) / sqrt(var + eps) + beta``.

    With ``training=True`` the batch statistics are used (and differentiated through) and the
    moving averages are updated; with ``training=False`` (the default) the moving averages are.

    Args:
        axis: the feature axis.
        momentum: weight of the old moving average in each update.
        epsilon: added to the variance.
    """

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, name=None):
        super().__init__(name if name is not None else unique_name("batch_normalization"))
        self.axis = axis
        self.momentum = float(momentum)
        self.epsilon = float(epsilon)
        self.gamma = None
        self.beta = None
        self.moving_mean = None
        self.moving_variance = None

    def _build(self, features: int, dtype) -> None:
        self.gamma = Variable(np.ones(features, dtype=dtype), name=f"{self.name}/gamma")
        self.beta = Variable(np.zeros(features, dtype=dtype), name=f"{self.name}/beta")
        self.moving_mean = Variable(
            np.zeros(features, dtype=dtype), trainable=False, name=f"{self.name}/moving_mean"
        )
        self.moving_variance = Variable(
            np.ones(features, dtype=dtype), trainable=False, name=f"{self.name}/moving_variance"
        )

    def __call__(self, x, training=False):
        if not isinstance(x, Tensor):
            x = Tensor(x)
        axis = self.axis % x.ndim
        if self.gamma is None:
            dtype = x.dtype if x.dtype.kind == "f" else np.float64
            self._build(x.shape[axis], dtype)
        reduce = tuple(i for i in range(x.ndim) if i != axis)
        shape = [1] * x.ndim
        shape[axis] = x.shape[axis]
        shape = tuple(shape)
        if training:
            mean = np.mean(x, axis=reduce, keepdims=True)
            var = np.mean((x - mean) ** 2, axis=reduce, keepdims=True)
            m = self.momentum
            for moving, batch in ((self.moving_mean, mean), (self.moving_variance, var)):
                moving.assign(m * moving.numpy() + (1 - m) * np.reshape(np.asarray(batch), -1))
        else:
            mean = np.reshape(self.moving_mean, shape)
            var = np.reshape(self.moving_variance, shape)
        scale = np.reshape(self.gamma, shape) / np.sqrt(var + self.epsilon)
        return (x - mean) * scale + np.reshape(self.beta, shape)
