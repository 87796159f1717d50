"""Websocket consumers: run pages, experiment pages and the experiments list follow the ledger live.

Notify, then read: the channel layer only says "run R reached seq N"; a consumer reads the rows it has not
sent from Postgres, renders them with the registered fragment renderers (redacted for its viewer) and sends
one htmx out-of-band frame. Frames leave at once when the socket is idle (leading edge); what arrives while
a frame is unacknowledged, or within the consumer's `frame_gap` of the last one, is coalesced into the next
frame. Frames are capped (FRAME_ROWS) and windowed: the page acknowledges each frame, and at most WINDOW
frames are unacknowledged, so a slow browser never makes the server buffer more than WINDOW frames for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections import OrderedDict
from typing import Any
from urllib.parse import parse_qs

from channels.consumer import get_handler_name
from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.template.loader import render_to_string

from awp_site.live import (
    EXPERIMENTS_GROUP,
    Viewer,
    experiment_group,
    register_experiment_fragment,
    render_experiment_fragments,
    render_run_fragments,
    run_group,
)
from experiments.jsonb import json_document
from experiments.models import Event, Experiment, Run

log = logging.getLogger(__name__)

CLOSE_BAD_REQUEST = 4400
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN = 4403
FRAME_INTERVAL = 0.1  # seconds: the longest a frame waits for the previous one's ack before it goes anyway
FRAME_ROWS = 500  # ledger rows in one frame at most
SAFETY_POLL_SECONDS = 5.0  # an idle socket re-reads the head from Postgres this often
MAX_BEHIND = 2000  # further behind than this, the page gets a "load more" notice instead of rows
WINDOW = 2  # frames in flight (sent, not yet acknowledged) per socket
ROLE_RECHECK_SECONDS = 30.0  # a revoked membership stops the stream within this time


def frame_mark(frame: int, seq: int | None) -> str:
    """The element every frame carries: its number (for the ack) and the newest seq the page now has."""
    seq_attr = f' data-seq="{int(seq)}"' if seq is not None else ""
    return f'<span id="live-mark" hidden hx-swap-oob="true" data-frame="{int(frame)}"{seq_attr}></span>'


MIN_GAP = 0.005


def adaptive_gap(build_seconds: float, ceiling: float) -> float:
    """Twice the last frame's build time, between MIN_GAP and `ceiling`.

    A fixed 30 ms gap was most of the commit-to-frame latency at low rates (an event arriving just after a
    frame waited for the gap, not for work). Cheap frames (a quiet machine, a cached chunk) now follow each
    other closely; when frames are slow to build (a starved machine, big chunks) the gap grows back to the
    ceiling and coalesces, so a socket never spends more than a third of its time building frames.
    """
    return min(ceiling, max(MIN_GAP, 2 * build_seconds))


def query_params(scope: dict[str, Any]) -> dict[str, str]:
    raw = scope.get("query_string", b"").decode("latin-1")
    return {key: values[-1] for key, values in parse_qs(raw).items()}


class _FrameCache:
    """Rendered run frames keyed by (run, first seq, role, reveal) → (last seq, html).

    Keyed by where a frame starts, not where it ends: every socket at the same position takes the same
    chunk, so sockets stay on the same chunk boundaries and fifty of them cost one render per chunk.
    """

    def __init__(self, size: int = 512, ttl: float = 2.0) -> None:
        # Short-lived: the rows of a range never change, but its header fragment shows the run as it was.
        self.size, self.ttl, self.lock = size, ttl, threading.Lock()
        self.items = OrderedDict[tuple[Any, ...], tuple[float, tuple[int, str]]]()

    def get(self, key: tuple[Any, ...]) -> tuple[int, str] | None:
        with self.lock:
            entry = self.items.get(key)
            if entry is None or time.monotonic() - entry[0] > self.ttl:
                return None
            return entry[1]

    def put(self, key: tuple[Any, ...], value: tuple[int, str]) -> None:
        with self.lock:
            self.items[key] = (time.monotonic(), value)
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


run_frames = _FrameCache()
_rendering: dict[tuple[Any, ...], asyncio.Future[tuple[int, str]]] = {}
# How long the last frame of each run took to render (shared by its sockets, which mostly take it cached).
render_seconds: dict[int, float] = {}


def render_run_range(run_pk: int, after: int, upto: int, viewer: Viewer) -> tuple[int, str]:
    """OOB fragments for the run's events after < seq <= upto, as this viewer may see them."""
    from experiments.fragments import frame_run
    from state.services_redaction import known_secrets_checked_once, read_known_stamp

    run = frame_run(run_pk)
    events = list(Event.objects.filter(run_id=run_pk, seq__gt=after, seq__lte=upto).order_by("seq"))
    with known_secrets_checked_once():  # the renderers check the secrets once; the frame's net checks again
        read_known_stamp(run.experiment_id, run.known_stamp)  # read with the run: no query of their own
        return upto, "".join(render_run_fragments(run, events, viewer))


async def run_frame(run_pk: int, after: int, upto: int, viewer: Viewer) -> tuple[int, str]:
    """The next frame after `after` (reaching `upto`, or the chunk another socket already took from there).

    Rendered once however many sockets ask at the same moment; cache hits stay on the event loop, since a
    trip to the sync thread costs a database connection per call.
    """
    key = (run_pk, after, viewer.role, viewer.reveal_sensitive)
    cached = run_frames.get(key)
    if cached is not None:
        return cached
    pending = _rendering.get(key)
    if pending is not None and pending.get_loop() is asyncio.get_running_loop():
        return await asyncio.shield(pending)
    future: asyncio.Future[tuple[int, str]] = asyncio.get_running_loop().create_future()
    _rendering[key] = future
    try:
        started = time.monotonic()
        frame = await database_sync_to_async(render_run_range)(run_pk, after, upto, viewer)
        if len(render_seconds) > 1024:
            render_seconds.clear()
        render_seconds[run_pk] = time.monotonic() - started
        run_frames.put(key, frame)
        future.set_result(frame)
        return frame
    except BaseException as exc:
        future.set_exception(exc)
        future.exception()  # retrieved: waiters re-raise it, nobody else needs a warning
        raise
    finally:
        _rendering.pop(key, None)


class LiveConsumer(AsyncWebsocketConsumer):
    """Authentication, membership, the ack window and the coalescing pump; subclasses build frames."""

    # Least time between two frames of one socket. Experiment pages and the list re-render per frame for each
    # socket (no shared cache), so they keep one frame per FRAME_INTERVAL at most; run pages override it.
    frame_gap = FRAME_INTERVAL

    async def dispatch(self, message: dict[str, Any]) -> None:
        # Channels closes stale database connections before every message, which is a trip to the one sync
        # thread per ack and per notification: with 50 sockets that queue was most of the live latency.
        # Every database touch here already goes through database_sync_to_async, which closes them itself.
        handler = getattr(self, get_handler_name(message), None)
        if handler is None:
            raise ValueError(f"No handler for message type {message['type']}")
        await handler(message)

    async def connect(self) -> None:
        user = self.scope.get("user")
        self._pump_task: asyncio.Task[None] | None = None
        self.frames_sent = self.frames_acked = 0
        self.wake, self.acked = asyncio.Event(), asyncio.Event()
        if user is None or not user.is_authenticated:
            return await self._refuse(CLOSE_UNAUTHENTICATED)
        code = await self.authorize(user)
        if code:
            return await self._refuse(code)
        for group in self.live_groups():
            await self.channel_layer.group_add(group, self.channel_name)
            self.groups.append(group)  # websocket_disconnect discards them
        await self.accept()
        self.role_checked_at = time.monotonic()
        self._pump_task = asyncio.get_running_loop().create_task(self._pump())
        self.wake.set()

    async def _refuse(self, code: int) -> None:
        # Accept first so the browser sees the close code (a refused handshake only shows 1006).
        await self.accept()
        await self.close(code=code)

    async def disconnect(self, code: int) -> None:
        if self._pump_task is not None:
            self._pump_task.cancel()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        command = json_document(text_data or "{}")
        if not isinstance(command, dict):
            return
        ack = command.get("ack")
        if isinstance(ack, int) and self.frames_acked < ack <= self.frames_sent:
            self.frames_acked = ack
            self.acked.set()
        if command.get("more"):
            self.on_load_more()
            self.wake.set()

    async def live_resync(self, message: dict[str, Any]) -> None:
        """The layer lost notifications (its LISTEN connection dropped): re-read from Postgres."""
        self.on_resync()
        self.wake.set()

    async def _pump(self) -> None:
        loop = asyncio.get_running_loop()
        last_frame_at = -FRAME_INTERVAL
        build_seconds = 0.0
        try:
            while True:
                try:
                    await asyncio.wait_for(self.wake.wait(), timeout=SAFETY_POLL_SECONDS)
                except TimeoutError:
                    # Notify, then read, with a safety net: a notification lost in a Redis or LISTEN hiccup
                    # costs this socket a few seconds, never a row.
                    self.on_resync()
                # Coalesce only while a frame is in flight (or within frame_gap of the last one): an idle socket
                # gets its frame at once, a busy one gets everything that arrived meanwhile in one frame.
                while self.frames_sent - self.frames_acked >= WINDOW:
                    self.acked.clear()
                    await self.acked.wait()
                if self.frames_sent > self.frames_acked:
                    self.acked.clear()
                    wait = last_frame_at + FRAME_INTERVAL - loop.time()
                    if wait > 0:
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(self.acked.wait(), timeout=wait)
                delay = last_frame_at + self.gap_after(build_seconds) - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                self.wake.clear()
                if time.monotonic() - self.role_checked_at > ROLE_RECHECK_SECONDS:
                    self.role_checked_at = time.monotonic()
                    if await self.authorize(self.scope["user"]):
                        await self.close(code=CLOSE_FORBIDDEN)
                        return
                started = loop.time()
                body, seq, again = await self.build_frame()
                build_seconds = loop.time() - started
                if body or seq is not None:  # a frame that only moves the seq still lets the page resume right
                    self.frames_sent += 1
                    await self.send(text_data=body + frame_mark(self.frames_sent, seq))
                    last_frame_at = loop.time()
                if again:
                    self.wake.set()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("live: frame failed; closing the socket so the page reconnects and resumes")
            await self.close(code=1011)

    def gap_after(self, build_seconds: float) -> float:
        """The least time between two frames of this socket, given how long the last one took to build."""
        return self.frame_gap

    # -- subclass hooks --------------------------------------------------------------------------------

    async def authorize(self, user: Any) -> int:
        """0 when the user may watch, else the close code."""
        raise NotImplementedError

    def live_groups(self) -> list[str]:
        raise NotImplementedError

    async def build_frame(self) -> tuple[str, int | None, bool]:
        """(frame body or "", newest seq the page will have, whether more is waiting)."""
        raise NotImplementedError

    def on_resync(self) -> None:
        pass

    def on_load_more(self) -> None:
        pass


class RunConsumer(LiveConsumer):
    """/ws/runs/<run pk>/?after=<seq>: every event after `seq`, then each new one, as OOB fragments."""

    # Run frames are rendered once per seq range for all sockets with the same view (run_frame), so a frame
    # costs a send, not a render: a short gap. Not zero: with no gap at all, 50 sockets at 100 events/s on a
    # starved machine sent 5× more frames than with 100 ms and fell far behind (bench/README.md, Live).
    frame_gap = 0.03  # the ceiling; see gap_after

    def gap_after(self, build_seconds: float) -> float:
        # The shared render's cost, not this socket's cache hit: the frames of a run cost what rendering them costs.
        return adaptive_gap(max(build_seconds, render_seconds.get(self.run_pk, 0.0)), self.frame_gap)

    async def authorize(self, user: Any) -> int:
        run_pk = int(self.scope["url_route"]["kwargs"]["run_pk"])
        found = await database_sync_to_async(_run_and_role)(run_pk, user)
        if found is None:
            return CLOSE_FORBIDDEN  # a missing run and a foreign run look the same
        run, role = found
        if hasattr(self, "run_pk"):
            return 0  # a periodic re-check: keep the position
        after = query_params(self.scope).get("after")
        if after is not None and not (after.isdigit() and len(after) < 19):
            return CLOSE_BAD_REQUEST
        self.run_pk, self.experiment_id = run.pk, run.experiment_id
        self.viewer = Viewer(user=user, role=role, reveal_sensitive=False)
        self.last_sent = int(after) if after is not None else run.last_seq
        self.known_head: int | None = run.last_seq
        self.catching_up = False
        self.notice_shown = False
        return 0

    def live_groups(self) -> list[str]:
        return [run_group(self.run_pk)]

    async def run_advanced(self, message: dict[str, Any]) -> None:
        if self.known_head is not None:
            self.known_head = max(self.known_head, int(message["seq"]))
        self.wake.set()

    async def experiment_changed(self, message: dict[str, Any]) -> None:
        return None

    def on_resync(self) -> None:
        self.known_head = None  # read the head from Postgres

    def on_load_more(self) -> None:
        self.catching_up = True

    async def build_frame(self) -> tuple[str, int | None, bool]:
        head = self.known_head
        if head is None:
            head = self.known_head = await database_sync_to_async(_run_head)(self.run_pk)
        behind = head - self.last_sent
        if behind <= 0:
            self.catching_up = False
            return "", None, False
        if behind > MAX_BEHIND and not self.catching_up:
            self.notice_shown = True
            return _notice(behind), self.last_sent, False
        upto, body = await run_frame(self.run_pk, self.last_sent, min(head, self.last_sent + FRAME_ROWS), self.viewer)
        # A socket that fell behind the others finds their chunks cached: one frame carries them all (coalescing
        # while keeping the shared chunk boundaries), instead of one small frame per chunk.
        while upto < head:
            following = run_frames.get((self.run_pk, upto, self.viewer.role, self.viewer.reveal_sensitive))
            if following is None or following[0] - self.last_sent > FRAME_ROWS:
                break
            upto, body = following[0], body + following[1]
        if self.notice_shown and upto >= head:
            body += '<div id="live-notice" hx-swap-oob="true" hidden></div>'
            self.notice_shown = False
        self.last_sent = upto
        # Not max(head, upto) alone: a notification may have raised known_head while this frame rendered.
        self.known_head = max(self.known_head or 0, head, upto)
        return body, upto, upto < head


class ExperimentConsumer(LiveConsumer):
    """/ws/experiments/<slug>/: run rows, status dots and the review badge of one experiment."""

    async def authorize(self, user: Any) -> int:
        found = await database_sync_to_async(_experiment_and_role)(self.scope["url_route"]["kwargs"]["slug"], user)
        if found is None:
            return CLOSE_FORBIDDEN
        experiment, role = found
        self.experiment_id = experiment.pk
        self.viewer = Viewer(user=user, role=role, reveal_sensitive=False)
        if not hasattr(self, "changed"):
            self.changed: set[int] = set()
            # A reconnecting page missed changes: refresh what moved most recently.
            self.dirty = query_params(self.scope).get("resume") == "1"
            if self.dirty:
                self.changed.update(await database_sync_to_async(_recent_run_ids)(experiment.pk))
        return 0

    def live_groups(self) -> list[str]:
        return [experiment_group(self.experiment_id)]

    async def run_advanced(self, message: dict[str, Any]) -> None:
        self.changed.add(int(message["run"]))
        self.dirty = True
        self.wake.set()

    async def experiment_changed(self, message: dict[str, Any]) -> None:
        self.dirty = True
        self.wake.set()

    def on_resync(self) -> None:
        self.dirty = True

    async def build_frame(self) -> tuple[str, int | None, bool]:
        if not self.dirty:
            return "", None, False
        changed, self.changed, self.dirty = sorted(self.changed), set(), False
        body = await database_sync_to_async(_render_experiment)(self.experiment_id, self.viewer, changed)
        return body, None, False


class ExperimentListConsumer(LiveConsumer):
    """/ws/experiments/: the experiments list; one shared group, filtered by membership before rendering."""

    async def authorize(self, user: Any) -> int:
        self.pending: dict[int, set[int]] = getattr(self, "pending", {})
        self.roles: dict[int, str | None] = {}  # re-read on each check: memberships change
        return 0

    def live_groups(self) -> list[str]:
        return [EXPERIMENTS_GROUP]

    async def run_advanced(self, message: dict[str, Any]) -> None:
        self.pending.setdefault(int(message["experiment"]), set()).add(int(message["run"]))
        self.wake.set()

    async def experiment_changed(self, message: dict[str, Any]) -> None:
        self.pending.setdefault(int(message["experiment"]), set())
        self.wake.set()

    async def build_frame(self) -> tuple[str, int | None, bool]:
        if not self.pending:
            return "", None, False
        pending, self.pending = self.pending, {}
        body = await database_sync_to_async(_render_list)(self.scope["user"], pending, self.roles)
        return body, None, False


# -- ORM, run in the sync thread ---------------------------------------------------------------------


def _run_and_role(run_pk: int, user: Any) -> tuple[Run, str] | None:
    run = Run.objects.select_related("experiment").filter(pk=run_pk).first()
    role = run.experiment.role_of(user) if run else None
    return (run, role) if run is not None and role else None


def _run_head(run_pk: int) -> int:
    return int(Run.objects.values_list("last_seq", flat=True).get(pk=run_pk))


def _experiment_and_role(slug: str, user: Any) -> tuple[Experiment, str] | None:
    experiment = Experiment.objects.filter(slug=slug).first()
    role = experiment.role_of(user) if experiment else None
    return (experiment, role) if experiment is not None and role else None


def _recent_run_ids(experiment_id: int) -> list[int]:
    return list(Run.objects.filter(experiment_id=experiment_id).order_by("-updated_at").values_list("pk", flat=True)[:50])


def _render_experiment(experiment_id: int, viewer: Viewer, changed: list[int]) -> str:
    experiment = Experiment.objects.get(pk=experiment_id)
    return "".join(render_experiment_fragments(experiment, viewer, changed))


def _render_list(user: Any, pending: dict[int, set[int]], roles: dict[int, str | None]) -> str:
    out: list[str] = []
    for experiment in Experiment.objects.filter(pk__in=list(pending)):
        if experiment.pk not in roles:
            roles[experiment.pk] = experiment.role_of(user)
        role = roles[experiment.pk]
        if role:  # experiments the user cannot see never reach this socket
            viewer = Viewer(user=user, role=role, reveal_sensitive=False)
            out.extend(render_experiment_fragments(experiment, viewer, sorted(pending[experiment.pk])))
    return "".join(out)


def _notice(behind: int) -> str:
    return render_to_string("live/_notice.html", {"behind": behind})


# -- the experiment page's status dot (the list row comes from experiments.fragments, the review badges from
# memory.curation.badge, run rows on the Runs tab from experiments.fragments too) ------------------------------


def experiment_status_fragments(experiment: Experiment, viewer: Viewer, changed_run_ids: list[int]) -> list[str]:
    """The experiment page's status dot, swapped in place by id."""
    return [render_to_string("live/_experiment_oob.html", {"e": experiment})]


register_experiment_fragment("live.experiment_status", experiment_status_fragments)
