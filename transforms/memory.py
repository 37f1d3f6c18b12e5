"""What the mutation analysis (`mutation`) knows of each name while it walks a function: the
objects a value may reference (`Refs`, with its kind, see `in_place`), and the walk's state
(which names changed behind their backs, which are containers, which are copies of an
argument). Plain data: the walk is in `mutation`."""

from __future__ import annotations

import dataclasses
import typing

import libcst as cst

from .in_place import ANY, INT, NUMBERS, SCALAR, indexed_kind, join_kinds


class Refs(typing.NamedTuple):
    """What a value may reference: `own`, the objects it is (an array and its views share
    one), and `held`, the objects inside it (a list's elements, a dict's values); its `kind`
    and, for a container, its `items`' kind (see `in_place`; None: not known). `maybe` are
    the tokens it has only through values of kind ANY (an argument that may be a number, in
    the walk before argument types are known): an in-place update that is a change only for
    an array does not count them (a number is rebound), a write into the value does."""

    own: frozenset[str] = frozenset()
    held: frozenset[str] = frozenset()
    kind: object = None
    items: object = None
    maybe: frozenset[str] = frozenset()

    @property
    def all(self) -> frozenset[str]:
        return self.own | self.held

    @property
    def surely(self) -> frozenset[str]:
        """The tokens that are memory whatever the arguments are."""
        return self.all - self.maybe

    def __or__(self, other: Refs) -> Refs:  # type: ignore[override]
        return Refs(
            self.own | other.own,
            self.held | other.held,
            join_kinds(self.kind, other.kind),
            join_kinds(self.items, other.items),
            (self.maybe | other.maybe) - self.surely - other.surely,
        )

    def element(self, container: bool = False) -> Refs:
        """An item read from this value: from an array, a view of it (the same object) or,
        picked by one integer, a number; from a known `container`, one of its elements."""
        if container:
            return make(self.held, self.held, self.items)
        return make(self.all, self.held, indexed_kind(self.kind, [INT]))


def make(own=frozenset(), held=frozenset(), kind=None, items=None) -> Refs:
    """A value's `Refs`: a number references nothing."""
    if kind in NUMBERS:
        return Refs(kind=kind)
    return Refs(own, held, kind, items, own | held if kind == ANY else frozenset())


NOTHING = Refs(kind=SCALAR)


@dataclasses.dataclass(frozen=True)
class Change:
    """An in-place change through `writer` at `node`, which other names see."""

    writer: str
    node: cst.CSTNode
    what: str


@dataclasses.dataclass
class State:
    memory: dict[str, Refs]
    changed: dict[str, Change]
    containers: set[str]
    copies_of: dict[str, str]  # name -> the argument it is (or is a plain copy of)

    def copy(self) -> State:
        return State(
            dict(self.memory), dict(self.changed), set(self.containers), dict(self.copies_of)
        )

    def join(self, other: State) -> None:
        for name, refs in other.memory.items():
            mine = self.memory.get(name)
            self.memory[name] = refs if mine is None else mine | refs
        for name, change in other.changed.items():
            self.changed.setdefault(name, change)
        self.containers |= other.containers
        for name in list(self.copies_of):
            if other.copies_of.get(name) != self.copies_of[name]:
                del self.copies_of[name]

    def key(self) -> tuple:
        memory = tuple(
            (n, sorted(r.own), sorted(r.held), str(r.kind), str(r.items), sorted(r.maybe))
            for n, r in sorted(self.memory.items())
        )
        return memory, tuple(sorted(self.changed)), tuple(sorted(self.containers))

    def holders(self, tokens: frozenset[str]) -> list[str]:
        """Names whose value is, or holds, one of the objects `tokens`."""
        return [name for name, refs in self.memory.items() if refs.all & tokens]
