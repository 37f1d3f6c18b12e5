"""The compiler, top to bottom: one function per transform, one line per pass.

`analyze` runs the passes that do not depend on argument types (so `sg.grad(f)` reports
unsupported code and missing rules at once); `generate_gradient` runs the rest for one
specialization. Set ``S2SGRAD_DEBUG=1`` (or pass ``debug=True``) to print the program after
every pass.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import types

import libcst as cst
from s2sgrad.runtime import Registry
from s2sgrad.runtime import registry as default_registry

from . import codegen, transform_cache
from .activity import Activity, analyze_activity
from .anf import NormalForm, normalize
from .aux import attach_aux, check_output, output_check, split_aux
from .call_kinds import callee_result
from .calls import link, split_of
from .complex_values import complex_names, may_be_complex
from .edges import entry_edges
from .fence import fence
from .forward import ForwardSpec, forward
from .forward_calls import forward_split_of
from .given import drop_unread, supply
from .naming import Namer, entry_name
from .operations import Classifier, names_in
from .optimize import optimize
from .parse import ParsedFunction, parse_function
from .resolve import RESERVED, Resolution, resolve
from .reverse import ReverseSpec, reverse
from .shapes import infer_shapes
from .spec import Generated, GradSpec


@dataclasses.dataclass(frozen=True)
class Analysis:
    """Everything known about a function before argument types are: the front half's output."""

    fn: types.FunctionType
    parsed: ParsedFunction
    resolution: Resolution
    nf: NormalForm
    activity: Activity
    namespace: dict
    namer: Namer
    spec: GradSpec
    entry: str
    aux: str | None = None  # with has_aux: the name holding aux (see transforms/aux.py)


def _debug_enabled(debug: bool) -> bool:
    return debug or os.environ.get("S2SGRAD_DEBUG", "") not in ("", "0")


# Called as hook(stage, text) after every pass (`s2sgrad dump --dump-after PASS` sets one).
pass_hooks: list = []


def _show(debug: bool, stage: str, node) -> None:
    if not debug and not pass_hooks:
        return
    text = (
        node
        if isinstance(node, str)
        else cst.Module(body=(node.visit(codegen.Parenthesize()),)).code
    )
    for hook in pass_hooks:
        hook(stage, text)
    if debug:
        print(f"---- after {stage} ----\n{text}", file=sys.stderr)


@dataclasses.dataclass(frozen=True)
class _FrontEnd:
    """What every transform of one function shares: its parse, resolution and normal form,
    and the namer as normal form left it (each transform names on from a copy)."""

    parsed: ParsedFunction
    resolution: Resolution
    nf: NormalForm
    namer: Namer


_FRONT_END = ("front end",)  # what a `_FrontEnd` is, in the transform cache's key


def _front_end(fn, debug: bool) -> _FrontEnd:
    """Parse, fence, resolve and normalize `fn`: found in the transform cache when another
    transform of `fn` did it (``sg.grad`` and ``sg.hessian`` of one function, the fuzzer's
    every mode), unless the passes' output is to be shown."""
    if debug or pass_hooks:
        return _build_front_end(fn, debug)
    return transform_cache.cached(fn, _FRONT_END, lambda: _build_front_end(fn, debug))


def _build_front_end(fn, debug: bool) -> _FrontEnd:
    parsed = parse_function(fn)
    _show(debug, "parse", parsed.funcdef)
    fence(parsed)
    resolution = resolve(parsed, fn)
    namer = Namer(
        {*resolution.locals, *resolution.spelling.values(), *RESERVED, *codegen.runtime_names()}
    )
    nf = normalize(parsed, resolution, namer)
    _show(debug, "normalize", nf.funcdef)
    return _FrontEnd(parsed, resolution, nf, namer)


def analyze(
    fn, spec: GradSpec, registry: Registry = default_registry, debug: bool = False
) -> Analysis:
    """Parse, fence, resolve, normalize and find the active values of `fn`."""
    debug = _debug_enabled(debug)
    front = _front_end(fn, debug)
    parsed, resolution, nf, namer = front.parsed, front.resolution, front.nf, front.namer.copy()
    aux = None
    if spec.has_aux:
        check_output(nf, parsed.name, True, "sg.value_and_grad" if spec.with_value else "sg.grad")
        nf, aux = split_aux(nf, namer)
        _show(debug, "split_aux", nf.funcdef)
    namespace = {**resolution.namespace(), **nf.constants}
    assigned = {
        name
        for statement in nf.statements
        if isinstance(statement, cst.Assign)
        for target in statement.targets
        for name in names_in(target.target)
    }
    local_names = frozenset(resolution.locals) | set(nf.line_of) | assigned
    classifier = Classifier(registry, namespace, local_names)
    generated = parsed.filename.startswith("<s2sgrad")  # a higher order: our own output
    activity = analyze_activity(nf, classifier, spec.wrt, spec.mode, generated)
    _show(debug, "activity", f"active: {', '.join(sorted(activity.active)) or '(none)'}")
    if spec.mode == "forward":
        entry = namer.fresh(f"jvp_{parsed.name}")
    elif spec.seeded:
        entry = namer.fresh(f"vjp_{parsed.name}")
    else:
        prefix = "value_and_d" if spec.with_value else "d"
        entry = namer.fresh(entry_name(parsed.name, spec.wrt, prefix))
    return Analysis(fn, parsed, resolution, nf, activity, namespace, namer, spec, entry, aux)


def generate_gradient(
    analysis: Analysis,
    scalar_params: frozenset[str] = frozenset(),
    array_ndims: dict | None = None,
    debug: bool = False,
    containers: frozenset[str] = frozenset(),
    array_shapes: dict | None = None,
    complex_args: frozenset[str] = frozenset(),
) -> Generated:
    """Build, optimize and compile the gradient (or, for a forward-mode spec, the JVP)
    function for one specialization (`array_shapes`: exact shapes of array parameters, when
    the specialization is for shapes rather than ranks; `complex_args`: parameters given
    complex values, which the specialization is for too)."""
    debug = _debug_enabled(debug)
    spec = analysis.spec
    complex_params = (*spec.complex_params, *sorted(complex_args))
    namer = analysis.namer.copy()
    shapes = infer_shapes(
        analysis.nf,
        analysis.activity,
        analysis.namespace,
        scalar_params,
        array_ndims or {},
        shaped_like=dict(spec.shaped_like),
        array_shapes=array_shapes,
        given=frozenset(spec.given),
        containers=containers,
        results=callee_result,
    )
    lists = shapes.maybe_sequences  # (and their tangents: joined as they are)
    if spec.mode == "forward":
        forward_spec = ForwardSpec(analysis.entry, spec.wrt, spec.batched, spec.identity_seed)
        tangent_names: dict[str, str] = {}
        funcdef, callees = forward(
            analysis.nf,
            analysis.activity,
            shapes,
            forward_spec,
            namer,
            forward_split_of,
            tangent_names,
        )
        lists = lists | {tangent_names[n] for n in lists if n in tangent_names}
        _show(debug, "forward", funcdef)
    else:
        seed = namer.fresh("cotangent") if spec.seeded else None
        reverse_spec = ReverseSpec(
            analysis.entry,
            spec.wrt,
            spec.wrt_is_tuple,
            spec.with_value,
            containers,
            seed,
            analysis.aux,
        )
        checks = ()
        if analysis.aux is None and not (spec.seeded or spec.given):  # sg.grad of a user's
            checks = output_check(analysis.nf, analysis.parsed.name)
        complex_possible = may_be_complex(
            analysis.nf.funcdef, analysis.activity, analysis.namespace, complex_params
        )
        funcdef, callees = reverse(
            analysis.nf,
            analysis.activity,
            shapes,
            reverse_spec,
            namer,
            split_of,
            checks,
            complex_possible,
            complex_names(
                analysis.nf.funcdef, analysis.activity, analysis.namespace, complex_params
            ),
        )
        _show(debug, "reverse", funcdef)
        if analysis.aux is not None:
            funcdef = attach_aux(funcdef, analysis.aux, spec.with_value)
        if spec.given:
            funcdef = supply(funcdef, spec.given, namer)
            _show(debug, "given", funcdef)
    if spec.optimize:
        funcdef = optimize(funcdef)
        _show(debug, "optimize", funcdef)
    if spec.simplify:  # sympy is imported only here, when asked for
        from .simplify import simplify

        funcdef = simplify(funcdef, scalars=scalar_params, lists=lists)
        _show(debug, "simplify", funcdef)
    if spec.given and spec.mode == "reverse":
        funcdef = drop_unread(funcdef)
        _show(debug, "drop_unread", funcdef)
    # (a tape's backward code copies no containers, it is given none; its results are
    # unaliased like any entry's: a recorded constant is the user's array, ``np.sum(w * GV)``
    # has the global GV itself as its gradient, and a Variable's value is one too)
    funcdef = entry_edges(funcdef, containers, analysis.nf.params, analysis.namespace)
    docstring = _docstring(analysis, scalar_params)
    source = codegen.render_module(funcdef, docstring, analysis.namespace)
    _show(debug, "codegen", source)
    function = codegen.compile_module(source, analysis.entry, analysis.namespace)
    link(function.__globals__, callees)
    for split in callees:  # the callees' code, for a reader of this module
        source += f"\n\n# {split.description}, called above:\n\n{split.source}"
    return Generated(source, function, analysis.entry)


def _docstring(analysis: Analysis, scalar_params: frozenset[str]) -> str:
    parsed = analysis.parsed
    spec = analysis.spec
    what = "value and gradient" if spec.with_value else "gradient"
    mode = "reverse mode"
    if spec.mode == "forward":
        what = "value and tangent"
        mode = "forward mode, batched directions" if spec.batched else "forward mode"
        if spec.identity_seed:
            what = "tangent"
            mode = f"forward mode, every unit direction of {spec.wrt[0]}"
    lines = [
        f"Generated by s2sgrad: {what} of {parsed.name} with respect to {', '.join(spec.wrt)} "
        f"({mode}).",
        "",
        f"Source: {parsed.filename}, line {parsed.first_line}.",
    ]
    if scalar_params:
        lines.append(f"Specialized for Python numbers: {', '.join(sorted(scalar_params))}.")
    if spec.given:
        lines.append("Backward sweep only: intermediate values are parameters, not recomputed.")
    return "\n".join(lines) + "\n"
