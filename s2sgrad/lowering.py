"""From a tape's recording to a compiled adjoint: prune, lower to straight-line Python, compile.

A recording is a list of nodes ``(fn, args, kwargs, inputs, values, result)``: the primitive,
the arguments as written (Tensors in them), the Tensors among them in the order `apply` found
them, their values at the time, and the result Tensor (or a tuple of them). `backprop`:

1. prunes the nodes to those between the sources and the targets;
2. lowers them to a Python function whose parameters are the sources and the constants it reads,
   one assignment per node (``t3 = np.sin(t2)``), returning the target (or the sum of the
   targets, each multiplied by its output gradient when one is given);
3. has `sg.grad` compile that function's adjoint (the same compiler and rules as the source
   front door), cached under the recording's *structure*: the primitives, their static
   arguments and the wiring, never the values. A training loop that records the same operations
   each step compiles once; later steps cost a dictionary lookup and the adjoint's own work;
4. runs it on the recorded values. If another tape records one of those values, the adjoint runs
   on the Tensors themselves, so that tape records the backward computation (second derivatives).

A `custom_gradient` call is a cut in the recording: the region after it is compiled and run
first, its ``backward`` turns the gradient of its result into gradients of its inputs, and those
are propagated through the region before it by another compiled adjoint.
"""

from __future__ import annotations

import dataclasses
import math
import operator

import numpy as np

from s2sgrad.runtime import qualified_name

from . import tensor as tensor_module
from .tensor import Tensor, Variable

_INFIX = {
    operator.add: "+",
    operator.sub: "-",
    operator.mul: "*",
    operator.truediv: "/",
    operator.floordiv: "//",
    operator.mod: "%",
    operator.pow: "**",
    operator.matmul: "@",
}
_PREFIX = {operator.neg: "-", operator.pos: "+"}
_LITERAL_TYPES = (bool, int, float, str, type(None))


class CustomCall:
    """The primitive of a recorded `custom_gradient` call: its ``backward`` closure."""

    __slots__ = ("backward", "name")

    def __init__(self, name: str, backward):
        self.name = name
        self.backward = backward


@dataclasses.dataclass
class Compiled:
    """One lowered recording: the primal function, its adjoint, and their sources."""

    primal: object
    adjoint: object
    source: str
    n_sources: int
    jacobian: object = None  # `sg.jacobian` of the primal, made on first use


_cache: dict[tuple, Compiled] = {}


def cache_size() -> int:
    """How many distinct recording structures have been compiled (for tests and benchmarks)."""
    return len(_cache)


# -- pruning --------------------------------------------------------------------------------------


def _outputs(result) -> tuple:
    return tuple(result) if isinstance(result, (tuple, list)) else (result,)


def prune(nodes: list, targets: list, cut: set[int]) -> list[int]:
    """Indices of the nodes on a path from a value in `cut` (ids) to one of `targets`.

    Custom-gradient nodes are never included: their results are in `cut` instead.
    """
    needed = {id(t) for t in targets}
    marked = []
    for index in range(len(nodes) - 1, -1, -1):
        node = nodes[index]
        if not needed.isdisjoint(node[7]) and node[0].__class__ is not CustomCall:
            marked.append(index)
            needed.update(node[6])
    reached = set(cut)
    relevant = []
    for index in reversed(marked):
        node = nodes[index]
        if not reached.isdisjoint(node[6]):
            relevant.append(index)
            reached.update(node[7])
    return relevant


# -- lowering -------------------------------------------------------------------------------------


class _Lowering:
    """Names and structure of one lowered region, built in one pass over its nodes.

    `spec` is hashable and determines the generated source (the cache key); `literals` holds
    the static values the spec refers to by position; `args` are the values to call with.
    """

    def __init__(self, sources: list):
        self.source_ids = {id(s): i for i, s in enumerate(sources)}
        self.sources = sources
        self.source_args: list[list[int]] = [[] for _ in sources]  # source -> its arg slots
        self.args: list = []  # values, in parameter order of the lowered function
        self.arg_objects: list = []  # the Tensor each argument came from (or the value)
        self.arg_kinds: list[str] = []  # "s" (source) or "c" (constant)
        self.arg_keys: dict = {}
        self.names: dict[int, int] = {}  # id(result Tensor) -> slot
        self.n_values = 0
        self.literals: list = []
        self.namespace: dict[str, object] = {}

    def argument(self, obj, value, source_index: int | None):
        key = (id(obj), id(value))
        slot = self.arg_keys.get(key)
        if slot is None:
            slot = self.arg_keys[key] = len(self.args)
            self.args.append(value)
            self.arg_objects.append(obj)
            self.arg_kinds.append("c" if source_index is None else "s")
            if source_index is not None:
                self.source_args[source_index].append(slot)
        return ("a", slot)

    def tensor_ref(self, tensor: Tensor, value):
        slot = self.names.get(id(tensor))
        if slot is not None:
            return ("t", slot)
        return self.argument(tensor, value, self.source_ids.get(id(tensor)))

    def static(self, value):
        if _is_literal(value):
            self.literals.append(value)
            return ("k", _literal_key(value))
        if isinstance(value, np.ndarray) or isinstance(value, np.generic):
            return self.argument(value, value, None)
        if callable(value) or isinstance(value, np.dtype) or isinstance(value, type):
            self.literals.append(value)
            try:
                hash(value)
            except TypeError:
                return ("o", id(value))
            return ("o", value)
        return self.argument(value, value, None)

    def node(self, node) -> tuple:
        fn, args, kwargs, _, values, result = node[:6]
        position = iter(values)
        spec_args = []
        for arg in args:
            if isinstance(arg, Tensor):
                spec_args.append(self.tensor_ref(arg, next(position)))
            elif isinstance(arg, (list, tuple)) and any(isinstance(a, Tensor) for a in arg):
                items = tuple(
                    self.tensor_ref(a, next(position)) if isinstance(a, Tensor) else self.static(a)
                    for a in arg
                )
                spec_args.append(("L" if isinstance(arg, list) else "T", items))
            else:
                spec_args.append(self.static(arg))
        spec_kwargs = []
        for key, value in (kwargs or {}).items():
            ref = self.tensor_ref(value, next(position)) if isinstance(value, Tensor) else None
            spec_kwargs.append((key, ref or self.static(value)))
        outs = []
        for out in _outputs(result):
            self.names[id(out)] = self.n_values
            outs.append(self.n_values)
            self.n_values += 1
        return (fn, tuple(spec_args), tuple(spec_kwargs), tuple(outs), isinstance(result, tuple))


def _is_literal(value) -> bool:
    if value.__class__ in _LITERAL_TYPES:
        return not (value.__class__ is float and not math.isfinite(value))
    if value is Ellipsis:
        return True
    if isinstance(value, slice):
        return all(v is None or v.__class__ is int for v in (value.start, value.stop, value.step))
    if value.__class__ is tuple:
        return all(_is_literal(v) for v in value)
    return False


def _literal_key(value):
    if isinstance(value, slice):
        return ("slice", value.start, value.stop, value.step)
    if value.__class__ is tuple:
        return tuple(_literal_key(v) for v in value)
    return (value.__class__, value)


def lower(nodes: list, relevant: list[int], targets: list, output_gradients: list, sources: list):
    """Lower the `relevant` nodes; returns the `_Lowering` and the spec of the whole function."""
    low = _Lowering(sources)
    body = []
    for index in relevant:
        node = nodes[index]
        body.append(low.node(node))
        for out in _outputs(node[5]):  # a source computed here: add a zero to take its gradient
            source_index = low.source_ids.get(id(out))
            if source_index is not None:
                seed = low.argument(out, np.zeros_like(out._value), source_index)
                body.append(("seed", low.names[id(out)], seed, low.n_values))
                low.names[id(out)] = low.n_values
                low.n_values += 1
    returned = []
    for target, og in zip(targets, output_gradients, strict=True):
        ref = low.names.get(id(target))
        if ref is not None:
            ref = ("t", ref)
        elif id(target) in low.source_ids:
            ref = low.argument(target, target._value, low.source_ids[id(target)])
        else:
            continue
        og_value = og._value if isinstance(og, Tensor) else og
        og_ref = None if og is None else low.argument(og, og_value, None)
        returned.append((ref, og_ref))
    spec = (tuple(body), tuple(returned), tuple(low.arg_kinds))
    return low, spec


# -- rendering ------------------------------------------------------------------------------------


class _Renderer:
    def __init__(self, low: _Lowering):
        self.low = low
        self.literals = iter(low.literals)

    def ref(self, item) -> str:
        kind, payload = item
        if kind == "t":
            return f"t{payload}"
        if kind == "a":
            return _arg_name(self.low, payload)
        if kind in ("L", "T"):
            inner = ", ".join(self.ref(i) for i in payload)
            return f"[{inner}]" if kind == "L" else f"({inner}{',' if len(payload) == 1 else ''})"
        value = next(self.literals)
        if kind == "o":
            return self.object_name(value)
        text = _literal_text(value)
        return f"({text})" if text.startswith("-") else text

    def object_name(self, value) -> str:
        spelling = spell(value)
        if spelling is not None:
            return spelling
        name = f"_fn{len(self.low.namespace)}"
        self.low.namespace[name] = value
        return name

    def statement(self, item) -> str:
        if item[0] == "seed":
            _, before, seed, after = item
            return f"t{after} = t{before} + {self.ref(seed)}"
        fn, args, kwargs, outs, is_tuple = item
        parts = [self.ref(a) for a in args]
        parts += [f"{k}={self.ref(v)}" for k, v in kwargs]
        if fn in _INFIX:
            expr = f"{parts[0]} {_INFIX[fn]} {parts[1]}"
        elif fn in _PREFIX:
            expr = f"{_PREFIX[fn]}{parts[0]}"
        elif fn is operator.getitem:
            expr = f"{parts[0]}[{_index_text(args[1], parts[1])}]"
        else:
            expr = f"{self.object_name(fn)}({', '.join(parts)})"
        names = [f"t{o}" for o in outs]
        target = ", ".join(names) + ("," if is_tuple and len(names) == 1 else "")
        return f"{target} = {expr}"


def _index_text(spec_item, text: str) -> str:
    if spec_item[0] == "k" and text.startswith("(") and text.endswith(")") and "," in text:
        return text[1:-1].rstrip(",") if text != "()" else text
    return text


def _literal_text(value) -> str:
    if isinstance(value, slice):
        start = "" if value.start is None else repr(value.start)
        stop = "" if value.stop is None else repr(value.stop)
        step = "" if value.step is None else f":{value.step!r}"
        return f"{start}:{stop}{step}"
    if value is Ellipsis:
        return "..."
    if value.__class__ is tuple:
        inner = ", ".join(_literal_text(v) for v in value)
        return f"({inner}{',' if len(value) == 1 else ''})"
    return repr(value)


def _arg_name(low: _Lowering, slot: int) -> str:
    return f"{'x' if low.arg_kinds[slot] == 's' else 'c'}{slot}"


def spell(fn) -> str | None:
    """``np.sin`` for `numpy.sin`, ``np.linalg.inv`` for `numpy.linalg.inv`; None otherwise."""
    name = qualified_name(fn)
    if not name.startswith("numpy."):
        return None
    value = np
    for part in name.split(".")[1:]:
        value = getattr(value, part, None)
    return "np." + name[len("numpy.") :] if value is fn else None


def render(low: _Lowering, spec) -> str:
    """The lowered function's source: one line per recorded operation."""
    body, returned, _ = spec
    renderer = _Renderer(low)
    lines = [renderer.statement(item) for item in body]
    terms = []
    for ref, og in returned:
        value = renderer.ref(ref)
        terms.append(value if og is None else f"np.sum({value} * {renderer.ref(og)})")
    if not terms:
        terms = ["0.0"]
    result = terms[0] if len(terms) == 1 else " + ".join(f"np.sum({t})" for t in terms)
    params = ", ".join(_arg_name(low, i) for i in range(len(low.args)))
    text = "\n".join(f"    {line}" for line in lines)
    header = '"""A GradientTape recording, lowered by s2sgrad (one line per operation)."""\n'
    return f"{header}import numpy as np\n\n\ndef recorded({params}):\n{text}\n    return {result}\n"


# -- compiling and running ------------------------------------------------------------------------


def compiled_for(low: _Lowering, spec) -> Compiled:
    """The primal and adjoint of a lowered region, from the cache or compiled now."""
    compiled = _cache.get(spec)
    if compiled is None:
        from s2sgrad.transforms.codegen import compile_module

        from .transform_api import grad

        source = render(low, spec)
        primal = compile_module(source, "recorded", low.namespace)
        wrt = tuple(i for i, kind in enumerate(low.arg_kinds) if kind == "s")
        adjoint = grad(primal, wrt=wrt) if wrt else None
        compiled = _cache[spec] = Compiled(primal, adjoint, source, len(wrt))
    return compiled


def _call_args(low: _Lowering, tensors: bool) -> list:
    """The values to call with; with `tensors`, the recorded Tensors themselves where their
    value is still the recorded one (so that other tapes record what the adjoint computes)."""
    if not tensors:
        return low.args
    args = []
    for obj, value in zip(low.arg_objects, low.args, strict=True):
        if isinstance(obj, Tensor) and obj._value is value:
            args.append(obj)
        else:
            args.append(value)
    return args


def watched_elsewhere(low: _Lowering, exclude) -> bool:
    """Whether a recording tape (other than `exclude`) tracks one of the arguments."""
    for tape in tensor_module.recording:
        if tape is exclude:
            continue
        tracked = tape._tracked
        if any(id(obj) in tracked for obj in low.arg_objects):
            return True
        if tape._watch_accessed and any(
            isinstance(obj, Variable) and obj.trainable for obj in low.arg_objects
        ):
            return True
    return False


def run_adjoint(compiled: Compiled, low: _Lowering, exclude) -> list:
    """Gradients of the lowered function w.r.t. its source arguments, in argument order."""
    if compiled.adjoint is None:
        return []
    if watched_elsewhere(low, exclude):
        from .nested import tensor_adjoint

        grads = tensor_adjoint(compiled.adjoint, low.args)(*_call_args(low, True))
    else:
        grads = compiled.adjoint(*low.args)
    return list(grads)


last_adjoint = None  # the `sg.grad` function of the most recent region (for sg.source)


def region_gradients(nodes, targets, output_gradients, sources, exclude) -> list:
    """Gradients of the targets w.r.t. `sources` through the nodes between them (one compiled
    region, custom-gradient results being sources too); None for an unconnected source."""
    global last_adjoint
    cut = {id(s) for s in sources}
    relevant = prune(nodes, targets, cut)
    if not relevant and not any(id(t) in cut for t in targets):
        return [None] * len(sources)
    low, spec = lower(nodes, relevant, targets, output_gradients, sources)
    compiled = compiled_for(low, spec)
    if compiled.adjoint is not None:
        last_adjoint = compiled.adjoint
    grads = run_adjoint(compiled, low, exclude)
    result = [None] * len(sources)
    slot_grads = dict(zip([i for i, k in enumerate(low.arg_kinds) if k == "s"], grads, strict=True))
    for index, slots in enumerate(low.source_args):
        for slot in slots:
            g = slot_grads[slot]
            result[index] = g if result[index] is None else result[index] + g
    return result


def backprop(nodes: list, targets: list, output_gradients: list, sources: list, exclude=None):
    """Gradients of ``sum(targets * output_gradients)`` w.r.t. each source (None: unconnected).

    Regions between custom-gradient calls are compiled separately; each custom call's
    ``backward`` links the region after it to the region before it.
    """
    customs = [i for i, node in enumerate(nodes) if isinstance(node[0], CustomCall)]
    cut_outputs = [o for i in customs for o in _outputs(nodes[i][5])]
    everything = list(sources) + cut_outputs
    grads = region_gradients(nodes, targets, output_gradients, everything, exclude)
    pending = {id(o): g for o, g in zip(cut_outputs, grads[len(sources) :], strict=True)}
    result = grads[: len(sources)]
    for index in reversed(customs):
        fn, _, _, inputs, _, out = nodes[index][:6]
        outs = _outputs(out)
        dys = [pending.pop(id(o), None) for o in outs]
        if all(dy is None for dy in dys):
            continue
        dys = [np.zeros_like(o._value) if d is None else d for o, d in zip(outs, dys, strict=True)]
        dxs = fn.backward(*dys) if len(dys) > 1 else fn.backward(dys[0])
        dxs = list(dxs) if isinstance(dxs, (tuple, list)) else [dxs]
        if len(dxs) != len(inputs):
            raise ValueError(
                f"the backward function of {fn.name} returned {len(dxs)} gradient(s) for "
                f"{len(inputs)} Tensor input(s)"
            )
        pairs = [(x, dx) for x, dx in zip(inputs, dxs, strict=True) if dx is not None]
        if not pairs:
            continue
        more = region_gradients(
            nodes, [x for x, _ in pairs], [dx for _, dx in pairs], everything, exclude
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
