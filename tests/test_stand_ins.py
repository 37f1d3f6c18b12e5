"""Stand-ins (`transforms/stand_ins.py`): results the derivative reads only for their shape and
dtype are not computed. The FFT filter's gradient runs only its adjoint's two transforms; the
stand-ins have the shapes and dtypes NumPy gives; derivatives through them, with broadcasting,
agree with finite differences and a closed form."""

from __future__ import annotations

import numpy as np
import pytest
from numerical import numerical_gradient

import s2sgrad as sg
from s2sgrad import runtime

RNG = np.random.default_rng(21)
H5 = RNG.normal(size=5) + 1j * RNG.normal(size=5)
H5[0], H5[-1] = H5[0].real, H5[-1].real  # a real filter: real response at 0 and Nyquist
Y8 = RNG.normal(size=8)
H3 = RNG.normal(size=(3, 1)) + 1j * RNG.normal(size=(3, 1))


def fft_filter(x):
    return np.sum(np.fft.irfft(np.fft.rfft(x) * H5, len(x)) * Y8)


def broadcast_spectra(x):
    spectrum = np.fft.rfft(x) * H3  # (3, 5): the adjoint of rfft(x) is summed over rows
    return np.sum(np.abs(np.fft.ifft(spectrum, axis=0)) ** 2 * 0.5 + np.real(spectrum))


def planes(x):
    z = np.fft.rfftn(x, axes=(0, 1)) - 2.0 * np.fft.fft2(x)[:, :4]
    return np.sum(np.fft.irfftn(z, x.shape, axes=(0, 1)) * x)


def test_the_primal_transforms_are_not_run():
    x = RNG.normal(size=8)
    source = sg.source(sg.grad(fft_filter), x)
    code = [line for line in source.splitlines() if not line.lstrip().startswith("#")]
    assert sum(line.count("np.fft.") for line in code) == 2  # the adjoint's rfft and irfft
    assert "rfft_like(x)" in source
    by_hand = np.fft.irfft(np.conj(H5) * np.fft.rfft(Y8), 8)
    np.testing.assert_allclose(sg.grad(fft_filter)(x), by_hand, atol=1e-12)


@pytest.mark.parametrize(
    ("f", "x"),
    [
        (fft_filter, RNG.normal(size=8)),
        (broadcast_spectra, RNG.normal(size=8)),
        (planes, RNG.normal(size=(4, 6))),
    ],
    ids=["fft_filter", "broadcast_spectra", "planes"],
)
def test_derivatives_through_stand_ins(f, x):
    np.testing.assert_allclose(sg.grad(f)(x), numerical_gradient(f, [x], 0), atol=1e-6)
    sg.check_grads(f, (x,), order=2, rtol=1e-5, atol=1e-6)


FFT = np.fft
CALLS = [
    (FFT.fft, runtime.fft_like, {}),
    (FFT.ifft, runtime.fft_like, {"n": 4, "axis": 0}),
    (FFT.rfft, runtime.rfft_like, {"n": 7}),
    (FFT.irfft, runtime.irfft_like, {}),
    (FFT.irfft, runtime.irfft_like, {"n": 9, "axis": 0}),
    (FFT.fftn, runtime.fftn_like, {"s": (4, 5), "axes": (0, 1)}),
    (FFT.fft2, runtime.fftn_like, {}),
    (FFT.ifft2, runtime.fftn_like, {"s": (2, 3)}),
    (FFT.rfftn, runtime.rfftn_like, {"axes": (0, 1)}),
    (FFT.irfftn, runtime.irfftn_like, {}),
    (FFT.irfftn, runtime.irfftn_like, {"s": (4, 6), "axes": (1, 0)}),
]


@pytest.mark.parametrize(("primitive", "like", "kwargs"), CALLS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.complex64])
def test_stand_ins_have_numpys_shapes_and_dtypes(primitive, like, kwargs, dtype):
    if primitive in (FFT.rfft, FFT.rfftn) and np.dtype(dtype).kind == "c":
        return  # rfft takes real input only
    a = np.ones((3, 10), dtype=dtype)
    want = primitive(a, **kwargs)
    got = like(runtime.stand_in(a.shape, a.dtype), **kwargs)
    assert (got.shape, got.dtype) == (want.shape, want.dtype)
    assert got.strides == (0, 0)  # no memory


def test_elementwise_stand_ins_broadcast_and_promote():
    got = runtime.elementwise_like(runtime.stand_in((3, 1), np.complex64), np.ones(4), 2.0)
    assert (got.shape, got.dtype) == ((3, 4), np.complex128)
    got = runtime.elementwise_like(np.ones(2, dtype=np.float32), 2.0)
    assert (got.shape, got.dtype) == ((2,), np.float32)
