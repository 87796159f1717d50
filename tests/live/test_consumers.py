"""Consumers over the real ASGI stack and the real Postgres LISTEN/NOTIFY channel layer."""

from __future__ import annotations

import json
import time

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.db import connections

from experiments.consumers import FRAME_ROWS, MAX_BEHIND, WINDOW, run_frames
from tests.factories import make_experiment, make_member, make_run, make_user
from tests.live.helpers import ROW, Frames, append, communicator, install_test_renderer, remove_test_renderer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def test_renderer():
    install_test_renderer()
    run_frames.clear()  # pks repeat across test databases
    yield
    remove_test_renderer()


def run_async(scenario):  # type: ignore[no-untyped-def]
    """Run a coroutine on a fresh loop, closing the layer's connections so the test database can be dropped."""

    async def wrapped():  # type: ignore[no-untyped-def]
        try:
            return await scenario()
        finally:
            await get_channel_layer().close()
            connections.close_all()  # this loop's thread opened its own (session cookie, asgi import)

    return async_to_sync(wrapped)()


async def close_code(path: str, user) -> int | None:  # type: ignore[no-untyped-def]
    comm = communicator(path, user)
    connected, code = await comm.connect()
    if not connected:
        return code
    output = await comm.receive_output(timeout=5)
    await comm.disconnect()
    assert output["type"] == "websocket.close"
    return output.get("code")


def test_membership_is_enforced_with_clear_close_codes(experiment, viewer):
    run = make_run(experiment)
    stranger = make_user()
    other = make_experiment()
    member_elsewhere = make_member(other, "owner")

    async def scenario():  # type: ignore[no-untyped-def]
        assert await close_code(f"/ws/runs/{run.pk}/", None) == 4401
        assert await close_code(f"/ws/runs/{run.pk}/", stranger) == 4403
        assert await close_code(f"/ws/runs/{run.pk}/", member_elsewhere) == 4403
        assert await close_code(f"/ws/runs/{run.pk + 10_000}/", viewer) == 4403  # missing looks like foreign
        assert await close_code(f"/ws/experiments/{experiment.slug}/", stranger) == 4403
        assert await close_code(f"/ws/experiments/{experiment.slug}/", None) == 4401
        assert await close_code(f"/ws/runs/{run.pk}/?after=-1", viewer) == 4400
        comm = communicator(f"/ws/runs/{run.pk}/", viewer)
        connected, _ = await comm.connect()
        assert connected
        assert await comm.receive_nothing(timeout=0.3)
        await comm.disconnect()

    run_async(scenario)


def test_a_foreign_origin_is_refused(experiment, viewer):
    run = make_run(experiment)

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/runs/{run.pk}/", viewer)
        comm.scope["headers"] = [(k, v) for k, v in comm.scope["headers"] if k != b"origin"] + [
            (b"origin", b"http://evil.example")
        ]
        connected, _ = await comm.connect()
        assert not connected

    run_async(scenario)


def test_resume_after_seq_n_sends_exactly_n_plus_1_to_head_then_follows(experiment, viewer):
    run = make_run(experiment)
    append(run, 10)

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/runs/{run.pk}/?after=4", viewer)
        assert (await comm.connect())[0]
        frames = Frames(comm)
        assert await frames.until_seq(10) == [5, 6, 7, 8, 9, 10]
        await database_sync_to_async(append)(run, 3, start=100)
        assert await frames.until_seq(13) == [11, 12, 13]
        # Replays change nothing: no frame for a batch that appended nothing.
        await database_sync_to_async(append)(run, 3, start=100)
        assert await comm.receive_nothing(timeout=0.5)
        await comm.disconnect()

    run_async(scenario)


def test_redacted_fields_never_appear_in_frames(experiment, viewer):
    experiment.protocol = {"state": {"sharing": {"sensitive_fields": ["session_cookie"]}}}
    experiment.save()
    run = make_run(experiment)
    secret_payloads = [
        {"msg": "calling the model", "api_key": "sk-live-SECRET-1", "nested": {"session_cookie": "COOKIE-SECRET-2"}},
        {"agent_id": "w1", "round": 1, "op": "add", "path": "$.creds", "value": {"password": "PW-SECRET-3"}},
    ]

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/runs/{run.pk}/?after=0", viewer)
        assert (await comm.connect())[0]
        frames = Frames(comm)
        await database_sync_to_async(append)(run, 1, kind="log", payload=secret_payloads[0], start=0)
        await database_sync_to_async(append)(run, 1, kind="state.delta", payload=secret_payloads[1], start=1)
        rows = await frames.until_seq(2)
        assert rows == [1, 2]
        assert "calling the model" in frames.all_text
        for secret in ("sk-live-SECRET-1", "COOKIE-SECRET-2", "PW-SECRET-3"):
            assert secret not in frames.all_text
        assert "[redacted]" in frames.all_text
        await comm.disconnect()

    run_async(scenario)


def test_no_cross_experiment_leakage_through_groups(experiment, viewer):
    mine = make_run(experiment)
    other_experiment = make_experiment()
    theirs = make_run(other_experiment)

    async def scenario():  # type: ignore[no-untyped-def]
        run_socket = communicator(f"/ws/runs/{mine.pk}/", viewer)
        exp_socket = communicator(f"/ws/experiments/{experiment.slug}/", viewer)
        list_socket = communicator("/ws/experiments/", viewer)
        for comm in (run_socket, exp_socket, list_socket):
            assert (await comm.connect())[0]
        await database_sync_to_async(append)(theirs, 5, payload={"msg": "THEIRS"})
        for comm in (run_socket, exp_socket, list_socket):
            assert await comm.receive_nothing(timeout=0.6)
        await database_sync_to_async(append)(mine, 1, payload={"msg": "MINE"})
        run_frame = await Frames(run_socket).next()
        exp_frame = await Frames(exp_socket).next()
        list_frame = await Frames(list_socket).next()
        assert "MINE" in run_frame and "THEIRS" not in run_frame
        assert f"experiment-row-{experiment.pk}" in exp_frame and f"experiment-row-{other_experiment.pk}" not in exp_frame
        assert f"experiment-row-{experiment.pk}" in list_frame
        assert other_experiment.name not in list_frame
        for comm in (run_socket, exp_socket, list_socket):
            await comm.disconnect()

    run_async(scenario)


def test_announce_experiment_changed_reaches_experiment_pages(experiment, viewer):
    from awp_site.live import announce_experiment_changed

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/experiments/{experiment.slug}/", viewer)
        assert (await comm.connect())[0]
        await database_sync_to_async(announce_experiment_changed)(experiment_id=experiment.pk, what="review")
        frame = await Frames(comm).next()
        assert 'id="pending-badge"' in frame and 'id="experiment-status-dot"' in frame
        await comm.disconnect()

    run_async(scenario)


def test_a_burst_is_capped_windowed_and_a_far_behind_page_gets_a_notice(experiment, viewer):
    run = make_run(experiment)
    head = MAX_BEHIND + FRAME_ROWS + 7
    append(run, head)
    start = head - (FRAME_ROWS * 3 + 7)

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/runs/{run.pk}/?after={start}", viewer)
        assert (await comm.connect())[0]
        silent = Frames(comm, ack=False)
        first = [await silent.next() for _ in range(WINDOW)]
        assert [len(ROW.findall(t)) for t in first] == [FRAME_ROWS] * WINDOW
        # Nothing more until the page acknowledges: the server holds at most WINDOW frames for it.
        assert await comm.receive_nothing(timeout=0.5)
        await comm.send_to(text_data=json.dumps({"ack": WINDOW}))
        rows = await Frames(comm).until_seq(head)
        assert rows == list(range(start + FRAME_ROWS * WINDOW + 1, head + 1))
        await comm.disconnect()

        far = communicator(f"/ws/runs/{run.pk}/?after=1", viewer)
        assert (await far.connect())[0]
        frames = Frames(far)
        notice = await frames.next()
        assert head - 1 > MAX_BEHIND
        assert 'id="live-notice"' in notice and not ROW.findall(notice) and str(head - 1) in notice
        await far.send_to(text_data=json.dumps({"more": 1}))
        rows = await frames.until_seq(head)
        assert rows == list(range(2, head + 1))
        await far.disconnect()

    run_async(scenario)


def test_sockets_leave_no_database_sessions_behind(experiment, viewer):
    from django.db import connection

    run = make_run(experiment)

    def sessions() -> set[int]:
        # Client backends only: an autovacuum worker of this database shows in pg_stat_activity too, at any moment.
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()"
                " AND backend_type = 'client backend'"
            )
            return {row[0] for row in cursor.fetchall()}

    def pooled() -> int:
        """Connections this process's pool keeps (it may grow with the threads a socket's work runs on, and keeps
        what it opened: no session left behind). The conftest checks that every one came back to it."""
        from django.db import connections

        wrapper = connections["default"]
        pool = type(wrapper)._connection_pools.get(wrapper.alias)  # never create a pool just to look at it
        return pool.get_stats()["pool_size"] if pool is not None else 0

    async def scenario():  # type: ignore[no-untyped-def]
        comm = communicator(f"/ws/runs/{run.pk}/", viewer)
        assert (await comm.connect())[0]
        await database_sync_to_async(append)(run, 2)
        await Frames(comm).until_seq(2)
        await comm.disconnect()

    def grown() -> int:
        """Sessions more than before, beyond what the pool grew: 0 unless something outside the pool stayed open. The
        pool may also replace a connection (a new pid for an old one): counted, not compared by pid. A closed
        connection's backend leaves pg_stat_activity a moment after its close: a short wait for that."""
        deadline = time.monotonic() + 5
        while True:
            extra = len(sessions()) - before - (pooled() - pool_before)
            if extra <= 0 or time.monotonic() > deadline:
                return extra
            time.sleep(0.05)

    before, pool_before = len(sessions()), pooled()
    run_async(scenario)
    assert grown() <= 0
