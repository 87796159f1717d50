"""The real ASGI application plus a stand-in timeline renderer appending into #run-tab (for browser tests).

The page's own timeline (#timeline-rows) belongs to the ingest part; this keeps the live browser test about
the transport: rows arrive without reload, reconnect fills the gap, nothing is duplicated.
"""

from __future__ import annotations

from typing import Any

from django.utils.html import escape

from awp_site import live
from awp_site.asgi import application  # noqa: F401  (served by daphne)
from state.services_redaction import redact_for


def browser_rows(run: Any, events: list[Any], viewer: live.Viewer) -> list[str]:
    rows = "".join(
        f'<div id="test-ev-{e.seq}" class="test-row" data-seq="{e.seq}">'
        f"{e.seq} {escape(e.kind)} {escape(str(redact_for(run.experiment, e.payload)))}</div>"
        for e in events
    )
    # An append swap inserts the children of the OOB element: the wrapper carries hx-swap-oob, the rows their ids.
    return [f'<div hx-swap-oob="beforeend:#run-tab">{rows}</div>'] if events else []


live.register_run_fragment("tests.browser_rows", browser_rows)
