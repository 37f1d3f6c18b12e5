"""Helpers the rules of ``numpy.fft``, ``np.convolve``/``np.correlate`` and
``scipy.signal.convolve`` call (`runtime/rules/fft.py`, `runtime/rules/scipy_signal.py`).

The adjoint of a discrete Fourier transform is a transform of the same kind (the DFT matrix is
symmetric), applied to the adjoint and then cut or zero-padded back to the input's length
(`resize_like`); a real input keeps the real part of its adjoint (`real_like`). Complex
convention: adjoints pair with changes as ``Re(sum(adjoint * change))`` (JAX's convention, and
that of the product rule ``g * y`` the elementwise rules use), so the adjoint of a
complex-linear map is its transpose, not its conjugate transpose. Whenever the inputs and the
final output are real, gradients are exact whatever the convention.

Every helper works on trailing axes, so tangents with a leading axis of directions pass.
NumPy only at module level.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "STAND_IN_READS",
    "batched_convolve",
    "convolution_crop",
    "convolution_embed",
    "dual_norm",
    "elementwise_like",
    "fft_axes",
    "fft_length",
    "fft_lengths",
    "fft_like",
    "fftn_like",
    "half_spectrum_axis",
    "half_spectrum_weights",
    "irfft_like",
    "irfft_weights",
    "irfftn_like",
    "real_inputs",
    "real_like",
    "resize_like",
    "rfft_like",
    "rfftn_like",
    "signal_convolve",
    "signal_correlate",
    "stand_in",
]

# helper -> the positions of its arguments it reads only for their shape and dtype (a stand-in
# serves there: `transforms/stand_ins.py`)
_EVERY = tuple(range(8))
STAND_IN_READS = {
    "resize_like": (1,),
    "real_like": (1,),
    "fft_length": (0,),
    "fft_lengths": (0,),
    "fft_axes": (0,),
    "half_spectrum_weights": (1,),
    "irfft_weights": (0, 1),
    "elementwise_like": _EVERY,
    "fft_like": (0,),
    "rfft_like": (0,),
    "irfft_like": (0,),
    "fftn_like": (0,),
    "rfftn_like": (0,),
    "irfftn_like": (0,),
}


def resize_like(t, like):
    """`t` cut or zero-padded at the end of each of its trailing axes to `like`'s shape (an
    FFT of length ``n`` reads its input that way). Linear; its transpose is `resize_like` of
    the adjoint back to `t`'s shape."""
    t = np.asarray(t)
    shape = np.shape(like)
    lead = t.ndim - len(shape)
    if t.shape[lead:] == shape:
        return t
    cut = t[(Ellipsis, *(slice(0, n) for n in shape))]
    pads = [(0, 0)] * lead + [(0, n - m) for n, m in zip(shape, cut.shape[lead:], strict=True)]
    return np.pad(cut, pads)


def real_like(t, like):
    """The real part of `t` where `like` (the input whose adjoint `t` is) is real; `t`
    itself otherwise. Linear over the reals; its transpose leaves a real adjoint as it is."""
    if np.iscomplexobj(like) or not np.iscomplexobj(t):
        return t
    return np.real(t)


def fft_length(a, n=None, axis=-1):
    """The transform length of ``np.fft.fft(a, n, axis)``: `n`, or `a`'s length on `axis`."""
    return np.shape(a)[axis] if n is None else int(n)


def fft_lengths(a, s=None, axes=None):
    """The transform lengths of ``np.fft.fftn(a, s, axes)`` (the ``s`` it implies)."""
    if s is not None:
        return tuple(int(n) for n in s)
    shape = np.shape(a)
    if axes is None:
        return tuple(shape)
    return tuple(shape[k] for k in axes)


def fft_axes(a, s=None, axes=None):
    """The axes ``np.fft.fftn(a, s, axes)`` transforms: `axes`, else the last ``len(s)``,
    else all of them."""
    if axes is not None:
        return tuple(axes)
    ndim = np.ndim(a)
    if s is not None:
        return tuple(range(ndim - len(s), ndim))
    return tuple(range(ndim))


def half_spectrum_axis(axes=None):
    """The axis ``np.fft.irfftn(a, s, axes)`` reads a half spectrum on: the last of `axes`."""
    return -1 if axes is None else axes[-1]


def real_inputs(v):
    """`v`, after checking it is real: the rule of ``np.correlate`` (which conjugates a complex
    `v`) is written for real inputs. Identity."""
    if np.iscomplexobj(v):
        raise ValueError("the derivative of np.correlate is implemented for real inputs only")
    return v


def dual_norm(norm):
    """The `norm` of the transform that is a transform's adjoint: the unscaled sum's adjoint
    is the unscaled sum (``"backward"`` <-> ``"forward"`` for the inverse), ``"ortho"`` its
    own."""
    return {None: "forward", "backward": "forward", "forward": "backward"}.get(norm, norm)


def half_spectrum_weights(n, like, axis=-1):
    """How many bins of a length-`n` Hermitian spectrum each bin of the half spectrum `like`
    (``rfft``'s result) stands for: 1 for the zero frequency (and Nyquist for an even `n`), 2
    for the others; shaped to broadcast along `axis` of `like`."""
    m = np.shape(like)[axis]
    w = np.full(m, 2.0)
    w[0] = 1.0
    if n % 2 == 0 and m == n // 2 + 1:
        w[-1] = 1.0
    shape = [1] * np.ndim(like)
    shape[axis] = m
    return w.reshape(shape)


def irfft_weights(ans, a, axis=-1):
    """How many times each input bin of ``ans = np.fft.irfft(a, n, axis)`` counts in the
    Hermitian spectrum it stands for, shaped to broadcast along `axis` of `a`: 1 for the zero
    frequency (and Nyquist for an even length), 2 for the others, 0 past ``n // 2 + 1`` (bins
    irfft ignores)."""
    n = np.shape(ans)[axis]
    m = np.shape(a)[axis]
    w = np.zeros(m)
    half = n // 2 + 1
    w[: min(m, half)] = 2.0
    w[0] = 1.0
    if n % 2 == 0 and half <= m:
        w[half - 1] = 1.0
    shape = [1] * np.ndim(a)
    shape[axis] = m
    return w.reshape(shape)


# -- stand-ins: results known by their shape and dtype alone ------------------------------------
# (`Rule.result_like`: where a derivative reads an FFT's result, or a product of it, only for
# its shape and dtype, the generated code computes these instead of the transform)


def stand_in(shape, dtype):
    """A read-only array of `shape` and `dtype` whose entries are one shared zero: it costs
    no memory and no pass over data, and stands for a result nobody reads the values of."""
    return np.broadcast_to(np.zeros((), dtype), shape)


def _typed(a):
    """`a` as `np.result_type` reads it: arrays and Python numbers (weak) as they are."""
    return a if hasattr(a, "dtype") or isinstance(a, (bool, int, float, complex)) else np.asarray(a)


def _complex(a):
    return np.result_type(_typed(a), np.complex64)


def _real(a):
    return np.finfo(np.result_type(_typed(a), np.float32)).dtype


def _with_lengths(shape, axes, lengths) -> tuple:
    shape = list(shape)
    for axis, n in zip(axes, lengths, strict=True):
        shape[axis] = n
    return tuple(shape)


def elementwise_like(*args):
    """The stand-in of the result of a sum, difference or product (or negation): the
    broadcast shape of `args` and the dtype NumPy gives them (Python numbers are weak)."""
    shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    return stand_in(shape, np.result_type(*(_typed(a) for a in args)))


def fft_like(a, n=None, axis=-1, norm=None, out=None):
    """The stand-in of ``np.fft.fft(a, n, axis)`` (or ``ifft``)."""
    return stand_in(_with_lengths(np.shape(a), (axis,), (fft_length(a, n, axis),)), _complex(a))


def rfft_like(a, n=None, axis=-1, norm=None, out=None):
    """The stand-in of ``np.fft.rfft(a, n, axis)``: ``n // 2 + 1`` bins on `axis`."""
    half = fft_length(a, n, axis) // 2 + 1
    return stand_in(_with_lengths(np.shape(a), (axis,), (half,)), _complex(a))


def irfft_like(a, n=None, axis=-1, norm=None, out=None):
    """The stand-in of ``np.fft.irfft(a, n, axis)``: `n`, by default ``2 (m - 1)``, values."""
    length = 2 * (np.shape(a)[axis] - 1) if n is None else int(n)
    return stand_in(_with_lengths(np.shape(a), (axis,), (length,)), _real(a))


def fftn_like(a, s=None, axes=None, norm=None, out=None):
    """The stand-in of ``np.fft.fftn(a, s, axes)`` (``ifftn``, ``fft2``, ``ifft2``)."""
    axes = fft_axes(a, s, axes)
    lengths = fft_lengths(a, s, axes)
    return stand_in(_with_lengths(np.shape(a), axes, lengths), _complex(a))


def rfftn_like(a, s=None, axes=None, norm=None, out=None):
    """The stand-in of ``np.fft.rfftn(a, s, axes)``: half the last axis's bins."""
    axes = fft_axes(a, s, axes)
    lengths = list(fft_lengths(a, s, axes))
    lengths[-1] = lengths[-1] // 2 + 1
    return stand_in(_with_lengths(np.shape(a), axes, lengths), _complex(a))


def irfftn_like(a, s=None, axes=None, norm=None, out=None):
    """The stand-in of ``np.fft.irfftn(a, s, axes)``: ``s``, by default the input's lengths
    with the last one ``2 (m - 1)``."""
    axes = fft_axes(a, s, axes)
    lengths = list(fft_lengths(a, s, axes))
    if s is None:
        lengths[-1] = 2 * (lengths[-1] - 1)
    return stand_in(_with_lengths(np.shape(a), axes, lengths), _real(a))


# -- convolutions ------------------------------------------------------------------------------


def _offsets(shape1, shape2, mode, kind):
    full = [n1 + n2 - 1 for n1, n2 in zip(shape1, shape2, strict=True)]
    if mode == "full":
        return full, [0] * len(full), full
    if mode == "valid":
        sizes = [abs(n1 - n2) + 1 for n1, n2 in zip(shape1, shape2, strict=True)]
        starts = [min(n1, n2) - 1 for n1, n2 in zip(shape1, shape2, strict=True)]
        return full, starts, sizes
    if mode != "same":
        raise ValueError(f"unknown convolution mode {mode!r}")
    if kind in ("numpy", "correlate"):  # np.convolve: the longer input's length, centered
        sizes = [max(n1, n2) for n1, n2 in zip(shape1, shape2, strict=True)]
        starts = [(min(n1, n2) - 1) // 2 for n1, n2 in zip(shape1, shape2, strict=True)]
        if kind == "correlate":  # np.correlate swaps a longer v in, centering the other way
            starts = [
                min(n1, n2) // 2 if n2 > n1 else start
                for n1, n2, start in zip(shape1, shape2, starts, strict=True)
            ]
    else:  # scipy.signal.convolve: the first input's shape, centered
        sizes = list(shape1)
        starts = [(n2 - 1) // 2 for n2 in shape2]
    return full, starts, sizes


def convolution_embed(g, a, v, mode="full", kind="numpy"):
    """The adjoint of the full convolution of `a` and `v` from the adjoint `g` of its `mode`
    part (``"same"``/``"valid"`` crop the full result): `g` placed where the crop took it,
    zeros elsewhere. `kind` is ``"numpy"`` (np.convolve's centering), ``"correlate"``
    (np.correlate's, as ``np.convolve(a, v[::-1])``) or ``"scipy"``.
    Linear; its transpose is `convolution_crop`."""
    g = np.asarray(g)
    full, starts, sizes = _offsets(np.shape(a), np.shape(v), mode, kind)
    lead = g.ndim - len(full)
    pads = [(0, 0)] * lead + [(s, f - s - n) for f, s, n in zip(full, starts, sizes, strict=True)]
    return np.pad(g, pads)


def convolution_crop(gf, a, v, mode="full", kind="numpy"):
    """The `mode` part of a full convolution `gf` of `a` and `v` (`convolution_embed`'s
    transpose)."""
    _, starts, sizes = _offsets(np.shape(a), np.shape(v), mode, kind)
    return np.asarray(gf)[
        (Ellipsis, *(slice(s, s + n) for s, n in zip(starts, sizes, strict=True)))
    ]


def signal_convolve(in1, in2, mode="full", method="auto"):
    """``scipy.signal.convolve`` (SciPy imported here, not at module level): the rules of
    ``scipy.signal.convolve`` call it, so generated code needs no SciPy import of its own."""
    from scipy.signal import convolve

    return convolve(in1, in2, mode=mode, method=method)


def signal_correlate(in1, in2, mode="full", method="auto"):
    """``scipy.signal.correlate`` (SciPy imported here), for the same reason."""
    from scipy.signal import correlate

    return correlate(in1, in2, mode=mode, method=method)


def batched_convolve(t, other, position, mode, convolve):
    """``convolve`` (np.convolve, np.correlate or `signal_convolve`) with a batched tangent
    `t` (directions on a leading axis) in argument `position`, `other` the other argument,
    one direction at a time (NumPy's convolutions take 1-D inputs only)."""
    if position == 0:
        return np.stack([convolve(each, other, mode) for each in t])
    return np.stack([convolve(other, each, mode) for each in t])
