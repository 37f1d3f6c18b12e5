"""From a tape's recording to a compiled adjoint: prune, lower to straight-line Python, compile.

A `Recording` is what one tape keeps. Each recorded call is a node ``(fn, args, kwargs, inputs,
result, refs, first, count, constants, signature)``: the primitive, the arguments as written
(Tensors in them), the Tensors among them in the order `apply` found them, the result Tensor (or
a tuple of them), a *ref* per input (a tuple), the number of the first value the call produced
and how many, the array constants among its static arguments, and the hashable `signature` of
its static structure. Values are numbered as they are produced (``t0, t1, ...``); a ref is
that number, or ``-1 - k`` for the k-th *leaf*: a Tensor (or a Variable's value at that moment)
that no recorded call produced.
Signature, refs and count make a node's key: the structure of the whole recording is the tuple
of its nodes' keys (signatures and the primitives `CustomCall` and `Expression` are in
`recorded_calls`; the text a region lowers to is written by `rendering`). `backprop`:

1. looks up a `Plan` under that structure, the sources and the targets. On a miss, it prunes
   the nodes to those between the sources and the targets, lowers them to a Python function
   whose parameters are the sources and the constants it reads, one assignment per node
   (``t3 = np.sin(t2)``), returning the target (or the sum of the targets, each multiplied by
   its output gradient when one is given), and compiles it (step 2);
2. compiles that function's adjoint with the compiler's pipeline (the same passes and rules as
   `sg.grad`) with every intermediate given (see transforms/given.py): the tape has already
   computed them, so the adjoint is a backward sweep only and takes the recorded values it
   reads as parameters. Compiled code is cached under the lowered region's structure
   (primitives, static arguments, wiring, the shapes of the arguments; never the values),
   so a training loop compiles once, and a plan under the whole recording's, so later steps
   cost a dictionary lookup, the gathering of the values the backward sweep reads, and the
   sweep itself;
3. runs it. If another tape records one of the values, the adjoint that recomputes the forward
   pass (`sg.grad` of the lowered function) runs on the Tensors themselves instead, so that
   tape records the whole computation (second derivatives).

A `custom_gradient` call is a cut in the recording: the region after it is compiled and run
first, its ``backward`` turns the gradient of its result into gradients of its inputs, and those
are propagated through the region before it by another compiled adjoint.
"""

from __future__ import annotations

import itertools
import linecache
import operator

import numpy as np

from s2sgrad.runtime import is_container, registry

from . import recorded_locations
from . import tensor as tensor_module
from .dispatch import complex_arguments
from .recorded_calls import CustomCall, _kind, signature
from .rendering import _arg_name, render
from .tensor import Tensor, Variable

PLAN_LIMIT = 256  # plans kept before the plan cache starts over (compiled code is kept)


class Compiled:
    """One lowered recording: the primal function, its backward sweep, and their sources.

    ``backward`` takes the parameters listed by ``index``: positions in the lowered region's
    pool of values (its arguments, then its intermediates). ``recompute`` (``sg.grad`` of the
    primal, made on first use) recomputes the forward pass: nested tapes run it on Tensors.
    """

    __slots__ = ("backward", "index", "jacobians", "kinds", "primal", "recompute", "source")

    def __init__(self, primal, backward, index: tuple, source: str, kinds: tuple):
        self.primal = primal
        self.backward = backward
        self.index = index
        self.source = source
        self.kinds = kinds  # "s" (source) or "c" (constant) per argument of the primal
        self.recompute = None
        self.jacobians: dict = {}  # mode -> `sg.jacobian` of the primal, made on first use


class TapeAdjoint:
    """What ``sg.source(tape)`` reads (through ``tape.__wrapped_transform__``): the generated
    backward code of a lowered recording."""

    __slots__ = ("entry", "function", "source")

    def __init__(self, generated):
        self.source = generated.source
        self.function = generated.function
        self.entry = generated.entry

    def generic(self):
        return self

    def for_arguments(self, args):
        return self


_cache: dict[tuple, Compiled] = {}


def cache_size() -> int:
    """How many backward sweeps have been compiled (for tests and benchmarks)."""
    return len({id(compiled) for compiled in _cache.values()})


# -- the recording --------------------------------------------------------------------------------


_node_key = operator.itemgetter(9, 5, 7)  # a node's structure: signature, refs, result count
_leaf_kind = operator.attrgetter("shape", "__class__")  # what a leaf's value is, for the keys


class Recording:
    """What a tape recorded (see the module docstring), kept ready for lowering."""

    __slots__ = (
        "constants",
        "has_custom",
        "leaf_values",
        "leaves_of",
        "locations",
        "nodes",
        "outputs",
        "tracked",
    )

    def __init__(self):
        self.nodes: list = []
        self.outputs: list = []  # value number -> the Tensor holding it
        # What the tape tracks (gradients flow only from these): Tensor -> its ref, the value
        # number of a recorded result or the leaf of a watched Tensor or Variable. Tensors
        # hash by identity, and a dict finds its own key by identity before comparing, so
        # Tensors are keys as they are (Tensor.__eq__ is never called; ``id()`` costs more).
        self.tracked: dict[Tensor, int] = {}
        self.constants: dict[Tensor, int] = {}  # Tensor -> leaf, for untracked inputs
        self.leaf_values: list = []  # leaf number -> its value when read
        self.leaves_of: dict[Tensor, tuple] = {}  # Tensor -> its leaves' refs, if several
        self.has_custom = False
        # node index -> where the user's code recorded it (`recorded_locations.here`); not for
        # the nodes a replay appends
        self.locations: dict[int, object] = {}

    def watch(self, tensor) -> None:
        """Track `tensor` from now on (a leaf, unless a recorded call produced it)."""
        if tensor not in self.tracked:
            self.leaf(tensor, self.tracked)

    def leaf(self, tensor, index: dict) -> int:
        """A new leaf for `tensor` holding its current value, registered in `index`
        (`tracked` or `constants`); its ref. A Tensor's first leaf is its entry in `index`;
        `leaves_of` lists the leaves of those that have several (a Variable assigned since
        it was read, a constant watched later), which are rare."""
        values = self.leaf_values
        ref = -1 - len(values)
        if tensor in self.tracked or tensor in self.constants:
            self.leaves_of[tensor] = (*self.leaves(tensor), ref)
        values.append(tensor._value)
        index[tensor] = ref
        return ref

    def leaves(self, tensor) -> tuple:
        """The refs of the leaves holding values of `tensor`, first one first."""
        refs = self.leaves_of.get(tensor)
        if refs is not None:
            return refs
        found = [self.constants.get(tensor, 0), self.tracked.get(tensor, 0)]
        return tuple(sorted((ref for ref in found if ref < 0), reverse=True))

    def leaf_objects(self) -> dict[int, Tensor]:
        """Leaf ref -> the Tensor whose value it holds (for lowering, not kept while
        recording: a leaf is only its value and its entry in `tracked` or `constants`)."""
        found = {ref: tensor for tensor, ref in self.constants.items()}
        found.update((ref, tensor) for tensor, ref in self.tracked.items())
        for tensor, refs in self.leaves_of.items():
            for ref in refs:
                found[ref] = tensor
        return found

    def number(self, tensor) -> int | None:
        """The value number of a recorded result (None for anything else)."""
        number = self.tracked.get(tensor)
        return None if number is None or number < 0 else number

    def ref_of(self, tensor) -> int | None:
        """The value number of a recorded result, or the leaf holding its current value."""
        ref = self.tracked.get(tensor)
        if ref is None:
            ref = self.constants.get(tensor)
        if ref is not None and ref < 0 and self.leaf_values[-1 - ref] is not tensor._value:
            return None
        return ref

    def add(self, fn, args, kwargs, inputs, refs: tuple, result, outs) -> None:
        """Append a call with a tuple or list `result` whose inputs have `refs`: `outs` are
        its Tensors, of which the floating ones become tracked. (`GradientTape._record`
        appends calls with a single result itself, the same way.)"""
        sig, constants = signature(fn, args, kwargs)
        self.locations[len(self.nodes)] = recorded_locations.here()
        outputs = self.outputs
        first = len(outputs)
        for out in outs:
            if out._value.dtype.kind in "fc":
                self.tracked[out] = len(outputs)
            outputs.append(out)
        self.nodes.append(
            (fn, args, kwargs, inputs, result, refs, first, len(outs), constants, sig)
        )
        if fn.__class__ is CustomCall:
            self.has_custom = True

    def plan_key(self, targets: list, output_gradients: list, sources: list) -> tuple:
        """Everything a `Plan` depends on: the recording's structure, which refs the sources
        and targets are (and which of them are one object), the kinds of the values that are
        not recorded, and the registry."""
        tracked = self.tracked
        first: dict[Tensor, int] = {}  # which sources and targets are one object
        positions = tuple([first.setdefault(s, len(first)) for s in sources])
        refs = tuple(map(tracked.get, sources))
        if len(first) == len(refs) and None not in refs:
            positions = None  # distinct tracked sources: their refs say which is which
        parts = []
        for t, og in zip(targets, output_gradients, strict=True):
            if og is not None:
                og = _kind(og._value if isinstance(og, Tensor) else og)
            parts.append((self.ref_of(t), _kind(t._value), og, first.setdefault(t, len(first))))
        return self._key(sources, refs, positions, parts)

    def step_key(self, target: Tensor, sources: list) -> tuple | None:
        """``plan_key([target], [None], sources)`` for a training step's call, built with
        C-level maps: `sources` a flat list of distinct tracked Tensors or Variables. None
        (or, for repeated sources, a key no plan has) when they are not: the caller takes
        the general path."""
        tracked = self.tracked
        try:
            refs = tuple(map(tracked.get, sources))
        except TypeError:  # an unhashable source (a nested structure)
            return None
        if None in refs:  # an untracked source: `plan_key` would add positions
            return None
        # Repeated sources are not looked for (a set costs more than the rest): `plan_key`
        # adds their positions to the key, so the key built here matches no plan.
        ref = tracked.get(target)
        position = refs.index(ref) if ref in refs else len(refs)  # `first` of plan_key
        if ref is None or ref < 0:
            ref = self.ref_of(target)
        return self._key(sources, refs, None, ((ref, _kind(target._value), None, position),))

    def _key(self, sources: list, refs: tuple, positions, targets) -> tuple:
        """The layout of a plan key, `plan_key`'s and `step_key`'s (which must agree)."""
        return (
            tuple(map(_node_key, self.nodes)),
            tuple(map(_leaf_kind, self.leaf_values)),
            registry.version,
            refs,
            tuple(map(self.leaves, sources)) if self.leaves_of else None,
            positions,
            *targets,
        )


# -- pruning --------------------------------------------------------------------------------------


def _outputs(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def prune(recording: Recording, targets: list, sources: list) -> list[int]:
    """Indices of the nodes on a path from one of `sources` to one of `targets`.

    Custom-gradient nodes are never included: their results are among the sources instead.
    """
    nodes = recording.nodes
    needed = {recording.number(t) for t in targets}
    needed.discard(None)
    marked = []
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        first, count = node[6], node[7]
        produces = (
            first in needed if count == 1 else not needed.isdisjoint(range(first, first + count))
        )
        if produces and node[0].__class__ is not CustomCall:
            marked.append(index)
            needed.update(node[5])
    reached = set()
    for s in sources:
        reached.update(recording.leaves(s))
        if recording.number(s) is not None:
            reached.add(recording.number(s))
    relevant = []
    for index in reversed(marked):
        node = nodes[index]
        if not reached.isdisjoint(node[5]):
            relevant.append(index)
            reached.update(range(node[6], node[6] + node[7]))
    return relevant


# -- lowering -------------------------------------------------------------------------------------

# Where an argument of a lowered function comes from (`Lowered.origins`, `Plan.params`).
_GIVEN, _LEAF, _VALUE, _CONST, _SEED, _OUTPUT_GRADIENT, _TARGET = range(7)


class Lowered:
    """One lowered region: its cache key, its arguments, and what rendering needs.

    Values are referred to by *slot*: ``n >= 0`` is the intermediate ``tn``, ``-1 - a`` the
    argument ``a`` (a source ``xa`` or a constant ``ca``). ``origins[a]`` says where argument
    ``a`` comes from and ``given[n]`` which recorded value ``tn`` is, so that a `Plan` can
    gather them from another recording of the same structure.
    """

    __slots__ = (
        "arg_kinds",
        "arg_sources",
        "given",
        "items",
        "key",
        "locations",
        "objects",
        "origins",
        "returned",
        "values",
    )

    def __init__(self):
        self.arg_kinds: list[str] = []  # "s" (source) or "c" (constant)
        self.arg_sources: list = []  # the source index of each argument (None: a constant)
        self.origins: list[tuple] = []  # (kind, a, b) per argument
        self.given: list[int] = []  # local slot -> value number in the recording
        self.items: list = []  # per statement: (node, input slots, constant slots, outputs)
        self.locations: list = []  # per statement: where it was recorded (None: unknown)
        self.returned: list = []  # (slot, output-gradient slot or None) per target
        self.objects: list = []  # per argument: the Tensor it came from (or its value)
        self.values: list = []  # per argument: its value (what the primal is called with)
        self.key: tuple = ()


def lower(
    recording: Recording, relevant: list[int], targets: list, output_gradients: list, sources: list
) -> Lowered:
    """Lower the `relevant` nodes to a `Lowered` region (its key included)."""
    low = Lowered()
    nodes = recording.nodes
    source_ids = {id(s): i for i, s in enumerate(sources)}
    source_of: dict[int, int] = {}  # ref -> source index
    for i, s in enumerate(sources):
        for ref in recording.leaves(s):
            source_of[ref] = i
        if recording.number(s) is not None:
            source_of[recording.number(s)] = i
    kinds, arg_sources, origins, given = low.arg_kinds, low.arg_sources, low.origins, low.given
    local: dict[int, int] = {}  # value number -> slot
    arg_of: dict[int, int] = {}  # ref -> argument
    parts = []

    def argument(origin: tuple, source_index) -> int:
        kinds.append("c" if source_index is None else "s")
        arg_sources.append(source_index)
        origins.append(origin)
        return len(origins) - 1

    for index in relevant:
        node = nodes[index]
        refs = []
        for ref in node[5]:
            slot = local.get(ref) if ref >= 0 else None
            if slot is None:
                a = arg_of.get(ref)
                if a is None:
                    origin = (_VALUE, ref, 0) if ref >= 0 else (_LEAF, -1 - ref, 0)
                    a = arg_of[ref] = argument(origin, source_of.get(ref))
                slot = -1 - a
            refs.append(slot)
        consts = [-1 - argument((_CONST, index, j), None) for j in range(len(node[8]))]
        outs, seeds = [], []
        for number in range(node[6], node[6] + node[7]):
            local[number] = len(given)
            outs.append(len(given))
            given.append(number)
            if number in source_of:  # a source computed here: add a zero to take its gradient
                seeds.append(number)
        result = node[4]
        is_tuple = result.__class__ is not Tensor
        item = (node, tuple(refs), tuple(consts), tuple(outs), is_tuple)
        low.items.append(item)
        low.locations.append(recording.locations.get(index))
        parts.append((node[9], *item[1:]))
        for number in seeds:
            seed = -1 - argument((_SEED, number, 0), source_of[number])
            before = local[number]
            after = local[number] = len(given)
            given.append(number)
            low.items.append(("seed", before, seed, after))
            low.locations.append(None)
            parts.append(("seed", before, seed, after))
    for position, (target, og) in enumerate(zip(targets, output_gradients, strict=True)):
        number = recording.number(target)
        slot = local.get(number) if number is not None else None
        if slot is None:
            if id(target) not in source_ids:
                continue
            ref = recording.ref_of(target)
            if ref is None:
                slot = -1 - argument((_TARGET, position, 0), source_ids[id(target)])
            else:
                a = arg_of.get(ref)
                if a is None:
                    origin = (_VALUE, ref, 0) if ref >= 0 else (_LEAF, -1 - ref, 0)
                    a = arg_of[ref] = argument(origin, source_of.get(ref))
                slot = -1 - a
        og_slot = None if og is None else -1 - argument((_OUTPUT_GRADIENT, position, 0), None)
        low.returned.append((slot, og_slot))
    low.objects, low.values = gather(recording, low.origins, targets, output_gradients)
    shapes = tuple(_kind(v) for v in low.values)
    low.key = (tuple(parts), tuple(low.returned), tuple(kinds), shapes, registry.version)
    return low


def gather(recording: Recording, origins, targets: list, output_gradients: list) -> tuple:
    """The objects (Tensors where there are) and values of the arguments `origins` name."""
    objects, values = [], []
    leaf_objects = None
    for kind, a, b in origins:
        if kind == _GIVEN or kind == _VALUE:
            obj = recording.outputs[a]
            value = obj._value
        elif kind == _LEAF:
            if leaf_objects is None:
                leaf_objects = recording.leaf_objects()
            obj, value = leaf_objects[-1 - a], recording.leaf_values[a]
        elif kind == _CONST:
            obj = value = recording.nodes[a][8][b]
        elif kind == _SEED:
            obj = recording.outputs[a]
            value = np.zeros_like(obj._value)
        elif kind == _OUTPUT_GRADIENT:
            obj = output_gradients[a]
            value = obj._value if isinstance(obj, Tensor) else obj
        else:
            obj = targets[a]
            value = obj._value
        objects.append(obj)
        values.append(value)
    return objects, values


# -- compiling and running ------------------------------------------------------------------------


class Plan:
    """How to run the compiled backward sweep of one recording structure: where each of its
    parameters comes from, and which source each gradient it returns belongs to. ``run`` is
    that, generated as straight-line Python: ``run(outputs, leaves, nodes, targets, ogs)``
    gathers the parameters from a recording, calls the backward sweep and returns one
    gradient (or None) per source."""

    __slots__ = ("compiled", "origins", "run", "scatter", "traces")

    def __init__(self, low: Lowered, compiled: Compiled, n_sources: int):
        self.compiled = compiled
        self.traces = 0  # `replay.Trace`s made from recordings with this plan, none replayed since
        self.origins = tuple(low.origins)
        self.scatter = tuple(
            low.arg_sources[a] for a, kind in enumerate(low.arg_kinds) if kind == "s"
        )
        n_args = len(low.origins)
        params = [
            low.origins[p] if p < n_args else (_GIVEN, low.given[p - n_args], 0)
            for p in compiled.index
        ]
        self.run = _runner(params, self.scatter, n_sources, compiled.backward)


_GATHER = {
    _GIVEN: "outputs[{a}]._value",
    _VALUE: "outputs[{a}]._value",
    _LEAF: "leaves[{a}]",
    _CONST: "nodes[{a}][8][{b}]",
    _SEED: "zeros_like(outputs[{a}]._value)",
    _OUTPUT_GRADIENT: "plain(ogs[{a}])",
    _TARGET: "targets[{a}]._value",
}
_runners = itertools.count()


def _runner(params: list, scatter: tuple, n_sources: int, backward):
    """The `Plan.run` function for a backward sweep taking `params` (origins)."""
    if backward is None:
        return lambda outputs, leaves, nodes, targets, ogs: [None] * n_sources
    arguments = ", ".join(_GATHER[kind].format(a=a, b=b) for kind, a, b in params)
    parts: list[list[str]] = [[] for _ in range(n_sources)]
    for position, index in enumerate(scatter):
        parts[index].append(f"g[{position}]")
    if scatter == tuple(range(n_sources)):  # one gradient per source, in order
        returned = "*g"
    else:
        returned = ", ".join(" + ".join(p) if p else "None" for p in parts)
    filename = f"<s2sgrad tape plan #{next(_runners)}>"
    source = (
        "def run(outputs, leaves, nodes, targets, ogs):\n"
        f"    g = backward({arguments})\n"
        f"    return [{returned}]\n"
    )
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace = {"backward": backward, "zeros_like": np.zeros_like, "plain": _plain}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["run"]


def _plain(value):
    return value._value if isinstance(value, Tensor) else value


_UNCONNECTED = object()  # the plan of a region with no path from the sources to the targets
_plans: dict[tuple, object] = {}


SHAPE_VARIANTS = 8  # shapes one structure is compiled for before one sweep serves all shapes
_variants: dict[tuple, int] = {}  # rank-level key -> shapes compiled for it


def compiled_for(low: Lowered) -> Compiled:
    """The primal and backward sweep of a lowered region, from the cache or compiled now.

    A sweep is compiled for the exact shapes of the arrays it reads, so that the compiler
    knows which adjoints need no reduction (`unbroadcast`) and leaves those calls out. A
    structure recorded with many shapes (sequences of varying length) gets, after
    `SHAPE_VARIANTS` of them, one sweep specialized for ranks only, used for every shape."""
    compiled = _cache.get(low.key)
    if compiled is None:
        rendered = render(low)
        generic = _rank_key(low, rendered)
        seen = _variants[generic] = _variants.get(generic, 0) + 1
        if seen <= SHAPE_VARIANTS:
            compiled = _compile(low, rendered, exact=True)
        else:
            compiled = _cache.get(generic)
            if compiled is None:
                compiled = _cache[generic] = _compile(low, rendered, exact=False)
        _cache[low.key] = compiled
    return compiled


def _rank_key(low: Lowered, rendered: tuple[str, dict]) -> tuple:
    """What a sweep specialized for ranks depends on: the lowered code (shapes are not in it:
    array constants are parameters), the objects it calls, and the arguments' kinds with
    each array's number of dimensions in place of its shape."""
    source, namespace = rendered
    kinds, shapes, version = low.key[2:]
    ranks = tuple(
        (kind[0], len(kind[1]), *kind[2:]) if kind.__class__ is tuple else kind for kind in shapes
    )
    return ("ranks", source, tuple(map(id, namespace.values())), kinds, ranks, version)


def _compile(low: Lowered, rendered: tuple[str, dict], exact: bool) -> Compiled:
    from s2sgrad.transforms.codegen import compile_module
    from s2sgrad.transforms.pipeline import GradSpec, analyze, generate_gradient

    source, namespace = rendered
    primal = compile_module(source, "recorded", namespace)
    lowered_file = primal.__code__.co_filename
    recorded_locations.register(lowered_file, source, low.locations)
    wrt = tuple(_arg_name(low, i) for i, kind in enumerate(low.arg_kinds) if kind == "s")
    kinds = tuple(low.arg_kinds)
    if not wrt:
        return Compiled(primal, None, (), source, kinds)
    given = tuple(f"t{n}" for n in range(len(low.given)))
    # (recorded values include indices, ``(slice(None), [3, 3, 0])``, which are no arrays)
    names = [_arg_name(low, i) for i in range(len(low.values))]
    complex_params = tuple(sorted(complex_arguments(names, low.values)))
    spec = GradSpec(wrt=wrt, wrt_is_tuple=True, given=given, complex_params=complex_params)
    analysis = analyze(primal, spec)
    shapes = {  # for the arguments whose kinds are in the plan key (not _VALUE or _SEED)
        _arg_name(low, i): v.shape
        for i, (v, origin) in enumerate(zip(low.values, low.origins, strict=True))
        if isinstance(v, np.ndarray) and origin[0] not in (_VALUE, _SEED)
    }
    ndims = {name: len(shape) for name, shape in shapes.items()}
    # recorded constants that are lists, tuples or dicts (np.average(t, weights=[1.0, 2.0])):
    # as the dispatcher tells the compiler (a list read as an array was multiplied as a list)
    containers = frozenset(_arg_name(low, i) for i, v in enumerate(low.values) if is_container(v))
    generated = generate_gradient(
        analysis,
        frozenset(),
        ndims,
        containers=containers,
        array_shapes=shapes if exact else None,
    )
    function = generated.function
    recorded_locations.register_adjoint(function.__code__.co_filename, lowered_file)
    code = function.__code__
    n_args = len(low.arg_kinds)
    index = tuple(
        int(p[1:]) + (n_args if p[0] == "t" else 0) for p in code.co_varnames[: code.co_argcount]
    )
    function.__wrapped_transform__ = TapeAdjoint(generated)
    return Compiled(primal, function, index, source, kinds)


def watched_elsewhere(objects: list, exclude) -> bool:
    """Whether a recording tape (other than `exclude`) tracks one of `objects`."""
    for tape in tensor_module.recording:
        if tape is exclude:
            continue
        tracked = tape._recording.tracked
        if any(isinstance(obj, Tensor) and obj in tracked for obj in objects):
            return True
        if tape._watch_accessed and any(
            isinstance(obj, Variable) and obj.trainable for obj in objects
        ):
            return True
    return False


def _on_tensors(compiled: Compiled, objects: list, values: list) -> tuple:
    """The gradients from the adjoint that recomputes the forward pass, run on the Tensors
    whose value is still the recorded one, so that other tapes record what it computes."""
    from .nested import tensor_adjoint
    from .transform_api import grad

    if compiled.recompute is None:
        wrt = tuple(i for i, kind in enumerate(compiled.kinds) if kind == "s")
        compiled.recompute = grad(compiled.primal, wrt=wrt)
    args = [
        obj if isinstance(obj, Tensor) and obj._value is value else value
        for obj, value in zip(objects, values, strict=True)
    ]
    return tensor_adjoint(compiled.recompute, values)(*args)


last_adjoint = None  # the backward function of the most recent region (for sg.source)


def region_gradients(recording: Recording, targets, output_gradients, sources, exclude) -> list:
    """Gradients of the targets w.r.t. `sources` through the nodes between them (one compiled
    region, custom-gradient results being sources too); None for an unconnected source."""
    global last_adjoint
    key = recording.plan_key(targets, output_gradients, sources)
    plan = _plans.get(key)
    if plan is None:
        if len(_plans) >= PLAN_LIMIT:
            _plans.clear()
        plan = _plans[key] = _plan(recording, targets, output_gradients, sources)
    if plan is _UNCONNECTED:
        return [None] * len(sources)
    compiled = plan.compiled
    if compiled.backward is None:
        return [None] * len(sources)
    last_adjoint = compiled.backward
    others = tensor_module.recording
    if others and (len(others) > 1 or others[0] is not exclude):
        objects, values = gather(recording, plan.origins, targets, output_gradients)
        if watched_elsewhere(objects, exclude):
            result = [None] * len(sources)
            for index, g in zip(plan.scatter, _on_tensors(compiled, objects, values), strict=True):
                result[index] = g if result[index] is None else result[index] + g
            return result
    nodes, outputs, leaves = recording.nodes, recording.outputs, recording.leaf_values
    return plan.run(outputs, leaves, nodes, targets, output_gradients)


def planned(key: tuple) -> Plan | None:
    """The `Plan` already made under `key` (`Recording.plan_key`) if it has a backward sweep
    to run (None otherwise: `backprop` makes, or decides, the rest)."""
    plan = _plans.get(key)
    if plan is None or plan is _UNCONNECTED or plan.compiled.backward is None:
        return None
    return plan


def _plan(recording: Recording, targets, output_gradients, sources):
    relevant = prune(recording, targets, sources)
    ids = {id(s) for s in sources}
    if not relevant and not any(id(t) in ids for t in targets):
        return _UNCONNECTED
    low = lower(recording, relevant, targets, output_gradients, sources)
    return Plan(low, compiled_for(low), len(sources))


def backprop(
    recording: Recording, targets: list, output_gradients: list, sources: list, exclude=None
) -> list:
    """Gradients of ``sum(targets * output_gradients)`` w.r.t. each source (None: unconnected).

    Regions between custom-gradient calls are compiled separately; each custom call's
    ``backward`` links the region after it to the region before it.
    """
    if not recording.has_custom:
        return region_gradients(recording, targets, output_gradients, sources, exclude)
    nodes = recording.nodes
    customs = [i for i, node in enumerate(nodes) if node[0].__class__ is CustomCall]
    cut_outputs = [o for i in customs for o in _outputs(nodes[i][4])]
    everything = list(sources) + cut_outputs
    grads = region_gradients(recording, targets, output_gradients, everything, exclude)
    pending = {id(o): g for o, g in zip(cut_outputs, grads[len(sources) :], strict=True)}
    result = grads[: len(sources)]
    for index in reversed(customs):
        fn, _, _, inputs, out = nodes[index][:5]
        outs = _outputs(out)
        dys = [pending.pop(id(o), None) for o in outs]
        if all(dy is None for dy in dys):
            continue
        dys = [np.zeros_like(o._value) if d is None else d for o, d in zip(outs, dys, strict=True)]
        if watched_elsewhere(list(inputs), exclude):
            # an outer tape would record the backward function's arithmetic on values the
            # forward pass computed as constants: a second derivative of None, or missing terms
            raise LookupError(
                f"no second derivative through the custom gradient {fn.name} (called at "
                f"{recorded_locations.describe(recording.locations.get(index))}): an outer "
                f"GradientTape records this gradient, and a @sg.custom_gradient function has "
                f"a reverse rule only; make it an sg.primitive with sg.register_vjp and "
                f"sg.register_jvp rules"
            )
        dxs = fn.backward(*dys) if len(dys) > 1 else fn.backward(dys[0])
        dxs = list(dxs) if isinstance(dxs, (tuple, list)) else [dxs]
        if len(dxs) != len(inputs):
            raise ValueError(
                f"the backward function of {fn.name} (called at "
                f"{recorded_locations.describe(recording.locations.get(index))}) returned "
                f"{len(dxs)} gradient(s) for {len(inputs)} Tensor input(s)"
            )
        pairs = [(x, dx) for x, dx in zip(inputs, dxs, strict=True) if dx is not None]
        if not pairs:
            continue
        more = region_gradients(
            recording, [x for x, _ in pairs], [dx for _, dx in pairs], everything, exclude
        )
        for i, g in enumerate(more):
            if g is None:
                continue
            if i < len(sources):
                result[i] = g if result[i] is None else result[i] + g
            else:
                key = id(cut_outputs[i - len(sources)])
                pending[key] = g if pending.get(key) is None else pending[key] + g
    return result
