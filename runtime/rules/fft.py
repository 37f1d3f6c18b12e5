"""Rules of ``numpy.fft`` and of ``np.convolve``/``np.correlate``.

Every function here is linear in its array argument (bilinear for the convolutions), so its
forward rule is derived (`registry.linear`); batched rules move the ``axis``/``axes`` they name
behind the leading axis of directions. Reverse rules (``runtime/fft_helpers.py`` explains the
complex convention):

- ``fft``/``ifft``/``fft2``/``ifft2``/``fftn``/``ifftn``: the DFT matrix is symmetric, so the
  adjoint is the same transform of ``g`` (same ``norm``), cut or zero-padded back to the input
  (`resize_like`: a transform of length ``n`` pads or truncates its input), and its real part
  for a real input.
- ``rfft``/``rfftn``: the complex transform of ``g`` zero-padded to the full length (``fft``
  with that ``n`` pads it), real part.
- ``irfft``/``irfftn``: ``irfft`` reads each bin of its half spectrum for itself and its
  mirrored twin, so the adjoint is the inverse transform of ``g`` (same ``norm``), weighted
  1 / 2 / 1 (`irfft_weights`). The imaginary parts of the zero and Nyquist bins do not
  matter to irfft, and get a zero adjoint (the inverse transform of a real ``g`` is real
  there).
- ``fftshift``/``ifftshift``: permutations, each the other's transpose.
- Each transform's result is known by its shape and dtype without running it (``rfft_like``,
  `Rule.result_like`): where the derivative reads a transform's result, or a sum or product
  of it, only for that (the adjoint of ``rfft(x) * h`` unbroadcast to ``rfft(x)``'s shape),
  the generated code computes a stand-in instead (`transforms/stand_ins.py`).
- ``np.convolve(a, v, mode)``: the full convolution's adjoint, ``g`` put back where ``mode``
  cropped it (`convolution_embed`), correlated with the other input, i.e. convolved with it
  reversed. ``np.correlate(a, v)`` is ``np.convolve(a, v[::-1])`` for real inputs (complex
  ``v`` would be conjugated: its rule is for real inputs).
"""

import numpy as np

from ..fft_helpers import (
    batched_convolve,
    convolution_crop,
    convolution_embed,
    dual_norm,
    fft_axes,
    fft_length,
    fft_lengths,
    fft_like,
    fftn_like,
    half_spectrum_axis,
    half_spectrum_weights,
    irfft_like,
    irfft_weights,
    irfftn_like,
    real_inputs,
    real_like,
    resize_like,
    rfft_like,
    rfftn_like,
)
from ..registry import registry
from ..tangent_helpers import batch_axis

vjp = registry.vjp
batched = registry.batched
fft = np.fft

# -- one axis ------------------------------------------------------------------------------------


@vjp(fft.fft)
def fft_(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return real_like(resize_like(np.fft.fft(g, None, axis, norm), a), a)


@vjp(fft.ifft)
def ifft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    return real_like(resize_like(np.fft.ifft(g, None, axis, norm), a), a)


@vjp(fft.rfft)
def rfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    # Re(sum over the half spectrum of g_k e^{-2 pi i jk/n}): an irfft of conj(g), each bin
    # counted once (irfft counts the bins between 0 and Nyquist twice), unscaled
    length = fft_length(a, n, axis)
    half = np.conj(g) / half_spectrum_weights(length, g, axis)
    return real_like(resize_like(np.fft.irfft(half, length, axis, dual_norm(norm)), a), a)


@vjp(fft.irfft)
def irfft(g, ans, a, n=None, axis=-1, norm=None, out=None):
    # the bins irfft reads, each as often as it counts (g is real: its rfft holds it all)
    spectrum = resize_like(np.conj(np.fft.rfft(g, None, axis, dual_norm(norm))), a)
    return real_like(irfft_weights(ans, a, axis) * spectrum, a)


# -- several axes --------------------------------------------------------------------------------


@vjp(fft.fftn)
def fftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return real_like(resize_like(np.fft.fftn(g, None, axes, norm), a), a)


@vjp(fft.ifftn)
def ifftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    return real_like(resize_like(np.fft.ifftn(g, None, axes, norm), a), a)


@vjp(fft.fft2)
def fft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return real_like(resize_like(np.fft.fftn(g, None, axes, norm), a), a)


@vjp(fft.ifft2)
def ifft2(g, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return real_like(resize_like(np.fft.ifftn(g, None, axes, norm), a), a)


@vjp(fft.rfftn)
def rfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    full = np.fft.fftn(g, fft_lengths(a, s, axes), axes, norm)
    return real_like(resize_like(full, a), a)


@vjp(fft.irfftn)
def irfftn(g, ans, a, s=None, axes=None, norm=None, out=None):
    spectrum = resize_like(np.fft.ifftn(g, None, axes, norm), a)
    return real_like(irfft_weights(ans, a, half_spectrum_axis(axes)) * spectrum, a)


@vjp(fft.fftshift)
def fftshift(g, ans, x, axes=None):
    return np.fft.ifftshift(g, axes)


@vjp(fft.ifftshift)
def ifftshift(g, ans, x, axes=None):
    return np.fft.fftshift(g, axes)


ONE_AXIS = (fft.fft, fft.ifft, fft.rfft, fft.irfft)
SEVERAL_AXES = (fft.fftn, fft.ifftn, fft.rfftn, fft.irfftn, fft.fft2, fft.ifft2)
registry.linear(*ONE_AXIS, *SEVERAL_AXES, fft.fftshift, fft.ifftshift)

# -- the results' shapes and dtypes, known without a transform (`Rule.result_like`) ---------------
registry.results_like(fft_like, fft.fft, fft.ifft)
registry.results_like(rfft_like, fft.rfft)
registry.results_like(irfft_like, fft.irfft)
registry.results_like(fftn_like, fft.fftn, fft.ifftn, fft.fft2, fft.ifft2)
registry.results_like(rfftn_like, fft.rfftn)
registry.results_like(irfftn_like, fft.irfftn)

# -- batched forward rules: the axes behind the directions' axis ---------------------------------


@batched(fft.fft)
def fft_batched(tangents, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.fft(tangents[0], n, batch_axis(axis, a), norm)


@batched(fft.ifft)
def ifft_batched(tangents, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.ifft(tangents[0], n, batch_axis(axis, a), norm)


@batched(fft.rfft)
def rfft_batched(tangents, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.rfft(tangents[0], n, batch_axis(axis, a), norm)


@batched(fft.irfft)
def irfft_batched(tangents, ans, a, n=None, axis=-1, norm=None, out=None):
    return np.fft.irfft(tangents[0], n, batch_axis(axis, a), norm)


@batched(fft.fftn)
def fftn_batched(tangents, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.fftn(tangents[0], s, batch_axis(fft_axes(a, s, axes), a), norm)


@batched(fft.ifftn)
def ifftn_batched(tangents, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.ifftn(tangents[0], s, batch_axis(fft_axes(a, s, axes), a), norm)


@batched(fft.rfftn)
def rfftn_batched(tangents, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.rfftn(tangents[0], s, batch_axis(fft_axes(a, s, axes), a), norm)


@batched(fft.irfftn)
def irfftn_batched(tangents, ans, a, s=None, axes=None, norm=None, out=None):
    return np.fft.irfftn(tangents[0], s, batch_axis(fft_axes(a, s, axes), a), norm)


@batched(fft.fft2)
def fft2_batched(tangents, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.fftn(tangents[0], s, batch_axis(axes, a), norm)


@batched(fft.ifft2)
def ifft2_batched(tangents, ans, a, s=None, axes=(-2, -1), norm=None, out=None):
    return np.fft.ifftn(tangents[0], s, batch_axis(axes, a), norm)


@batched(fft.fftshift)
def fftshift_batched(tangents, ans, x, axes=None):
    return np.fft.fftshift(tangents[0], batch_axis(axes, x))


@batched(fft.ifftshift)
def ifftshift_batched(tangents, ans, x, axes=None):
    return np.fft.ifftshift(tangents[0], batch_axis(axes, x))


# -- convolutions --------------------------------------------------------------------------------


@vjp(np.convolve)
def convolve(g, ans, a, v, mode="full"):
    full = convolution_embed(g, a, v, mode)
    return np.convolve(full, np.flip(v), "valid"), np.convolve(full, np.flip(a), "valid")


@vjp(np.correlate)
def correlate(g, ans, a, v, mode="valid"):
    full = convolution_embed(g, a, real_inputs(v), mode, "correlate")
    return np.convolve(full, v, "valid"), np.flip(np.convolve(full, np.flip(a), "valid"))


registry.linear(np.convolve, np.correlate, positions=(0, 1))


@batched(np.convolve)
def convolve_batched(tangents, ans, a, v, mode="full", *, argnum):
    return batched_convolve(tangents[argnum], (a, v)[1 - argnum], argnum, mode, np.convolve)


@batched(np.correlate)
def correlate_batched(tangents, ans, a, v, mode="valid", *, argnum):
    return batched_convolve(tangents[argnum], (a, v)[1 - argnum], argnum, mode, np.correlate)


# -- the helpers' own rules ----------------------------------------------------------------------

registry.register_nondiff(
    [
        fft_length,
        fft_lengths,
        fft_like,
        fftn_like,
        fft_axes,
        irfft_like,
        irfft_weights,
        irfftn_like,
        half_spectrum_axis,
        half_spectrum_weights,
        dual_norm,
    ]
)
registry.linear(resize_like, real_like, convolution_embed, convolution_crop, real_inputs)


@vjp(resize_like)
def resize_like_(g, ans, t, like):
    return resize_like(g, t), None


@vjp(real_like)
def real_like_(g, ans, t, like):
    return g, None


@vjp(real_inputs)
def real_inputs_(g, ans, v):
    return g


@vjp(convolution_embed)
def convolution_embed_(g, ans, t, a, v, mode="full", kind="numpy"):
    return convolution_crop(g, a, v, mode, kind)


@vjp(convolution_crop)
def convolution_crop_(g, ans, t, a, v, mode="full", kind="numpy"):
    return convolution_embed(g, a, v, mode, kind)
