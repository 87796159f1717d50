"""The memory MCP server over streamable HTTP in the running ASGI app (daphne), with the SDK's own client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import requests

from experiments.ingest import EventIn, append_events
from experiments.models import Event, Experiment
from memory.curation.models import Evidence, Proposal
from memory.longterm import write_long_term_version
from memory.models import MemoryEntry
from memory.services import Actor, write_memory
from tests.factories import make_experiment, make_run, make_token
from tests.memory_mcp.conftest import call, http_client

READ_TOOLS = {"memory_search", "memory_recall", "memory_read", "memory_prior", "memory_proposal_status", "board_read", "state_get", "pool_facts"}
WRITE_TOOLS = {"memory_propose", "memory_note", "board_post"}


def seed(experiment: Experiment, word: str) -> None:
    """Working notes, a MEMORY.md version and two worker results (episodes) mentioning `word`."""
    write_memory(experiment=experiment, actor=Actor(agent_id="researcher"), target="daily", content=f"The {word} cache needs a warm-up.")
    write_long_term_version(experiment=experiment, content=f"# Memory\n- {word} is served from the edge.\n", reason="seed", source="import")
    run = make_run(experiment, run_id=f"run-{word}")
    append_events(run, [
        EventIn("run.start", "key:start", {"task": f"Study {word}."}),
        EventIn("worker.complete", "key:r1", {"summary": f"{word} responds in 40 ms.", "password": "hunter2-PASS"}, agent_id="researcher", iteration=1),
        EventIn("worker.complete", "key:w1", {"summary": f"Drafted the {word} report."}, agent_id="writer", iteration=2),
    ])  # fmt: skip


def api(server: Any, token: str, slug: str, endpoint: str, body: dict[str, Any]) -> dict[str, Any]:
    response = requests.post(f"{server.url}/api/v1/experiments/{slug}/memory/{endpoint}", json=body,
                             headers={"Authorization": f"Bearer {token}"}, timeout=30)  # fmt: skip
    assert response.status_code == 200, response.text
    return response.json()["data"]


@pytest.fixture
def seeded(transactional_db: None) -> Experiment:
    experiment = make_experiment()
    seed(experiment, "gateway")
    return experiment


def test_tools_offered_follow_the_token_scopes(asgi_server, seeded) -> None:
    read = make_token(seeded, ["memory:read"])
    write = make_token(seeded, ["memory:read", "memory:write"])

    async def scenario() -> tuple[set[str], set[str], tuple[bool, dict[str, Any]], list[str]]:
        async with http_client(asgi_server.url, read) as client:
            read_tools = {tool.name for tool in (await client.list_tools()).tools}
            refused = await call(client, "memory_propose", {"statement": "Reads never write.", "kind": "fact"})
            resources = [str(r.uri) for r in (await client.list_resources()).resources]
            protocol = json.loads((await client.read_resource("awp://experiment/protocol")).contents[0].text)
        async with http_client(asgi_server.url, write) as client:
            write_tools = {tool.name for tool in (await client.list_tools()).tools}
        assert protocol["slug"] == seeded.slug and "protocol" in protocol
        return read_tools, write_tools, refused, resources

    read_tools, write_tools, (is_error, refusal), resources = asyncio.run(scenario())
    assert read_tools == READ_TOOLS
    assert write_tools == READ_TOOLS | WRITE_TOOLS
    assert is_error and refusal["code"] == "missing_scope", refusal
    assert not Proposal.objects.filter(experiment=seeded).exists()
    assert set(resources) == {"awp://memory/MEMORY.md", "awp://experiment/protocol"}


@pytest.mark.parametrize("mode", ["auto", "legacy"])
def test_search_and_recall_answer_what_the_api_answers(asgi_server, seeded, mode) -> None:
    token = make_token(seeded, ["memory:read"])
    search_args = {"query": "gateway", "mode": "keyword", "max_results": 5}
    recall_args = {"agent_id": "writer", "query": "gateway", "top_k": 5}

    async def scenario() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        async with http_client(asgi_server.url, token, mode=mode) as client:
            assert client.protocol_version >= "2026" if mode == "auto" else client.protocol_version < "2026"
            _, searched = await call(client, "memory_search", search_args)
            _, recalled = await call(client, "memory_recall", recall_args)
            _, memory = await call(client, "memory_read")
        return searched, recalled, memory

    searched, recalled, memory = asyncio.run(scenario())
    assert searched["total"] >= 3 and searched == api(asgi_server, token, seeded.slug, "search", search_args)
    assert recalled["items"] and recalled == api(asgi_server, token, seeded.slug, "recall", recall_args)
    assert memory["version"] == 1 and "gateway is served from the edge" in memory["content"]


def test_a_secret_in_memory_comes_back_masked(asgi_server, seeded) -> None:
    token = make_token(seeded, ["memory:read", "memory:write"])

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with http_client(asgi_server.url, token, agent="researcher") as client:
            noted = await call(client, "memory_note", {"content": "Login for the gateway staging box: hunter2-PASS"})
            assert noted[0] is False, noted
            _, found = await call(client, "memory_search", {"query": "staging box", "max_results": 5})
            echoed = await call(client, "state_get", {"run_id": "hunter2-PASS"})
            assert echoed[0] and echoed[1]["code"] == "run_not_found", echoed
        return noted[1], found | {"echoed": echoed[1]}

    noted, found = asyncio.run(scenario())
    assert noted["target"] == "daily"
    texts = json.dumps(found)
    assert "staging box" in texts and "No run '" in texts and "hunter2-PASS" not in texts


def test_a_token_of_another_experiment_sees_nothing_of_this_one(asgi_server, seeded) -> None:
    other = make_experiment()
    seed(other, "lighthouse")
    mine = make_token(seeded, ["memory:read", "memory:write"])
    theirs = make_token(other, ["memory:read", "memory:write"])

    async def scenario() -> dict[str, Any]:
        async with http_client(asgi_server.url, mine) as client:
            _, proposed = await call(client, "memory_propose", {"statement": "The gateway cache is warm after 3 requests."})
        async with http_client(asgi_server.url, theirs) as client:
            _, searched = await call(client, "memory_search", {"query": "gateway", "max_results": 10})
            _, status = await call(client, "memory_proposal_status", {"proposal_id": proposed["proposal_id"]})
            _, memory = await call(client, "memory_read")
            _, state = await call(client, "state_get", {"run_id": "run-gateway"})
            resource = await client.read_resource("awp://memory/MEMORY.md")
        return {"searched": searched, "status": status, "memory": memory, "state": state, "resource": resource.contents[0].text}

    seen = asyncio.run(scenario())
    assert seen["searched"]["total"] == 0
    assert seen["status"]["code"] == "proposal_not_found"
    assert "lighthouse" in seen["memory"]["content"] and "gateway" not in seen["memory"]["content"]
    assert seen["state"]["code"] == "run_not_found"
    assert "gateway" not in seen["resource"] and "lighthouse" in seen["resource"]


def test_no_token_wrong_token_and_foreign_host_are_refused(asgi_server, seeded) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    bare = requests.post(f"{asgi_server.url}/mcp/", json=body, headers=headers, timeout=10)
    wrong = requests.post(f"{asgi_server.url}/mcp/", json=body, headers={**headers, "Authorization": "Bearer awp_nope"}, timeout=10)
    token = make_token(seeded, ["memory:read"])
    rebound = requests.post(f"{asgi_server.url}/mcp/", json=body, timeout=10,
                            headers={**headers, "Authorization": f"Bearer {token}", "Host": "evil.example"})  # fmt: skip
    foreign = requests.post(f"{asgi_server.url}/mcp/", json=body, timeout=10,
                            headers={**headers, "Authorization": f"Bearer {token}", "Origin": "http://evil.example"})  # fmt: skip
    assert (bare.status_code, bare.json()["code"]) == (401, "invalid_token")
    assert (wrong.status_code, wrong.json()["code"]) == (401, "invalid_token")
    assert (rebound.status_code, rebound.json()["code"]) == (421, "invalid_host")
    assert (foreign.status_code, foreign.json()["code"]) == (403, "invalid_origin")
    served = requests.post(f"{asgi_server.url}/mcp/", json=body, timeout=10, headers={**headers, "Authorization": f"Bearer {token}"})
    assert served.status_code == 200 and served.headers["x-content-type-options"] == "nosniff"
    assert bare.headers["x-content-type-options"] == "nosniff" and bare.headers["www-authenticate"].startswith("Bearer")


def test_concurrent_proposals_from_several_clients_land_once_each(asgi_server, seeded) -> None:
    tokens = [make_token(seeded, ["memory:read", "memory:write"]) for _ in range(4)]

    async def one_client(index: int, token: str) -> list[dict[str, Any]]:
        async with http_client(asgi_server.url, token, name=f"agent-{index}", agent=f"agent-{index}") as client:
            answers = []
            for attempt in range(2):  # the retry of a client key must not land twice
                for n in range(3):
                    args = {"statement": f"Client {index} learnt fact {n}.", "kind": "fact", "idempotency_key": f"k-{n}"}
                    answers.append((await call(client, "memory_propose", args))[1] | {"attempt": attempt})
            return answers

    async def scenario() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(one_client(i, token) for i, token in enumerate(tokens)))

    answers = [answer for client in asyncio.run(scenario()) for answer in client]
    assert all(answer["status"] == "proposed" for answer in answers)
    proposals = Proposal.objects.filter(experiment=seeded, origin=Proposal.Origin.AGENT)
    assert proposals.count() == 12
    assert Evidence.objects.filter(proposal__in=proposals).count() == 12
    first = {(a["proposal_id"]) for a in answers if a["attempt"] == 0}
    again = {(a["proposal_id"]) for a in answers if a["attempt"] == 1}
    assert first == again == set(proposals.values_list("pk", flat=True))


def test_bad_arguments_are_refused_naming_the_field(asgi_server, seeded) -> None:
    token = make_token(seeded, ["memory:read", "memory:write"])

    async def scenario() -> list[tuple[bool, dict[str, Any]]]:
        async with http_client(asgi_server.url, token) as client:
            return [
                await call(client, "memory_propose", {"statement": "x", "kind": "rumour"}),
                await call(client, "memory_search", {"query": "gateway", "max_results": 0}),
                await call(client, "memory_search", {"mode": "keyword", "query": " "}),
                await call(client, "memory_read", {"version": 99}),
            ]

    kind, max_results, empty, version = asyncio.run(scenario())
    assert kind[0] and (kind[1]["code"], kind[1]["field"]) == ("invalid_arguments", "kind"), kind
    assert max_results[0] and max_results[1]["field"] == "max_results", max_results
    assert empty[0] and empty[1]["code"] == "empty_query", empty
    assert version[0] and (version[1]["code"], version[1]["field"]) == ("version_not_found", "version"), version
    assert not Proposal.objects.filter(experiment=seeded).exists()


NUL = "a\x00b"
NUL_ARGUMENTS = [
    ("memory_search", {"query": NUL}, "query"),
    ("memory_search", {"query": "x", "mode": "agent_filter", "agent_filter": ["w", NUL]}, "agent_filter[1]"),
    ("memory_recall", {"query": "x", "agent_id": NUL}, "agent_id"),
    ("memory_prior", {"run_id": NUL}, "run_id"),
    ("memory_propose", {"statement": NUL}, "statement"),
    ("memory_propose", {"statement": "A fact.", "idempotency_key": NUL}, "idempotency_key"),
    ("memory_propose", {"statement": "A fact.", "evidence": NUL}, "evidence"),
    ("memory_propose", {"statement": "A fact.", "agent_id": NUL}, "agent_id"),
    ("memory_note", {"content": NUL}, "content"),
    ("memory_note", {"content": "x", "agent_id": NUL}, "agent_id"),
    ("board_post", {"run_id": NUL, "topic": "t"}, "run_id"),
    ("board_post", {"run_id": "run-gateway", "topic": "t", "payload": {"k": [NUL]}}, "payload.k[0]"),
    ("board_read", {"run_id": "run-gateway", "topic": NUL}, "topic"),
    ("state_get", {"run_id": NUL}, "run_id"),
    ("board_post", {"run_id": "run-gateway", "topic": "t", "payload": {"score": float("nan")}}, "payload.score"),
]


@pytest.mark.parametrize(("tool", "arguments", "field"), NUL_ARGUMENTS, ids=[f"{t}-{f}" for t, _, f in NUL_ARGUMENTS])
def test_an_argument_no_tool_can_use_is_refused_naming_it_never_an_unexplained_failure(asgi_server, seeded, tool, arguments, field) -> None:
    """A NUL character in any string argument was an unexpected exception (`tool_failed`, a traceback in the log: the
    MCP form of a 500) in most tools; NaN is not JSON. Both are refused by name before any tool runs."""
    token = make_token(seeded, ["memory:read", "memory:write"])
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}, allow_nan=True)
    before = (Proposal.objects.count(), Event.objects.count(), MemoryEntry.objects.count())
    response = requests.post(f"{asgi_server.url}/mcp/", data=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text[:300]
    result = response.json()["result"]
    refusal = json.loads(result["content"][0]["text"])
    assert result["isError"] and refusal["code"] in ("nul_character", "non_finite_number") and refusal["field"] == field, refusal
    assert (Proposal.objects.count(), Event.objects.count(), MemoryEntry.objects.count()) == before


def test_board_state_prior_pool_and_review_tools(asgi_server, seeded) -> None:
    from tests.factories import make_member

    curator = make_member(seeded, "curator")
    writer = make_token(seeded, ["memory:read", "memory:write"])
    reviewer = make_token(seeded, ["memory:read", "review"], user=curator)

    async def scenario() -> dict[str, Any]:
        async with http_client(asgi_server.url, writer, agent="writer") as client:
            _, posted = await call(client, "board_post", {"run_id": "run-gateway", "topic": "findings", "payload": {"p50_ms": 9}})
            _, board = await call(client, "board_read", {"run_id": "run-gateway", "topic": "findings"})
            _, state = await call(client, "state_get", {"run_id": "run-gateway"})
            _, prior = await call(client, "memory_prior")
            _, pool = await call(client, "pool_facts")
            _, proposed = await call(client, "memory_propose", {"statement": "Tokens expire after an hour.", "kind": "antipattern"})
        async with http_client(asgi_server.url, reviewer) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            _, reviewed = await call(client, "memory_review", {"proposal_id": proposed["proposal_id"], "verdict": "reject", "reason": "not an antipattern"})
        return {"posted": posted, "board": board, "state": state, "prior": prior, "pool": pool, "tools": tools, "reviewed": reviewed}

    seen = asyncio.run(scenario())
    assert [e["payload"] for e in seen["board"]["entries"]] == [{"p50_ms": 9}] and seen["posted"]["seq"] > 0
    assert seen["state"]["run_id"] == "run-gateway" and seen["state"]["agent_id"] == "writer" and seen["state"]["seq"] >= 3
    assert seen["prior"]["block"].startswith("## PRIOR RUN MEMORY") or seen["prior"]["block"] == ""
    assert seen["pool"] == {"facts": []}
    assert seen["tools"] == READ_TOOLS | {"memory_review"}
    assert (seen["reviewed"]["status"], seen["reviewed"]["reason"]) == ("rejected", "not an antipattern")


ACCESS_PROTOCOL = """
memory:
  access_control:
    intruder: {episodic: none, long_term: read, working: read}
"""


def test_memory_access_rules_apply_to_the_agent_as_on_the_api(asgi_server, transactional_db) -> None:
    from experiments.protocol import parse_protocol
    from memory.models import AccessAudit

    experiment = make_experiment(protocol_yaml=ACCESS_PROTOCOL, protocol=parse_protocol(ACCESS_PROTOCOL))
    seed(experiment, "gateway")
    token = make_token(experiment, ["memory:read", "memory:write"])

    async def scenario() -> dict[str, Any]:
        async with http_client(asgi_server.url, token, agent="intruder") as client:
            return {
                "recall": await call(client, "memory_recall", {"query": "gateway"}),
                "propose": await call(client, "memory_propose", {"statement": "Intruders write facts."}),
                "note": await call(client, "memory_note", {"content": "Intruders write notes."}),
                "read": await call(client, "memory_read"),
                "other_agent": await call(client, "memory_recall", {"agent_id": "writer", "query": "gateway"}),
            }

    seen = asyncio.run(scenario())
    for name in ("recall", "propose", "note"):
        assert seen[name][0] and seen[name][1]["code"] == "memory_access_denied", (name, seen[name])
    assert seen["read"][0] is False and "gateway" in seen["read"][1]["content"]
    assert seen["other_agent"][0] is False and seen["other_agent"][1]["agent_id"] == "writer"
    denied = AccessAudit.objects.filter(experiment=experiment, agent_id="intruder", allowed=False)
    assert sorted(denied.values_list("tier", flat=True)) == ["episodic", "long_term", "working"]
    assert not Proposal.objects.filter(experiment=experiment).exists()


def test_a_revoked_token_stops_at_the_next_call(asgi_server, seeded) -> None:
    from django.utils import timezone

    from experiments.models import ApiToken

    token = make_token(seeded, ["memory:read"], name="soon-revoked")

    def revoke() -> None:
        from django.db import connection

        ApiToken.objects.filter(name="soon-revoked").update(revoked_at=timezone.now())
        connection.close()  # this thread's connection must not outlive the test

    async def scenario() -> tuple[bool, tuple[bool, dict[str, Any]]]:
        async with http_client(asgi_server.url, token) as client:
            first, _ = await call(client, "memory_search", {"query": "gateway"})
            await asyncio.to_thread(revoke)
            return first, await call(client, "memory_search", {"query": "gateway"})

    first_failed, (second_failed, second) = asyncio.run(scenario())
    assert first_failed is False and second_failed and second["code"] == "invalid_token"


def test_a_method_or_an_id_the_endpoint_cannot_answer_is_refused_at_once(asgi_server, seeded) -> None:
    """GET opened the SDK's event stream, which never ends in stateless mode (a connection pinned per call), and an
    id that is no string or integer was read as a notification and dropped with a bare 202."""
    token = make_token(seeded, ["memory:read"])
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    for method in ("GET", "DELETE", "PUT"):
        refused = requests.request(method, f"{asgi_server.url}/mcp/", headers=headers, timeout=10)
        assert (refused.status_code, refused.json()["code"], refused.headers["allow"]) == (405, "method_not_allowed", "POST"), method
    for ident in (1.5, {"a": 1}, True, [1], None):
        body = {"jsonrpc": "2.0", "id": ident, "method": "tools/list", "params": {}}
        answer = requests.post(f"{asgi_server.url}/mcp/", json=body, headers=headers, timeout=10)
        assert answer.status_code == 400, (ident, answer.status_code, answer.text)
        assert answer.json()["error"]["code"] == -32600 and "id must be a string or an integer" in answer.json()["error"]["message"]
        assert answer.headers["x-content-type-options"] == "nosniff"
    for ident in ("call-1", 7):
        served = requests.post(f"{asgi_server.url}/mcp/", json={"jsonrpc": "2.0", "id": ident, "method": "tools/list", "params": {}}, headers=headers, timeout=10)
        assert served.status_code == 200 and served.json()["id"] == ident and served.json()["result"]["tools"]
    notified = requests.post(f"{asgi_server.url}/mcp/", json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=headers, timeout=10)
    assert notified.status_code == 202
