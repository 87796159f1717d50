"""Timeline rows as presenters build them: the times read as the `date` filter printed them (no database)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.template import engines

from experiments.presenters import EventView

MOMENTS = [
    datetime(2026, 11, 25, 4, 5, 6, tzinfo=UTC),
    datetime(2026, 11, 25, 23, 59, 59, 123456, tzinfo=UTC),
    datetime(2026, 3, 1, 0, 30, tzinfo=timezone(timedelta(hours=5, minutes=30))),  # another zone: shown in UTC
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_row_times_print_what_the_date_filter_printed(moment):
    template = engines["django"].from_string("{{ ts|date:'c' }}|{{ ts|date:\"Y-m-d H:i:s\" }}")
    view = EventView(1, "log", "", None, 0, moment, "record", "", "{}")
    assert f"{view.ts_iso}|{view.ts_clock}" == template.render({"ts": moment})
