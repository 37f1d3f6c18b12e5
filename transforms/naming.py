"""The one namer: every name the compiler invents comes from here.

Conventions (DESIGN.md, "Generated code conventions"):
- the adjoint of ``x`` is ``dx``; of a temporary ``_t3`` it is ``_dt3``;
- the tangent of ``x`` is ``tx``; of ``_t3`` it is ``_tt3``;
- temporaries are ``_t1, _t2, ...``;
- the entry function of ``grad(f, wrt="x")`` is ``dfdx``; several ``wrt`` give ``dfdx_y``;
- a name already taken gets a numeric suffix: ``dx`` then ``dx_1``;
- a lambda, whose own name ``<lambda>`` is no identifier, is named `LAMBDA` (so
  ``sg.grad(lambda w: ...)`` is ``dlambda_dw``).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable

LAMBDA = "lambda_"


class Namer:
    """Hands out fresh names that never collide with `taken` or with each other."""

    def __init__(self, taken: Iterable[str] = ()):
        self._taken = set(taken)
        self._next_temp = 1

    def reserve(self, name: str) -> None:
        self._taken.add(name)

    def taken(self, name: str) -> bool:
        """Whether `name` was handed out or reserved."""
        return name in self._taken

    def fresh(self, base: str) -> str:
        """`base` itself if free, else `base_1`, `base_2`, ..."""
        if base not in self._taken:
            self._taken.add(base)
            return base
        for i in itertools.count(1):
            candidate = f"{base}_{i}"
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
        raise AssertionError("unreachable")

    def copy(self) -> Namer:
        """An independent namer that knows every name this one has handed out."""
        other = Namer(self._taken)
        other._next_temp = self._next_temp
        return other

    def temp(self) -> str:
        """A new temporary ``_tN``."""
        while True:
            name = f"_t{self._next_temp}"
            self._next_temp += 1
            if name not in self._taken:
                self._taken.add(name)
                return name

    def adjoint(self, primal: str) -> str:
        """The adjoint's name for `primal`: ``dx`` for ``x``, ``_dt3`` for ``_t3``."""
        base = "_d" + primal[1:] if primal.startswith("_") else "d" + primal
        return self.fresh(base)

    def tangent(self, primal: str) -> str:
        """The tangent's name for `primal`: ``tx`` for ``x``, ``_tt3`` for ``_t3``."""
        base = "_t" + primal[1:] if primal.startswith("_") else "t" + primal
        return self.fresh(base)

    def version(self, name: str) -> str:
        """A new SSA version of a reassigned variable: ``x`` becomes ``x_1``, ``x_2``, ..."""
        return self.fresh(name)


def entry_name(function: str, wrt: Iterable[str], prefix: str = "d") -> str:
    """``dfdx`` for the derivative of ``f`` with respect to ``x``; ``dfdx_y`` for two."""
    return f"{prefix}{function}d{'_'.join(wrt)}"
