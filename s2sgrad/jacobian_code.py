"""`sg.jacobian` and `sg.hessian` as generated functions.

For each kind of arguments (their classes and ranks) a Jacobian is a few lines of generated
Python that call the vectorized sweeps (see `composed`) and reshape what they return::

    def jacobian_f(x):
        _t0 = jvp_f(x)  # the tangent along every unit direction of x: the columns
        _j0 = columns_to_jacobian(_t0, x)
        return _j0

compiled once, so a call costs one dictionary lookup before the sweep itself (not a walk
through the transform caches), `sg.source(jac, *args)` shows it with the code it calls, and,
being generated code like any other, it can be differentiated again
(``sg.jacobian(sg.hessian(f))``).

Which sweep: a batched forward sweep (one direction per input element) or a batched forward
sweep over the VJP (one per output element), ``mode="auto"`` choosing at run time by the two
sizes. Where the VJP cannot be generated because a primitive has a forward rule only (the
helpers of generated gradient code: ``sg.jacobian(sg.grad(f))``), the forward sweep is used.
Both are seeded with the identity, so tangents that stay diagonal are kept as their diagonal
(`transforms/diagonal.py`). For an argument on which the output depends element by
element (see `composed.is_elementwise`) the forward sweep is used whatever the mode: its
tangents stay diagonal to the end, where the Jacobian is built from the diagonal once.
"""

from __future__ import annotations

import re
import types

import libcst as cst
import numpy as np

from s2sgrad.runtime import (
    columns_to_jacobian,
    identity_directions,
    is_container,
    registry,
    rows_to_jacobian,
)

from .composed import (
    arguments,
    call_text,
    concrete,
    is_elementwise,
    parameter_names,
    transformed,
    user_facing,
    vjp_transform,
)
from .forward_api import forward_transform

_HELPERS = {
    "np": np,
    "identity_directions": identity_directions,
    "columns_to_jacobian": columns_to_jacobian,
    "rows_to_jacobian": rows_to_jacobian,
}


class ComposedJacobian:
    """The generated Jacobian functions of one `f` for the arguments `names`, one per kind of
    arguments. Looks like a compiled transform to `sg.source` and to the transforms that
    differentiate generated code (`specialize`, `function_for`, `analysis.fn`)."""

    def __init__(self, f, names, is_tuple: bool, mode: str, entry: str, what: str):
        self.f = f
        self.names = names
        self.is_tuple = is_tuple
        self.mode = mode
        self.entry = entry
        self.what = what  # "Jacobian" or "Hessian", for the docstring
        compiled = transformed(f)
        self.analysis = types.SimpleNamespace(fn=compiled.analysis.fn if compiled else f)
        self.params = parameter_names(f)
        self._functions: dict[tuple, types.FunctionType] = {}

    def specialize(self, *args) -> types.FunctionType:
        # (a complex array selects code of its own, as in the dispatcher's key: a Hessian
        # asked with a real, then a complex argument reused the real code; regression review)
        key = (registry.version, *((type(a), _ndim(a), _is_complex_array(a)) for a in args))
        function = self._functions.get(key)
        if function is None:
            function = self._functions[key] = _Builder(self, args).function()
        return function

    function_for = specialize

    def for_arguments(self, args: tuple):
        """The specialization for `args` as `sg.source` and `sg.export` read it."""
        function = self.specialize(*args)
        if getattr(function, "__sg_pytree_blocks__", False):
            # (its module calls the runtime with the function itself: no module of its own)
            raise TypeError(
                f"sg.source and sg.export do not write the {self.what} with respect to a "
                f"dict, list, tuple or record argument yet (its blocks are computed at run "
                f"time): write out the gradient instead, sg.source(sg.grad(f), *args)"
            )
        return types.SimpleNamespace(source=function.__s2sgrad_source__, function=function)

    def generic(self):
        raise TypeError(
            f"the generated {self.what} depends on the kinds of the arguments: pass example "
            "arguments, sg.source(fn, *args) or sg.export(fn, path, *args)"
        )

    def wrapper(self) -> types.FunctionType:
        return user_facing(self)


class _Builder:
    """Writes and compiles one specialization of a `ComposedJacobian`."""

    def __init__(self, composed: ComposedJacobian, args: tuple):
        from s2sgrad.transforms.naming import Namer

        self.composed = composed
        self.args = args
        self.inner = concrete(composed.f, args)
        self.namespace: dict = dict(_HELPERS)
        # every name the function invents (its locals, the sweeps it calls) comes from here,
        # clear of the parameters (a parameter named ``_out`` must not be overwritten)
        self.namer = Namer({*composed.params, *self.namespace, composed.entry})

    def function(self) -> types.FunctionType:
        from s2sgrad.transforms import codegen

        composed = self.composed
        lines: list[str] = []
        results = []
        pytrees = self._pytrees()
        if pytrees:
            returned = self._pytree_call()
        else:
            for k, name in enumerate(composed.names):
                result = self.namer.fresh(f"_j{k}")
                lines.extend(self._jacobian_lines(result, name))
                results.append(result)
            returned = results[0] if not composed.is_tuple else "(" + ", ".join(results) + ",)"
        imports = sorted(n for n in _HELPERS if n != "np" and any(n in line for line in lines))
        user_name = composed.analysis.fn.__name__
        source = (
            f'"""Generated by s2sgrad: {composed.what} of {user_name} with respect to '
            f'{", ".join(composed.names)}, from vectorized sweeps of its generated code."""\n\n'
            "import numpy as np\n"
            + (f"from s2sgrad.runtime import {', '.join(imports)}\n" if imports else "")
            + f'\n__all__ = ["{composed.entry}"]\n\n\n'
            f"def {composed.entry}({', '.join(composed.params)}):\n"
            + "\n".join("    " + line for line in lines)
            + f"\n    return {returned}\n"
        )
        # sg.source and sg.export reach the sweeps through the globals (merged_source)
        function = codegen.compile_module(source, composed.entry, self.namespace)
        function.__sg_pytree_blocks__ = pytrees  # (see `ComposedJacobian.for_arguments`)
        return function

    def _pytrees(self) -> bool:
        """A differentiated argument or the output is a container: nested blocks."""
        params = self.composed.params
        if any(is_container(self.args[params.index(name)]) for name in self.composed.names):
            return True
        positional, keywords = arguments(self.inner, params, self.args)
        return is_container(self.inner(*positional, **keywords))

    def _pytree_call(self) -> str:
        """The call of `tree_jacobians.pytree_jacobian` returning the nested blocks."""
        from .tree_jacobians import pytree_jacobian

        composed = self.composed
        function = self._use(pytree_jacobian)
        differentiated = self.namer.fresh("_differentiated")
        self.namespace[differentiated] = composed.f
        values = ", ".join(composed.params) + ("," if len(composed.params) == 1 else "")
        return f"{function}({differentiated}, {composed.names!r}, {composed.is_tuple}, ({values}))"

    def _use(self, fn) -> str:
        """The name generated code calls `fn` by (made unique within this function)."""
        for alias, value in self.namespace.items():
            if value is fn:
                return alias
        alias = self.namer.fresh(fn.__name__)
        self.namespace[alias] = fn
        return alias

    def _jacobian_lines(self, result: str, name: str) -> list[str]:
        """Lines computing the Jacobian with respect to the parameter `name` into `result`."""
        if is_elementwise(forward_transform(self.inner, (name,))):
            # the forward sweep keeps the tangent diagonal all the way whatever the mode
            # (transforms/diagonal.py), building the full Jacobian once, at the end
            return self._forward_lines(result, name)
        return self._full_lines(result, name)

    def _full_lines(self, result: str, name: str) -> list[str]:
        mode = self.composed.mode
        if mode == "forward":
            return self._forward_lines(result, name)
        primal = self._use(self.inner)
        out = self.namer.fresh("_out")
        try:
            reverse = self._reverse_lines(result, name, out)
        except LookupError as error:
            # a primitive with a forward rule only (the tangent helpers of generated code,
            # a user rule registered with register_jvp alone): the forward sweep gives the
            # same Jacobian; a @custom_gradient function's backward function has neither a
            # batched nor a forward rule: one VJP per output element (JAX's jacrev works
            # through a custom_vjp; ours refused it)
            try:
                return self._forward_lines(result, name)
            except LookupError:
                try:
                    reverse = self._row_lines(result, name, out)
                except LookupError:
                    raise error from None
            mode = "reverse"
        lines = [f"{out} = {primal}({call_text(self.inner, self.composed.params)})"]
        if mode == "reverse":
            return lines + reverse
        return [
            *lines,
            f"if np.size({name}) < np.size({out}):",
            *("    " + line for line in self._forward_lines(result, name)),
            "else:",
            *("    " + line for line in reverse),
        ]

    def _forward_lines(self, result: str, name: str) -> list[str]:
        compiled = forward_transform(self.inner, (name,), batched=True, identity_seed=True)
        function = compiled.function_for(*self.args)
        jvp = self._use(function)
        columns = self.namer.fresh(result.replace("_j", "_t", 1))
        return [
            f"{columns} = {jvp}({call_text(function, self.composed.params)})",
            f"{result} = columns_to_jacobian({columns}, {name})",
        ]

    def _row_lines(self, result: str, name: str, out: str) -> list[str]:
        """The Jacobian row by row, one VJP per element of the output `out`: what is left
        where the VJP cannot be batched (see `_full_lines`)."""
        params = self.composed.params
        positional, keywords = arguments(self.inner, params, self.args)
        value = self.inner(*positional, **keywords)
        vjp_fn = vjp_transform(self.inner, (name,)).function_for(*self.args, value)
        vjp = self._use(vjp_fn)
        seed = self.namer.fresh("_seed")
        rows = self.namer.fresh(result.replace("_j", "_t", 1))
        each = f"{vjp}({call_text(vjp_fn, params, (seed,))})[0]"
        return [
            f"{rows} = np.stack([{each} for {seed} in identity_directions({out})])",
            f"{result} = rows_to_jacobian({rows}, {out}, {name})",
        ]

    def _reverse_lines(self, result: str, name: str, out: str) -> list[str]:
        params = self.composed.params
        positional, keywords = arguments(self.inner, params, self.args)
        value = self.inner(*positional, **keywords)
        vjp = vjp_transform(self.inner, (name,))
        vjp_fn = vjp.function_for(*self.args, value)
        seed = vjp_fn.__code__.co_varnames[vjp_fn.__code__.co_argcount - 1]
        # the seed has the shape of the output, which the VJP code recomputes under the name
        # the primal's normal form returns: tell the shape analysis (diagonal tangents need it)
        output = getattr(getattr(getattr(vjp, "analysis", None), "nf", None), "output", None)
        alike = ()
        if isinstance(output, cst.Name) and _assigns(vjp_fn, output.value):
            alike = ((seed, output.value),)  # (a name the VJP code no longer has is not used:
            # normalizing that code again may give the name to another value)
        forward = forward_transform(
            vjp_fn, (seed,), batched=True, identity_seed=True, shaped_like=alike
        )
        positional, keywords = arguments(vjp_fn, params, self.args, (value,))
        function = forward.function_for(*positional, *keywords.values())  # parameter order
        over_vjp = self._use(function)
        rows = self.namer.fresh(result.replace("_j", "_t", 1))
        return [
            f"{rows} = {over_vjp}({call_text(function, params, (out,))})",
            f"{result} = rows_to_jacobian({rows}[0], {out}, {name})",
        ]


def _is_complex_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind == "c"


def _ndim(value) -> int | None:
    """An array's or number's dimensions; None for a container (a NamedTuple of arrays of
    several shapes has none)."""
    return None if is_container(value) else np.ndim(value)


def _assigns(fn, name: str) -> bool:
    """The generated module of `fn` assigns `name` (at the start of a line)."""
    text = getattr(fn, "__s2sgrad_source__", "")
    return re.search(rf"^\s*{re.escape(name)} = ", text, flags=re.MULTILINE) is not None


def composed_jacobian(f, names, is_tuple: bool, mode: str, entry: str, what: str = "Jacobian"):
    """The user-facing function of a `ComposedJacobian`."""
    return ComposedJacobian(f, names, is_tuple, mode, entry, what).wrapper()
