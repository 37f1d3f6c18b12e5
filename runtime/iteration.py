"""What the loops normal form writes iterate: keys and positions, constants of the derivative.

``for k, v in d.items()``, ``d.values()`` and ``d.keys()`` on a dict of the function are
normalized to reads by key over ``keys_of(d)`` (`transforms/anf_lambdas.py`), and the starred
target of ``first, *rest = xs`` to reads by position over ``starred_positions(xs, 1, 0)``
(`transforms/anf_containers.py`): the keys and positions carry no derivative, the values
read by them do, through the rules of item reads.
"""

from .registry import registry

__all__ = ["check_mapping", "keys_of", "starred_positions"]


def keys_of(mapping) -> list:
    """The keys of `mapping`, in its order, as a list (indexable, unlike a dict view)."""
    return list(mapping)


def starred_positions(sequence, before: int, after: int) -> list:
    """The positions of `sequence` a starred target takes: all but the first `before` and
    the last `after` (``a, *rest, b = xs``: ``range(1, len(xs) - 1)``)."""
    return list(range(before, len(sequence) - after))


def check_mapping(value) -> None:
    """The check before ``d.get(k, default)``, which normal form writes as ``d[k] if k in d
    else default``: that is ``get`` only for a dict."""
    if not isinstance(value, dict):
        raise TypeError(
            f".get(key, default) is differentiated on a dict; got {type(value).__name__}"
        )


registry.register_nondiff([keys_of, starred_positions, check_mapping])
