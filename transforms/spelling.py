"""How generated code spells NumPy, math and builtin objects (``np.sin``, ``math.pi``, ``len``),
and the names generated code binds itself.

No libcst here: `resolve` uses these to bind a function's names, and the on-disk cache
(`s2sgrad.disk_cache`) uses them to check a cached transform's captured values without
importing the compiler.
"""

from __future__ import annotations

import builtins
import importlib
import math
import types

import numpy as np

# Names generated code binds itself (its imports and the runtime helpers it calls); a user
# constant or local variable with one of these names is renamed.
_runtime = importlib.import_module("s2sgrad.runtime")
RESERVED = frozenset({"np", "math"}) | frozenset(_runtime.__all__)

NUMPY_NAMESPACES: tuple[tuple[str, types.ModuleType], ...] = (
    ("np", np),
    ("np.linalg", np.linalg),
    ("np.fft", np.fft),
    ("np.random", np.random),
)


def canonical_spelling(value: object) -> str | None:
    """``np.<name>`` for NumPy objects, ``math.<name>`` for math, the name for builtins."""
    if value is np:
        return "np"
    if value is math:
        return "math"
    for prefix, module in NUMPY_NAMESPACES:
        if value is module:
            return prefix
    name = getattr(value, "__name__", None)
    if not isinstance(name, str):
        return None
    if name in RESERVED and getattr(_runtime, name, None) is value:
        return name  # a runtime helper (generated code transformed again): imported as is
    try:
        for prefix, module in NUMPY_NAMESPACES:
            # vars, not getattr: numpy's module __getattr__ warns for removed aliases (np.str)
            if vars(module).get(name) is value:
                return f"{prefix}.{name}"
        if getattr(math, name, None) is value:
            return f"math.{name}"
        if getattr(builtins, name, None) is value:
            return name
    except TypeError:  # objects whose comparison is unusual
        return None
    return None
