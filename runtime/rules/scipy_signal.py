"""Rules of ``scipy.signal``: convolve, correlate (N-dimensional, real inputs).

Loaded when SciPy is importable (this module imports it). Both functions are bilinear, so
their forward rules are derived (`registry.linear`); the batched ones map the directions one
by one (`batched_convolve`). Reverse rules, as for ``np.convolve`` (``runtime/rules/fft.py``):

- ``convolve(in1, in2, mode)``: the adjoint of the full convolution is ``g`` put back where
  ``mode`` cropped it (`convolution_embed`, SciPy's centering: ``"same"`` keeps ``in1``'s
  shape), then correlated with the other input, i.e. convolved (``"valid"``) with it flipped
  along every axis.
- ``correlate(in1, in2, mode)`` is ``convolve(in1, flip(in2), mode)`` for real inputs (in every
  mode: where SciPy swaps the inputs of a ``"valid"`` correlation it also reverses the
  result), so its adjoints are those of that convolution. A complex ``in2`` (which SciPy
  conjugates) is a ValueError (`real_inputs`).

The helpers `signal_convolve`/`signal_correlate` (SciPy imported inside them), which the
templates call so that generated code needs no SciPy import of its own, share these rules.
"""

import numpy as np
import scipy.signal

from ..fft_helpers import (
    batched_convolve,
    convolution_embed,
    real_inputs,
    signal_convolve,
    signal_correlate,
)
from ..registry import registry

vjp = registry.vjp
batched = registry.batched
signal = scipy.signal


@vjp(signal.convolve, signal_convolve)
def convolve(g, ans, in1, in2, mode="full", method="auto"):
    full = convolution_embed(g, in1, in2, mode, "scipy")
    return (
        signal_convolve(full, np.flip(in2), "valid"),
        signal_convolve(full, np.flip(in1), "valid"),
        None,
        None,
    )


@vjp(signal.correlate, signal_correlate)
def correlate(g, ans, in1, in2, mode="full", method="auto"):
    full = convolution_embed(g, in1, real_inputs(in2), mode, "scipy")
    return (
        signal_convolve(full, in2, "valid"),
        np.flip(signal_convolve(full, np.flip(in1), "valid")),
        None,
        None,
    )


registry.linear(
    signal.convolve, signal_convolve, signal.correlate, signal_correlate, positions=(0, 1)
)


@batched(signal.convolve, signal_convolve)
def convolve_batched(tangents, ans, in1, in2, mode="full", method="auto", *, argnum):
    return batched_convolve(tangents[argnum], (in1, in2)[1 - argnum], argnum, mode, signal_convolve)


@batched(signal.correlate, signal_correlate)
def correlate_batched(tangents, ans, in1, in2, mode="full", method="auto", *, argnum):
    return batched_convolve(
        tangents[argnum], (in1, in2)[1 - argnum], argnum, mode, signal_correlate
    )
