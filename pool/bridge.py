"""The bridge between this deployment's pool and a broker subject shared with other deployments.

Out: every envelope accepted here (API, Pool page, coordinator; not those that came from the bus) is
published in the order it was applied, with this deployment's clawId as its origin; a cursor in Postgres
says how far. In: every message of the subject, from the first, goes through `apply_envelope` with origin
`bus`, so idempotency keys, one vote per participant, fact versions and the self-loop rule hold. Messages
this deployment published itself are skipped before they reach the rules.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import Counter
from typing import Any

from asgiref.sync import sync_to_async
from django.db import close_old_connections, transaction
from django.utils import timezone

from awp_site.apierrors import ApiError
from awp_site.jsonbody import parse_json_body
from pool import services
from pool.models import BridgeCursor, PoolEnvelope
from pool.transport import Message, Transport

logger = logging.getLogger(__name__)
PUBLISH_BATCH = 500


class Bridge:
    def __init__(self, transport: Transport, *, claw_id: str, cursor_name: str, poll_seconds: float = 0.2) -> None:
        self.transport, self.claw_id, self.cursor_name, self.poll_seconds = transport, claw_id, cursor_name, poll_seconds
        self.stats: Counter[str] = Counter()

    async def run(self, stop: asyncio.Event) -> None:
        """Follow the subject and publish local envelopes until `stop` is set."""
        await self.transport.connect()
        await self.transport.follow(self.on_message)
        try:
            while not stop.is_set():
                published = await self.publish_pending()
                if published < PUBLISH_BATCH:
                    try:
                        await asyncio.wait_for(stop.wait(), timeout=self.poll_seconds)
                    except TimeoutError:
                        pass
        finally:
            await self.transport.close()

    async def on_message(self, message: Message) -> None:
        if message.origin == self.claw_id:
            self.stats["own"] += 1  # published by this deployment: applied here already
            return
        try:
            raw: Any = parse_json_body(message.data)
        except ApiError:
            raw = None  # apply_envelope refuses it as invalid_envelope, and the audit keeps the refusal
        outcome = await sync_to_async(_apply_from_bus)(raw, message.origin or "bus:unknown")
        self.stats[outcome] += 1

    async def publish_pending(self) -> int:
        rows = await sync_to_async(_pending)(self.cursor_name)
        for pk, claw_id, key, body in rows:
            # Keys are unique per participant, so the broker's deduplication id stands for the pair (a header
            # value holds no line breaks, so a digest rather than the raw strings).
            dedupe_id = hashlib.sha256(f"{claw_id}\x00{key}".encode()).hexdigest()
            await self.transport.publish(json.dumps(body, ensure_ascii=False).encode(), dedupe_id=dedupe_id, origin=self.claw_id)
            await sync_to_async(_advance)(self.cursor_name, pk)
            self.stats["published"] += 1
        return len(rows)


def _apply_from_bus(raw: Any, origin: str) -> str:
    close_old_connections()
    return services.apply_envelope(raw, origin=services.Origin.BUS, deployment=origin).outcome


def _pending(cursor_name: str) -> list[tuple[int, str, str, dict[str, Any]]]:
    close_old_connections()
    cursor, _ = BridgeCursor.objects.get_or_create(name=cursor_name)
    local = PoolEnvelope.objects.exclude(origin=PoolEnvelope.Origin.BUS).filter(pk__gt=cursor.last_envelope_pk).order_by("pk")
    return list(local.values_list("pk", "claw_id", "idempotency_key", "body")[:PUBLISH_BATCH])


@transaction.atomic
def _advance(cursor_name: str, pk: int) -> None:
    BridgeCursor.objects.filter(name=cursor_name, last_envelope_pk__lt=pk).update(last_envelope_pk=pk, updated_at=timezone.now())
