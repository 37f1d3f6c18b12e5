"""`GradientTape`: TensorFlow's tape semantics on NumPy values.

While a tape is active (inside its ``with`` block, outside `stop_recording`), every operation
on a Tensor it *tracks* is appended to its recording. A tape tracks the values it was told to
`watch`, the trainable Variables read while it is active (unless
``watch_accessed_variables=False``), and every floating-point result computed from a tracked
value. Integer and boolean results, results of functions registered as non-differentiable
(comparisons, rounding) and values that went through ``.numpy()`` / ``np.asarray`` are not
tracked, which is why their gradients are None.

`gradient` and `jacobian` hand the recording to `lowering`, which compiles the adjoint of the
recorded operations with the same compiler as `sg.grad`.
"""

from __future__ import annotations

import contextlib
import enum
import warnings

import numpy as np

from s2sgrad import custom
from s2sgrad.runtime import registry

from . import lowering, replay, tensor, tree
from .lowering import _plans
from .recorded_calls import CustomCall, signature
from .tensor import Tensor, Variable, _new, apply, wrap

__all__ = ["GradientTape", "UnconnectedGradients"]


class UnconnectedGradients(enum.Enum):
    """What `GradientTape.gradient` gives for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


_NONE = UnconnectedGradients.NONE  # an enum member read through its class costs ~0.1 us


class GradientTape:
    """Records operations on Tensors so that their gradients can be computed.

    Args:
        persistent: allow more than one `gradient`/`jacobian` call. A non-persistent tape
            releases its recording after its one call and raises RuntimeError on a second.
        watch_accessed_variables: watch every trainable Variable read while the tape is active.

    Example:
        >>> x = sg.Variable(3.0)
        >>> with sg.GradientTape() as tape:
        ...     y = x ** 2
        >>> tape.gradient(y, x).numpy()
        6.0
    """

    __slots__ = (
        "__weakref__",
        "_active",
        "_last_adjoint",
        "_persistent",
        "_recording",
        "_replay",
        "_trace",
        "_used",
        "_variables",
        "_watch_accessed",
    )

    def __init__(self, persistent=False, watch_accessed_variables=True):
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._recording = lowering.Recording()  # what was recorded and what is tracked
        self._variables: dict[Variable, Variable] = {}  # watched Variables, in watch order
        self._used = False
        self._active = False
        self._last_adjoint = None
        # `replay`: the check of the next call (a fresh tape chooses a trace at its first
        # recorded call), or None: not replaying
        self._replay = replay.select if replay._traces and self._watch_accessed else None
        self._trace = None  # the trace replayed (None while choosing one)

    # -- context -----------------------------------------------------------------------------
    def __enter__(self):
        if self._active:
            raise RuntimeError("this GradientTape is already recording (nested `with` on it)")
        self._active = True
        if registry.version != _nondifferentiable_version:  # once per block, not per operation
            _refresh_nondifferentiable()
        tensor.recording.append(self)
        return self

    def __exit__(self, *exc):
        self._active = False
        if self in tensor.recording:
            tensor.recording.remove(self)
        return False

    @contextlib.contextmanager
    def stop_recording(self):
        """Context manager: operations inside it are not recorded by this tape."""
        if self not in tensor.recording:
            raise RuntimeError("stop_recording() needs a tape that is recording (inside its with)")
        position = tensor.recording.index(self)
        tensor.recording.remove(self)
        try:
            yield
        finally:
            if self._active:
                tensor.recording.insert(position, self)

    def reset(self):
        """Forget everything recorded and watched so far; keep recording if active."""
        self._recording = lowering.Recording()
        self._variables = {}
        self._used = False
        self._replay = self._trace = None

    # -- watching ----------------------------------------------------------------------------
    def watch(self, tensor_or_structure):
        """Track `x` (a Tensor, a Variable, or a pytree of them: see `sg.tree`).

        A watched integer or boolean value is not tracked (it cannot carry a gradient): a
        UserWarning says so, and its gradient is None.
        """
        # a new leaf: only a trace of a step that watched alike before its first recorded call
        # (`replay.select` checks) expects it
        choosing = self._replay is replay.select and not self._recording.nodes
        self._replay = None
        if self._recording is _RELEASED:  # a used non-persistent tape: watched, to no end
            self._recording = lowering.Recording()
        for item in _flatten(tensor_or_structure, "watch", "tensor"):
            if not isinstance(item, Tensor):
                raise TypeError(
                    f"GradientTape.watch expects Tensors or Variables; got "
                    f"{type(item).__name__} (wrap NumPy values with sg.constant)"
                )
            if item.dtype.kind not in "fc":
                warnings.warn(
                    f"The dtype of the watched tensor must be floating (e.g. float64), got "
                    f"{item.dtype}: its gradient will be None",
                    UserWarning,
                    stacklevel=2,
                )
                continue
            self._recording.watch(item)
            if isinstance(item, Variable):
                self._variables.setdefault(item, item)
        if choosing:
            self._replay = replay.select

    @property
    def __wrapped_transform__(self):
        """What `sg.source(tape)` reads: the compiled adjoint of the last `gradient` call."""
        if self._last_adjoint is None:
            raise AttributeError("this tape has not compiled a gradient yet")
        return self._last_adjoint.__wrapped_transform__

    def watched_variables(self) -> tuple:
        """The Variables this tape watches, in the order it started watching them."""
        return tuple(self._variables.values())

    @property
    def _nodes(self) -> list:
        """The recorded calls (see `lowering.Recording`)."""
        return self._recording.nodes

    # -- recording (called by tensor.apply) ---------------------------------------------------
    def _record(self, fn, args, kwargs, inputs, result):
        """Append the call to the recording if an input is tracked. This is the hot path:
        every operation on a Tensor under an active tape comes through here, so the common
        cases (one or two inputs, each a recorded result, a leaf or a constant Tensor; one
        floating result) are spelled out; the node layout is `lowering.Recording`'s. (A tape
        replaying a trace is offered calls by its check instead: `tensor.offer`.)"""
        if fn in _nondifferentiable:  # (brought up to date by __enter__)
            for x in inputs:  # not recorded, but the Variables it read are watched (as in TF)
                if x not in self._recording.tracked:
                    self._accessed(x)
            return
        recording = self._recording
        tracked = recording.tracked
        count = len(inputs)
        if count == 1:  # a Tensor and static arguments (``x ** 2``, ``x - array``)
            x = inputs[0]
            ref = tracked.get(x)
            if ref is None:
                if x.__class__ is Tensor:
                    return
                ref = self._accessed(x)
                if ref is None:
                    return
            elif ref < 0 and x.__class__ is not Tensor:  # a Variable assigned since?
                if recording.leaf_values[-1 - ref] is not x._value:
                    ref = recording.leaf(x, tracked)
            refs = (ref,)
        elif count == 2:
            x, y = inputs
            if x.__class__ is not Tensor or y.__class__ is not Tensor:
                refs = self._all_refs(recording, inputs)  # Variables: read first, or assigned
                if refs is None:
                    return
            else:
                rx = tracked.get(x)
                ry = tracked.get(y)
                if rx is None:
                    if ry is None:
                        return
                    refs = (_constant_ref(recording, x), ry)
                elif ry is None:  # a constant operand (``y * b``): `_constant_ref`, inline,
                    ry = recording.constants.get(y)  # without its check for an assigned
                    if ry is None:  # Variable (a Tensor's value never changes)
                        ry = recording.leaf(y, recording.constants)
                    refs = (rx, ry)
                else:
                    refs = (rx, ry)
        else:
            refs = self._all_refs(recording, inputs)
            if refs is None:
                return
        if result.__class__ is not Tensor:
            self._record_several(fn, args, kwargs, inputs, refs, result)
            return
        value = result._value
        if value.dtype is not _FLOAT64 and value.dtype.kind not in "fc":
            return
        outputs = recording.outputs
        first = len(outputs)
        outputs.append(result)
        tracked[result] = first
        if args is inputs:  # the fast paths: only Tensor arguments, nothing static
            recording.nodes.append((fn, args, None, inputs, result, refs, first, 1, (), fn))
        else:
            sig, constants = signature(fn, args, kwargs)
            if fn.__class__ is CustomCall:
                recording.has_custom = True
            node = (fn, args, kwargs, inputs, result, refs, first, 1, constants, sig)
            recording.nodes.append(node)

    def _diverged(self, check, fn, args, kwargs, inputs, result):
        """Record a call that `check`, of the trace this tape replays, did not take, the usual
        way. If the tape records it (a new node or leaf), the replay is over; if not (no
        tracked input), it goes on."""
        recording = self._recording
        before = (len(recording.nodes), len(recording.leaf_values))
        self._record(fn, args, kwargs, inputs, result)
        if (len(recording.nodes), len(recording.leaf_values)) != before:
            self._replay = None

    def _all_refs(self, recording, inputs) -> tuple | None:
        """`_refs`, with the untracked inputs' refs filled in (constants); None if no input
        is tracked."""
        refs = self._refs(recording, inputs)
        if refs is not None and None in refs:
            return _constant_refs(recording, inputs, refs)
        return refs

    def _refs(self, recording, inputs) -> tuple | None:
        """The refs of `inputs` (None for an untracked one), or None if none is tracked.
        Trainable Variables read for the first time start being watched here."""
        tracked = recording.tracked
        refs = []
        hit = False
        for x in inputs:  # x._value is still the value the call read
            ref = tracked.get(x)
            if ref is not None:
                hit = True
                if ref < 0 and x.__class__ is not Tensor:  # a Variable assigned since?
                    if recording.leaf_values[-1 - ref] is not x._value:
                        ref = recording.leaf(x, tracked)
            elif x.__class__ is Variable:
                if x._watchable and self._watch_accessed:  # `_accessed`, inline: a layer's weights
                    self._variables[x] = x
                    if x in recording.constants:
                        ref = recording.leaf(x, tracked)
                    else:  # its first leaf: `Recording.leaf`, inline
                        values = recording.leaf_values
                        ref = tracked[x] = -1 - len(values)
                        values.append(x._value)
                    hit = True
            elif x.__class__ is not Tensor:
                ref = self._accessed(x)
                hit = hit or ref is not None
            refs.append(ref)
        return tuple(refs) if hit else None

    def _accessed(self, x):
        """The ref of untracked input `x` if the tape starts watching it now (a trainable
        floating Variable read with ``watch_accessed_variables``), else None."""
        if isinstance(x, Variable) and x._watchable and self._watch_accessed:
            self._variables[x] = x
            return self._recording.leaf(x, self._recording.tracked)
        return None

    def _record_several(self, fn, args, kwargs, inputs, refs, result):
        """A call with a tuple or list of results: recorded if one of them is floating."""
        outputs = result if isinstance(result, (tuple, list)) else (result,)
        outs = [o for o in outputs if isinstance(o, Tensor)]
        if len(outs) == len(outputs) and any(o._value.dtype.kind in "fc" for o in outs):
            self._recording.add(fn, args, kwargs, inputs, refs, result, outs)

    # -- gradients ---------------------------------------------------------------------------
    def _start_call(self, method: str):
        if self._used:
            raise RuntimeError(
                f"GradientTape.{method} can only be called once on a non-persistent tape; "
                f"create the tape with persistent=True to call it several times"
            )
        if not self._persistent:
            self._used = True

    def _finish_call(self):
        if not self._persistent:
            self._release()

    def _release(self):
        """A non-persistent tape's one call is done: drop what it recorded, and record nothing
        more (another call raises; `reset` makes it a fresh tape)."""
        self._recording = _RELEASED
        self._replay = replay.IGNORE

    def gradient(
        self,
        target,
        sources,
        output_gradients=None,
        unconnected_gradients=UnconnectedGradients.NONE,
    ):
        """Gradient of `target` (summed over its elements and over a nested structure of
        targets) with respect to `sources` (a Tensor/Variable or a pytree of them: nested
        dict/list/tuple/NamedTuple/dataclass or a class registered with `sg.tree.register`).

        Args:
            target: a Tensor or a nested structure of Tensors.
            sources: what to differentiate with respect to; the result has its structure.
            output_gradients: weights for the targets (same structure): the gradient of
                ``sum(target * output_gradient)``.
            unconnected_gradients: ``UnconnectedGradients.NONE`` (or ``"none"``) gives None
                for a source the target does not depend on; ``ZERO`` (``"zero"``) gives zeros.

        Returns:
            Tensors (or None) in the structure of `sources`.

        Raises:
            RuntimeError: a second call on a non-persistent tape.
            LookupError: the path goes through a primitive with no gradient rule.
        """
        if output_gradients is None and target.__class__ is Tensor:
            kind = sources.__class__  # a list, or a Module's tuple of trainable_variables
            if (kind is list or kind is tuple) and unconnected_gradients is _NONE:
                if not self._used:
                    grads = self._planned_gradient(target, sources)
                    if grads is not None:
                        return grads if kind is list else tuple(grads)
        unconnected = _unconnected(unconnected_gradients)
        targets = _flatten(target, "gradient", "target")
        flat_sources = _flatten(sources, "gradient", "sources")
        for s in flat_sources:
            if s.__class__ is not Tensor and s.__class__ is not Variable:
                if not isinstance(s, Tensor):
                    raise TypeError(
                        f"GradientTape.gradient: sources must be Tensors or Variables; got "
                        f"{type(s).__name__}"
                    )
        if output_gradients is None:
            ogs = [None] * len(targets)
        else:
            ogs = _output_gradients(output_gradients, target, targets)
        self._start_call("gradient")
        try:
            grads = self._gradients(targets, ogs, flat_sources)
            finished = []
            for g, s in zip(grads, flat_sources, strict=True):
                finished.append(_finish(g, s, unconnected))
            if sources.__class__ is list and len(sources) == len(finished):
                if all(s is f for s, f in zip(sources, flat_sources, strict=True)):
                    return finished  # a flat list (the common case)
            return _unflatten(sources, finished)
        finally:
            if not self._persistent:
                self._release()

    def _planned_gradient(self, target: Tensor, sources: list) -> list | None:
        """`gradient` for a training loop's call, one Tensor target and a flat list of distinct
        tracked floating sources, whose `lowering.Plan` is already made: straight to the
        compiled backward sweep. None when anything is less simple (the general path).

        After a replay (`replay`) of a trace planned for this target and these sources, the
        plan is the trace's: what `step_key` would add to what the trace checked is the refs
        of the target and the sources."""
        recording = self._recording
        others = tensor.recording
        if recording.has_custom or (others and (len(others) > 1 or others[0] is not self)):
            return None
        trace = self._trace
        if self._replay is not replay.END or trace.version != registry.version:
            trace = None
        elif target is not recording.outputs[trace.target] or len(sources) != trace.sources:
            trace = None
        else:
            try:
                if tuple(map(recording.tracked.get, sources)) != trace.source_refs:
                    trace = None
            except TypeError:  # an unhashable source (a nested structure)
                return None
        if trace is not None:
            plan = trace.plan
            if plan.traces:  # a trace of it is replayed: it may make more (other objects)
                plan.traces = 0
        else:
            key = recording.step_key(target, sources)  # None unless distinct tracked sources
            plan = None if key is None else _plans.get(key)  # `lowering.planned`, inline
            if plan.__class__ is not lowering.Plan or plan.compiled.backward is None:
                return None  # not planned yet, or nothing to run: the general path decides
            if plan.traces < replay.TRACES_PER_PLAN:  # planned twice: worth a trace
                replay.remember(recording, plan, target, sources)
        if not self._persistent:
            self._used = True
            self._recording = _RELEASED  # `_release`, inline
            self._replay = replay.IGNORE
        leaves = recording.leaf_values
        grads = plan.run(recording.outputs, leaves, recording.nodes, [target], _NO_OG)
        self._last_adjoint = lowering.last_adjoint = plan.compiled.backward
        if trace is not None and trace.exact:  # shapes and dtypes as the sources' (checked)
            finished = []
            for g in grads:  # `wrap`, inline (a call per gradient costs more)
                result = _new(Tensor)
                result._value = g
                finished.append(result)
            return finished
        finished = []
        for i, g in enumerate(grads):  # (one per source; zip with strict= costs more)
            s = sources[i]
            if g.__class__ is np.ndarray:  # the usual case: the source's shape and dtype
                value = s._value
                if g.shape == value.shape and g.dtype is value.dtype:
                    result = _new(Tensor)  # `wrap`, inline
                    result._value = g
                    finished.append(result)
                    continue
            finished.append(_finish(g, s, _NONE))
        if trace is not None and trace.typed:  # the first replay: were they exact?
            pairs = zip(finished, grads, strict=True)
            trace.exact = all(f.__class__ is Tensor and f._value is g for f, g in pairs)
        return finished

    def _gradients(self, targets, ogs, sources) -> list:
        recording = self._recording
        tracked = recording.tracked
        for t in targets:  # ``result = v0`` then gradient(result, v0): the target reads v0
            if t.__class__ is Variable and self._watch_accessed and t.trainable:
                recording.watch(t)
                self._replay = None  # a new leaf, perhaps: no trace expects it
        picked, keep = [], []
        for i, s in enumerate(sources):
            if s in tracked and s._value.dtype.kind in "fc":
                picked.append(s)
                keep.append(i)
        for t in targets:
            if not isinstance(t, Tensor):
                ogs = [og for t, og in zip(targets, ogs, strict=True) if isinstance(t, Tensor)]
                targets = [t for t in targets if isinstance(t, Tensor)]
                break
        if not picked or not targets:
            return [None] * len(sources)
        distinct = {id(s): s for s in picked}
        if len(distinct) == len(picked):
            found = lowering.backprop(recording, targets, ogs, picked, self)
        else:  # a source given twice gets its gradient twice
            once = lowering.backprop(recording, targets, ogs, list(distinct.values()), self)
            by_id = dict(zip(distinct, once, strict=True))
            found = [by_id[id(s)] for s in picked]
        self._last_adjoint = lowering.last_adjoint
        if len(keep) == len(sources):
            return found
        grads = [None] * len(sources)
        for i, g in zip(keep, found, strict=True):
            grads[i] = g
        return grads

    def jacobian(
        self,
        target,
        sources,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """Jacobian of `target` w.r.t. each source: shape ``target.shape + source.shape``.

        `sources` may be nested; the result has its structure. Computed in one vectorized
        sweep by `sg.jacobian` on the lowered recording.
        """
        from .jacobians import tape_jacobian

        unconnected = _unconnected(unconnected_gradients)
        if not isinstance(target, Tensor):
            raise TypeError(
                f"GradientTape.jacobian: target must be a single Tensor; got "
                f"{type(target).__name__}"
            )
        flat = _flatten(sources, "jacobian", "sources")
        self._start_call("jacobian")
        try:
            jacs = tape_jacobian(self, target, flat, batch=False)
            jacs = [
                _finish_jacobian(j, target, s, unconnected, False)
                for j, s in zip(jacs, flat, strict=True)
            ]
            return _unflatten(sources, jacs)
        finally:
            self._finish_call()

    def batch_jacobian(
        self,
        target,
        source,
        unconnected_gradients=UnconnectedGradients.NONE,
        parallel_iterations=None,
        experimental_use_pfor=True,
    ):
        """Per-example Jacobian: ``result[b] = d target[b] / d source[b]``, shape
        ``(batch, *target.shape[1:], *source.shape[1:])``. Assumes examples are independent
        (row ``b`` of the target depends only on row ``b`` of the source)."""
        from .jacobians import tape_jacobian

        unconnected = _unconnected(unconnected_gradients)
        for name, value in (("target", target), ("source", source)):
            if not isinstance(value, Tensor) or value.ndim < 1:
                raise TypeError(
                    f"GradientTape.batch_jacobian: {name} must be a Tensor with a batch "
                    f"axis; got {type(value).__name__} of shape {np.shape(value)}"
                )
        if target.shape[0] != source.shape[0]:
            raise ValueError(
                f"GradientTape.batch_jacobian: target batch {target.shape[0]} != source "
                f"batch {source.shape[0]}"
            )
        self._start_call("batch_jacobian")
        try:
            (jac,) = tape_jacobian(self, target, [source], batch=True)
            return _finish_jacobian(jac, target, source, unconnected, True)
        finally:
            self._finish_call()


def _constant_ref(recording, x) -> int:
    """The ref of untracked input `x`: a leaf of `recording.constants`."""
    ref = recording.constants.get(x)
    if ref is None or recording.leaf_values[-1 - ref] is not x._value:
        ref = recording.leaf(x, recording.constants)
    return ref


def _constant_refs(recording, inputs, refs: tuple) -> tuple:
    """`refs` with those of the untracked inputs (None) filled in."""
    return tuple(
        _constant_ref(recording, x) if ref is None else ref
        for x, ref in zip(inputs, refs, strict=True)
    )


_FLOAT64 = np.dtype(np.float64)
# What a non-persistent tape holds after its one call: nothing, and nothing is recorded into it
# (its tape's check is `replay.IGNORE`; `watch` and `reset` give the tape a fresh recording)
_RELEASED = lowering.Recording()
_NO_OG = (None,)  # the output gradients of a call without them
# primitives registered without a gradient: their calls are not recorded (recording one anyway,
# after a registration inside a `with` block, costs a node and changes no gradient)
_nondifferentiable: frozenset = frozenset()
_nondifferentiable_version = -1  # the registry version it was built for


def _refresh_nondifferentiable() -> None:
    """Rebuild `_nondifferentiable` (after the registry changed)."""
    global _nondifferentiable, _nondifferentiable_version
    _nondifferentiable = frozenset(r.primitive for r in registry if not r.differentiable)
    _nondifferentiable_version = registry.version


# -- structures and results -----------------------------------------------------------------------


def _flatten(structure, method: str, argument: str) -> list:
    """The Tensors of a source or target structure (any pytree: dict, list, tuple,
    NamedTuple, dataclass, a class registered with `sg.tree.register`), in `sg.tree` order."""
    cls = structure.__class__
    if cls is Tensor or cls is Variable:
        return [structure]
    if cls is list or cls is tuple:  # the common case: a flat list of Tensors or Variables
        flat = list(structure)
        for item in flat:
            if item.__class__ is not Tensor and item.__class__ is not Variable:
                break
        else:
            return flat
    found, treedef = tree.flatten(structure)
    if _holds_none(treedef):
        raise TypeError(f"GradientTape.{method}: {argument} contains None")
    return found


def _holds_none(treedef: tree.TreeDef) -> bool:
    pending = [treedef]
    while pending:
        node = pending.pop()
        if node.kind == "none":
            return True
        pending.extend(node.children)
    return False


def _unflatten(structure, values: list):
    """`values` (one per Tensor of `structure`, in `_flatten`'s order) in its structure."""
    cls = structure.__class__
    if cls is Tensor or cls is Variable:
        return values[0]
    return tree.unflatten(tree.structure(structure), values)


def _unconnected(value) -> UnconnectedGradients:
    if value.__class__ is UnconnectedGradients:
        return value
    try:
        if isinstance(value, UnconnectedGradients):
            return value
        return UnconnectedGradients(value)
    except ValueError:
        raise ValueError(
            f"unconnected_gradients must be UnconnectedGradients.NONE/ZERO or 'none'/'zero'; "
            f"got {value!r}"
        ) from None


def _output_gradients(output_gradients, target, targets) -> list:
    if output_gradients is None:
        return [None] * len(targets)
    ogs = (
        [output_gradients]
        if isinstance(target, Tensor) or tree.structure(target).kind == "leaf"
        else _flatten(output_gradients, "gradient", "output_gradients")
    )
    if len(ogs) != len(targets):
        raise ValueError(
            f"GradientTape.gradient: output_gradients has {len(ogs)} entries for "
            f"{len(targets)} target(s)"
        )
    result = []
    for og, t in zip(ogs, targets, strict=True):
        value = og._value if isinstance(og, Tensor) else np.asarray(og)
        if isinstance(t, Tensor) and np.shape(value) != t.shape:
            raise ValueError(
                f"GradientTape.gradient: output_gradients shape {np.shape(value)} does not "
                f"match the target's shape {t.shape}"
            )
        result.append(og if isinstance(og, Tensor) else value)
    return result


def _finish(g, source: Tensor, unconnected: UnconnectedGradients):
    """A gradient as a Tensor of the source's shape and dtype (or None / zeros)."""
    if g.__class__ is np.ndarray:
        value = source._value
        if g.shape == value.shape and g.dtype == value.dtype:
            return wrap(g)
    if g is None:
        if unconnected is UnconnectedGradients.ZERO:
            return wrap(np.zeros_like(source._value))
        return None
    if isinstance(g, Tensor):
        if g.shape != source.shape:
            g = apply(np.broadcast_to, (g, source.shape))
        return g
    value = np.asarray(g)
    if value.shape != source.shape or value.dtype != source.dtype:
        value = np.array(np.broadcast_to(value, source.shape), dtype=source.dtype)
    return wrap(value[()] if value.ndim == 0 else value)


def _finish_jacobian(j, target, source, unconnected, batch: bool):
    if j is not None:
        return j if isinstance(j, Tensor) else wrap(j)
    if unconnected is UnconnectedGradients.NONE:
        return None
    if batch:
        shape = target.shape + source.shape[1:]
    else:
        shape = target.shape + source.shape
    return wrap(np.zeros(shape, dtype=np.result_type(source.dtype, 1.0)))


# -- stop_gradient and custom_gradient under tapes ------------------------------------------------


def _contains_tensor(value) -> bool:
    return any(isinstance(leaf, Tensor) for leaf in tree.leaves(value))


def _detach(value):
    return tree.map(lambda leaf: wrap(leaf._value) if isinstance(leaf, Tensor) else leaf, value)


def _tape_hook(kind, fn, args, kwargs):
    """Installed in `custom.tape_hooks`: handles Tensor arguments of stop_gradient,
    custom_gradient and sg.primitive functions (anything else is left to custom.py)."""
    if not (_contains_tensor(args) or _contains_tensor(list(kwargs.values()))):
        return NotImplemented
    if kind == "stop_gradient":
        return _detach(args[0])
    if kind == "custom_gradient":
        return _custom_call(fn, args, kwargs)
    if kind == "primitive":  # one recorded call of an sg.primitive function
        return tensor.apply(fn, tuple(args), kwargs or None)
    return NotImplemented


def _custom_call(fn, args, kwargs):
    plain = [a._value if isinstance(a, Tensor) else a for a in args]
    paused = list(tensor.recording)
    tensor.recording.clear()
    try:
        value, backward = custom._split(fn, fn(*plain, **kwargs))
    finally:
        tensor.recording.extend(paused)
    if isinstance(value, Tensor):
        value = value._value
    call = CustomCall(getattr(fn, "__name__", "custom_gradient"), backward)
    return tensor.apply_custom(call, args, value)


custom.tape_hooks.append(_tape_hook)
