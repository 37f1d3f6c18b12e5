"""`sg.jvp`: forward mode, generated as source like the reverse transforms."""

from __future__ import annotations

import types

import numpy as np

from s2sgrad.runtime import is_container, is_record, keyed, part
from s2sgrad.runtime.containers import elements, rebuilt
from s2sgrad.transforms import transform_cache
from s2sgrad.transforms.pipeline import GradSpec, analyze

from . import tree
from .binding import arguments, bind, check_output, check_value, concrete, transformed
from .callables import as_function
from .dispatch import CompiledGradient
from .traceback_filter import api_boundary


def forward_transform(
    f,
    wrt: tuple[str, ...],
    batched: bool = False,
    identity_seed: bool = False,
    shaped_like: tuple[tuple[str, str], ...] = (),
) -> CompiledGradient:
    """The compiled forward-mode transform of `f` for tangents of the parameters `wrt` (with
    `identity_seed`, of its one parameter along every unit direction, with no tangent
    parameter: the columns of a Jacobian; `shaped_like`, see `GradSpec`)."""
    if not isinstance(f, types.FunctionType):
        raise TypeError(
            f"s2sgrad transforms Python functions defined with `def`; got "
            f"{type(f).__name__} {getattr(f, '__name__', f)!r}"
        )
    options = (wrt, batched, identity_seed, shaped_like)
    spec = _specs.get(options)
    if spec is None:  # (a frozen dataclass costs microseconds to build: one per options)
        spec = _specs[options] = GradSpec(
            wrt=wrt,
            mode="forward",
            batched=batched,
            identity_seed=identity_seed,
            shaped_like=shaped_like,
        )
    return transform_cache.cached(f, spec, lambda: CompiledGradient(analyze(f, spec)))


_specs: dict[tuple, GradSpec] = {}  # forward_transform's options -> their GradSpec


@api_boundary
def jvp(f, primals, tangents):
    """Evaluate `f` at `primals` and its directional derivative along `tangents`.

    Args:
        f: a Python function defined in a file.
        primals: a tuple (or list) with one value per positional argument of `f`.
        tangents: a tuple of the same length: the direction for each argument (same shape
            as the primal; ``None`` for an argument held constant).

    Returns:
        ``(f(*primals), tangent_out)``, computed together by generated forward-mode code.

    Example:
        >>> def f(x):
        ...     return np.sin(x) * x
        >>> sg.jvp(f, (1.0,), (1.0,))   # doctest: +SKIP
        (0.8414709848078965, 1.3817732906760363)
    """
    primals, tangents = _check_pairs(primals, tangents)
    f = as_function(f, "jvp", len(primals))
    values = bind(f, primals)  # keyword-only parameters and the others left out: defaults
    return jvp_of_values(f, values, tangents + (None,) * (len(values) - len(tangents)))


def jvp_of_values(f, values: tuple, tangents: tuple) -> tuple:
    """`jvp` with a value and a tangent (or None) for every parameter of `f`, in order."""
    user = transformed(f) is None
    if not user:  # a generated function: its code is transformed again
        f = concrete(f, values)
    params = _parameters(f)
    wrt = tuple(p for p, t in zip(params, tangents, strict=True) if t is not None)
    compiled = forward_transform(f, wrt)
    if user:
        check_output(compiled, "sg.jvp", containers=True)
    positional, keywords = arguments(f, params, values)
    # a NamedTuple's or dataclass's tangent as derivative code reads it, by field (``tp["W"]``)
    active = [keyed(t) for t in tangents if t is not None]
    result = compiled.function_for(*values)(*positional, *active, **keywords)
    if user:
        check_value(result[0], f, "sg.jvp")
        if is_container(result[0]):
            return result[0], in_structure(result[1], result[0])
    return result


def in_structure(tangent, value):
    """`tangent`, of the container `value` as derivative code holds it (a NamedTuple's or
    dataclass's keyed by field, ``tp["W"]``), in `value`'s own structure: a NamedTuple's
    tangent is that NamedTuple. Leaves are kept as they are (batched ones too)."""
    if tangent is None or not is_container(value):
        return tangent
    items = {key: in_structure(part(tangent, key), item) for key, item in elements(value)}
    if is_record(value):
        return rebuilt(value, items)
    if isinstance(value, dict):
        return {key: items[key] for key in value}
    built = [items[k] for k in range(len(value))]
    return built if isinstance(value, list) else tuple(built)


def _positional(f) -> list[str]:
    code = f.__code__
    return list(code.co_varnames[: code.co_argcount])


def _parameters(f) -> list[str]:
    """Every parameter of `f`: the positional ones, then the keyword-only ones."""
    code = f.__code__
    return list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])


def _check_pairs(primals, tangents):
    if not isinstance(primals, (tuple, list)):
        raise TypeError(f"primals must be a tuple of arguments; got {type(primals).__name__}")
    if not isinstance(tangents, (tuple, list)):
        raise TypeError(f"tangents must be a tuple of arguments; got {type(tangents).__name__}")
    if len(primals) != len(tangents):
        raise ValueError(
            f"primals and tangents must have the same length; got {len(primals)} and "
            f"{len(tangents)}"
        )
    pairs = enumerate(zip(primals, tangents, strict=True))
    tangents = [checked_tangent(k, primal, tangent) for k, (primal, tangent) in pairs]
    return tuple(primals), tuple(tangents)


def checked_tangent(position: int, primal, tangent):
    """`tangent` if it is one for `primal` (the same structure, each leaf of its primal's
    shape), None for the zero tangent of an integer array (a label, an index: the derivative
    code refused to index with it); otherwise a ValueError naming the argument. A tangent of
    another shape was broadcast against its primal without a word, a wrong derivative."""
    if tangent is None:
        return None
    primal_leaves, primal_tree = tree.flatten(primal)
    if len(primal_leaves) != 1:  # a pytree: None for a leaf is its zero tangent (an integer
        # count's), as None for an argument; the tangent then has the primal's structure
        try:
            given = primal_tree.flatten_up_to(tangent)
        except ValueError:
            raise ValueError(
                f"tangents[{position}] must have the structure of primals[{position}] (one "
                f"array or number per leaf, or None for a zero); got {tree.structure(tangent)} "
                f"for {primal_tree}"
            ) from None
        pairs = zip(primal_leaves, given, strict=True)
        zeros = [np.zeros(np.shape(p)) if t is None else t for p, t in pairs]
        tangent = tree.unflatten(primal_tree, zeros)
    tangent_leaves, tangent_tree = tree.flatten(tangent)
    if len(primal_leaves) != len(tangent_leaves) or (
        len(primal_leaves) != 1 and tangent_tree != primal_tree
    ):
        raise ValueError(
            f"tangents[{position}] must have the structure of primals[{position}] (one array "
            f"or number per leaf); got {_described(tangent)} for {_described(primal)}"
        )
    if all(_is_integer(leaf) for leaf in primal_leaves) and not any(map(np.any, tangent_leaves)):
        return None  # an integer argument's zero tangent: no derivative, as None says
    for leaf, tangent_leaf in zip(primal_leaves, tangent_leaves, strict=True):
        if np.shape(leaf) != np.shape(tangent_leaf):
            raise ValueError(
                f"tangents[{position}] must have the shape of primals[{position}], "
                f"{np.shape(leaf)}; got {np.shape(tangent_leaf)}"
            )
    return tangent


def _is_integer(value) -> bool:
    """An integer or boolean NumPy array or scalar (a Python int may be a float's value)."""
    dtype = getattr(value, "dtype", None)
    return dtype is not None and dtype.kind in "iub"


def _described(value) -> str:
    if isinstance(value, (np.ndarray, np.generic)):
        return f"an array of shape {np.shape(value)}"
    return f"a {type(value).__name__}"
