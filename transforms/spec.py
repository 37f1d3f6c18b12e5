"""What the pipeline is asked to build (`GradSpec`) and what it hands back (`Generated`).

Kept apart from `pipeline` because neither needs libcst: a process that finds a transform in
the on-disk cache (`s2sgrad.disk_cache`) builds both without importing the compiler.
"""

from __future__ import annotations

import dataclasses
import os
import types

INLINE_VARIABLE = "S2SGRAD_INLINE"


def inlining() -> bool:
    """Whether small user functions are written out where they are called
    (`transforms/anf_inline.py`); ``S2SGRAD_INLINE=0`` keeps every call a call. Part of every
    cache's key (`transform_cache`, `s2sgrad.disk_cache`): code compiled one way is never found
    for the other."""
    return os.environ.get(INLINE_VARIABLE, "").strip().lower() not in ("0", "off", "no", "false")


@dataclasses.dataclass(frozen=True)
class GradSpec:
    """What `generate_gradient` builds: d(f)/d(wrt), optionally with the value."""

    wrt: tuple[str, ...]
    wrt_is_tuple: bool = False
    with_value: bool = False
    has_aux: bool = False  # the function returns (value, aux): the value is differentiated
    optimize: bool = True
    simplify: bool = False
    mode: str = "reverse"  # or "forward": a JVP, tangents interleaved with the primal
    batched: bool = False  # forward mode: tangents carry a leading axis of directions
    # batched forward mode, one parameter: the directions are every unit direction of it
    identity_seed: bool = False
    # (parameter, name) pairs: the parameter has the shape of the value the function assigns
    # to the name (a VJP's output adjoint, shaped like the output it recomputes), which the
    # shape analysis cannot see on its own
    shaped_like: tuple[tuple[str, str], ...] = ()
    seeded: bool = False  # reverse mode: the output's adjoint is a parameter (a VJP)
    # reverse mode: intermediates handed in as parameters instead of recomputed (a tape's
    # recorded values); parameters the result never reads are dropped (see transforms/given.py)
    given: tuple[str, ...] = ()
    # reverse mode: parameters known to hold complex values (a tape's recorded constants,
    # which are parameters of the code it lowers; `complex_values`)
    complex_params: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Generated:
    """One compiled specialization: the module text (callees' modules appended for a
    reader), its entry function and the entry's name."""

    source: str
    function: types.FunctionType
    entry: str
