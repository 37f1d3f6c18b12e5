"""`sg.Module`: a container that finds the Variables and sub-Modules held in its attributes.

Like ``tf.Module``: nothing is registered by hand. `variables`, `trainable_variables` and
`submodules` walk the instance's attributes (and lists, tuples and dicts in them), depth first in
attribute order, so variables come out in the order they were assigned, which for layers built
lazily is the order they were created.
"""

from __future__ import annotations

import re

from .tensor import Variable

__all__ = ["Module"]

_name_counts: dict[str, int] = {}


def unique_name(base: str) -> str:
    """``dense``, then ``dense_1``, ``dense_2``, ...: Keras's default layer names."""
    count = _name_counts.get(base, 0)
    _name_counts[base] = count + 1
    return base if count == 0 else f"{base}_{count}"


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Module:
    """Base class for objects that own Variables.

    Args:
        name: the module's name (default: the class name in snake case, made unique).

    Example:
        >>> class Linear(sg.Module):
        ...     def __init__(self):
        ...         super().__init__()
        ...         self.w = sg.Variable(np.ones((2, 2)), name="w")
        >>> [v.name for v in Linear().trainable_variables]
        ['w']
    """

    def __init__(self, name=None):
        if name is not None and not isinstance(name, str):
            raise TypeError(f"Module name must be a str; got {type(name).__name__}")
        self._name = name if name is not None else unique_name(_snake(type(self).__name__))

    @property
    def name(self) -> str:
        return getattr(self, "_name", _snake(type(self).__name__))

    @property
    def variables(self) -> tuple:
        """Every Variable held by this module and its sub-modules, without duplicates."""
        return tuple(self._walk(Variable))

    @property
    def trainable_variables(self) -> tuple:
        """The trainable ones among `variables`."""
        return tuple(v for v in self._walk(Variable) if v.trainable)

    @property
    def submodules(self) -> tuple:
        """Every Module reachable from this one's attributes (not this one itself)."""
        return tuple(self._walk(Module))

    def _walk(self, kind) -> list:
        """Instances of `kind` reachable through attributes, depth first, each once; iterative
        so that deep structures cannot exhaust the recursion limit."""
        found, seen = [], {id(self)}
        stack = list(reversed(list(vars(self).values())))
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            if isinstance(item, kind):
                found.append(item)
            if isinstance(item, Variable):
                seen.add(id(item))
                continue
            if isinstance(item, Module):
                seen.add(id(item))
                stack.extend(reversed(list(vars(item).values())))
            elif isinstance(item, dict):
                stack.extend(reversed(list(item.values())))
            elif isinstance(item, (list, tuple)):
                stack.extend(reversed(item))
        return found

    def __repr__(self) -> str:
        return f"<sg.{type(self).__name__} {self.name!r}>"
