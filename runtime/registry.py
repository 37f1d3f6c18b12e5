"""The primitive registry: one entry per differentiable (or explicitly non-differentiable) callable.

A *primitive* is any callable the compiler treats as a unit: a NumPy function or ufunc, an
`operator` function standing for Python syntax (`operator.mul` for `a * b`), a `math` function, a
runtime helper, or a user function marked with `sg.primitive`.

An entry holds rule *templates*. A template is a small Python function that is never called by
generated code: the compiler parses its source and inlines its body, so the rules are the
vocabulary of the generated code. What a reverse-rule (VJP) template sees and returns:

    def multiply(g, ans, x, y):
        return g * y, g * x

- ``g`` is the adjoint of the result. It may be *lazily broadcast*: any value that broadcasts to
  ``ans``'s shape (for instance the Python float ``1.0`` seeding the sum of an array). Rules
  registered with ``elementwise=True`` are written so this is harmless; for every other rule the
  compiler first makes ``g`` exactly ``ans``'s shape.
- ``ans`` is the result of the primitive call. The remaining parameters are the primitive's own
  parameters, named as the primitive names them, so keyword arguments of the call bind by name.
  Static arguments (``axis``, ``keepdims``, shapes) arrive as the expressions the call used.
- The body is assignments followed by one ``return``. A tuple literal returns one contribution
  per parameter after ``ans`` (``None`` where a parameter has no gradient); any other expression
  is the contribution of the first parameter alone.
- A template with a keyword-only parameter ``argnum`` is instantiated once per differentiated
  positional argument of the call (variadic primitives such as ``einsum``) and returns that
  argument's contribution.
- For ``elementwise=True`` rules the compiler reduces a contribution to its argument's shape
  (``unbroadcast``) unless it can prove the shapes already agree, so no rule handles
  broadcasting itself.

Names a template uses besides its parameters must be ``np``, ``math`` or helpers exported by
``s2sgrad.runtime``: they are the names generated code imports.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import inspect
import os
import sys
import types
import warnings
from collections.abc import Callable, Iterable, Iterator

__all__ = ["Registry", "Rule", "check_template", "qualified_name", "registry"]


@dataclasses.dataclass(frozen=True)
class Rule:
    """Everything the compiler knows about one primitive.

    Attributes:
        primitive: the callable itself (the registry key).
        name: its dotted name for messages, e.g. ``numpy.sin``.
        vjp: reverse-rule template, or None.
        jvp: forward-rule template, or None.
        differentiable: False for functions whose result carries no gradient (floor, argmax,
            comparisons); such calls are never differentiated and need no template.
        elementwise: the result has the broadcast shape of the array arguments and the VJP
            template accepts a lazily broadcast ``g``.
        reduction: the result of a call without ``axis`` is a scalar (sum, mean, ...).
        broadcast_g: the VJP template of a rule that is not elementwise accepts a lazily
            broadcast ``g`` too (its contributions do not depend on ``g``'s exact shape), so
            the compiler need not make ``g`` full: nor, then, compute ``ans`` for its shape
            alone (``logsumexp``, whose value SciPy computes slowly, is left uncomputed when
            only its gradient is asked for).
        output: for primitives returning a tuple, the index of the one component that carries
            a gradient; ``g`` is that component's adjoint and ``ans`` the whole tuple
            (``np.linalg.slogdet``: 1, the log-determinant).
        linear: positions of the arguments in which the primitive is linear (jointly
            multilinear when several: ``matmul`` is linear in each of its two). Its forward
            rule is derived: the call itself with one argument replaced by its tangent, summed
            over the arguments that have one.
        batched_jvp: for a linear primitive whose arguments name axes or shapes, the forward
            rule for tangents with a leading batch axis (a Jacobian's directions). Without
            one, a batched sweep maps the primitive over the directions.
        sequences: parameters that take a sequence of arrays (``concatenate``'s ``arrays``),
            whose rules give one contribution per element. A list or tuple passed to any other
            parameter of a NumPy function is one array (``np.var([x, 2 * x])``): the compiler
            makes it one with ``np.asarray`` first, so no rule sees a list there.
        result_like: a function with the primitive's signature returning a stand-in for its
            result (a zero-strided array of the result's shape and dtype: `fft_helpers.
            stand_in`) computed from the arguments' shapes and static arguments, without
            running the primitive; its array arguments may be stand-ins themselves. Where
            the derivative reads a result only for its shape or dtype, the compiler computes
            this instead (``np.fft.rfft``'s result for the adjoint of ``* h``; see
            `transforms/stand_ins.py`). Elementwise rules need none.
    """

    primitive: Callable
    name: str
    vjp: Callable | None = None
    jvp: Callable | None = None
    differentiable: bool = True
    elementwise: bool = False
    reduction: bool = False
    broadcast_g: bool = False
    output: int | None = None
    linear: tuple[int, ...] | None = None
    batched_jvp: Callable | None = None
    sequences: tuple[str, ...] = ()
    result_like: Callable | None = None

    @property
    def has_forward_rule(self) -> bool:
        """A forward rule exists: written, derived from linearity, or from an elementwise
        reverse rule (a diagonal map is its own transpose)."""
        return (
            self.jvp is not None
            or self.linear is not None
            or (self.elementwise and self.vjp is not None)
        )


def qualified_name(fn: object) -> str:
    """The dotted name users know a callable by: ``numpy.sin``, ``numpy.linalg.inv``,
    ``scipy.special.gammaln`` (a ufunc, which does not say where it lives),
    ``scipy.special.logsumexp`` (defined in the private ``scipy.special._logsumexp``),
    ``scipy.stats.norm.logpdf`` (a method of the object ``scipy.stats.norm``)."""
    name = getattr(fn, "__name__", None)
    if name is None:  # a callable object: ``scipy.stats.norm`` rather than its class's name
        where = _public_home(fn, getattr(type(fn), "__module__", None) or "")
        if where is not None:
            return where
        name = type(fn).__name__
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, _ufunc_type()):  # a ufunc's method: ``numpy.add.reduce``
        return f"{qualified_name(owner)}.{name}"
    if isinstance(fn, types.MethodType) and not isinstance(owner, (type, types.ModuleType)):
        where = _public_home(owner, type(owner).__module__)
        if where is not None:
            return f"{where}.{name}"
    module = getattr(fn, "__module__", None)
    if module is None and isinstance(fn, _ufunc_type()):
        module = _ufunc_home(fn, name)
    if module in (None, "builtins"):
        return name
    if module.startswith("numpy.") and module.count(".") >= 1:
        # numpy functions often live in private submodules: report the public path.
        public = module.split("._")[0]
        return f"{public}.{name}"
    if "._" in module:  # scipy.special._logsumexp.logsumexp is scipy.special.logsumexp
        public = module.split("._")[0]
        if getattr(sys.modules.get(public), name, None) is fn:
            return f"{public}.{name}"
    return f"{module}.{name}"


def _ufunc_type() -> type:
    import numpy as np

    return np.ufunc


def _ufunc_home(fn: object, name: str) -> str | None:
    """The module a ufunc is published in: numpy's own, or SciPy's special functions (already
    imported if `fn` is one of them; this never imports SciPy)."""
    for module in ("numpy", "scipy.special"):
        if getattr(sys.modules.get(module), name, None) is fn:
            return module
    return None


def _public_home(obj: object, module: str) -> str | None:
    """``scipy.stats.norm`` for the object published as ``norm`` in the public part of
    `module` (``scipy.stats._continuous_distns``), or None."""
    public = sys.modules.get(module.split("._")[0])
    for key, value in vars(public).items() if public is not None else ():
        if value is obj:
            return f"{public.__name__}.{key}"
    return None


class Registry:
    """A mapping from primitive callables to their `Rule`.

    The package fills one global instance, `registry`, from ``runtime/rules/``. Registering a
    second rule for the same primitive replaces the first and warns. `copy` gives an independent
    registry, so a test can register rules without touching the global one.
    """

    def __init__(self) -> None:
        self._rules: dict[object, Rule] = {}
        self.version = 0  # bumped on every change; compiled-code caches include it in their key

    # -- reading -------------------------------------------------------------------------------
    def lookup(self, primitive: object) -> Rule | None:
        """The rule for `primitive`, or None if it has none."""
        try:
            rule = self._rules.get(primitive)
        except TypeError:  # unhashable callables cannot be primitives
            return None
        if rule is None:  # an ``sg.primitive`` wrapper: the rules of the function it wraps
            wrapped = getattr(primitive, "__sg_primitive__", None)
            if wrapped is not None:
                return self._rules.get(wrapped)
            if "scipy" in sys.modules and self._add_optional(primitive):
                return self._rules.get(primitive)
        return rule

    def __contains__(self, primitive: object) -> bool:
        return self.lookup(primitive) is not None

    def __iter__(self) -> Iterator[Rule]:
        if "scipy" in sys.modules:
            self._add_optional(None)
        return iter(list(self._rules.values()))

    def __len__(self) -> int:
        return len(self._rules)

    # -- rules of optional libraries (SciPy) ------------------------------------------------------
    def _add_optional(self, primitive: object) -> bool:
        """Add the rules of the optional SciPy rule modules whose SciPy subpackage the program
        has imported, when `primitive` is one of theirs (None: in any case); whether it is.
        Rules already present are kept: a rule the user registered wins."""
        found = _optional_rules()
        if primitive is not None and primitive not in found:
            return False
        missing = {key: rule for key, rule in found.items() if key not in self._rules}
        if missing:
            self._rules.update(missing)
            self.version += 1
        return True

    def load_scipy_rules(self) -> None:
        """Import SciPy (if installed) and add every SciPy rule: for listings of all rules.
        Transforms need not call this: a SciPy function's rules are added when it is first
        looked up."""
        for name in _optional_modules():
            with contextlib.suppress(ImportError):
                importlib.import_module(f"scipy.{name}")
        if "scipy" in sys.modules:
            self._add_optional(None)

    # -- writing -------------------------------------------------------------------------------
    def _store(self, rule: Rule, *, warn: bool = True) -> None:
        if warn and rule.primitive in self._rules:
            warnings.warn(
                f"replacing the gradient rule registered for {rule.name}",
                UserWarning,
                stacklevel=4,
            )
        self._rules[rule.primitive] = rule
        self.version += 1

    def register_vjp(
        self,
        primitive: Callable,
        template: Callable,
        *,
        elementwise: bool = False,
        reduction: bool = False,
        output: int | None = None,
        warn: bool = True,
        broadcast_g: bool = False,
    ) -> None:
        """Record `template` as the reverse rule of `primitive` (keeps an existing forward rule)."""
        check_template(template, "vjp")
        old = self.lookup(primitive)
        base = old if old is not None else Rule(primitive, qualified_name(primitive))
        rule = dataclasses.replace(
            base,
            vjp=template,
            differentiable=True,
            elementwise=elementwise,
            reduction=reduction,
            output=output,
            broadcast_g=broadcast_g,
        )
        self._store(rule, warn=warn and old is not None and old.vjp is not None)

    def register_jvp(self, primitive: Callable, template: Callable, *, warn: bool = True) -> None:
        """Record `template` as the forward rule of `primitive` (keeps an existing reverse rule)."""
        check_template(template, "jvp")
        old = self.lookup(primitive)
        base = old if old is not None else Rule(primitive, qualified_name(primitive))
        rule = dataclasses.replace(base, jvp=template, differentiable=True)
        self._store(rule, warn=warn and old is not None and old.jvp is not None)

    def register_linear(self, primitive: Callable, positions: tuple[int, ...] = (0,)) -> None:
        """Mark `primitive` as linear in the arguments at `positions` (see `Rule.linear`)."""
        old = self.lookup(primitive)
        base = old if old is not None else Rule(primitive, qualified_name(primitive))
        self._store(dataclasses.replace(base, linear=tuple(positions)), warn=False)

    def linear(self, *primitives: Callable, positions: tuple[int, ...] = (0,)) -> None:
        """Mark each of `primitives` linear in the arguments at `positions`."""
        for primitive in primitives:
            self.register_linear(primitive, positions)

    def batched(self, *primitives: Callable):
        """Decorator: the batched forward rule of each of the linear `primitives`."""

        def decorate(template: Callable) -> Callable:
            check_template(template, "jvp")
            for primitive in primitives:
                old = self.lookup(primitive)
                base = old if old is not None else Rule(primitive, qualified_name(primitive))
                self._store(dataclasses.replace(base, batched_jvp=template), warn=False)
            return template

        return decorate

    def mark_sequences(self, primitive: Callable, *params: str) -> None:
        """Mark the parameters of `primitive` that take a sequence of arrays (see
        `Rule.sequences`)."""
        old = self.lookup(primitive)
        base = old if old is not None else Rule(primitive, qualified_name(primitive))
        self._store(dataclasses.replace(base, sequences=tuple(params)), warn=False)

    def results_like(self, helper: Callable, *primitives: Callable) -> None:
        """`helper` computes a stand-in for the result of each of `primitives` (see
        `Rule.result_like`); a helper of generated code, it has no derivative."""
        self.register_nondiff([helper])
        for primitive in primitives:
            old = self.lookup(primitive)
            base = old if old is not None else Rule(primitive, qualified_name(primitive))
            self._store(dataclasses.replace(base, result_like=helper), warn=False)

    def register_primitive(self, primitive: Callable) -> None:
        """Make `primitive` opaque: called as a unit, never transformed; its derivatives are
        the rules registered for it later (none yet). Keeps rules it already has."""
        if self.lookup(primitive) is None:
            self._store(Rule(primitive, qualified_name(primitive)), warn=False)

    def register_nondiff(self, primitives: Iterable[Callable]) -> None:
        """Mark callables whose results carry no derivative (floor, argmax, comparisons, ...)."""
        for primitive in primitives:
            self._store(
                Rule(primitive, qualified_name(primitive), differentiable=False), warn=False
            )

    @contextlib.contextmanager
    def scratch(self) -> Iterator[Registry]:
        """A block after which the rules registered in it are forgotten (tests register
        rules for their own functions this way without leaving them behind)."""
        saved = dict(self._rules)
        try:
            yield self
        finally:
            self._rules = saved
            self.version += 1  # code compiled with the forgotten rules is not reused

    def copy(self) -> Registry:
        """An independent registry with the same rules."""
        other = Registry()
        other._rules = dict(self._rules)
        other.version = self.version
        return other

    # -- decorators used by runtime/rules/ ------------------------------------------------------
    def jvp(self, *primitives: Callable):
        """Decorator: register the decorated template as the JVP of each of `primitives`."""

        def decorate(template: Callable) -> Callable:
            for primitive in primitives:
                self.register_jvp(primitive, template, warn=False)
            return template

        return decorate

    def vjp(
        self,
        *primitives: Callable,
        elementwise: bool = False,
        reduction: bool = False,
        output: int | None = None,
        broadcast_g: bool = False,
    ):
        """Decorator: register the decorated template as the VJP of each of `primitives`."""

        def decorate(template: Callable) -> Callable:
            for primitive in primitives:
                self.register_vjp(
                    primitive,
                    template,
                    elementwise=elementwise,
                    reduction=reduction,
                    output=output,
                    warn=False,
                    broadcast_g=broadcast_g,
                )
            return template

        return decorate


def check_template(template: object, kind: str) -> None:
    """Raise TypeError unless `template` is a function whose first parameters are those of a
    `kind` ("vjp" or "jvp") rule."""
    if not isinstance(template, types.FunctionType):
        raise TypeError(f"a {kind} rule must be a Python function, got {type(template).__name__}")
    params = list(inspect.signature(template).parameters)
    expected = ["g", "ans"] if kind == "vjp" else ["tangents", "ans"]
    if params[:2] != expected:
        raise TypeError(
            f"a {kind} rule's first parameters must be {', '.join(expected)}; "
            f"{template.__name__} has ({', '.join(params)})"
        )


registry = Registry()

# -- optional rule modules ------------------------------------------------------------------------
#
# SciPy stays optional: ``import s2sgrad`` never imports it. The rules of ``scipy.<name>`` live
# in ``runtime/rules/scipy_<name>.py`` (which imports SciPy at its top) and are imported the
# first time the registry misses a callable after the program itself imported ``scipy.<name>``
# (a SciPy function can only reach the compiler once its subpackage is imported). The rules a
# module registered are remembered, so a registry copied, or scoped with `Registry.scratch`,
# before they were loaded gets them too when it first misses one.

_optional_loaded: dict[str, dict[object, Rule]] = {}  # module name -> the rules it registered


def _optional_modules() -> tuple[str, ...]:
    """The ``<name>`` of every ``runtime/rules/scipy_<name>.py``, found by listing the folder
    (so a new family of SciPy rules needs no edit here)."""
    global _optional_names
    if _optional_names is None:
        folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rules")
        _optional_names = tuple(
            sorted(
                entry[len("scipy_") : -len(".py")]
                for entry in os.listdir(folder)
                if entry.startswith("scipy_") and entry.endswith(".py")
            )
        )
    return _optional_names


_optional_names: tuple[str, ...] | None = None


def _optional_rules() -> dict[object, Rule]:
    """The rules of every optional module loaded so far, importing those whose SciPy
    subpackage the program has imported since."""
    for name in _optional_modules():
        if name not in _optional_loaded and f"scipy.{name}" in sys.modules:
            _load_optional(name)
    found: dict[object, Rule] = {}
    for rules in _optional_loaded.values():
        found.update(rules)
    return found


def _load_optional(name: str) -> None:
    _optional_loaded[name] = {}  # (registering looks rules up: no second import meanwhile)
    before = dict(registry._rules)
    try:
        importlib.import_module(f"{__package__}.rules.scipy_{name}")
    except ImportError as error:  # an older SciPy without a function a rule names
        warnings.warn(
            f"s2sgrad: no SciPy rules for scipy.{name} ({error})", RuntimeWarning, stacklevel=4
        )
    added = {key: rule for key, rule in registry._rules.items() if before.get(key) is not rule}
    for key in added.keys() & before.keys():  # a rule the user registered first is kept
        registry._rules[key] = before[key]
    _optional_loaded[name] = added
