"""`sg.tree`: pytrees, the nested containers that arguments, gradients and tangents share.

A *pytree* is a leaf or a node holding pytrees. Nodes are:

- ``dict`` (and its subclasses): children in **sorted key order**, as JAX orders them, so two
  dicts with the same keys flatten alike whatever order they were built in. `unflatten` gives
  the keys back in the order the flattened dict had them (keys that cannot be sorted, such as
  ``1`` and ``"a"`` together, keep their insertion order). An ``OrderedDict`` keeps its own
  order, as in JAX.
- ``list`` and ``tuple``: children in order.
- a NamedTuple: its fields in order, rebuilt with ``cls._make``.
- a dataclass instance (frozen or not): its fields in declaration order. It is rebuilt
  without calling ``__init__`` or ``__post_init__``, which are written for parameters, not for
  gradients or tangents (a check that a mass is positive, a field computed from others).
- ``None``: a node without children (it flattens to no leaves), as in JAX.
- a class registered with `register`.

Everything else is a leaf: arrays, numbers, Tensors, strings.

Why our own code rather than ``optree``: the compiled derivative code has to walk the same
containers at run time, and ``s2sgrad.runtime`` (which an exported derivative needs alone with
NumPy) must not depend on anything but NumPy; the runtime already knows records
(`runtime/containers.py`), and registered classes are recorded there too, so one registry
serves `sg.tree`, `sg.grad`'s gradients and `sg.check_grads`. What is left here is a
hundred lines.

Example:
    >>> leaves, treedef = sg.tree.flatten({"b": 1.0, "a": (2.0, None)})
    >>> leaves
    [2.0, 1.0]
    >>> sg.tree.unflatten(treedef, [20.0, 10.0])
    {'b': 10.0, 'a': (20.0, None)}
"""

from __future__ import annotations

import builtins
import collections
import dataclasses
from collections.abc import Callable

import numpy as np

from s2sgrad.runtime import containers

__all__ = ["TreeDef", "flatten", "leaves", "map", "register", "structure", "unflatten"]


@dataclasses.dataclass(frozen=True)
class TreeDef:
    """The structure of a pytree without its leaves (what `flatten` returns beside them).

    Attributes:
        kind: ``"leaf"``, ``"none"``, ``"dict"``, ``"list"``, ``"tuple"``, ``"namedtuple"``,
            ``"dataclass"`` or ``"registered"``.
        node_type: the container's class (None for a leaf and for None).
        aux: what rebuilding needs besides the children: a dict's sorted keys, a dataclass's
            field names, a registered class's auxiliary data.
        children: the TreeDefs of the children, in leaf order.
        num_leaves: how many leaves the tree has.
        order: a dict's keys in the order to rebuild it (not part of equality).
    """

    kind: str
    node_type: type | None = None
    aux: object = None
    children: tuple[TreeDef, ...] = ()
    num_leaves: int = 1
    order: tuple = dataclasses.field(default=(), compare=False)
    # a ContainerAdjoint's (derivative code's keyed form of a record's tangent) batch, keys
    # and positions, kept so that a map over one gives one that derivative code reads alike
    adjoint: tuple | None = dataclasses.field(default=None, compare=False)

    def flatten_up_to(self, tree) -> list:
        """The subtrees of `tree` where this structure has its leaves, in leaf order (as
        JAX's ``flatten_up_to``). A None in `tree` where this structure has more stands for
        a None at each of its leaves (a gradient that is None: no derivative there); a dict
        matches a dict of another class with the same keys.

        Raises:
            ValueError: `tree` has another structure above these leaves.
        """
        found: list = []
        self._up_to(tree, found)
        return found

    def _up_to(self, tree, found: list) -> None:
        if self.kind == "leaf":
            found.append(tree)
            return
        if tree is None:
            found.extend([None] * self.num_leaves)
            return
        node = _node(tree)
        # (a dict of any class stands for another with the same keys: derivative code holds
        # a record's tangent as a dict subclass keyed by field)
        same_type = self.kind == "dict" or node is None or node[1] is self.node_type
        if node is None or node[0] != self.kind or not same_aux(node[2], self.aux) or not same_type:
            raise ValueError(f"a pytree of structure {self!r} was expected; got {tree!r}")
        children = node[3]
        if len(children) != len(self.children):
            raise ValueError(f"a pytree of structure {self!r} was expected; got {tree!r}")
        for child_def, child in zip(self.children, children, strict=True):
            child_def._up_to(child, found)

    def __repr__(self) -> str:
        if self.kind == "leaf":
            return "*"
        if self.kind == "none":
            return "None"
        inner = ", ".join(repr(c) for c in self.children)
        if self.kind == "dict":
            pairs = zip(self.aux, self.children, strict=True)
            inner = "{" + ", ".join(f"{k!r}: {c!r}" for k, c in pairs) + "}"
            return inner if self.node_type is dict else f"{self.node_type.__name__}({inner})"
        if self.kind == "list":
            return f"[{inner}]"
        if self.kind == "tuple":
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        return f"{self.node_type.__name__}({inner})"


_LEAF = TreeDef("leaf")
_NONE = TreeDef("none", num_leaves=0)


def register(cls: type, flatten_fn: Callable, unflatten_fn: Callable) -> None:
    """Make instances of `cls` pytree nodes, for `sg.tree` and for the transforms.

    Args:
        cls: the container class (instances of exactly this class; subclasses are leaves).
        flatten_fn: ``flatten_fn(obj) -> (children, aux)``: the children (a sequence of
            pytrees) and hashable-or-comparable data needed to rebuild `obj`.
        unflatten_fn: ``unflatten_fn(aux, children) -> obj``. It is also how gradients and
            tangents of `cls` are built, from children that are gradients: it should store
            them, not check them.

    Inside a function that s2sgrad transforms, a child is read as the attribute of the
    object that holds it (``params.W``) or by position (``params[0]``).

    Example:
        >>> class Params:
        ...     def __init__(self, W, b):
        ...         self.W, self.b = W, b
        >>> sg.tree.register(Params, lambda p: ((p.W, p.b), None),
        ...                  lambda aux, children: Params(*children))
    """
    if not isinstance(cls, type):
        raise TypeError(f"sg.tree.register: cls must be a class; got {cls!r}")
    if cls in (dict, list, tuple, type(None)) or issubclass(cls, (dict, list, tuple)):
        raise ValueError(
            f"sg.tree.register: cls={cls.__name__} is a dict, list or tuple, which are pytree "
            f"nodes already"
        )
    for name, fn in (("flatten_fn", flatten_fn), ("unflatten_fn", unflatten_fn)):
        if not callable(fn):
            raise TypeError(f"sg.tree.register: {name} must be callable; got {fn!r}")
    containers.register_record(cls, flatten_fn, unflatten_fn)


def flatten(tree) -> tuple[list, TreeDef]:
    """The leaves of `tree` (dict children in sorted key order) and its structure.

    Example:
        >>> sg.tree.flatten([np.zeros(2), {"w": 1.0}])
        ([array([0., 0.]), 1.0], [*, {'w': *}])
    """
    found: list = []
    return found, _flatten(tree, found)


def _flatten(tree, found: list) -> TreeDef:
    # (recursive: a pytree is as deep as its source code nests containers, never a graph)
    if tree is None:
        return _NONE
    node = _node(tree)
    if node is None:
        found.append(tree)
        return _LEAF
    kind, cls, aux, children, order = node
    defs = tuple(_flatten(child, found) for child in children)
    count = sum(d.num_leaves for d in defs)
    adjoint = None
    if isinstance(tree, containers.ContainerAdjoint):
        adjoint = (tree.batch, tree.keys_of_value, tree.positions)
    return TreeDef(kind, cls, aux, defs, count, order, adjoint)


def _node(tree):
    """``(kind, class, aux, children, order)`` of a node, or None for a leaf."""
    cls = type(tree)
    registered = containers.registered_record(cls)
    if registered is not None:
        children, aux = _registered_parts(registered[0], tree)
        return "registered", cls, aux, children, ()
    if isinstance(tree, dict):
        keys = list(tree)
        if cls is not collections.OrderedDict:
            try:
                keys = sorted(keys)
            except TypeError:  # keys that do not compare: insertion order
                pass
        return "dict", cls, tuple(keys), [tree[k] for k in keys], tuple(tree)
    if isinstance(tree, tuple):
        if containers.is_record(tree):
            return "namedtuple", cls, None, list(tree), ()
        return "tuple", cls, None, list(tree), ()
    if isinstance(tree, list):
        return "list", cls, None, list(tree), ()
    if containers.is_record(tree):  # a dataclass instance
        names = containers.record_fields(tree)
        return "dataclass", cls, names, [getattr(tree, n) for n in names], ()
    return None


def _registered_parts(flatten_fn, tree) -> tuple[list, object]:
    parts = flatten_fn(tree)
    if not isinstance(parts, tuple) or len(parts) != 2:
        raise TypeError(
            f"the flatten_fn registered for {type(tree).__name__} must return (children, aux); "
            f"got {type(parts).__name__}"
        )
    return list(parts[0]), parts[1]


def unflatten(treedef: TreeDef, leaves) -> object:
    """The pytree of structure `treedef` holding `leaves` (in `flatten`'s order).

    Raises:
        TypeError: `treedef` is not a TreeDef.
        ValueError: `leaves` has another length than ``treedef.num_leaves``.
    """
    if not isinstance(treedef, TreeDef):
        raise TypeError(
            f"sg.tree.unflatten: treedef must be a TreeDef (from sg.tree.flatten); got "
            f"{type(treedef).__name__}"
        )
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(
            f"sg.tree.unflatten: leaves has {len(leaves)} items but the treedef {treedef!r} "
            f"has {treedef.num_leaves} leaves"
        )
    return _build(treedef, iter(leaves))


def _build(treedef: TreeDef, leaves):
    kind = treedef.kind
    if kind == "leaf":
        return next(leaves)
    if kind == "none":
        return None
    children = [_build(child, leaves) for child in treedef.children]
    cls = treedef.node_type
    if kind == "dict":
        by_key = dict(zip(treedef.aux, children, strict=True))
        pairs = [(k, by_key[k]) for k in treedef.order or treedef.aux]
        if cls is dict:
            return dict(pairs)
        if treedef.adjoint is not None:
            batch, keys, positions = treedef.adjoint
            return cls(pairs, batch=batch, keys=keys, positions=positions)
        if cls is collections.defaultdict:
            return collections.defaultdict(None, pairs)
        return cls(pairs)
    if kind == "list":
        return children if cls is list else cls(children)
    if kind == "tuple":
        return tuple(children) if cls is tuple else cls(children)
    if kind == "namedtuple":
        return cls._make(children)
    if kind == "dataclass":
        record = cls.__new__(cls)  # no __init__ / __post_init__: see the module docstring
        for name, child in zip(treedef.aux, children, strict=True):
            object.__setattr__(record, name, child)
        return record
    registered = containers.registered_record(cls)
    if registered is None:
        raise ValueError(f"sg.tree.unflatten: {cls.__name__} is no longer registered")
    return registered[1](treedef.aux, children)


def leaves(tree) -> list:
    """The leaves of `tree`, in `flatten`'s order."""
    return flatten(tree)[0]


def structure(tree) -> TreeDef:
    """The TreeDef of `tree` (its structure without the leaves)."""
    return flatten(tree)[1]


def map(fn: Callable, tree, *rest):
    """`tree` with each leaf ``x`` replaced by ``fn(x, *the same leaf of each of rest)``.

    Raises:
        TypeError: `fn` is not callable.
        ValueError: a tree of `rest` does not have `tree`'s structure.

    Example:
        >>> sg.tree.map(lambda w, g: w - 0.1 * g, params, grads)   # doctest: +SKIP
    """
    if not callable(fn):
        raise TypeError(f"sg.tree.map: fn must be callable; got {type(fn).__name__}")
    found, treedef = flatten(tree)
    others = []
    for k, other in enumerate(rest):
        other_leaves, other_def = flatten(other)
        if other_def != treedef:
            raise ValueError(
                f"sg.tree.map: rest[{k}] has structure {other_def!r}, not the structure "
                f"{treedef!r} of tree"
            )
        others.append(other_leaves)
    return unflatten(treedef, builtins.map(fn, found, *others))


def same_aux(a, b) -> bool:
    """Whether two nodes' auxiliary data are equal; a registered class's may hold arrays (a
    constant that is no child), which ``==`` cannot answer for in one bool."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.array_equal(a, b)
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same_aux, a, b))
    try:
        return bool(a == b)
    except ValueError:
        return False
