"""A run that has ledger events cannot be deleted (a trigger, not a per-row foreign-key check on every event)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from experiments.ingest import EventIn, append_events
from experiments.models import Run
from tests.factories import make_run

pytestmark = pytest.mark.django_db


def test_a_run_with_events_cannot_be_deleted_and_one_without_can():
    kept, empty = make_run(), make_run()
    append_events(kept, [EventIn(kind="log", dedupe_key="one", payload={"msg": "x"})])
    with pytest.raises(IntegrityError, match="ledger"), transaction.atomic():
        Run.objects.filter(pk=kept.pk).delete()
    assert Run.objects.filter(pk=kept.pk).exists()
    Run.objects.filter(pk=empty.pk).delete()
    assert not Run.objects.filter(pk=empty.pk).exists()


def test_the_ledger_has_no_per_row_foreign_key_check_and_only_the_indexes_its_reads_use():
    with connection.cursor() as cursor:
        cursor.execute("SELECT contype FROM pg_constraint WHERE conrelid = 'experiments_event'::regclass")
        kinds = sorted(kind for (kind,) in cursor.fetchall())
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE tablename = 'experiments_event'")
        indexes = sorted(definition.split(" USING btree ")[1] for (definition,) in cursor.fetchall())
    assert kinds == ["p", "u", "u"]  # primary key and the two unique constraints; no "f"
    assert indexes == ["(id)", "(run_id, dedupe_key)", "(run_id, kind, seq)", "(run_id, seq)"]
