"""Peak memory of one gradient call, as `tracemalloc` sees it.

NumPy reports the data buffers of its arrays to `tracemalloc`, so the peak covers the arrays a
gradient keeps alive at once (a loop's saved intermediates, temporaries, the result) as well as
Python objects. Only what the call itself allocates counts: the arguments exist before tracing
starts.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable, Sequence


def peak_bytes(fn: Callable, args: Sequence, repeat: int = 3) -> int:
    """The smallest, over `repeat` traced calls, of the peak bytes allocated during ``fn(*args)``.

    `fn` is called once untraced first, so that one-time work (a specialization being
    generated, a cache being filled) is not counted.
    """
    fn(*args)
    peaks = []
    for _ in range(repeat):
        tracemalloc.start()
        try:
            fn(*args)
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    return min(peaks)


def format_bytes(n: int) -> str:
    """A byte count in B, KiB or MiB."""
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KiB"
    return f"{n / 1024**2:.2f} MiB"
