"""Many rows of one model in one statement of constant size: one array parameter per column, `unnest` in SQL.

Django's `bulk_create` writes one placeholder per value, so a batch of a few hundred rows becomes a statement of
tens of thousands of placeholders that the driver must parse on every call (psycopg's client-side binding does
not cache statements that long): for the memory rows of an agent-sized ingest batch that parsing cost more than
the insert. Here the statement has one placeholder per column whatever the number of rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import connection, models


def insert_rows(objs: Sequence[models.Model], *, returning: str | None = None) -> list[Any]:
    """INSERT every object of `objs` (one model, primary keys unset) in one statement; `returning`: a column whose
    values come back in input order (the objects' primary keys are set when it is the primary key column).

    Columns whose value is None in every row are left to their default (NULL): a vector column of rows not yet
    embedded needs no array type.
    """
    if not objs:
        return []
    model = type(objs[0])
    meta = model._meta
    fields = [f for f in meta.concrete_fields if not f.primary_key]
    columns, arrays, types = [], [], []
    for field in fields:
        values = [field.get_db_prep_save(getattr(obj, field.attname), connection) for obj in objs]
        if all(value is None for value in values):
            continue
        columns.append(connection.ops.quote_name(field.column))
        arrays.append(values)
        types.append(field.db_type(connection))
    table = connection.ops.quote_name(meta.db_table)
    unnest = ", ".join(f"%s::{db_type}[]" for db_type in types)
    names = ", ".join(f"c{i}" for i in range(len(columns)))
    # In input order (RETURNING follows it): WITH ORDINALITY numbers the rows.
    sql = f"INSERT INTO {table} ({', '.join(columns)}) SELECT {names} FROM unnest({unnest}) WITH ORDINALITY AS u({names}, n) ORDER BY n"
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
