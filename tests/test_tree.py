"""`sg.tree`: flatten/unflatten round trips, leaf order (dict keys sorted, as JAX), `map`, and
classes registered with `sg.tree.register`; bad input is a TypeError or ValueError naming it."""

import collections
import dataclasses
import typing

import numpy as np
import pytest

import s2sgrad as sg


class Pair(typing.NamedTuple):
    first: np.ndarray
    second: float


@dataclasses.dataclass(frozen=True)
class Frozen:
    a: np.ndarray
    b: float


@dataclasses.dataclass
class Guarded:
    """Rebuilding must not run __post_init__: a gradient may well be negative."""

    rate: float

    def __post_init__(self):
        if self.rate <= 0:
            raise ValueError("rate must be positive")


class Box:
    """A user's own container, registered below."""

    def __init__(self, w, b):
        self.w, self.b = w, b


sg.tree.register(Box, lambda box: ((box.w, box.b), "box"), lambda aux, ch: Box(*ch))


def same(a, b) -> bool:
    leaves_a, def_a = sg.tree.flatten(a)
    leaves_b, def_b = sg.tree.flatten(b)
    return def_a == def_b and all(
        np.array_equal(x, y) for x, y in zip(leaves_a, leaves_b, strict=True)
    )


TREES = [
    1.5,
    np.arange(3.0),
    None,
    [1.0, np.ones(2)],
    (1.0, (2.0, None)),
    {"b": 1.0, "a": np.zeros(2)},
    Pair(np.ones(2), 3.0),
    Frozen(np.ones(3), 2.0),
    {"layers": [Pair(np.ones((2, 2)), 0.5), Pair(np.zeros(2), 1.5)], "frozen": Frozen(1.0, 2.0)},
    collections.OrderedDict([("z", 1.0), ("a", 2.0)]),
]


@pytest.mark.parametrize("tree", TREES, ids=lambda t: type(t).__name__)
def test_round_trip(tree):
    leaves, treedef = sg.tree.flatten(tree)
    rebuilt = sg.tree.unflatten(treedef, leaves)
    assert type(rebuilt) is type(tree)
    assert same(rebuilt, tree)
    assert treedef.num_leaves == len(leaves)


def test_dict_leaves_in_sorted_key_order_and_insertion_order_kept():
    tree = {"b": 1.0, "a": 2.0, "c": 3.0}
    leaves, treedef = sg.tree.flatten(tree)
    assert leaves == [2.0, 1.0, 3.0]  # sorted keys, as JAX
    rebuilt = sg.tree.unflatten(treedef, [20.0, 10.0, 30.0])
    assert list(rebuilt) == ["b", "a", "c"]
    assert rebuilt == {"b": 10.0, "a": 20.0, "c": 30.0}
    # the same keys built in another order: the same structure
    assert sg.tree.structure({"a": 0, "c": 0, "b": 0}) == treedef


def test_ordered_dict_keeps_its_order():
    leaves, _ = sg.tree.flatten(collections.OrderedDict([("z", 1.0), ("a", 2.0)]))
    assert leaves == [1.0, 2.0]


def test_none_is_an_empty_node():
    leaves, treedef = sg.tree.flatten([None, 1.0, {"x": None}])
    assert leaves == [1.0]
    assert sg.tree.unflatten(treedef, [5.0]) == [None, 5.0, {"x": None}]


def test_records_rebuilt_without_init():
    _, treedef = sg.tree.flatten(Guarded(1.0))
    rebuilt = sg.tree.unflatten(treedef, [-3.0])  # __post_init__ would reject it
    assert isinstance(rebuilt, Guarded) and rebuilt.rate == -3.0
    frozen = sg.tree.map(lambda x: x * 2, Frozen(np.ones(2), 1.5))
    assert isinstance(frozen, Frozen) and frozen.b == 3.0
    pair = sg.tree.map(lambda x: x + 1, Pair(np.zeros(2), 1.0))
    assert isinstance(pair, Pair) and pair.second == 2.0


def test_registered_class():
    box = Box(np.ones(2), 3.0)
    leaves, treedef = sg.tree.flatten({"box": box, "c": 1.0})
    assert len(leaves) == 3 and leaves[2] == 1.0
    rebuilt = sg.tree.unflatten(treedef, [np.zeros(2), 4.0, 5.0])
    assert isinstance(rebuilt["box"], Box) and rebuilt["box"].b == 4.0
    doubled = sg.tree.map(lambda x: 2 * x, box)
    assert isinstance(doubled, Box) and np.array_equal(doubled.w, [2.0, 2.0])
    assert treedef.children[0].aux == "box"


def test_map_several_trees():
    params = {"W": np.ones(2), "b": 1.0}
    grads = {"b": 0.5, "W": np.array([1.0, 2.0])}
    updated = sg.tree.map(lambda p, g: p - 0.1 * g, params, grads)
    assert np.allclose(updated["W"], [0.9, 0.8]) and updated["b"] == pytest.approx(0.95)


def test_leaves_and_structure():
    tree = Pair(np.ones(2), 3.0)
    assert sg.tree.leaves(tree)[1] == 3.0
    assert sg.tree.structure(tree) == sg.tree.flatten(tree)[1]
    assert "Pair" in repr(sg.tree.structure(tree))


def test_flatten_up_to_reads_none_as_no_derivative():
    _, treedef = sg.tree.flatten({"a": (1.0, 2.0), "b": 3.0})
    assert treedef.flatten_up_to({"a": None, "b": np.ones(2)})[0] is None
    with pytest.raises(ValueError, match="structure"):
        treedef.flatten_up_to([1.0, 2.0])


def test_public():
    assert "tree" in sg.__all__
    assert callable(sg.tree.flatten)


# -- bad input ----------------------------------------------------------------------------------


def test_unflatten_wrong_leaf_count():
    _, treedef = sg.tree.flatten({"a": 1.0, "b": 2.0})
    with pytest.raises(ValueError, match=r"leaves has 3 items.*2 leaves"):
        sg.tree.unflatten(treedef, [1.0, 2.0, 3.0])


def test_unflatten_not_a_treedef():
    with pytest.raises(TypeError, match="treedef must be a TreeDef"):
        sg.tree.unflatten({"a": 1}, [1.0])


def test_map_structure_mismatch_and_bad_fn():
    with pytest.raises(ValueError, match=r"rest\[0\]"):
        sg.tree.map(lambda a, b: a + b, {"a": 1.0}, {"b": 1.0})
    with pytest.raises(TypeError, match="fn must be callable"):
        sg.tree.map(3, [1.0])


def test_register_bad_arguments():
    with pytest.raises(TypeError, match="cls must be a class"):
        sg.tree.register(Box(1.0, 2.0), lambda b: ((), None), lambda a, c: None)
    with pytest.raises(ValueError, match="cls=dict"):
        sg.tree.register(dict, lambda b: ((), None), lambda a, c: None)
    with pytest.raises(TypeError, match="flatten_fn must be callable"):
        sg.tree.register(type("Other", (), {}), None, lambda a, c: None)
    with pytest.raises(TypeError, match="unflatten_fn must be callable"):
        sg.tree.register(type("Other", (), {}), lambda b: ((), None), "no")


def test_flatten_fn_returning_no_pair():
    Bad = type("Bad", (), {})
    sg.tree.register(Bad, lambda b: [1.0], lambda aux, children: Bad())
    with pytest.raises(TypeError, match=r"must return \(children, aux\)"):
        sg.tree.flatten(Bad())
