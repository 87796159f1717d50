"""A Channels layer on Postgres LISTEN/NOTIFY: one listening connection per process and event loop.

Why our own: live updates are "notify, then read" — the layer carries tiny messages ("run R reached seq N")
that every process must see, and consumers read the rows from Postgres. NOTIFY does exactly that with no
extra infrastructure: each group_send is one `pg_notify(channel, '{"g": [groups], "m": message}')`; each
process LISTENs once and hands the message to its local members of those groups. Nothing is stored, so a
process that was disconnected gets a `live.resync` message per local channel when it reconnects and its
consumers re-read from Postgres. docs/live.md compares it with channels-postgres.

Limits: a NOTIFY payload is under 8,000 bytes (messages here are a few dozen); point-to-point `send` to a
channel of another process works for the process-specific names this layer hands out.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
import weakref
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psycopg
from channels.exceptions import ChannelFull
from channels.layers import BaseChannelLayer

log = logging.getLogger(__name__)

MAX_PAYLOAD_BYTES = 7900
RESYNC = {"type": "live.resync"}


def encode(groups: Iterable[str] | None, message: dict[str, Any], channel: str | None = None) -> str:
    """The NOTIFY payload for a message to groups (or to one channel); raises ValueError past the size limit."""
    body: dict[str, Any] = {"m": message}
    if channel is not None:
        body["c"] = channel
    else:
        body["g"] = list(groups or [])
    payload = json.dumps(body, separators=(",", ":"), ensure_ascii=False)
    if len(payload.encode()) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"channel message of {len(payload)} bytes is over the NOTIFY limit of {MAX_PAYLOAD_BYTES}")
    return payload


def django_conninfo(alias: str = "default") -> str:
    """A libpq connection string for Django's database `alias` (the test database under pytest)."""
    from django.db import connections

    params = connections[alias].get_connection_params()
    keep = {key: value for key, value in params.items() if isinstance(value, str | int) and key != "prepare_threshold"}
    return psycopg.conninfo.make_conninfo(**keep)


@dataclass
class _LoopState:
    """Everything bound to one event loop: local queues, local group members, the listener, the sender."""

    channels: dict[str, asyncio.Queue[dict[str, Any]]] = field(default_factory=dict)
    groups: dict[str, set[str]] = field(default_factory=dict)
    listener: asyncio.Task[None] | None = None
    listening: asyncio.Event = field(default_factory=asyncio.Event)
    sender: psycopg.AsyncConnection[Any] | None = None
    sender_lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class PostgresNotifyLayer(BaseChannelLayer):
    """Channel layer whose groups span processes through Postgres NOTIFY; local delivery via asyncio queues."""

    extensions = ["groups", "flush"]

    def __init__(
        self,
        expiry: int = 60,
        capacity: int = 100,
        channel_capacity: dict[str, int] | None = None,
        conninfo: str | None = None,
        database_alias: str = "default",
        notify_channel: str = "awp_live",
        **kwargs: Any,
    ) -> None:
        super().__init__(expiry=expiry, capacity=capacity, channel_capacity=channel_capacity, **kwargs)
        self.channel_capacity = self.compile_capacities(channel_capacity or {})
        self._conninfo = conninfo
        self.database_alias = database_alias
        if not notify_channel.isidentifier():
            raise ValueError("notify_channel must be a plain identifier")
        self.notify_channel = notify_channel
        self.prefix = f"pg{uuid.uuid4().hex[:12]}"
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()

    # -- plumbing -------------------------------------------------------------------------------------

    def conninfo(self) -> str:
        # Resolved late: under pytest the database name changes after settings load.
        return self._conninfo or django_conninfo(self.database_alias)

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _LoopState()
        return state

    def _queue(self, state: _LoopState, channel: str) -> asyncio.Queue[dict[str, Any]]:
        queue = state.channels.get(channel)
        if queue is None:
            queue = state.channels[channel] = asyncio.Queue(maxsize=self.get_capacity(channel))
        return queue

    async def _ensure_listening(self, state: _LoopState) -> None:
        if state.listener is None or state.listener.done():
            state.listening.clear()
            state.listener = asyncio.get_running_loop().create_task(self._listen(state), name="awp-pg-listen")
        # Joining a group must not return before LISTEN is active, or a notify right after could be missed.
        await asyncio.wait_for(state.listening.wait(), timeout=15)

    async def _listen(self, state: _LoopState) -> None:
        delay, connected_before = 0.1, False
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(self.conninfo(), autocommit=True) as conn:
                    await conn.execute(f"LISTEN {self.notify_channel}")
                    if connected_before:
                        # Notifications sent while we were away are gone: every local consumer re-reads.
                        self._deliver_to_all(state, RESYNC)
                    connected_before, delay = True, 0.1
                    state.listening.set()
                    async for note in conn.notifies():
                        self._dispatch(state, note.payload)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the database went away: retry with backoff, consumers keep their sockets
                log.warning("live: LISTEN connection lost (%s); retrying in %.1fs", type(exc).__name__, delay)
            state.listening.clear()
            await asyncio.sleep(delay)
            delay = min(delay * 2, 5.0)

    def _dispatch(self, state: _LoopState, payload: str) -> None:
        try:
            body = json.loads(payload)
            message = body["m"]
        except (ValueError, KeyError, TypeError):
            log.warning("live: ignoring a malformed notification")
            return
        if "c" in body:
            if body["c"] in state.channels or body["c"].startswith(self.prefix):
                self._put(state, body["c"], message, raise_full=False)
            return
        for group in body.get("g") or []:
            for channel in list(state.groups.get(group, ())):
                self._put(state, channel, message, raise_full=False)

    def _deliver_to_all(self, state: _LoopState, message: dict[str, Any]) -> None:
        for channel in {c for members in state.groups.values() for c in members}:
            self._put(state, channel, message, raise_full=False)

    def _put(self, state: _LoopState, channel: str, message: dict[str, Any], *, raise_full: bool) -> None:
        queue = self._queue(state, channel)
        key = message.get("coalesce")
        if key is not None:
            # "Run R reached seq N" supersedes an undelivered "reached seq M": a busy consumer gets one wake-up.
            for waiting in queue._queue:  # type: ignore[attr-defined]
                if waiting.get("coalesce") == key and waiting.get("type") == message.get("type"):
                    waiting.update(message)
                    return
        try:
            queue.put_nowait(dict(message))
        except asyncio.QueueFull:
            # A full queue means its consumer is busy; for notify-then-read the next read covers the loss.
            if raise_full:
                raise ChannelFull(channel) from None

    async def _notify(self, payload: str) -> None:
        state = self._state()
        async with state.sender_lock:
            for attempt in (1, 2):
                try:
                    if state.sender is None or state.sender.closed:
                        state.sender = await psycopg.AsyncConnection.connect(self.conninfo(), autocommit=True)
                    await state.sender.execute("SELECT pg_notify(%s, %s)", (self.notify_channel, payload))
                    return
                except psycopg.OperationalError:
                    state.sender = None
                    if attempt == 2:
                        raise

    # -- channel layer API ----------------------------------------------------------------------------

    async def new_channel(self, prefix: str = "specific.") -> str:
        return f"{prefix}{self.prefix}!{uuid.uuid4().hex[:16]}"

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_channel_name(channel)
        state = self._state()
        if self.prefix in channel or channel in state.channels:
            self._put(state, channel, message, raise_full=True)
        else:
            await self._notify(encode(None, message, channel=channel))

    async def receive(self, channel: str) -> dict[str, Any]:
        self.require_valid_channel_name(channel)
        state = self._state()
        queue = self._queue(state, channel)
        try:
            return await queue.get()
        finally:
            # Drop the queue when idle so channels of finished consumers do not pile up.
            if queue.empty() and not any(channel in members for members in state.groups.values()):
                state.channels.pop(channel, None)

    async def group_add(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        state = self._state()
        state.groups.setdefault(group, set()).add(channel)
        await self._ensure_listening(state)

    async def group_discard(self, group: str, channel: str) -> None:
        self.require_valid_group_name(group)
        self.require_valid_channel_name(channel)
        state = self._state()
        members = state.groups.get(group)
        if members is not None:
            members.discard(channel)
            if not members:
                del state.groups[group]
        if not any(channel in m for m in state.groups.values()):
            queue = state.channels.get(channel)
            if queue is not None and queue.empty():
                state.channels.pop(channel, None)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        assert isinstance(message, dict), "message is not a dict"
        self.require_valid_group_name(group)
        await self._notify(encode([group], message))

    async def group_send_many(self, groups: list[str], message: dict[str, Any]) -> None:
        """One NOTIFY for the same message to several groups."""
        for group in groups:
            self.require_valid_group_name(group)
        await self._notify(encode(groups, message))

    def group_send_sync(self, groups: list[str], message: dict[str, Any]) -> None:
        """Send from sync code (ingest's on_commit) over Django's own connection: no event loop needed.

        Inside a transaction Postgres holds the NOTIFY until commit, so it can never announce rolled-back rows.
        """
        from django.db import connections

        sql, params = self.notify_statement(groups, message)
        with connections[self.database_alias].cursor() as cursor:
            cursor.execute(sql, params)

    def notify_statement(self, groups: list[str], message: dict[str, Any]) -> tuple[str, list[Any]]:
        """The SQL that sends `message` to `groups`; run inside a transaction, it is delivered at commit."""
        return "SELECT pg_notify(%s, %s)", [self.notify_channel, encode(groups, message)]

    def notify_expression(self, groups_sql: str, message_sql: str) -> tuple[str, list[Any]]:
        """An SQL expression sending the message built in SQL (`json_build_object(…)`) to groups built in SQL.

        For statements that only learn the values (a new seq, a run's id) while they run; the same payload as
        `encode` (decoded by its keys, not its spelling). The caller keeps it under MAX_PAYLOAD_BYTES.
        """
        return f"pg_notify(%s, json_build_object('g', {groups_sql}, 'm', {message_sql})::text)", [self.notify_channel]

    async def flush(self) -> None:
        state = self._state()
        state.channels.clear()
        state.groups.clear()

    async def close(self) -> None:
        state = self._state()
        if state.listener is not None:
            state.listener.cancel()
            await asyncio.gather(state.listener, return_exceptions=True)
            state.listener = None
        if state.sender is not None:
            await state.sender.close()
            state.sender = None
