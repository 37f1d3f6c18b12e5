"""Adjoints of containers: dicts, lists and tuples of arrays and numbers (pytrees).

The adjoint of a container is a `ContainerAdjoint`: a dict from key (or index) to the adjoint
of that element, a missing key meaning zero. Generated code reads and accumulates it like an
array adjoint (``dp["W"] += g``, ``dp = dp + other``); `as_structure` turns it into the
argument's own structure (a tuple for a tuple, zeros for elements with no gradient) at the
end. A number stands for "that value in every element", which is how a container adjoint is
lazily broadcast (the seed ``1.0`` of a function returning a tuple differentiates the sum of
all its elements).
"""

from __future__ import annotations

import copy
import dataclasses
import numbers

import numpy as np

__all__ = [
    "ContainerAdjoint",
    "as_structure",
    "batch_by_element",
    "batch_container_adjoint",
    "batch_joined_part",
    "batch_parts_of",
    "batch_repeated",
    "batch_repeated_part",
    "batch_saved_slot",
    "batch_split_like",
    "batch_unstack",
    "batch_written_slots",
    "by_element",
    "by_position",
    "check_output",
    "check_unpack",
    "concatenation_error",
    "container_adjoint",
    "field_name_clash",
    "is_container",
    "is_record",
    "joined_part",
    "keyed",
    "part",
    "parts_of",
    "repeated",
    "repeated_part",
    "slot_key",
    "snapshot",
]


def by_position(values, batch=None) -> ContainerAdjoint:
    """A container adjoint of a list or tuple with one adjoint per position, in order: it
    knows its keys, so a number added to it goes to every element."""
    values = list(values)
    return ContainerAdjoint(enumerate(values), batch=batch, keys=tuple(range(len(values))))


class ContainerAdjoint(dict):
    """Adjoints by key; a missing key is a zero adjoint.

    As the tangent of a container adjoint in a batched sweep it carries the number of
    directions, `batch`, and a missing key is then a zero for each direction.
    """

    # ``zeros + adjoint`` comes to __radd__, not to NumPy (which made an object array)
    __array_ufunc__ = None

    record_of: object = None  # the record whose fields key this (`field_key`)

    def __init__(self, *items, batch=None, keys=None, positions=None):
        # a NamedTuple's field names -> their positions: ``dp["W"]`` (the adjoint of the
        # attribute read ``p.W``) and ``dp[0]`` (of ``p[0]``, or ``W, b = p``) are one key
        self.positions = positions
        if positions:
            items = ({positions.get(k, k): v for k, v in dict(*items).items()},)
        super().__init__(*items)
        self.batch = batch
        # the keys of the container this is the adjoint of, when known (`zero_adjoint`): a
        # number added then stands for that number in every element (a reduction's lazily
        # broadcast adjoint, ``np.sum(xs)``)
        self.keys_of_value = keys
        self._owned: set = set()  # keys whose arrays this adjoint made itself

    def __missing__(self, key):
        record = self.record_of
        if record is not None and isinstance(key, str) and key not in element_keys(record):
            # a record's constant array that is no field (`field_key`): zeros of its shape,
            # which a rule such as matmul's needs (a number 0 is no matrix operand)
            value = getattr(record, key, None)
            if isinstance(value, np.ndarray) and value.ndim:
                shape = value.shape if self.batch is None else (self.batch, *value.shape)
                return np.zeros(shape)
        return 0.0 if self.batch is None else np.zeros(self.batch)

    def _key(self, key):
        if self.record_of is not None and isinstance(key, str):
            field_key(self.record_of, key)
        return self.positions.get(key, key) if self.positions and isinstance(key, str) else key

    def __contains__(self, key):
        return super().__contains__(self._key(key))

    def __getitem__(self, key):
        key = self._key(key)
        if isinstance(key, slice):  # the adjoints of a slice of a list, numbered from 0
            return ContainerAdjoint(
                {j: self[k] for j, k in enumerate(_positions(key))}, batch=self.batch
            )
        value = super().__getitem__(key)
        if isinstance(value, np.ndarray) and key not in self._owned and key in self:
            # an element may be another value's memory (an adjoint is often the very array a
            # rule was given, a primal value): copied before generated code can change it in
            # place (``dxs[k] += g``), once per key of this adjoint
            value = value.copy()
            super().__setitem__(key, value)
            self._owned.add(key)
        return value

    def __setitem__(self, key, value):
        key = self._key(key)
        if isinstance(key, slice):
            for j, k in enumerate(_positions(key)):
                self[k] = part(value, j)
            return
        if dict.get(self, key) is not value:
            self._owned.discard(key)
        super().__setitem__(key, value)

    def copy(self):
        out = ContainerAdjoint(
            self, batch=self.batch, keys=self.keys_of_value, positions=self.positions
        )
        out.record_of = self.record_of
        return out

    def __add__(self, other):
        out = self.copy()
        if isinstance(other, dict):
            items = other.items()
        elif isinstance(other, (list, tuple)):  # one adjoint per position (a rule's result)
            items = enumerate(other)
        elif not np.any(other):  # a zero, or zeros for every direction: nothing to add
            return out
        elif isinstance(other, np.ndarray) and other.ndim > (self.batch is not None):
            # the adjoint of the list read as one array (``np.sum(L)``): a row per element
            # (behind the directions when batched)
            rows = other if self.batch is None else np.moveaxis(other, 1, 0)
            items = enumerate(rows)
        elif self.keys_of_value is not None:  # a number for every element
            if self.batch is not None:  # (one per direction, in front of an element's axes)
                for key in self.keys_of_value:
                    extra = np.ndim(out[key]) - 1
                    out[key] = out[key] + np.reshape(other, np.shape(other) + (1,) * extra)
                return out
            items = ((key, other) for key in self.keys_of_value)
        else:
            raise TypeError(f"cannot add {type(other).__name__} to a container adjoint")
        for key, value in items:
            out[key] = _batched_add(out[key], value) if self.batch is not None else out[key] + value
        return out

    __radd__ = __add__

    # the optimizer writes a negative adjoint part as a subtraction (``da - 2.0 * g``), and
    # the part read as one array may come first: an adjoint subtracts as it adds
    def __neg__(self):
        out = self.copy()
        for key, value in self.items():
            out[key] = -value
        return out

    def __sub__(self, other):
        return self + _negated(other)

    def __rsub__(self, other):
        return -self + other

    def __mul__(self, other):
        raise concatenation_error()

    __rmul__ = __mul__


def _negated(value):
    if isinstance(value, (list, tuple)):  # one adjoint per position (a rule's result)
        return [-v for v in value]
    if isinstance(value, dict) and not isinstance(value, ContainerAdjoint):
        return {k: -v for k, v in value.items()}
    return -value


def concatenation_error() -> TypeError:
    """What differentiating ``xs + ys`` or ``xs * n`` on lists or tuples raises where the
    compiler could not see a join or a repeat (an operand that is a callee's result, a count
    that is not an integer literal): generated code there treats ``+`` and ``*`` as arithmetic,
    whose derivative a join's is not."""
    return TypeError(
        "cannot differentiate joining or repeating lists or tuples with + or * here (the "
        "compiler sees a join only of two lists built in the function or passed to it, and a "
        "repeat only by an integer literal, xs * 2): build the list with append or a "
        "comprehension, or join arrays with np.concatenate"
    )


def _positions(key: slice) -> range:
    """The positions a slice of a list picks, from a slice `slot_key` made explicit."""
    if key.start is None or key.stop is None or key.step is None:
        raise TypeError("a container adjoint is sliced only by a slice made by slot_key")
    return range(key.start, key.stop, key.step)


def slot_key(value, index):
    """`index` as the key of the adjoint of ``value[index]``: for a list or tuple a negative
    position counts from its end now (``xs[-1]`` after an append is the new last element)
    and a slice gets explicit bounds; for a dict or an array `index` as it is."""
    if isinstance(value, (list, tuple)):
        if isinstance(index, slice):
            return slice(*index.indices(len(value)))
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool) and index < 0:
            return len(value) + int(index)
    return index


def container_adjoint(g, value, batch=None):
    """A new container adjoint of the container `value` holding `g`: a dict by key, a list
    or tuple by position, a number in every element (a lazily broadcast adjoint). `batch`:
    the number of directions of a batched tangent (a missing element is then zeros for each,
    a record's field left to its default when it was built)."""
    adjoint = _knowing_keys(_container_adjoint(g, value), value)
    if batch is not None:
        adjoint.batch = batch
    return adjoint


def _knowing_keys(adjoint: ContainerAdjoint, value) -> ContainerAdjoint:
    if is_container(value):
        adjoint.keys_of_value = element_keys(value)
        adjoint.positions = positions_of(value)
        if is_record(value):
            adjoint.record_of = value
    return adjoint


def field_key(record, key: str) -> None:
    """A TypeError where `key` is an attribute of `record` (a record being differentiated)
    that is no field of it but depends on its fields: a property (``p.scaled``), or a value
    holding some of its fields (a registered class's children kept in a dict attribute).
    Its derivative went to a key no field has and was lost, a zero gradient, silently (two
    hunts). Other attributes are constants (a class attribute, a registered class's data
    that is no child), whose derivative is rightly dropped."""
    names = element_keys(record)
    if key in names or key in (positions_of(record) or ()):
        return
    descriptor = getattr(type(record), key, None)
    computed = hasattr(descriptor, "__get__") and not callable(descriptor)
    if not computed and not _holds_any(
        getattr(record, key, None), [v for _, v in elements(record)]
    ):
        return
    cls = type(record).__name__
    raise TypeError(
        f"{cls}.{key} is not a field of the {cls} being differentiated (a property, or an "
        f"attribute computed from or holding its fields): s2sgrad differentiates a record "
        f"through its fields ({', '.join(map(str, names))}); compute {key} from them in the "
        f"function, or in a function of your own given the fields"
    )


def _holds_any(value, children: list) -> bool:
    if any(value is child for child in children):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return any(_holds_any(item, children) for item in value)
    return False


def _container_adjoint(g, value):
    if is_record(g):  # a tangent the user gave for a dataclass (a NamedTuple is a tuple)
        return keyed(g)
    if isinstance(g, dict):
        return ContainerAdjoint(g, batch=getattr(g, "batch", None))
    if isinstance(g, (list, tuple)):
        return ContainerAdjoint(enumerate(g))
    if np.ndim(g) == 0 and g == 0:
        return ContainerAdjoint()
    if _by_rows(np.shape(g), value):  # the adjoint of the list read as one array (np.prod(xs))
        return ContainerAdjoint(enumerate(g))
    return ContainerAdjoint({key: g for key in element_keys(value)})


def _by_rows(shape: tuple, value) -> bool:
    """An array adjoint `shape` of a list or tuple `value` holds one row per element."""
    return (
        isinstance(value, (list, tuple))
        and len(shape) > 0
        and shape[0] == len(value)
        and len(value) > 0
        and shape[1:] == np.shape(value[0])
    )


def by_element(g, value):
    """`g`, an adjoint of the list or tuple `value`, as a container adjoint (unchanged if it
    is one already): what a ``pop``'s adjoint needs before it puts the element back (an array
    adjoint of the list read as one array has one row per element it had then)."""
    return g if isinstance(g, ContainerAdjoint) else container_adjoint(g, value)


def batch_by_element(t, value):
    """`by_element` for a batched tangent `t` (directions first)."""
    return t if isinstance(t, ContainerAdjoint) else batch_container_adjoint(t, value)


def batch_container_adjoint(t, value):
    """`container_adjoint` for a batched tangent `t` (directions first) of the adjoint."""
    return _knowing_keys(_batch_container_adjoint(t, value), value)


def _batch_container_adjoint(t, value):
    if isinstance(t, dict):
        return ContainerAdjoint(t, batch=getattr(t, "batch", None))
    if isinstance(t, (list, tuple)):
        return ContainerAdjoint(enumerate(t))
    t = np.asarray(t)
    if _by_rows(t.shape[1:], value):
        return ContainerAdjoint({k: t[:, k] for k in range(len(value))}, batch=t.shape[0])
    return ContainerAdjoint({key: t for key in element_keys(value)}, batch=t.shape[0])


def batch_saved_slot(t, index):
    """`saved_slot` for a batched tangent `t`: a copy of its slots behind the directions
    axis (a container's element directly; None for a key a dict does not have yet)."""
    if isinstance(t, dict) and not isinstance(t, ContainerAdjoint) and index not in t:
        return None
    if is_container(t):
        old = t[index]
    else:
        old = t[(slice(None), *(index if isinstance(index, tuple) else (index,)))]
    return old.copy() if isinstance(old, np.ndarray) else old


def _batched_add(a, b):
    """``a + b`` for an element's adjoints with the directions in front: one of them may stand
    for an array it broadcasts to (a number per direction, ``(batch,)``, for an element of
    shape ``(batch, 2, 2)``), whose own axes line up behind the directions', not at the end."""
    missing = np.ndim(a) - np.ndim(b)
    if missing > 0 and np.ndim(b) >= 1:
        b = np.expand_dims(b, tuple(range(1, 1 + missing)))
    elif missing < 0 and np.ndim(a) >= 1:
        a = np.expand_dims(a, tuple(range(1, 1 - missing)))
    return a + b


def batch_written_slots(t, index):
    """`written_slots` for a batched adjoint `t`: the slots behind the directions axis, the
    entries NumPy overwrote zeroed in every direction."""
    from .adjoint_helpers import _advanced, kept_entries  # (it imports this module)

    slots = batch_saved_slot(t, index)
    if not isinstance(t, np.ndarray) or not _advanced(index):
        return slots
    return slots * kept_entries(t.shape[1:], index)


def is_container(value) -> bool:
    """A dict, list or tuple, or a record (a dataclass instance: its fields are its
    elements; a NamedTuple is a tuple)."""
    return isinstance(value, (dict, list, tuple)) or is_record(value)


# -- records: NamedTuples and dataclass instances ------------------------------------------
#
# A record argument stays what it is going forward (``p.W`` reads the attribute); its adjoint
# and its tangent are `ContainerAdjoint`s keyed by field (see `field_read` in
# `transforms/operations.py`), and `as_structure` rebuilds the record's type from them.


# the attributes generated code reads as the array's own (``x.T`` is a transpose): a record
# field of one of these names would be misread, so `s2sgrad.dispatch` refuses it
ARRAY_ATTRIBUTE_NAMES = frozenset({"T", "real", "imag", "shape", "ndim", "size", "dtype"})


def field_name_clash(value) -> tuple[str, str] | None:
    """``(class name, field)`` for a record in `value` (nested) with a field named like an
    array attribute, else None."""
    pending = [value]
    while pending:
        item = pending.pop()
        if is_record(item):
            clash = ARRAY_ATTRIBUTE_NAMES.intersection(record_fields(item))
            if clash:
                return type(item).__name__, min(clash)
        if is_container(item):
            pending.extend(element for _, element in elements(item))
    return None


def is_record(value) -> bool:
    """A NamedTuple, an instance of a dataclass (not the class itself) or of a class
    registered with `register_record` (``sg.tree.register``)."""
    if value.__class__ in _registered:
        return True
    if isinstance(value, tuple):
        return _is_named_tuple(value)
    return dataclasses.is_dataclass(value) and not isinstance(value, type)


# -- classes registered with ``sg.tree.register`` ----------------------------------------------
#
# A registered class is a record whose fields are the children its flatten function gives,
# named after the attributes of the object that hold them (``p.W`` in a transformed function
# reads the child ``p.W`` is), or numbered by position where no attribute holds a child.

_registered: dict[type, tuple] = {}  # class -> (flatten_fn, unflatten_fn)


def register_record(cls: type, flatten_fn, unflatten_fn) -> None:
    """Make instances of `cls` records (see ``sg.tree.register``, which checks the arguments);
    registering a class again replaces its functions."""
    _registered[cls] = (flatten_fn, unflatten_fn)


def registered_record(cls: type) -> tuple | None:
    """``(flatten_fn, unflatten_fn)`` registered for `cls`, or None."""
    return _registered.get(cls)


def _registered_children(value) -> tuple[list, object, tuple]:
    """The children of a registered record, its auxiliary data and the children's names."""
    flatten_fn = _registered[value.__class__][0]
    children, aux = flatten_fn(value)
    children = list(children)
    attributes = dict(getattr(value, "__dict__", {}))
    for name in getattr(value.__class__, "__slots__", ()):
        if hasattr(value, name):
            attributes.setdefault(name, getattr(value, name))
    names, used = [], set()
    for k, child in enumerate(children):
        name = next((a for a, v in attributes.items() if v is child and a not in used), k)
        used.add(name)
        names.append(name)
    return children, aux, tuple(names)


def _is_named_tuple(value) -> bool:
    # (`collections.namedtuple` and `typing.NamedTuple` classes both have `_fields`, `_make`)
    return isinstance(getattr(type(value), "_fields", None), tuple)


def record_fields(value) -> tuple[str, ...]:
    """The field names of a record, in order (a dataclass's ``init=False`` fields too; a
    registered class's children by the attribute holding them, else by position)."""
    if value.__class__ in _registered:
        return _registered_children(value)[2]
    if isinstance(value, tuple):
        return type(value)._fields
    return tuple(field.name for field in dataclasses.fields(value))


def element_keys(value) -> tuple:
    """The keys of a container's elements: a dict's keys, a list's or tuple's positions (a
    NamedTuple's too: see `positions_of`), a dataclass's field names."""
    if isinstance(value, dict):
        return tuple(value.keys())
    if isinstance(value, (list, tuple)):
        return tuple(range(len(value)))
    return record_fields(value)


def positions_of(value) -> dict | None:
    """A NamedTuple's field names -> positions (the names it may be read by), else None."""
    if isinstance(value, tuple) and _is_named_tuple(value):
        return {name: k for k, name in enumerate(type(value)._fields)}
    return None


def elements(value) -> list:
    """The ``(key, element)`` pairs of a container, keys as `element_keys` gives them."""
    if isinstance(value, dict):
        return list(value.items())
    if value.__class__ in _registered:
        children, _, names = _registered_children(value)
        return list(zip(names, children, strict=True))
    if isinstance(value, (list, tuple)):
        return list(enumerate(value))
    return [(name, getattr(value, name)) for name in record_fields(value)]


def rebuilt(record, items: dict):
    """A record of `record`'s type whose fields hold `items` (keys as `element_keys`).

    A dataclass instance is copied and its fields set directly (``object.__setattr__``, which
    a frozen dataclass allows), not built by its constructor: ``__init__`` and
    ``__post_init__`` are written for parameters, not gradients (a check that a mass is
    positive, a field computed from others or with ``init=False``), and a gradient holds
    every field's own derivative. A registered class is built by its unflatten function."""
    if record.__class__ in _registered:
        _, aux, names = _registered_children(record)
        return _registered[record.__class__][1](aux, [items[name] for name in names])
    if isinstance(record, tuple):
        return type(record)._make(items[k] for k in range(len(record)))
    out = copy.copy(record)
    for name in record_fields(record):
        object.__setattr__(out, name, items[name])
    return out


def keyed(value):
    """`value` with every record in it (nested in dicts, lists and tuples too) turned into a
    `ContainerAdjoint` keyed by field: how derivative code reads a tangent or cotangent a user
    gives for a record (``tp["W"]``)."""
    if is_record(value) or isinstance(value, ContainerAdjoint):
        record = is_record(value)
        out = ContainerAdjoint(
            {key: keyed(item) for key, item in elements(value)},
            batch=getattr(value, "batch", None),
            keys=element_keys(value) if record else value.keys_of_value,
            positions=positions_of(value) if record else value.positions,
        )
        out.record_of = value if record else value.record_of
        return out
    if isinstance(value, dict):
        return {key: keyed(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(keyed(item) for item in value)
    return value


def part(adjoint, key):
    """The adjoint of element `key` of a container whose adjoint is `adjoint`.

    An array adjoint belongs to a list or tuple a NumPy function read as one array
    (``np.dot(w, v)`` for ``w = [x, y]``): element `key` is its row `key` (row 0 when that axis
    is still broadcast). A number is the same for every element."""
    if isinstance(adjoint, (dict, list, tuple)):
        return adjoint[key]
    if is_record(adjoint):  # a record given as a cotangent
        return getattr(adjoint, key) if isinstance(key, str) else adjoint[key]
    if isinstance(adjoint, np.ndarray) and adjoint.ndim:
        # a copy, not a view: the code reading the element's adjoint zeroes the slot next
        # (``db = part(dL, 2); dL[2] = 0.0``, a list appended to then read as one array): a
        # view was zeroed with it, and the gradient lost that part, silently (fuzz seed
        # 40000102)
        return (adjoint[key] if adjoint.shape[0] != 1 else adjoint[0]).copy()
    return adjoint


def parts_of(g, value):
    """The adjoint of ``np.array(value)``: one part of `g` per element of a list or tuple."""
    if isinstance(value, (list, tuple)):
        rows = zip(np.asarray(g), value, strict=True)
        return by_position(parts_of(row, item) for row, item in rows)
    return g


def batch_parts_of(t, value):
    """`parts_of` for a batched tangent `t` (directions first): one part per element of
    `value`, each keeping the directions axis in front."""
    if isinstance(value, (list, tuple)):
        t = np.asarray(t)
        parts = (batch_parts_of(t[:, k], item) for k, item in enumerate(value))
        return by_position(parts, batch=t.shape[0])
    return t


def batch_unstack(t, axis=0):
    """``unstack`` (the adjoint of ``np.stack``) for a batched tangent `t` (directions
    first): the slices along `axis` of each direction, one container element per slice."""
    t = np.asarray(t)
    moved = np.moveaxis(t, axis % (t.ndim - 1) + 1, 0)
    return by_position(moved, batch=t.shape[0])


def batch_split_like(t, arrays, axis=0):
    """``split_like`` (the adjoint of ``np.concatenate``) for a batched tangent `t`."""
    t = np.asarray(t)
    if axis is None:
        sizes = [np.size(x) for x in arrays]
        flat = np.reshape(t, (t.shape[0], -1))
        pieces = np.split(flat, np.cumsum(sizes)[:-1], axis=1)
        shapes = [(t.shape[0], *np.shape(x)) for x in arrays]
        pieces = [np.reshape(p, shape) for p, shape in zip(pieces, shapes, strict=True)]
    else:
        sizes = [np.shape(x)[axis] for x in arrays]
        pieces = np.split(t, np.cumsum(sizes)[:-1], axis=axis % (t.ndim - 1) + 1)
    return by_position(pieces, batch=t.shape[0])


def joined_part(g, joined, a, position):
    """The adjoint of one operand of the list or tuple join ``joined = a + b``, from its
    adjoint `g`: of `a` (`position` 0) the first ``len(a)`` elements', of ``b`` the rest."""
    whole = container_adjoint(g, joined)
    keys = range(len(a)) if position == 0 else range(len(a), len(joined))
    return ContainerAdjoint(
        {k - keys.start: whole[k] for k in keys if k in whole},
        batch=whole.batch,
        keys=tuple(range(len(keys))),
    )


def batch_joined_part(t, joined, a, position):
    """`joined_part` for a batched tangent `t` (directions first) of the adjoint."""
    whole = batch_container_adjoint(t, joined)
    keys = range(len(a)) if position == 0 else range(len(a), len(joined))
    return ContainerAdjoint(
        {k - keys.start: whole[k] for k in keys if k in whole},
        batch=whole.batch,
        keys=tuple(range(len(keys))),
    )


def repeated_part(g, repeated, items):
    """The adjoint of the list or tuple `items` repeated into ``repeated = items * n``, from
    its adjoint `g`: each element's adjoint summed over its repeats."""
    return _fold(container_adjoint(g, repeated), len(items))


def batch_repeated_part(t, repeated, items):
    """`repeated_part` for a batched tangent `t` (directions first) of the adjoint."""
    return _fold(batch_container_adjoint(t, repeated), len(items))


def _fold(whole: ContainerAdjoint, length: int) -> ContainerAdjoint:
    out = ContainerAdjoint(batch=whole.batch, keys=tuple(range(length)))
    for k, value in whole.items():
        out[k % length] = out[k % length] + value
    return out


def repeated(g, items):
    """The adjoint of every term of ``sum(items)``: `g` itself, once per item (for an array,
    once per row: `g` broadcast to its shape), summed to the shape of an item it was
    broadcast from (``sum([x, 2.0])``: the number's adjoint is a number)."""
    if isinstance(items, np.ndarray):
        return np.zeros(items.shape, np.result_type(items, g, 1.0)) + g
    return by_position([_summed_to(g, np.shape(item)) for item in items])


def batch_repeated(t, items):
    """`repeated` for a batched tangent `t` (directions first) of `g`."""
    if isinstance(items, np.ndarray):
        t = np.asarray(t)
        missing = items.ndim - (t.ndim - 1)
        t = np.reshape(t, (t.shape[0],) + (1,) * missing + t.shape[1:])
        return np.zeros((t.shape[0], *items.shape), np.result_type(items, t, 1.0)) + t
    lead = np.shape(t)[:1]
    return by_position([_summed_to(t, np.shape(item), lead) for item in items], batch=lead[0])


def _summed_to(g, shape: tuple, lead: tuple = ()):
    """`g` (behind the batch axes `lead`) summed over the axes an operand of `shape` was
    broadcast along; a smaller `g` (broadcast lazily, like the seed ``1.0``) as it is."""
    gshape = np.shape(g)[len(lead) :]
    extra = len(gshape) - len(shape)
    if gshape == shape or extra < 0:
        return g
    start = len(lead) + extra
    axes = tuple(range(len(lead), start))
    axes += tuple(start + i for i, n in enumerate(shape) if n == 1 and gshape[extra + i] != 1)
    return np.reshape(np.sum(g, axis=axes), (*lead, *shape))


def as_structure(adjoint, value):
    """`adjoint` (a container adjoint, a number or an array) with `value`'s structure and
    shapes: dict for dict, list for list, tuple for tuple, a record's type for a NamedTuple or
    dataclass, zeros where nothing flowed."""
    if is_record(value):
        return _as_record(adjoint, value)
    if isinstance(value, dict):
        return {k: as_structure(part(adjoint, k), v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [as_structure(part(adjoint, i), v) for i, v in enumerate(value)]
        return type(value)(items) if type(value) in (list, tuple) else items
    shape = np.shape(value)
    if np.shape(adjoint) == shape:
        return adjoint
    dtype = np.result_type(value, 1.0)
    if isinstance(value, (float, int)) and not shape:
        return float(np.sum(adjoint))
    return np.zeros(shape, dtype) + adjoint


def _as_record(adjoint, record):
    if not isinstance(adjoint, dict) and not isinstance(record, tuple) and np.any(adjoint):
        # (a NamedTuple read as one array, ``np.sum(p)``, has a number or array adjoint)
        raise TypeError(
            f"the adjoint of a {type(record).__name__} argument is a "
            f"{type(adjoint).__name__}, not one adjoint per field: s2sgrad differentiates "
            f"reads of its fields (p.name), not operations on the whole dataclass"
        )
    items = {}
    for key, item in elements(record):
        if isinstance(item, (np.ndarray, numbers.Number)) or is_container(item):
            items[key] = as_structure(part(adjoint, key), item)
        else:  # a string, None, a function: no derivative
            items[key] = None
    return rebuilt(record, items)


def snapshot(value):
    """`value` as it is now, unaffected by later in-place changes to it or to what it views
    or holds (an array or a container that the adjoint sweep restores slot by slot, or pops
    and appends to)."""
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [snapshot(item) for item in value]
    if isinstance(value, dict):
        return {key: snapshot(item) for key, item in value.items()}
    if isinstance(value, tuple):  # (a tuple holds arrays that may change: copies of them)
        items = [snapshot(item) for item in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    return value


def check_output(value, name: str) -> None:
    """The check of a differentiated function's output whose form its source does not show
    (`transforms/aux.py`): a TypeError for a container, None or a string. A call, not an
    ``if ... is None`` in generated code: a later pass may write a number in its place, and
    ``0.5 is None`` is a SyntaxWarning."""
    if value is None or isinstance(value, (tuple, list, dict, str)):
        raise TypeError(
            f"{name} returned a tuple, list, dict, None or string, not an array or a number; "
            f"to differentiate one value and carry other results along, return (value, aux) "
            f"and pass has_aux=True"
        )


def check_unpack(value, count, starred=False):
    """Python's check of ``a, b, c = value`` (which the normal form turns into element
    reads ``a = value[0]``, ...): a ValueError when `value` has another length (`starred`:
    ``a, *rest = value`` needs at least `count` elements)."""
    try:
        length = len(value)
    except TypeError:
        raise TypeError(f"cannot unpack non-iterable {type(value).__name__} object") from None
    if starred and length < count:
        raise ValueError(f"not enough values to unpack (expected at least {count}, got {length})")
    if starred:
        return
    if length > count:
        raise ValueError(f"too many values to unpack (expected {count})")
    if length < count:
        raise ValueError(f"not enough values to unpack (expected {count}, got {length})")
