"""Many rows of one model in one statement of constant size: one array parameter per column, `unnest` in SQL.

Django's `bulk_create` writes one placeholder per value, so a batch of a few hundred rows becomes a statement of
tens of thousands of placeholders that the driver must parse on every call (psycopg's client-side binding does
not cache statements that long): for the memory rows of an agent-sized ingest batch that parsing cost more than
the insert. Here the statement has one placeholder per column whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.db.models.base import ModelState


def insert_rows(objs: Sequence[models.Model], *, returning: str | None = None, ignore_conflicts: bool = False) -> list[Any]:
    """INSERT every object of `objs` (one model, primary keys unset) in one statement; `returning`: a column whose
    values come back in input order (the objects' primary keys are set when it is the primary key column);
    `ignore_conflicts`: rows a unique constraint refuses are skipped (ON CONFLICT DO NOTHING, as bulk_create's).

    Columns whose value is None in every row are left to their default (NULL): a vector column of rows not yet
    embedded needs no array type. An array column travels as one array literal per row (`unnest` would flatten
    an array of arrays) and is cast back in SQL.
    """
    if not objs:
        return []
    assert not (ignore_conflicts and returning), "skipped rows would leave the returned values out of step"
    model = type(objs[0])
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns, arrays, types, selects = [], [], [], []
    for field in fields:
        if isinstance(field, ArrayField):
            values = [None if (items := getattr(obj, field.attname)) is None else _array_literal(items) for obj in objs]
        else:
            values = [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in objs]
        if all(value is None for value in values):
            continue
        name = f"c{len(columns)}"
        columns.append(connection.ops.quote_name(field.column))
        arrays.append(values)
        db_type = field.db_type(connection)
        types.append("text" if isinstance(field, ArrayField) else db_type)
        selects.append(f"{name}::{db_type}" if isinstance(field, ArrayField) else name)
    table = connection.ops.quote_name(meta.db_table)
    unnest = ", ".join(f"%s::{db_type}[]" for db_type in types)
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    # In input order (RETURNING follows it): WITH ORDINALITY numbers the rows.
    sql = f"INSERT INTO {table} ({', '.join(columns)}) SELECT {', '.join(selects)} FROM unnest({unnest}) WITH ORDINALITY AS u({names}, n) ORDER BY n"
    if ignore_conflicts:
        sql += " ON CONFLICT DO NOTHING"
    if returning is not None:
        sql += f" RETURNING {connection.ops.quote_name(returning)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, arrays)
        out = [row[0] for row in cursor.fetchall()] if returning is not None else []
    if returning == meta.pk.column:
        for obj, pk in zip(objs, out, strict=True):
            obj.pk = pk
            obj._state.adding = False
    return out


_ARRAY_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"'})


def _array_literal(items: Sequence[Any]) -> str:
    """A Postgres array literal of text items (`{"a","b"}`): every item quoted, backslashes and quotes escaped."""
    return "{" + ",".join('"' + str(item).translate(_ARRAY_ESCAPES) + '"' for item in items) + "}"


# model -> (constant defaults by attname, fields whose default is a callable: called for every instance, as
# Model.__init__ does, so no two instances share a dict, a list or a timestamp)
_DEFAULTS: dict[type[models.Model], tuple[dict[str, Any], tuple[Any, ...]]] = {}


def bare(model: type[models.Model], values: dict[str, Any]) -> Any:
    """An unsaved instance of `model` for insert_rows, without Model.__init__'s per-field work: `values` by
    attname (`experiment_id`), every other field at its default."""
    defaults = _DEFAULTS.get(model)
    if defaults is None:
        fields = model._meta.concrete_fields
        called = tuple(field for field in fields if field.has_default() and callable(field.default))
        constant = {field.attname: field.get_default() for field in fields if field not in called}
        defaults = _DEFAULTS[model] = (constant, called)
    constant, called = defaults
    obj = model.__new__(model)
    obj.__dict__.update(constant)
    for field in called:
        if field.attname not in values:
            obj.__dict__[field.attname] = field.get_default()
    obj.__dict__.update(values)
    obj._state = ModelState()
    return obj
