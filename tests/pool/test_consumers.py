"""/ws/pool/ over the real ASGI stack and the real Postgres LISTEN/NOTIFY channel layer."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from pool import services
from tests.factories import make_experiment, make_member, make_user
from tests.live.helpers import Frames, communicator
from tests.live.test_consumers import close_code, run_async
from tests.pool.helpers import envelope

pytestmark = pytest.mark.django_db(transaction=True)


def test_pool_socket_needs_a_member_and_follows_votes_with_redacted_frames():
    viewer = make_member(make_experiment(), "viewer")
    stranger = make_user()

    def propose_and_vote() -> None:
        services.apply_envelope(envelope("proposal", "claw-1", {"proposal_id": "p-ws", "statement": "Retry with password=hunter2-ws"}), origin="api")
        services.apply_envelope(envelope("vote", "claw-1", {"proposal_id": "p-ws", "vote": "yes", "reason": "api_key=sk-ws-SECRET"}), origin="api")

    async def scenario():  # type: ignore[no-untyped-def]
        assert await close_code("/ws/pool/", None) == 4401
        assert await close_code("/ws/pool/", stranger) == 4403  # a member of no experiment sees no pool
        comm = communicator("/ws/pool/", viewer)
        assert (await comm.connect())[0]
        frames = Frames(comm)
        await database_sync_to_async(propose_and_vote)()
        text = ""
        while 'data-claw-id="claw-1"' not in text:
            text = await frames.next()
        assert '<section id="pool-proposals" class="pool-section" hx-swap-oob="true"' in text and 'data-proposal-id="p-ws"' in text
        assert "hunter2-ws" not in text and "sk-ws-SECRET" not in text
        assert "Vote yes" not in text  # a viewer's frames carry no vote form
        await comm.disconnect()

    run_async(scenario)
