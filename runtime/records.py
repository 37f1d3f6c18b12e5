"""Records built inside a differentiated function: ``p = Params(w=x * 2, b=v)``.

Normal form writes a call of a NamedTuple or dataclass class as a dict of its fields' values
(a dict literal, whose adjoint and tangent are by key as for any dict) and one call of
`make_record`, linear in that dict: its tangent is the fields' tangents by key, as the
tangent of a record argument is (`record_tangent`: ``tp["w"]`` is the tangent of ``p.w``),
and the adjoint of the dict is the adjoint of each field read back from the record's
adjoint (`field_adjoints`). Reads of the record (``p.w``, ``p[0]``,
``w, b = p``) are differentiated as for a record argument (`containers.part`).
"""

from .containers import ContainerAdjoint, element_keys, part, positions_of
from .registry import registry

__all__ = ["field_adjoints", "make_record", "record_tangent"]


def make_record(fields, cls, names: tuple):
    """``cls(**fields)`` for the fields `names` (a field the call left out is not among
    them: the class's default); a missing key of a tangent's dict is a zero tangent."""
    return cls(**{name: fields[name] for name in names})


def field_adjoints(g, names: tuple) -> ContainerAdjoint:
    """The adjoint of the dict of a record's fields, from the record's adjoint `g` (by key,
    by position for a NamedTuple, a record given as a cotangent, or a zero)."""
    batch = g.batch if isinstance(g, ContainerAdjoint) else None
    return ContainerAdjoint({name: part(g, name) for name in names}, batch=batch, keys=names)


def record_tangent(t, record, names: tuple) -> ContainerAdjoint:
    """The tangent of `record`, built from the fields `names` whose tangents are `t` (by
    key; a field left to its default has none)."""
    batch = t.batch if isinstance(t, ContainerAdjoint) else None
    tangent = ContainerAdjoint(
        batch=batch, keys=element_keys(record), positions=positions_of(record)
    )
    for name in names:
        tangent[name] = part(t, name)
    return tangent


@registry.jvp(make_record)
def _make_record_jvp(tangents, ans, fields, cls, names):
    return record_tangent(tangents[0], ans, names)


@registry.vjp(make_record)
def _make_record_vjp(g, ans, fields, cls, names):
    return field_adjoints(g, names)


registry.linear(field_adjoints, record_tangent)  # (in the adjoint, and in the tangent)


# (a field's adjoint is read back by its name, from a dict's adjoint or a record's)
@registry.vjp(field_adjoints)
def _field_adjoints_vjp(g, ans, adjoint, names):
    return g


@registry.vjp(record_tangent)
def _record_tangent_vjp(g, ans, t, record, names):
    return g
