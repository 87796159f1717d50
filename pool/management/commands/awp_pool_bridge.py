"""Bridge this deployment's pool over NATS JetStream: publish local envelopes, apply the others' through the rules."""

from __future__ import annotations

import asyncio
import signal
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser

from pool.bridge import Bridge
from pool.transport import JetStreamTransport


class Command(BaseCommand):
    help = "Share this deployment's knowledge pool with others through a JetStream subject (runs until stopped)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--nats-url", default=settings.AWP_POOL_NATS_URL)
        parser.add_argument("--stream", default=settings.AWP_POOL_STREAM)
        parser.add_argument("--subject", default=settings.AWP_POOL_SUBJECT)
        parser.add_argument("--poll", type=float, default=0.2, help="seconds between looks for new local envelopes")

    def handle(self, *args: Any, **options: Any) -> None:
        transport = JetStreamTransport(url=options["nats_url"], stream=options["stream"], subject=options["subject"])
        cursor = f"{options['stream']}/{options['subject']}"
        bridge = Bridge(transport, claw_id=settings.AWP_POOL_CLAW_ID, cursor_name=cursor, poll_seconds=options["poll"])
        self.stdout.write(f"pool bridge {settings.AWP_POOL_CLAW_ID} <-> {options['nats_url']} stream {options['stream']} subject {options['subject']}")
        self.stdout.flush()
        asyncio.run(self._run(bridge))
        self.stdout.write(f"pool bridge stopped: {dict(bridge.stats)}")

    async def _run(self, bridge: Bridge) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await bridge.run(stop)
