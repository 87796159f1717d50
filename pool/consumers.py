"""/ws/pool/: the Pool page follows votes, decisions, facts and participants live (notify, then read)."""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async
from django.template.loader import render_to_string

from awp_site.live import POOL_GROUP
from experiments.consumers import CLOSE_FORBIDDEN, LiveConsumer
from pool import presenters, services

SECTIONS = ("proposals", "facts", "participants")


class PoolConsumer(LiveConsumer):
    """Re-renders the page's live sections (out of band) after each pool change; the audit stays as filtered."""

    async def authorize(self, user: Any) -> int:
        # Called on connect and every ROLE_RECHECK_SECONDS: a person with the page open stays present.
        self.dirty = getattr(self, "dirty", False)
        return 0 if await database_sync_to_async(_may_view_and_seen)(user) else CLOSE_FORBIDDEN

    def live_groups(self) -> list[str]:
        return [POOL_GROUP]

    async def pool_changed(self, message: dict[str, Any]) -> None:
        self.dirty = True
        self.wake.set()

    def on_resync(self) -> None:
        self.dirty = True

    async def build_frame(self) -> tuple[str, int | None, bool]:
        if not self.dirty:
            return "", None, False
        self.dirty = False
        return await database_sync_to_async(render_sections)(self.scope["user"]), None, False


def _may_view_and_seen(user: Any) -> bool:
    if not services.may_view(user):
        return False
    services.announce_person(user)
    return True


def render_sections(user: Any) -> str:
    """The live sections of the Pool page for this user, each replacing its element by id."""
    context = {**presenters.pool_context(user, trace=""), "oob": True}
    return "".join(render_to_string(f"pool/pool.html#{section}", context) for section in SECTIONS)
