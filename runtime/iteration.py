"""What a loop over a dict iterates: its keys, a constant of the derivative.

``for k, v in d.items()``, ``d.values()`` and ``d.keys()`` on a dict of the function are
normalized to reads by key over ``keys_of(d)`` (`transforms/anf_lambdas.py`): the keys carry
no derivative, the values read by them do, through the rules of item reads.
"""

from .registry import registry

__all__ = ["keys_of"]


def keys_of(mapping) -> list:
    """The keys of `mapping`, in its order, as a list (indexable, unlike a dict view)."""
    return list(mapping)


registry.register_nondiff([keys_of])
