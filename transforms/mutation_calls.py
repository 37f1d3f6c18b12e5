"""The calls in a function the mutation analysis walks (`mutation`): methods and functions
that change their argument in place (refused, with what to write instead), ``out=``, what a
call's result may reference and its kind, nested functions walked where they are called, and
user functions walked again with the kinds of each call's arguments (a callee is compiled once
for every call site, so the call, not the compiled callee, decides whether its in-place
updates change a caller's array)."""

from __future__ import annotations

import types

import libcst as cst
import numpy as np

from .errors import TransformError
from .in_place import (
    ELEMENT_METHODS,
    EMPTY,
    FRESH_BUILTINS,
    FRESH_METHODS,
    INT,
    MODELLED_METHODS,
    MUTATING_METHODS,
    SAME_RANK_VIEWS,
    SCALAR,
    SHAPE_READS,
    VIEW_FUNCTIONS,
    VIEW_METHODS,
    call_kinds,
    copy_is_false,
    is_in,
    is_user_callee,
    join_kinds,
    library_call_kind,
    may_change_in_place,
    method_kind,
    mutates_first_argument,
    operation_kind,
    same_rank,
    user_callees,
    view_kind,
)
from .lines import IN_PLACE_HELPERS
from .memory import NOTHING, Refs, State, make
from .parse import ParsedFunction, parse_function
from .resolve import Resolution, resolve
from .walk import visit


def _spread_literals(call: cst.Call) -> cst.Call:
    """`call` with ``*(a, b)`` and ``**{"k": v}`` literals written out as the arguments they
    are (normal form passes them so: `anf_containers.spread`), so that each is walked and
    bound to its parameter with its own kind; any other call as it is."""
    if not any(arg.star for arg in call.args):
        return call
    args: list[cst.Arg] = []
    for arg in call.args:
        if arg.star == "*" and isinstance(arg.value, (cst.Tuple, cst.List)):
            if any(isinstance(e, cst.StarredElement) for e in arg.value.elements):
                return call
            args.extend(cst.Arg(e.value) for e in arg.value.elements)
        elif arg.star == "**" and isinstance(arg.value, cst.Dict):
            for element in arg.value.elements:
                key = getattr(element, "key", None)
                if not isinstance(key, cst.SimpleString) or not key.evaluated_value.isidentifier():
                    return call
                args.append(cst.Arg(element.value, keyword=cst.Name(key.evaluated_value)))
        elif arg.star:
            return call
        else:
            args.append(arg)
    return call.with_changes(args=tuple(args))


class CallWalker:
    """The part of `mutation._Walker` that walks calls (it supplies `expression`, `block`,
    `protect`, `change`, `new_token`, `walk_callee` and the walk's attributes)."""

    def call(self, expr: cst.Call, state: State) -> Refs:
        expr = _spread_literals(expr)
        func = expr.func
        spelled = (
            self.resolution.spell(func) if isinstance(func, cst.Name | cst.Attribute) else None
        )
        shape_only = SHAPE_READS.get(spelled or "", ())
        args = [
            self.expression(arg.value, state, shape_only=k in shape_only and not arg.keyword)
            for k, arg in enumerate(expr.args)
        ]
        every = frozenset().union(*(a.all for a in args))
        found, callee = self.resolution.value_of(func)
        self.refuse_out(expr, callee if found else None)
        if found and mutates_first_argument(callee):
            name = cst.Module(()).code_for_node(func)
            raise self.parsed.error(
                expr,
                f"{name} changes its first argument in place, which s2sgrad does not follow: "
                f"write into a copy with item assignment (y = y.copy(); y[index] = value), or "
                f"build the new array with np.where",
            )
        own_method = found and is_user_callee(callee)  # self.scaled(...): walked as a call
        if isinstance(func, cst.Attribute) and not own_method:
            if not _is_namespace(func.value, self.resolution):
                return self.method_call(expr, func, args, every, state)  # x.sort(), G.fill()
        if found:
            return self.known_call(expr, callee, args, every, state)
        if isinstance(func, cst.Name) and func.value in self.nested:
            return self.nested_call(self.nested[func.value], expr, args, state)
        return Refs(self.new_token() | every, every)

    def known_call(self, expr, callee, args, every, state: State) -> Refs:
        if is_user_callee(callee):
            kind, items = self.user_call(callee, expr, args)
            return make(self.new_token() | every, every, kind, items)  # may return an argument
        if is_in(callee, VIEW_FUNCTIONS) or (callee is np.array and copy_is_false(expr)):
            kind = same_rank(args[0].kind) if is_in(callee, SAME_RANK_VIEWS) and args else None
            return Refs(every, every, kind)
        name = getattr(callee, "__name__", "")
        module = getattr(callee, "__module__", "") or ""
        positional = [r for a, r in zip(expr.args, args, strict=True) if a.keyword is None]
        if module == "builtins":
            return self.builtin_call(name, expr, positional, every)
        if module.startswith(("numpy", "math", "s2sgrad.runtime")) or isinstance(
            getattr(callee, "__self__", callee), np.ufunc
        ):
            if name in IN_PLACE_HELPERS and args:
                target = expr.args[0].value
                if isinstance(target, cst.Name):
                    self.change(target.value, args[0].own, state, expr, "is written into")
                return args[0]
            return make(self.new_token(), kind=library_call_kind(callee, expr, positional))
        return Refs(self.new_token() | every, every)  # may return (a view of) an argument

    def builtin_call(self, name: str, expr: cst.Call, args: list, every) -> Refs:
        """``len``, ``abs``, ``float``, ``range``, ``min``, ``list``, ...: their results."""
        kinds = [arg.kind for arg in args]
        if name in ("len", "int", "hash", "id"):
            return Refs(kind=INT)
        if name == "range":
            return Refs(self.new_token(), items=INT)
        if name in ("abs", "pow", "round") and args:
            return make(self.new_token(), kind=operation_kind(kinds[: 1 if name != "pow" else 2]))
        if name in ("min", "max") and len(args) > 1:  # one of the arguments
            kind = kinds[0]
            for other in kinds[1:]:
                kind = join_kinds(kind, other)
            return make(self.new_token() | every, every, kind)
        if name in ("min", "max", "sum") and len(args) == 1:
            item = args[0].element(args[0].items is not None)
            kind = operation_kind([item.kind])
            if name == "sum":  # 0 + the items: never one of them
                return make(self.new_token(), kind=kind)
            return make(self.new_token() | item.all, item.held, kind)
        if name in FRESH_BUILTINS:
            return make(self.new_token(), kind=SCALAR if name != "divmod" else None)
        item = args[0].element(args[0].items is not None) if args else NOTHING
        if name in ("list", "sorted"):  # a new list of the items
            return Refs(self.new_token(), item.all, None, item.kind)
        if name == "tuple":  # (a tuple's tuple is the tuple itself)
            return Refs(self.new_token() | every, every, None, item.kind)
        return Refs(self.new_token() | every, every)  # zip(...), iter(...)

    def method_call(self, expr, func: cst.Attribute, args, every, state) -> Refs:
        receiver = self.expression(func.value, state)
        method = func.attr.value
        owner = func.value.value if isinstance(func.value, cst.Name) else None
        container = owner in state.containers or receiver.items is not None
        if method in MUTATING_METHODS or (method.startswith("__i") and method.endswith("__")):
            text = owner or cst.Module(()).code_for_node(func.value)
            instead = MUTATING_METHODS.get(method, "a new value").format(x=text)
            raise self.parsed.error(
                expr,
                f"{text}.{method}(...) changes {text} in place, which s2sgrad does not "
                f"follow: write {instead} instead",
            )
        if method in MODELLED_METHODS:
            if owner is None:
                raise self.parsed.error(expr, f".{method}() is supported on a local list only")
            self.protect(owner, receiver.own, expr, f".{method}() on")
            self.change(owner, receiver.own, state, expr, f"changes with .{method}()")
            if method == "append" and args:
                for name in state.holders(receiver.own):
                    old = state.memory[name]
                    state.memory[name] = old._replace(
                        held=old.held | args[0].all, items=join_kinds(old.items, args[0].kind)
                    )
            return receiver.element(container) if method == "pop" else NOTHING
        if method == "astype" and copy_is_false(expr):  # the array itself where its dtype
            # is already the one asked for: an alias (changed in place, the caller's array
            # changed, silently; hunt, idioms repro_18)
            return receiver
        if method in VIEW_METHODS:
            kind = view_kind(method, receiver.kind)
            items = receiver.items if method == "values" else None
            return Refs(receiver.own, receiver.held, kind, items)
        if method in ELEMENT_METHODS:
            return receiver.element(container)
        if method == "copy" and container:  # a list's copy holds the same elements
            return Refs(self.new_token(), receiver.held, None, receiver.items)
        if method == "copy" and receiver.kind is None and not args:
            # a value of unknown kind (an argument, before its type is known) may be a list or
            # a dict, whose copy holds the same elements: changed in place through the copy,
            # they are the caller's (``qs = ps.copy(); a = qs[0]; a += 1.0`` changed ``ps``,
            # silently; hunt, idioms repro_18). An array's copy is new; its own token says so
            return Refs(self.new_token(), receiver.all, None, receiver.items)
        if method in FRESH_METHODS or method == "copy":
            return make(self.new_token(), kind=method_kind(method, receiver.kind, args))
        return Refs(self.new_token() | receiver.all | every, receiver.all | every)

    def user_call(self, callee: types.FunctionType, expr: cst.Call, args: list) -> tuple:
        """A user function is compiled once for every call site: each call walks it with
        what this call passes (a number, an array, a parameter's default), so that a callee
        updating a parameter in place is refused, at its line, for a caller passing an
        array, and accepted for one passing a number. Returns the kind of its result and of
        the result's items (``return x, v``), each None when not known."""
        try:
            parsed = parse_function(callee)
            resolution = resolve(parsed, callee)
        except (TypeError, TransformError):
            return None, None  # refused when the callee is compiled
        kinds = call_kinds(callee, resolution.params, expr, args)
        key = (callee.__code__, tuple(sorted(kinds.items(), key=lambda kv: kv[0])))
        if key in self.active:  # recursion: its result is what is being found
            return self.active[key]
        if key not in self.walked:
            # the kind of a recursive function's result, found by walking it again while a
            # recursive call's result is assumed to be what the walk before found (at first
            # nothing: the join of the returns that do not recurse), until that holds
            assumed = EMPTY, EMPTY
            for _ in range(4):
                found = self.walk_callee(parsed, resolution, kinds, {**self.active, key: assumed})
                if found == assumed:
                    break
                assumed = found
            else:
                found = None, None
            self.walked[key] = found
        return self.walked[key]

    def nested_call(self, node: cst.FunctionDef, expr, args, state: State) -> Refs:
        """A nested function, inlined by normal form: its body walked here, its parameters
        sharing the arguments' memory, its own names kept apart from the caller's."""
        inner = state.copy()
        params = [p.name.value for p in node.params.params]
        positional = [r for a, r in zip(expr.args, args, strict=True) if a.keyword is None]
        bound = dict(zip(params, positional, strict=False))
        bound.update(
            (a.keyword.value, r) for a, r in zip(expr.args, args, strict=True) if a.keyword
        )
        for param, refs in bound.items():
            inner.memory[param] = refs
            inner.changed.pop(param, None)
            inner.copies_of.pop(param, None)
        outer_returned, self.returned = self.returned, []
        self.nested.pop(node.name.value, None)  # recursion is refused by normal form
        try:
            self.block(list(node.body.body), inner)
        finally:
            self.nested[node.name.value] = node
        result = self.returned[0] if self.returned else NOTHING
        for refs in self.returned[1:]:
            result = result | refs
        self.returned = outer_returned
        own = _assigned_in(node) | set(params)
        for name, change in inner.changed.items():
            if name not in own and name in state.memory:
                state.changed.setdefault(name, change)
        for name, refs in inner.memory.items():
            if name not in own and name in state.memory:
                state.memory[name] = state.memory[name] | refs
        return result

    def refuse_out(self, expr: cst.Call, callee) -> None:
        """``out=`` (or a ufunc's output given by position) writes into an existing array."""
        for arg in expr.args:
            if arg.keyword is not None and arg.keyword.value == "out":
                if not (isinstance(arg.value, cst.Name) and arg.value.value == "None"):
                    self.refuse(expr, arg)
        if isinstance(callee, np.ufunc):
            positional = [a for a in expr.args if a.keyword is None]
            if len(positional) > callee.nin:
                self.refuse(expr, positional[callee.nin])

    def refuse(self, expr: cst.Call, arg: cst.Arg) -> None:
        name = cst.Module(()).code_for_node(expr.func)
        raise self.parsed.error(
            arg,
            f"{name}(..., out=...) writes into an existing array in place, which s2sgrad does "
            f"not follow: write y = {name}(...) without out= and use the result",
        )


def may_change(parsed: ParsedFunction, resolution: Resolution, seen: set) -> bool:
    """Whether the function, or a user function it calls, may change something in place."""
    if may_change_in_place(parsed.tree):
        return True
    for callee in user_callees(parsed.tree, resolution.free):
        if callee.__code__ in seen:
            continue
        seen.add(callee.__code__)
        try:
            inner = parse_function(callee)
            if may_change(inner, resolve(inner, callee), seen):
                return True
        except (TypeError, TransformError):
            continue  # refused when it is compiled
    return False


def _is_namespace(expr, resolution: Resolution) -> bool:
    """`expr` names a module, a class or a ufunc (``np.linalg``, ``np.add``): an attribute
    of it is a function, not a method of a value that could change."""
    found, value = resolution.value_of(expr)
    return found and isinstance(value, (types.ModuleType, type, np.ufunc))


def _assigned_in(node: cst.FunctionDef) -> set[str]:
    """Names a nested function's body binds (any name it mentions, conservatively, except
    that reads of the caller's names are not bindings: they are filtered by the caller)."""
    from .blocks import AssignedNames

    collector = AssignedNames()
    visit(node.body, collector)
    return set(collector.names)
