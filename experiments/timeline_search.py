"""Search inside a run's event payloads, on the server, as the viewer sees them (redacted).

Postgres narrows the candidates (`payload::text ILIKE`), then each candidate is redacted and kept only if
its redacted text still holds the words: searching for a secret finds nothing, so the search is no oracle
for what the masks hide.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import QuerySet, TextField
from django.db.models.functions import Cast

from experiments.models import Event

CHUNK = 500
MAX_CANDIDATES = 20_000  # per request: a page of a very common word stops here and offers the next page


def matching_page(experiment: Any, events: QuerySet[Event], text: str, *, after: int, before: int | None, size: int) -> tuple[list[Event], bool, bool]:
    """(events of the page, whether older matches may exist, whether newer ones may)."""
    from state.services_redaction import redactor_for

    redactor = redactor_for(experiment)
    needle = text.casefold()
    candidates = events.alias(payload_text=Cast("payload", TextField())).filter(payload_text__icontains=text)
    backwards = before is not None
    found: list[Event] = []
    cursor = before if backwards else after
    scanned = 0
    exhausted = False
    while len(found) <= size and scanned < MAX_CANDIDATES:
        window = candidates.filter(seq__lt=cursor).order_by("-seq") if backwards else candidates.filter(seq__gt=cursor).order_by("seq")
        chunk = list(window[:CHUNK])
        if not chunk:
            exhausted = True
            break
        scanned += len(chunk)
        for event in chunk:
            shown = json.dumps(redactor.value(event.payload), ensure_ascii=False, default=str)
            if needle in shown.casefold():
                found.append(event)
        cursor = chunk[-1].seq
    more = len(found) > size or not exhausted
    page = found[:size]
    if backwards:
        page.reverse()
        return page, more, bool(page)
    return page, after > 0, more
