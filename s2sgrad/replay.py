"""Replaying a training step: a tape that records what an earlier tape recorded checks each
operation against that recording instead of analysing it again.

A training loop records the same operations on the same Variables every step. Recording one
operation (`GradientTape._record`) finds the refs of its inputs in dictionaries, reads the
Variables it sees for the first time, and computes the signature of its static arguments; and
`gradient` builds the key of the whole recording (`Recording.step_key`) to find its `Plan`. All
of that is Python run per operation, and on a small model it costs more than the NumPy work.

Once a step's recording has been planned twice, `make_trace` turns it into a `Trace`: per
recorded operation, a generated function (``op0``, ``op1``, ...) that checks a call is the same
one, the same primitive on the same producers (the results of the same earlier operations, the
same Variables: identity tests, no lookups; an input wrapped with `sg.constant` may be a new
Tensor of the same kind) with equal static arguments, and if so appends it to the recording
exactly as `_record` would. A later tape whose first recorded call passes a trace's first check
replays it: every call that passes the next check is recorded by it (`tensor.offer` hands the
calls to the check), and `gradient` on the finished trace, with the same target and sources,
runs its plan without building a key (what the trace has checked is what the key holds).

Nothing else changes: the recording a replay builds is the one `_record` would have built, so
anything a replay does not expect (another operation, an assigned Variable, a watched Tensor)
just ends the replay and the tape goes on recording the usual way. A call that the tape does
not record at all (no tracked input) does not end it.
"""

from __future__ import annotations

import itertools
import linecache
import weakref

import numpy as np

from s2sgrad.runtime import registry

from .recorded_calls import _TENSOR, signature
from .tensor import Tensor, Variable

TRACES_PER_PRIMITIVE = 4  # traces kept per first primitive (most recent first)
TRACES_PER_PLAN = 4  # traces made from one plan, none replayed since, before it stops making them

_traces: dict[object, list[Trace]] = {}  # first recorded primitive -> its traces
_filenames = itertools.count()  # numbers the generated checks' file names


class Trace:
    """A step's recording, as checks: `first` checks and records its first operation and, if
    it passes, makes the tape check the next one with the next function, until `END`. `plan`
    is the recording's plan for `target` (a value number) and the sources whose refs are
    `source_refs` (`sources` of them). `exact`: its gradients had their sources' shapes and
    dtypes (and so will every replay's, when the trace is `typed`: the shapes, dtypes and
    classes of everything it reads are then checked, and they decide those of the
    gradients)."""

    __slots__ = (
        "exact",
        "first",
        "plan",
        "source",
        "source_refs",
        "sources",
        "target",
        "typed",
        "version",
        "watched",
    )

    def __init__(self, first, source, plan, target, source_refs, version, typed: bool, watched):
        self.first = first
        self.watched = watched  # the kinds of the Tensors watched before the first call
        self.source = source
        self.plan = plan
        self.target = target
        self.source_refs = source_refs
        self.sources = len(source_refs)
        self.version = version
        self.typed = typed  # every array constant's dtype is checked (`exact` may be set)
        self.exact = False


def END(fn, args, kwargs, inputs, result, tape) -> bool:
    """The check after a trace's last operation: a further recorded call ends the replay."""
    return False


def IGNORE(fn, args, kwargs, inputs, result, tape) -> bool:
    """The check of a non-persistent tape after its one call: every call is taken, and none is
    recorded (its recording is released)."""
    return True


def select(fn, args, kwargs, inputs, result, tape) -> bool:
    """The check of a tape's first recorded call: replay the trace whose first operation this
    is (True, the call recorded), or none (False)."""
    for trace in _traces.get(fn, ()):
        if trace.version != registry.version:
            continue
        if trace.watched and not _watched_alike(tape, trace.watched):
            continue
        if trace.first(fn, args, kwargs, inputs, result, tape):
            tape._trace = trace
            return True
    return False


def _watched_alike(tape, kinds: tuple) -> bool:
    """Whether `tape` has watched, before its first recorded call, Tensors of these kinds (and
    nothing else), as the tape a trace was made from had."""
    recording = tape._recording
    if tape._variables or recording.constants or len(recording.leaf_values) != len(kinds):
        return False
    if not all(t.__class__ is Tensor for t in recording.tracked):
        return False
    return tuple(map(_value_kind, recording.leaf_values)) == kinds


def _value_kind(value) -> tuple:
    """What the checks test of a leaf's value: its class, shape and dtype."""
    return (value.__class__, np.shape(value), value.dtype)


def remember(recording, plan, target, sources: list) -> None:
    """Make and keep a trace of `recording` (planned, as `plan`, for `target` and `sources`),
    unless it cannot be replayed or `plan` has made enough traces already."""
    if plan.traces >= TRACES_PER_PLAN:
        return
    plan.traces += 1
    trace = make_trace(recording, plan, target, sources)
    if trace is None:
        return
    kept = _traces.setdefault(recording.nodes[0][0], [])
    kept.insert(0, trace)
    del kept[TRACES_PER_PRIMITIVE:]


def make_trace(recording, plan, target, sources: list) -> Trace | None:
    """The trace of `recording`, or None if it holds what a trace does not check: leaves that
    are neither Variables nor constant Tensors read by its calls (watched Tensors), leaves made
    before the call that read them, calls with several results or custom gradients, or
    Variables read again after an assignment."""
    nodes = recording.nodes
    if not nodes or recording.has_custom or recording.leaves_of or recording.number(target) is None:
        return None
    leaf_objects = recording.leaf_objects()
    watched = 0  # leaves -1, -2, ...: Tensors watched before the first call
    while leaf_objects.get(-1 - watched).__class__ is Tensor and (
        leaf_objects[-1 - watched] in recording.tracked
    ):
        watched += 1
    for ref, obj in leaf_objects.items():
        if ref >= -watched:
            continue
        if obj.__class__ is Variable and obj._watchable and obj in recording.tracked:
            continue  # a Variable the tape watched on reading it
        if obj.__class__ is Tensor and obj in recording.constants:
            continue  # a constant operand (an input wrapped with sg.constant)
        return None  # (a Tensor watched later; a non-trainable Variable a `watch` made a leaf)
    if not _read_in_order(nodes, sum(ref < 0 for ref in leaf_objects), watched):
        return None
    namespace = {
        "ndarray": np.ndarray,
        "Tensor": Tensor,
        "signature": signature,
        "same": _same_signature,
        "END": END,
    }
    lines: list[str] = []
    read: set[int] = set(range(-watched, 0))  # leaf refs read by an earlier call (or watched)
    typed = True  # the dtypes of all array constants are checked
    for number, node in enumerate(nodes):
        if node[7] != 1 or node[6] != number or node[4].__class__ is not Tensor:
            return None
        values = recording.leaf_values
        made = _check(number, node, leaf_objects, values, watched, read, namespace)
        if made is None:
            return None
        check, checks_dtypes = made
        lines += check
        typed = typed and checks_dtypes
    source = "\n".join(lines) + "\n"
    filename = f"<s2sgrad replay #{next(_filenames)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), namespace)
    namespace[f"op{len(nodes)}"] = END
    source_refs = tuple(map(recording.tracked.get, sources))
    target = recording.number(target)
    kinds = tuple(map(_value_kind, recording.leaf_values[:watched]))
    version = registry.version
    return Trace(namespace["op0"], source, plan, target, source_refs, version, typed, kinds)


def _read_in_order(nodes: list, count: int, watched: int) -> bool:
    """Whether each call made the leaves it read first, the `count` leaves after the `watched`
    ones in the order they were made (``-1`` first), as a replay makes them: not so if a
    `watch`, or a call the tape did not record (``np.argmax(v)``), made a leaf between them."""
    following = -1 - watched  # the next leaf to be made
    for node in nodes:
        new = sorted({ref for ref in node[5] if ref <= following}, reverse=True)
        if new != list(range(following, following - len(new), -1)):
            return False
        following -= len(new)
    return following == -1 - count


def _patterns(sig) -> tuple | None:
    """The argument patterns of a call signature without keywords (None if it has them)."""
    if sig.__class__ is not tuple:
        return None  # ``fn``: only Tensor arguments
    if len(sig) != 2:
        return None
    return sig[1]


def _check(
    number: int,
    node: tuple,
    leaf_objects: dict,
    leaf_values: list,
    watched: int,
    read: set,
    namespace: dict,
) -> tuple[list, bool] | None:
    """The source of ``op{number}``, the check of one recorded call (see the module docstring):
    first what needs no recording (primitive, argument layout), then the static arguments and
    the producers of the inputs, then the result; if all pass, the call is recorded. Also
    whether the check tests the dtypes of the call's array constants. None for a node whose
    arguments do not match its inputs as `_record` makes them."""
    fn, args, kwargs, inputs, _, refs, _, _, constants, sig = node
    namespace[f"F{number}"] = fn
    namespace[f"R{number}"] = refs
    namespace[f"S{number}"] = sig
    name = getattr(fn, "__name__", type(fn).__name__)
    guards = [f"fn is not F{number}"]  # before the recording is read
    tests: list[str] = []  # after
    patterns = _patterns(sig) if not kwargs else None
    typed = True
    if args is inputs and not kwargs:  # only Tensor arguments (`_record`'s fast path)
        guards += ["args is not inputs", f"len(args) != {len(args)}"]
        subjects = [f"args[{k}]" for k in range(len(inputs))]
        consts = "()"
    elif patterns is not None and all(_simple(p) for p in patterns):
        guards += ["kwargs", f"len(args) != {len(args)}"]
        subjects, const_names = [], []
        for p, pattern in enumerate(patterns):
            if pattern is _TENSOR:
                subjects.append(f"args[{p}]")
            elif pattern[0] == "c":  # an array constant: its class and shape
                tests.append(f"(c{p} := args[{p}]).__class__ is not ndarray")
                tests.append(f"c{p}.shape != {pattern[1][1]!r}")
                namespace[f"D{number}_{p}"] = args[p].dtype
                tests.append(f"c{p}.dtype is not D{number}_{p}")
                const_names.append(f"c{p}")
            else:  # a number: its class and value
                tests.append(f"args[{p}].__class__ is not {pattern[0].__name__}")
                tests.append(f"args[{p}] != {pattern[1]!r}")
        copies = [f"{name}.copy()" for name in const_names]  # (as `signature` takes them)
        consts = f"({', '.join(copies)}{',' if len(copies) == 1 else ''})"
    else:  # anything else: the signature, computed and compared
        guards.append(f"len(inputs) != {len(inputs)}")
        subjects = [f"inputs[{k}]" for k in range(len(inputs))]
        tests.append(f"not same(signed := signature(fn, args, kwargs), S{number})")
        consts = "signed[1]"
        typed = not constants
    if len(subjects) != len(refs):  # (not a call `_record` makes: not replayed)
        return None
    reads: list[tuple[str, int]] = []  # first reads of Variables by this call
    constant_reads: list[tuple[str, int]] = []  # and of constant Tensors
    made: list[tuple] = []  # their new leaves, made in the order of the inputs
    for k, (subject, ref) in enumerate(zip(subjects, refs, strict=True)):
        if ref >= 0:  # a result of this recording
            tests.append(f"{subject} is not outputs[{ref}]")
            continue
        leaf = -1 - ref
        if leaf < watched:  # a Tensor watched before the first call: the tape tracks it so
            tests.append(f"(w{k} := {subject}).__class__ is not Tensor")  # (hashable)
            tests.append(f"recording.tracked.get(w{k}) != {ref}")
            continue
        here = [name for name, earlier in reads + constant_reads if earlier == ref]
        if here:  # read first by this very call (``w * w``): the same object
            tests.append(f"{subject} is not {here[0]}")
            continue
        value = leaf_values[leaf]  # (the value read then: a Variable may be assigned since)
        if leaf_objects[ref].__class__ is not Variable:  # a constant Tensor: any, like it
            if ref in read:  # read by an earlier call: the same one
                tests.append(f"(w{k} := {subject}).__class__ is not Tensor")  # (hashable)
                tests.append(f"recording.constants.get(w{k}) != {ref}")
                continue
            tests.append(f"(v{k} := {subject}).__class__ is not Tensor")
            tests.append(f"v{k} in recording.tracked or v{k} in recording.constants")
            for other, _ in constant_reads:  # another new constant of this call: another one
                tests.append(f"v{k} is {other}")
            namespace[f"C{leaf}"] = value.__class__
            tests.append(f"(a{k} := v{k}._value).__class__ is not C{leaf}")
            if value.__class__ is np.ndarray:
                tests.append(f"a{k}.shape != {value.shape!r}")
            namespace[f"D{leaf}"] = value.dtype
            tests.append(f"a{k}.dtype is not D{leaf}")
            read.add(ref)
            constant_reads.append((f"v{k}", ref))
            made.append((f"v{k}", ref, "constants"))
            continue
        if f"V{leaf}" not in namespace:  # a Variable: the same one (held weakly by the trace)
            namespace[f"V{leaf}"] = _weak(leaf_objects[ref], namespace, f"V{leaf}")
        tests.append(f"(v{k} := {subject}) is not V{leaf}()")
        if value.__class__ is not np.ndarray or not value.ndim:  # 0-d: array or scalar
            namespace[f"C{leaf}"] = value.__class__
            tests.append(f"v{k}._value.__class__ is not C{leaf}")
        if ref in read:  # read before: still holding the value read then
            tests.append(f"v{k}._value is not leaves[{leaf}]")
        else:  # a first read: a new leaf
            read.add(ref)
            reads.append((f"v{k}", ref))
            made.append((f"v{k}", ref, "tracked"))
    if made:  # the leaves before them: as many as when traced (nothing else made one)
        made.sort(key=lambda first: -first[1])  # in the order `_record` makes them
        tests.append(f"len(leaves) != {-1 - made[0][1]}")
    lines = [
        f"def op{number}(fn, args, kwargs, inputs, result, tape):",
        f"    # t{number} = {name}(...) of {refs}",
        f"    if {' or '.join(guards)}:",
        "        return False",
        "    recording = tape._recording",
        "    outputs = recording.outputs",
    ]
    if any(ref < 0 for ref in refs):
        lines.append("    leaves = recording.leaf_values")
    for test in tests:
        lines += [f"    if {test}:", "        return False"]
    lines += [
        "    if result.__class__ is not Tensor:",
        "        return False",
        "    tracked = recording.tracked",
    ]
    if reads:
        lines.append("    variables = tape._variables")
    if constant_reads:
        lines.append("    constants = recording.constants")
    for name, ref, index in made:  # first reads: new leaves, as `GradientTape._record` makes
        lines.append(f"    leaves.append({name}._value)")  # them (a Variable is watched)
        lines.append(f"    {index}[{name}] = {ref}")
        if index == "tracked":
            lines.append(f"    variables[{name}] = {name}")
    lines += [
        "    outputs.append(result)",
        f"    tracked[result] = {number}",
        f"    recording.nodes.append((fn, args, kwargs, inputs, result, R{number}, {number}, 1, "
        f"{consts}, S{number}))",
        f"    tape._replay = op{number + 1}",
        "    return True",
        "",
    ]
    return lines, typed


_GONE = object()  # what a trace's collected Variable is: no argument is this object


def _gone():
    return _GONE


def _weak(variable: Variable, namespace: dict, name: str):
    """A weak reference to `variable` for the checks in `namespace` (a trace must not keep a
    model alive); once the Variable is collected, `name` gives an object no argument is."""
    return weakref.ref(variable, lambda _: namespace.__setitem__(name, _gone))


def _same_signature(signed: tuple, expected) -> bool:
    """Whether `signature`'s result has the signature `expected`, as a key: equal, and hashing
    alike (``np.dtype("f8") == float``, but they are different keys of the plans)."""
    sig = signed[0]
    return sig == expected and hash(sig) == hash(expected)


def _simple(pattern) -> bool:
    """A pattern `_check` tests inline: a Tensor, an int or finite float, an array constant."""
    if pattern is _TENSOR:
        return True
    if pattern.__class__ is not tuple or len(pattern) != 2:
        return False
    if pattern[0] is int or pattern[0] is float:
        return True
    kind = pattern[1]
    return pattern[0] == "c" and kind.__class__ is tuple and kind[0] is np.ndarray


def forget() -> None:
    """Drop every trace, and let every plan make traces again (for tests)."""
    from .lowering import Plan, _plans

    _traces.clear()
    for plan in _plans.values():
        if plan.__class__ is Plan:
            plan.traces = 0
