"""How envelopes travel between deployments: one small interface, one real implementation (NATS JetStream).

A transport publishes bytes with a deduplication id and an origin (the publishing deployment's clawId),
and replays the whole subject from its first message, then follows it. Kafka would fit the same interface
(a topic, a message key, a header, consume from the earliest offset); no Kafka broker could be installed
from this project's package registries, so JetStream is the one shipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

ORIGIN_HEADER = "Awp-Origin"


@dataclass(frozen=True)
class Message:
    data: bytes
    origin: str
    sequence: int


Handler = Callable[[Message], Awaitable[None]]


class Transport(Protocol):
    async def connect(self) -> None: ...

    async def publish(self, data: bytes, *, dedupe_id: str, origin: str) -> None: ...

    async def follow(self, handler: Handler) -> None:
        """Deliver every message of the subject from the first, in order, then new ones as they come."""

    async def close(self) -> None: ...


class JetStreamTransport:
    """A JetStream stream holding one subject; publishes are acknowledged (stored) before they count."""

    def __init__(self, *, url: str, stream: str, subject: str) -> None:
        self.url, self.stream, self.subject = url, stream, subject
        self.nc: object | None = None
        self.js: object | None = None
        self.subscription: object | None = None

    async def connect(self) -> None:
        import nats

        self.nc = nc = await nats.connect(self.url, name=f"awp-pool-bridge:{self.stream}", max_reconnect_attempts=-1)
        self.js = js = nc.jetstream()  # type: ignore[attr-defined]
        from nats.js.errors import NotFoundError

        try:
            await js.stream_info(self.stream)  # type: ignore[attr-defined]
        except NotFoundError:
            await js.add_stream(name=self.stream, subjects=[self.subject])  # type: ignore[attr-defined]

    async def publish(self, data: bytes, *, dedupe_id: str, origin: str) -> None:
        # Nats-Msg-Id lets JetStream drop a re-publish after a crash between publish and cursor update.
        headers = {"Nats-Msg-Id": dedupe_id, ORIGIN_HEADER: origin}
        await self.js.publish(self.subject, data, stream=self.stream, headers=headers)  # type: ignore[union-attr]

    async def follow(self, handler: Handler) -> None:
        from nats.js.api import ConsumerConfig, DeliverPolicy

        async def on_message(msg: object) -> None:
            headers = getattr(msg, "headers", None) or {}
            metadata = msg.metadata  # type: ignore[attr-defined]
            await handler(Message(data=msg.data, origin=headers.get(ORIGIN_HEADER, ""), sequence=int(metadata.sequence.stream)))  # type: ignore[attr-defined]

        # An ordered consumer from the first message: a restarted bridge replays the subject, and idempotency
        # keys make the replay change nothing.
        self.subscription = await self.js.subscribe(  # type: ignore[union-attr]
            self.subject, stream=self.stream, cb=on_message, ordered_consumer=True, config=ConsumerConfig(deliver_policy=DeliverPolicy.ALL)
        )

    async def close(self) -> None:
        if self.subscription is not None:
            await self.subscription.unsubscribe()  # type: ignore[attr-defined]
        if self.nc is not None:
            await self.nc.drain()  # type: ignore[attr-defined]


async def delete_stream(*, url: str, stream: str) -> None:
    """Remove a stream and what it holds (tests clean up their own)."""
    import nats

    nc = await nats.connect(url)
    try:
        await nc.jetstream().delete_stream(stream)
    finally:
        await nc.close()
