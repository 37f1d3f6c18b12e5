"""Transforms built from the two sweeps: `vjp`, `jacobian`, `hessian`, `hvp`, and derivatives of
functions that are themselves generated (``sg.grad(sg.grad(f))``, ``sg.jvp(sg.grad(f), ...)``).

Everything here transforms source: a transformed function is differentiated by transforming
its *generated* code again (the specialization its arguments select). Jacobians use one
vectorized sweep whose tangents carry a leading axis of directions:

- forward: the identity as tangents of the argument, one column per direction;
- reverse: the VJP function (the adjoint sweep with the output's adjoint as a parameter) is
  linear in that adjoint, so a batched forward sweep over it with respect to the adjoint
  alone runs the adjoint code once for every output element at the same time;
- `hessian`: a batched forward sweep over the generated gradient (forward-over-reverse).

The Jacobian functions themselves are generated code calling those sweeps: `jacobian_code`.

`sg.grad` of a generated function is computed the same way (forward mode over the generated
code, one batched sweep per differentiated argument), so it needs forward rules only, which
every primitive and every helper generated code calls has.
"""

from __future__ import annotations

import inspect
import types

import numpy as np

from s2sgrad.runtime import fresh_containers, is_container, unaliased
from s2sgrad.transforms import transform_cache
from s2sgrad.transforms.operations import COPY
from s2sgrad.transforms.pipeline import GradSpec, analyze

from . import tree
from .binding import (
    arguments,
    bind,
    call_text,
    check_output,
    check_value,
    concrete,
    keyword_only,
    parameter_names,
    transformed,
    wrt_names,
)
from .dispatch import CompiledGradient
from .forward_api import forward_transform
from .traceback_filter import api_boundary

__all__ = [  # (the names of `binding` are re-exported: other modules import them from here)
    "ComposedGradient",
    "arguments",
    "bind",
    "call_text",
    "check_output",
    "check_value",
    "concrete",
    "grad_of_transformed",
    "hessian",
    "hvp",
    "jacobian",
    "keyword_only",
    "parameter_names",
    "transformed",
    "user_facing",
    "vjp",
    "vjp_transform",
    "wrt_names",
]


# -- what the sweeps need ---------------------------------------------------------------------


def is_elementwise(compiled) -> bool:
    """Every operation on the way from the differentiated argument to the output is an
    elementwise primitive or a copy: no reduction, indexing, container or user call mixes
    elements. (Cached on the compiled transform: a property of the code, not the values.)"""
    cached = getattr(compiled, "_elementwise", None)
    if cached is None:
        activity = compiled.analysis.activity
        cached = all(
            op.primitive is COPY
            or (op.rule is not None and op.rule.elementwise and op.index is None and not op.user)
            for _, op in activity.operations
            if any(t in activity.active for t in op.targets)
        )
        compiled._elementwise = cached
    return cached


def vjp_transform(fn, wrt: tuple[str, ...]) -> CompiledGradient:
    """The reverse transform of `fn` whose last parameter is the output's adjoint."""
    spec = GradSpec(wrt=wrt, wrt_is_tuple=True, seeded=True)
    return transform_cache.cached(fn, spec, lambda: _SeededGradient(analyze(fn, spec)))


class _SeededGradient(CompiledGradient):
    """A VJP: specializations are chosen by the primal arguments (and the seed's kind)."""

    def for_arguments(self, args: tuple):
        return super().for_arguments(tuple(args[:-1]))


# -- public transforms --------------------------------------------------------------------------


def _check_function(f, what: str, arity: int | None = None) -> types.FunctionType:
    """The Python function to transform for `f` (see `callables.as_function`)."""
    from .callables import as_function

    return as_function(f, what, arity)


@api_boundary
def jacobian(f, wrt=0, mode="reverse"):
    """A function giving the Jacobian of `f`, shaped ``out.shape + arg.shape``.

    Where the argument or the output is a pytree (a dict, NamedTuple, dataclass, ...) the
    Jacobian is nested blocks, as in JAX: the output's structure outside, the argument's
    inside, each block shaped ``out_leaf.shape + arg_leaf.shape`` (computed by forward mode
    whatever `mode` says: `tree_jacobians`).

    Args:
        f: a Python function (or a function s2sgrad returned).
        wrt: an argument index or name, or a tuple of them (then a tuple of Jacobians).
        mode: ``"reverse"`` (one vectorized adjoint sweep for all outputs), ``"forward"`` (one
            vectorized tangent sweep for all inputs) or ``"auto"`` (forward when the argument
            has fewer elements than the output).

    Example:
        >>> def f(x):
        ...     return np.sin(x)
        >>> sg.jacobian(f)(np.zeros(2))   # doctest: +SKIP
        array([[1., 0.],
               [0., 1.]])
    """
    f = _check_function(f, "jacobian")
    if mode not in ("reverse", "forward", "auto"):
        raise ValueError(f"mode must be 'reverse', 'forward' or 'auto'; got {mode!r}")
    from .jacobian_code import composed_jacobian

    names, is_tuple = wrt_names(f, wrt)
    if transformed(f) is None:  # the user's function: arrays, numbers or containers of them
        check_output(forward_transform(f, names[:1]), "sg.jacobian", containers=True)
    return composed_jacobian(f, names, is_tuple, mode, entry=f"jacobian_{f.__name__}")


@api_boundary
def hessian(f, wrt=0):
    """A function giving the Hessian of the scalar function `f`, shaped ``arg.shape * 2``,
    by one batched forward sweep over the generated gradient (forward-over-reverse).

    With respect to a pytree argument (a dict, NamedTuple, dataclass, ...) the Hessian is
    nested blocks, as in JAX: ``H["W"]["b"]`` is shaped ``W.shape + b.shape``
    (`tree_jacobians`).

    Example:
        >>> def f(x):
        ...     return np.sum(x ** 3)
        >>> sg.hessian(f)(np.ones(2))   # doctest: +SKIP
        array([[6., 0.],
               [0., 6.]])
    """
    from .transform_api import grad

    f = _check_function(f, "hessian")
    names, is_tuple = wrt_names(f, wrt)
    if is_tuple:
        raise ValueError("sg.hessian takes one argument to differentiate (wrt=index or name)")
    from .jacobian_code import composed_jacobian

    gradient = grad(f, wrt=names[0])
    entry = f"hessian_{f.__name__}"
    return composed_jacobian(gradient, names, False, "forward", entry, what="Hessian")


@api_boundary
def hvp(f, wrt=0):
    """A function ``(*args, v)`` giving the Hessian-vector product ``H @ v`` of the scalar
    function `f` without forming ``H``: one forward sweep over the generated gradient.

    Example:
        >>> def f(x):
        ...     return np.sum(x ** 3)
        >>> sg.hvp(f)(np.ones(2), np.array([1.0, 0.0]))   # doctest: +SKIP
        array([6., 0.])
    """
    from .forward_api import checked_tangent, jvp_of_values
    from .transform_api import grad

    f = _check_function(f, "hvp")
    names, is_tuple = wrt_names(f, wrt)
    if is_tuple:
        raise ValueError("sg.hvp takes one argument to differentiate (wrt=index or name)")
    gradient = grad(f, wrt=names[0])
    params = parameter_names(f)
    index = params.index(names[0])

    @api_boundary
    def hessian_vector_product(*args, **kwargs):
        if len(args) < 2:
            raise TypeError("hvp(f) is called as hvp(f)(*args, v): the direction v comes last")
        *primals, v = args
        values = bind(f, tuple(primals), kwargs)
        if not is_container(v) and np.shape(v) != np.shape(values[index]):
            raise ValueError(
                f"v must have the shape of {names[0]}: {np.shape(values[index])}; got {np.shape(v)}"
            )
        v = checked_tangent(index, values[index], v)  # (None leaves: zeros)
        tangents = tuple(v if k == index else None for k in range(len(values)))
        return jvp_of_values(gradient, values, tangents)[1]

    hessian_vector_product.__name__ = f"hvp_{f.__name__}"
    hessian_vector_product.__sg_hvp__ = f  # (not generated code: see `refuse_hvp`)
    return hessian_vector_product


HVP_INSTEAD = (
    "the function sg.hvp returns runs forward-mode code over the generated gradient for each "
    "call; it has no source of its own and is not transformed again yet: print the "
    "gradient's code with sg.source(sg.grad(f)), and differentiate f itself (sg.hessian(f), "
    "or sg.jacobian(sg.hessian(f)) for third derivatives)"
)


def refuse_hvp(fn, what: str) -> None:
    """A TypeError for `what` (``sg.source``, ``sg.grad``...) of a function sg.hvp returned
    (its failures were 'wrt=0 is out of range', a zip() error, a missing rule)."""
    if getattr(fn, "__sg_hvp__", None) is not None:
        raise TypeError(f"{what} of {fn.__name__}: {HVP_INSTEAD}")


@api_boundary
def vjp(f, *primals):
    """``(f(*primals), vjp_fn)``; ``vjp_fn(cotangent)`` gives a tuple with one gradient per
    argument (the adjoint sweep, with the output's adjoint as a parameter).

    Example:
        >>> out, back = sg.vjp(lambda_free_function, x)   # doctest: +SKIP
        >>> back(np.ones_like(out))                       # doctest: +SKIP
    """
    f = _check_function(f, "vjp", len(primals))
    values = bind(f, primals)  # keyword-only parameters and the others left out: defaults
    fn = concrete(f, values)
    params = tuple(parameter_names(f))
    given = params[: len(primals)]
    differentiable = tuple(
        name
        for name, value in zip(params, values, strict=True)
        if name in given and _is_float_like(value)
    )
    user = transformed(f) is None
    compiled = vjp_transform(fn, differentiable)
    if user:
        check_output(compiled, "sg.vjp", containers=True)
    positional, keywords = arguments(fn, params, fresh_containers(values))
    # f itself, as the user calls it: its value may be an argument or what f (or a function it
    # calls) reads from its globals and closure, which `unaliased` reads through fn
    out = unaliased(fn(*positional, **keywords), (*values, fn))
    if user:
        check_value(out, f, "sg.vjp")

    @api_boundary
    def vjp_fn(cotangent):
        _check_cotangent(cotangent, out)
        call, keywords = arguments(fn, params, values, (cotangent,))
        grads = compiled.function_for(*values, cotangent)(*call, **keywords)
        by_name = dict(zip(differentiable, grads, strict=True))
        return tuple(by_name.get(name) for name in given)

    return out, vjp_fn


def _check_cotangent(cotangent, out) -> None:
    """A ValueError unless `cotangent` has the structure of `out` (a pytree of the same
    type: a NamedTuple for a NamedTuple) and the shapes of its leaves; an array with one row
    per element of a list or tuple of equal shapes is accepted too (read as one array)."""
    from . import tree

    wanted, structure = tree.flatten(out)
    given, given_structure = tree.flatten(cotangent)
    if given_structure == structure:
        for k, (w, g) in enumerate(zip(wanted, given, strict=True)):
            if np.shape(w) != np.shape(g):
                where = f" (leaf {k} of {structure!r})" if structure.kind != "leaf" else ""
                raise ValueError(
                    f"the cotangent must have the output's shape {np.shape(w)}{where}; got "
                    f"{np.shape(g)}"
                )
        return
    if given_structure.kind == "leaf" and structure.kind in ("list", "tuple"):
        try:
            if np.shape(cotangent) == np.shape(out):
                return
        except ValueError:  # elements of different shapes: no one array
            pass
    raise ValueError(
        f"the cotangent must have the output's structure {structure!r}; got "
        f"{given_structure!r} ({type(cotangent).__name__})"
    )


def _is_float_like(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (float, complex)):
        return True
    if is_container(value):  # (a NamedTuple or dataclass too): one with a float leaf (a
        # list of integer indices is none: an index depending on the input was refused)
        from . import tree

        leaves = tree.leaves(value)
        return not leaves or any(_is_float_like(leaf) for leaf in leaves)
    return isinstance(value, np.ndarray) and value.dtype.kind in "fc"


class ComposedGradient:
    """`sg.grad` of a generated function, itself generated so it can be transformed again.

    For the arguments of a call it writes, compiles and caches a small function with the
    user's parameters that calls the forward-mode code of the inner generated function: with
    tangent ``1.0`` for a number, or seeded with every unit direction for an array, and sums
    the tangents of the output (``sg.grad`` differentiates the sum of the output)::

        def ddfdxdx(x):
            _, _t0 = jvp_dfdx(x, 1.0)
            return np.sum(_t0)
    """

    def __init__(self, f, names: tuple[str, ...], is_tuple: bool, with_value: bool):
        self.f = f
        self.names = names
        self.is_tuple = is_tuple
        self.with_value = with_value
        self.analysis = transformed(f).analysis  # the user's function: signature, names
        self.params = parameter_names(f)
        self._functions: dict[tuple, types.FunctionType] = {}
        self.entry = f"d{f.__name__}d{'_'.join(names)}"
        self.last_source = ""

    def _check_numbers_and_arrays(self, args: tuple) -> None:
        """A TypeError where the derivative differentiated again, or what it is taken with
        respect to, is a pytree: the forward code this builds seeds numbers and arrays
        (NumPy's 'entry not a 2- or 3- tuple' came out of generated code). JAX's grad of a
        dict-valued function is an error too; sg.hessian and sg.hvp take pytrees."""
        spec = getattr(transformed(self.f).analysis, "spec", None)  # (a Jacobian's has none)
        inner = getattr(spec, "wrt", ())
        for name in dict.fromkeys((*inner, *self.names)):
            if name in self.params and is_container(args[self.params.index(name)]):
                value = args[self.params.index(name)]
                raise TypeError(
                    f"sg.grad of a derivative s2sgrad generated, with the argument {name!r} a "
                    f"{type(value).__name__}: differentiating a derivative again is supported "
                    f"for numbers and arrays (a derivative with respect to a pytree is a "
                    f"pytree, not a number); use sg.hessian(f) or sg.hvp(f), which take pytrees"
                )

    def specialize(self, *args) -> types.FunctionType:
        key = tuple(_kind(a) for a in args)
        function = self._functions.get(key)
        if function is None:
            function = self._functions[key] = self._build(args)
        return function

    function_for = specialize  # already a cached lookup

    def for_arguments(self, args: tuple):
        function = self.specialize(*args)
        return types.SimpleNamespace(source=function.__s2sgrad_source__, function=function)

    def generic(self):
        raise TypeError(
            "the source of a derivative of a generated function depends on the argument "
            "types: pass example arguments, sg.source(fn, *args) or sg.export(fn, path, *args)"
        )

    def _build(self, args: tuple) -> types.FunctionType:
        from s2sgrad.transforms import codegen

        self._check_numbers_and_arrays(args)
        inner = concrete(self.f, args)
        namespace: dict = {}
        lines = []
        results = []
        call_args = ", ".join(self.params)
        if self.with_value:
            namespace[inner.__name__] = inner
            lines.append(f"    _value = {inner.__name__}({call_text(inner, self.params)})")
        for k, name in enumerate(self.names):
            index = self.params.index(name)
            scalar = isinstance(args[index], (float, int)) and not isinstance(args[index], bool)
            if scalar:
                compiled = forward_transform(inner, (name,))
            else:  # every unit direction at once, the tangent alone (see jacobian_code)
                compiled = forward_transform(inner, (name,), batched=True, identity_seed=True)
            jvp_function = compiled.function_for(*args)
            alias = f"{jvp_function.__name__}_{k}" if len(self.names) > 1 else jvp_function.__name__
            namespace[alias] = jvp_function
            if scalar:
                arguments_text = call_text(jvp_function, self.params, ("1.0",))
                lines.append(f"    _, _t{k} = {alias}({arguments_text})")
                results.append(f"np.sum(_t{k})")
            else:
                lines.append(f"    _t{k} = {alias}({call_text(jvp_function, self.params)})")
                flat = f"np.reshape(_t{k}, (np.shape(_t{k})[0], -1))"
                results.append(f"np.reshape(np.sum({flat}, axis=1), np.shape({name}))")
        returned = ", ".join(results) + ("," if self.is_tuple and len(results) == 1 else "")
        if not self.is_tuple:
            returned = results[0]
        if self.with_value:
            returned = f"(_value, ({returned}))"
        source = (
            f'"""Generated by s2sgrad: gradient of {inner.__name__} with respect to '
            f'{", ".join(self.names)}, by forward mode over its generated code."""\n\n'
            "import numpy as np\n\n"
            f'__all__ = ["{self.entry}"]\n\n\n'
            f"def {self.entry}({call_args}):\n" + "\n".join(lines) + f"\n    return {returned}\n"
        )
        namespace["np"] = np
        # sg.source and sg.export reach the sweeps through the globals (merged_source)
        return codegen.compile_module(source, self.entry, namespace)

    def wrapper(self) -> types.FunctionType:
        return user_facing(self)


def _kind(value) -> tuple:
    """What a specialization depends on in one argument: its type and rank, or for a
    container (a record, a list of (W, b) pairs) its structure and its leaves' types and
    ranks (``np.ndim`` of a record of a number and an array is an error)."""
    if not isinstance(value, (tuple, list, dict)) and not is_container(value):
        return (type(value), np.ndim(value))
    leaves, treedef = tree.flatten(value)
    try:
        hash(treedef)
    except TypeError:  # a registered class's unhashable auxiliary data
        treedef = repr(treedef)
    return (type(value), treedef, tuple((type(leaf), np.ndim(leaf)) for leaf in leaves))


def user_facing(composed) -> types.FunctionType:
    """The function users call for a transform built on generated code (`ComposedGradient`,
    `jacobian_code.ComposedJacobian`): the user's signature, then one lookup of the
    specialization the arguments select; `__wrapped_transform__` lets `sg.source`,
    `sg.export` and further transforms find `composed`."""

    @api_boundary
    def call(*args, **kwargs):
        values = bind(composed.f, args, kwargs)
        if any(isinstance(value, (list, dict, tuple)) for value in values):
            values = fresh_containers(values)  # the code calls `f` itself on them
        return composed.specialize(*values)(*values)

    call.__name__ = composed.entry
    call.__signature__ = inspect.signature(composed.analysis.fn)
    call.__wrapped_transform__ = composed
    return call


def grad_of_transformed(f, names: tuple[str, ...], is_tuple: bool, with_value: bool):
    """`sg.grad` of a function s2sgrad generated (see `ComposedGradient`)."""
    return ComposedGradient(f, names, is_tuple, with_value).wrapper()
