"""Many rows of one model in one statement of constant size: one JSON parameter (or one array per column) in SQL.

Django's `bulk_create` writes one placeholder per value, so a batch of a few hundred rows becomes a statement of
tens of thousands of placeholders that the driver must parse on every call (psycopg's client-side binding does
not cache statements that long): for the memory rows of an agent-sized ingest batch that parsing cost more than
the insert. Here the statement has one placeholder per column whatever the number of rows.
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
from django.contrib.postgres.fields import ArrayField
from django.db import connection, models
from django.db.models.base import ModelState


def insert_rows(objs: Sequence[models.Model], *, returning: str | None = None, ignore_conflicts: bool = False) -> list[Any]:
    """INSERT every object of `objs` (one model, primary keys unset) in one statement; `returning`: a column whose
    values come back in input order (the objects' primary keys are set when it is the primary key column);
    `ignore_conflicts`: rows a unique constraint refuses are skipped (ON CONFLICT DO NOTHING, as bulk_create's).

    The rows travel as one JSON document (`jsonb_to_recordset`): orjson writes it in C, where the driver's
    client-side binding quotes array parameters element by element in Python (500 agent texts: 10 ms against
    85 ms). Rows JSON cannot carry as they are (a NaN, a vector, bytes, a field with its own JSON encoder) take
    one array parameter per column (`unnest`). Columns whose value is None in every row are left to their
    default (NULL).
    """
    if not objs:
        return []
    assert not (ignore_conflicts and returning), "skipped rows would leave the returned values out of step"
    model = type(objs[0])
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns: list[tuple[Any, list[Any]]] = []
    for field in fields:
        values = [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in objs]
        if any(value is not None for value in values):
            columns.append((field, values))
    table = connection.ops.quote_name(meta.db_table)
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    targets = ", ".join(connection.ops.quote_name(field.column) for field, _ in columns)
    document = _as_json(columns, len(objs))
    if document is not None:
        typed = ", ".join(f"c{i} {field.db_type(connection)}" for i, (field, _) in enumerate(columns))
        source, params = f"ROWS FROM (jsonb_to_recordset(%s::jsonb) AS ({typed})) WITH ORDINALITY AS u({names}, n)", [document]
        selects = names
    else:
        source, params, selects = _unnest(columns, names)
    # In input order (RETURNING follows it): WITH ORDINALITY numbers the rows.
    sql = f"INSERT INTO {table} ({targets}) SELECT {selects} FROM {source} ORDER BY n"
    if ignore_conflicts:
        sql += " ON CONFLICT DO NOTHING"
    if returning is not None:
        sql += f" RETURNING {connection.ops.quote_name(returning)}"
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        out = [row[0] for row in cursor.fetchall()] if returning is not None else []
    if returning == meta.pk.column:
        for obj, pk in zip(objs, out, strict=True):
            obj.pk = pk
            obj._state.adding = False
    return out


_JSON_SAFE = (str, int, bool, dt.datetime, dt.date, dt.time, uuid.UUID)


def _as_json(columns: list[tuple[Any, list[Any]]], count: int) -> str | None:
    """The rows as one JSON array of {"c<i>": value} objects, or None when a value would not survive the trip."""
    plain: list[list[Any]] = []
    for field, values in columns:
        if isinstance(field, models.JSONField):
            if field.encoder is not None:
                return None
            values = [getattr(value, "obj", value) for value in values]  # the driver's Jsonb wrapper
        elif isinstance(field, ArrayField):
            if not all(value is None or all(isinstance(item, str | int) and not isinstance(item, bool) for item in value) for value in values):
                return None
        elif not all(value is None or (isinstance(value, float) and math.isfinite(value)) or isinstance(value, _JSON_SAFE) for value in values):
            return None  # NaN would become null, a vector or bytes would change type
        plain.append(values)
    rows = [{f"c{i}": column[row] for i, column in enumerate(plain)} for row in range(count)]
    try:
        return orjson.dumps(rows).decode()
    except (TypeError, orjson.JSONEncodeError):
        return None  # a lone surrogate, an integer past 64 bits: the driver's path says what is wrong


def _unnest(columns: list[tuple[Any, list[Any]]], names: str) -> tuple[str, list[Any], str]:
    """One array parameter per column; an array column as one array literal per row (`unnest` would flatten an
    array of arrays), cast back in SQL."""
    params, types, selects = [], [], []
    for i, (field, values) in enumerate(columns):
        db_type = field.db_type(connection)
        if isinstance(field, ArrayField):
            params.append([None if items is None else _array_literal(items) for items in values])
            types.append("text")
            selects.append(f"c{i}::{db_type}")
        else:
            params.append(values)
            types.append(db_type)
            selects.append(f"c{i}")
    unnest = ", ".join(f"%s::{db_type}[]" for db_type in types)
    return f"unnest({unnest}) WITH ORDINALITY AS u({names}, n)", params, ", ".join(selects)


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
