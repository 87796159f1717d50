"""Websockets on a real daphne: origin validated, session required, membership enforced, no cross-experiment leak."""

from __future__ import annotations

import asyncio

import pytest

from tests.factories import make_experiment, make_member, make_run, make_token
from tests.proofkit import collect_frames, log_events, login_cookie, push, run_start, ws_url

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_foreign_origin_is_refused_at_the_handshake(live_server_factory):
    import websockets

    server = live_server_factory()
    experiment = make_experiment()
    viewer = make_member(experiment, "viewer")
    run = make_run(experiment)
    cookie = login_cookie(server.url, viewer.username)

    async def attempt(origin: str) -> str:
        try:
            async with websockets.connect(
                ws_url(server.url, f"/ws/runs/{run.pk}/"), additional_headers={"Cookie": cookie, "Origin": origin}, open_timeout=10
            ) as sock:
                try:
                    await asyncio.wait_for(sock.recv(), timeout=1.0)
                except TimeoutError:
                    return "open"
                return "open"
        except websockets.InvalidStatus as refused:
            return f"refused {refused.response.status_code}"
        except websockets.ConnectionClosed as closed:
            return f"closed {closed.rcvd.code if closed.rcvd else None}"

    assert asyncio.run(attempt("http://evil.example")).startswith(("refused 403", "closed"))
    assert asyncio.run(attempt(server.url)) == "open"  # the control: the same cookie from our origin works


@pytest.mark.parametrize("path_kind", ["run", "experiment"])
def test_no_session_and_no_membership_each_close_with_their_code(live_server_factory, path_kind):
    server = live_server_factory()
    experiment = make_experiment()
    run = make_run(experiment)
    outsider = make_member(make_experiment(), "owner")  # an owner elsewhere, nobody here
    path = f"/ws/runs/{run.pk}/" if path_kind == "run" else f"/ws/experiments/{experiment.slug}/"
    frames, code = asyncio.run(collect_frames(ws_url(server.url, path), "", origin=server.url, seconds=5))
    assert frames == [] and code == 4401
    cookie = login_cookie(server.url, outsider.username)
    frames, code = asyncio.run(collect_frames(ws_url(server.url, path), cookie, origin=server.url, seconds=5))
    assert frames == [] and code == 4403


def test_a_forged_session_cookie_is_treated_as_anonymous(live_server_factory):
    server = live_server_factory()
    run = make_run(make_experiment())
    frames, code = asyncio.run(
        collect_frames(ws_url(server.url, f"/ws/runs/{run.pk}/"), "sessionid=forged0000", origin=server.url, seconds=5)
    )
    assert frames == [] and code == 4401


def marked_delta(marker: str, round_: int) -> dict[str, object]:
    """A state delta whose value carries a marker (the state head is rendered into run frames)."""
    return {
        "kind": "state.delta",
        "agent_id": "w",
        "idempotency_key": f"delta-{marker}",
        "payload": {"agent_id": "w", "round": round_, "op": "add", "path": f"$.marker_{round_}", "value": marker, "provenance": "test"},
    }


def test_events_of_another_experiment_never_reach_a_socket(live_server_factory):
    server = live_server_factory()
    mine, theirs = make_experiment(), make_experiment()
    viewer = make_member(mine, "viewer")
    my_token, their_token = make_token(mine, ["ingest"]), make_token(theirs, ["ingest"])
    assert push(server.url, my_token, "run-mine", [run_start("run-mine")]).status_code == 200
    assert push(server.url, their_token, "run-theirs", [run_start("run-theirs")]).status_code == 200
    from experiments.models import Run

    my_run = Run.objects.get(run_id="run-mine")
    cookie = login_cookie(server.url, viewer.username)

    async def watch_all() -> list[tuple[list[str], int | None]]:
        async def pushes() -> None:
            await asyncio.sleep(1.5)
            for i in range(3):
                theirs_events = log_events(5, prefix=f"THEIRS-{i}-") + [marked_delta(f"THEIRS-{i}", i)]
                await asyncio.to_thread(push, server.url, their_token, "run-theirs", theirs_events)
            mine_events = log_events(3, prefix="MINE-") + [marked_delta("MINE-2", 1)]
            await asyncio.to_thread(push, server.url, my_token, "run-mine", mine_events)

        sockets = [
            collect_frames(ws_url(server.url, f"/ws/runs/{my_run.pk}/?after=0"), cookie, origin=server.url, seconds=7),
            collect_frames(ws_url(server.url, f"/ws/experiments/{mine.slug}/"), cookie, origin=server.url, seconds=7),
            collect_frames(ws_url(server.url, "/ws/experiments/"), cookie, origin=server.url, seconds=7),
        ]
        results = await asyncio.gather(*sockets, pushes())
        return list(results[:3])

    (run_frames, _), (exp_frames, _), (list_frames, _) = asyncio.run(watch_all())
    everything = "\n".join(run_frames + exp_frames + list_frames)
    assert "MINE-2" in "\n".join(run_frames), "the control: my run's events arrive"
    assert "THEIRS" not in everything and "run-theirs" not in everything
    assert theirs.slug not in everything and theirs.name not in everything
