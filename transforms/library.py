"""Which Python functions are library code: primitives, never transformed (DESIGN.md).

A function defined in an installed package (SciPy, scikit-learn, ...) or in the standard
library is differentiated by its rules alone: the compiler looks it up in the registry, and one
without a rule is a `LookupError` naming it. Transforming it instead would fail somewhere in
the library's own source (``scipy.special.logsumexp`` calls private helpers, checks types,
catches exceptions), with an error about code the user never wrote. User code is everything
else: the user's own modules and notebooks, including packages installed in editable mode
from the user's directories.

The decision is by the file the function's code comes from: under a site-packages (or
dist-packages) folder or the standard library's folder, it is library code. NumPy, `math`,
builtins and s2sgrad's own runtime are library code by name, wherever they are installed.
No libcst here: `s2sgrad.callables` asks too.
"""

from __future__ import annotations

import builtins
import functools
import os
import site
import sys
import sysconfig
import types

# s2sgrad's own modules whose functions are transformed like the user's: generated code calls
# generated code (higher order), and sg.nn's activations are NumPy code without rules
_TRANSFORMED_OWN = ("s2sgrad.generated.",)
_TRANSFORMED_OWN_MODULES = ("s2sgrad.nn",)
_LIBRARY_MODULES = ("numpy", "s2sgrad", "math", "builtins", "scipy")


def is_library_function(fn: object) -> bool:
    """Whether the Python function `fn` is library code (see the module docstring)."""
    if not isinstance(fn, types.FunctionType):
        return False
    module = getattr(fn, "__module__", "") or ""
    if module.startswith(_TRANSFORMED_OWN) or module in _TRANSFORMED_OWN_MODULES:
        return False
    if module.partition(".")[0] in _LIBRARY_MODULES:
        return True
    return _is_library_file(fn.__code__.co_filename)


def is_library_module(module: types.ModuleType) -> bool:
    """Whether `module` is library code (what an exported module may import by name)."""
    name = module.__name__
    if name.startswith(_TRANSFORMED_OWN) or name in _TRANSFORMED_OWN_MODULES:
        return False
    if name.partition(".")[0] in _LIBRARY_MODULES:
        return True
    return _is_library_file(getattr(module, "__file__", None) or "")


def is_user_function(fn: object) -> bool:
    """A Python function of the user's, transformed where it is called. A
    ``@sg.custom_gradient`` function counts (its own code gives the value)."""
    if not isinstance(fn, types.FunctionType):
        return False
    return hasattr(fn, "__sg_custom_gradient__") or not is_library_function(fn)


@functools.lru_cache(maxsize=4096)
def _is_library_file(filename: str) -> bool:
    if not os.path.isabs(filename):  # <string>, <stdin>, a notebook cell
        return False
    path = os.path.normcase(os.path.realpath(filename))
    return any(path.startswith(root) for root in library_folders())


@functools.cache
def library_folders() -> tuple[str, ...]:
    """The folders holding installed packages and the standard library, each ending with a
    separator (so ``/usr/lib/python3.11`` does not take in ``/usr/lib/python3.11-user``)."""
    folders = set()
    paths = sysconfig.get_paths()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        if paths.get(key):
            folders.add(paths[key])
    try:
        folders.update(site.getsitepackages())
    except AttributeError:  # an old virtualenv's site module
        pass
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        folders.add(site.getusersitepackages())
    folders.update(p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages"))
    normalized = {os.path.normcase(os.path.realpath(f)) for f in folders if f}
    return tuple(sorted(os.path.join(f, "") for f in normalized))


# library functions s2sgrad leaves to a later issue, with what to write instead
_LATER = {
    name: (
        "; s2sgrad has no adjoint ODE solver (sensitivities of an ODE solution by the adjoint "
        "method are planned for a later issue, after issue 17). Write the integrator in your "
        "own code instead, for example fixed-step RK4 in a for loop over the time steps "
        "(k1 = f(y, t); k2 = f(y + h / 2 * k1, t + h / 2); ...; y = y + h / 6 * (k1 + 2 * k2 "
        "+ 2 * k3 + k4)): s2sgrad differentiates that loop with respect to y0 and the "
        "parameters, in every mode"
    )
    for name in ("scipy.integrate.odeint", "scipy.integrate.solve_ivp")
}
# methods of a frozen scipy.stats distribution, which s2sgrad cannot tell from array methods
_DISTRIBUTION_METHODS = ("logpdf", "pdf", "cdf", "logcdf", "sf", "logsf", "logpmf", "pmf")
_FROZEN = (
    "; a frozen scipy.stats distribution ({example}(loc, scale).logpdf(x), or d = "
    "{example}(loc, scale) and then d.logpdf(x)) is not differentiated: call the "
    "distribution's method with its parameters instead, {example}.logpdf(x, loc, scale) "
    "(also pdf, cdf, logcdf, sf, logsf; logpmf, pmf of discrete ones), which has rules for "
    "the value and every parameter"
)


# builtins with no rule, and what to write instead (any other: `_BUILTIN`)
_UFUNC_METHODS = (".reduce", ".accumulate", ".outer", ".reduceat")
_UFUNC_METHOD_INSTEAD = {
    "add.reduce": "np.sum(x, axis=0)",
    "multiply.reduce": "np.prod(x, axis=0)",
    "maximum.reduce": "np.max(x, axis=0)",
    "minimum.reduce": "np.min(x, axis=0)",
    "add.accumulate": "np.cumsum(x, axis=0)",
    "multiply.accumulate": "np.cumprod(x, axis=0)",
    "multiply.outer": "np.outer(a, b) (or a[:, None] * b for any shapes)",
    "add.outer": "a[:, None] + b",
    "subtract.outer": "a[:, None] - b",
}
_BUILTIN_INSTEAD = {
    "sorted": "np.sort(x) for the values, or np.argsort(x) for an order to index with",
    "tuple": "a tuple literal (a, b), or list(...)",
    "zip": "zip(...) as what a for loop or a comprehension runs over",
    "divmod": "x // y and x % y",
    "dict": "a dict literal {'a': a}, or dict(a=a)",
    "reversed": "reversed(...) as what a for loop runs over, or x[::-1]",
}
_BUILTIN = "; the builtin {name}() has no derivative in s2sgrad: write {instead}"


_OWN_HELPER = (
    "; it is a helper of code s2sgrad generated (a Jacobian's batched sweep, for one), which "
    "cannot be differentiated again yet: for second derivatives use sg.hessian(f) or "
    "sg.jacobian(sg.grad(f)) (of a weighted sum of a vector function's outputs)"
)


def _is_builtin(primitive: object, name: str) -> bool:
    return getattr(builtins, name, None) is primitive


def _is_distribution(primitive: object) -> bool:
    """A ``scipy.stats`` distribution object (``scipy.stats.norm``), called to freeze it.
    (SciPy is only looked at if the program imported it.)"""
    stats = sys.modules.get("scipy.stats")
    return stats is not None and isinstance(primitive, (stats.rv_continuous, stats.rv_discrete))


def missing_rule_hint(primitive: object, name: str, mode: str = "reverse") -> str:
    """The lines of a `LookupError` for `primitive` (called `name`) with no rule: what a rule
    for it looks like, to register before transforming (an indented three-line snippet); for
    a few library functions, what to write instead."""
    if name in _LATER:
        return _LATER[name]
    if name.startswith("numpy.") and name.endswith(_UFUNC_METHODS):
        instead = _UFUNC_METHOD_INSTEAD.get(name.removeprefix("numpy."), "the NumPy function")
        return f"; ufunc methods have no gradient rules: write {instead} instead"
    if _is_distribution(primitive):
        return _FROZEN.format(example=name)
    if primitive is None and name.startswith("array method .") and (
        name.partition(".")[2] in _DISTRIBUTION_METHODS
    ):
        return _FROZEN.format(example="scipy.stats.norm")
    if primitive is None or not callable(primitive):
        return ""
    if name.startswith("s2sgrad.runtime."):
        return _OWN_HELPER
    if isinstance(primitive, type) and hasattr(primitive, "__post_init__"):
        return (
            f"; {name} is a dataclass with a __post_init__, whose computation s2sgrad does not "
            f"follow when the record is built inside the function: compute those fields in "
            f"the function and build the record from them, or build it outside and pass it in"
        )
    if _is_builtin(primitive, name):
        instead = _BUILTIN_INSTEAD.get(name, "the computation with NumPy functions instead")
        return _BUILTIN.format(name=name, instead=instead)
    params = ", ".join(_parameter_names(primitive))
    short = name.rpartition(".")[2] or "primitive"
    if mode == "reverse":
        head, leading, body = "register_vjp", "g, ans", "g * ...  # the gradient for each input"
    else:
        head, leading, body = "register_jvp", "tangents, ans", "...  # the output's tangent"
    rule = f"{short}_{'vjp' if mode == 'reverse' else 'jvp'}"
    return (
        f"; a library function is differentiated by its rules, never through its source. "
        f"Register one before transforming, for example:\n"
        f"    @sg.{head}({name})\n"
        f"    def {rule}({leading}{', ' if params else ''}{params}):\n"
        f"        return {body}"
    )


def _parameter_names(primitive: object) -> list[str]:
    """The required positional parameters of `primitive` (``x0, x1`` for a ufunc's inputs
    when it has no signature)."""
    import inspect

    try:
        signature = inspect.signature(primitive)
    except (TypeError, ValueError):
        return [f"x{k}" for k in range(getattr(primitive, "nin", 1))]
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    required = [
        p.name
        for p in signature.parameters.values()
        if p.kind in kinds and p.default is inspect.Parameter.empty
    ]
    # (a parameter named like the rule's own leading ones is renamed in the example)
    return [f"{n}_" if n in ("g", "ans", "tangents") else n for n in required] or ["x"]
