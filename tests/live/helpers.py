"""Helpers for live tests: a test timeline renderer, frame parsing, a socket with the real auth stack."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from channels.testing import WebsocketCommunicator
from django.test import Client
from django.utils.html import escape

from awp_site import live
from experiments.ingest import EventIn, append_events
from experiments.models import Run
from state.services_redaction import redact_for

ROW = re.compile(r'<tr id="test-ev-(\d+)"')
MARK = re.compile(r'id="live-mark"[^>]*data-frame="(\d+)"(?: data-seq="(\d+)")?')


def test_rows(run: Any, events: list[Any], viewer: live.Viewer) -> list[str]:
    """A stand-in timeline renderer that redacts the way real ones must."""
    rows = "".join(
        f'<tr id="test-ev-{e.seq}"><td>{e.kind}</td><td>{escape(json.dumps(redact_for(run.experiment, e.payload)))}</td></tr>'
        for e in events
    )
    return [f'<tbody hx-swap-oob="beforeend:#timeline-rows">{rows}</tbody>'] if events else []


def install_test_renderer() -> None:
    live.register_run_fragment("tests.rows", test_rows)


def remove_test_renderer() -> None:
    live._RUN_RENDERERS[:] = [(n, r) for n, r in live._RUN_RENDERERS if n != "tests.rows"]


def append(run: Run, count: int, kind: str = "log", payload: dict[str, Any] | None = None, start: int = 0) -> list[int]:
    """Append `count` events (distinct dedupe keys from `start`) in one transaction; returns their seqs."""
    events = [EventIn(kind=kind, dedupe_key=f"t:{start + i}", payload=payload or {"i": start + i}) for i in range(count)]
    return append_events(run, events).seqs


def session_headers(user: Any) -> list[tuple[bytes, bytes]]:
    client = Client()
    client.force_login(user)
    cookie = client.cookies["sessionid"].value
    return [(b"cookie", f"sessionid={cookie}".encode()), (b"origin", b"http://127.0.0.1"), (b"host", b"127.0.0.1")]


def communicator(path: str, user: Any | None) -> WebsocketCommunicator:
    """A socket through the real ASGI stack (origin check, session auth, routing, consumers)."""
    from awp_site.asgi import application

    headers = session_headers(user) if user is not None else [(b"origin", b"http://127.0.0.1")]
    return WebsocketCommunicator(application, path, headers=headers)


class Frames:
    """Frames received on one socket, acknowledged as a page does."""

    def __init__(self, comm: WebsocketCommunicator, ack: bool = True) -> None:
        self.comm, self.ack, self.texts = comm, ack, []

    async def next(self, timeout: float = 10) -> str:
        text = await self.comm.receive_from(timeout=timeout)
        self.texts.append(text)
        mark = MARK.search(text)
        assert mark, "every frame carries #live-mark"
        if self.ack:
            await self.comm.send_to(text_data=json.dumps({"ack": int(mark.group(1))}))
        return text

    async def until_seq(self, seq: int, timeout: float = 15) -> list[int]:
        """Receive until a frame marks `seq`; returns the row seqs of those frames, in order."""
        rows: list[int] = []
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            text = await self.next(timeout=max(0.1, deadline - loop.time()))
            rows += [int(s) for s in ROW.findall(text)]
            mark = MARK.search(text)
            if mark and mark.group(2) and int(mark.group(2)) >= seq:
                return rows

    @property
    def all_text(self) -> str:
        return "".join(self.texts)
