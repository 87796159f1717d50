"""The memory API: envelopes, search modes return exactly the matching entries, isolation, access control."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.test import Client

from experiments.models import Digest
from memory.models import AccessAudit, MemoryEntry
from tests.factories import make_experiment, make_run, make_token
from tests.memory.conftest import seed_memory, today

pytestmark = pytest.mark.django_db


def call(client: Client, token: str, slug: str, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    response = client.post(
        f"/api/v1/experiments/{slug}/{path}", json.dumps(body), content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )  # fmt: skip
    return response.status_code, response.json()


@pytest.fixture
def seeded(experiment) -> dict[str, Any]:
    data = seed_memory(experiment)
    data["token"] = make_token(experiment, ["memory:read", "memory:write"])
    return data


def contents(body: dict[str, Any]) -> list[str]:
    return sorted(result["content"] for result in body["data"]["results"])


def test_keyword_search_returns_exactly_the_matching_entries(client, experiment, seeded) -> None:
    status, body = call(client, seeded["token"], experiment.slug, "memory/search",
                        {"query": "potassium", "mode": "keyword", "tiers": ["working"]})  # fmt: skip
    assert status == 200 and body["ok"] is True and body["error"] is None
    assert contents(body) == ["Bananas are rich in potassium and ripen quickly."]
    result = body["data"]["results"][0]
    assert set(result) == {"tier", "source", "content", "score", "timestamp"}
    assert result["tier"] == "working" and 0 < result["score"] <= 1 and body["data"]["total"] == 1


def test_keyword_search_falls_back_to_prefixes_and_fragments(client, experiment, seeded) -> None:
    _, prefix = call(client, seeded["token"], experiment.slug, "memory/search", {"query": "potass", "mode": "keyword"})
    assert contents(prefix) == ["Bananas are rich in potassium and ripen quickly."]
    _, fragment = call(client, seeded["token"], experiment.slug, "memory/search", {"query": "board", "mode": "keyword"})
    assert [r["tier"] for r in fragment["data"]["results"]] == ["long_term"]
    assert "blackboard" in fragment["data"]["results"][0]["content"]


def test_date_range_returns_exactly_that_days_entries(client, experiment, seeded) -> None:
    day = seeded["days"][1].isoformat()
    _, body = call(client, seeded["token"], experiment.slug, "memory/search",
                   {"mode": "date_range", "date_range": {"start": day, "end": day}})  # fmt: skip
    assert contents(body) == [
        "Quarterly revenue grew by twelve percent in the northern region.",
        "The garden needs watering twice a week in summer.",
    ]
    assert body["data"]["total"] == 2


def test_agent_filter_returns_exactly_that_agents_results(client, experiment, seeded) -> None:
    _, body = call(client, seeded["token"], experiment.slug, "memory/search",
                   {"mode": "agent_filter", "agent_filter": ["writer"]})  # fmt: skip
    assert contents(body) == ["Wrote the final summary paragraph."]
    assert body["data"]["results"][0]["tier"] == "episodic"
    assert "iteration 2" in body["data"]["results"][0]["source"]


def test_one_experiment_never_sees_anothers_memory(client, experiment, seeded) -> None:
    other = make_experiment()
    seed_memory(other)
    token_b = make_token(other, ["memory:read"])
    MemoryEntry.objects.filter(experiment=other).update(content="only in B")
    _, body = call(client, seeded["token"], experiment.slug, "memory/search",
                   {"query": "potassium", "mode": "keyword", "tiers": ["working"]})  # fmt: skip
    assert body["data"]["total"] == 1
    status, body = call(client, token_b, experiment.slug, "memory/search", {"query": "potassium"})
    assert status == 403 and body["ok"] is False and body["code"] == "token_experiment_mismatch"


def test_worker_results_are_auto_logged_to_the_working_tier(experiment, seeded) -> None:
    entry = MemoryEntry.objects.get(experiment=experiment, agent_id="fact_collector")
    assert entry.source == "auto" and entry.confidence == 0.9 and entry.run == seeded["run"]
    assert entry.content == "Collected five facts about the number 42."


def test_agent_with_read_only_long_term_gets_a_403_envelope_and_an_audit_row(client) -> None:
    experiment = make_experiment(protocol={"memory": {"access_control": {"report_writer": {"long_term": "read"}}}})
    token = make_token(experiment, ["memory:read", "memory:write"])
    status, body = call(client, token, experiment.slug, "memory/write",
                        {"agent_id": "report_writer", "target": "long_term", "content": "I know better."})  # fmt: skip
    assert status == 403 and body == {
        "ok": False, "status": 403, "data": None, "code": "memory_access_denied",
        "error": "Agent 'report_writer' has 'read' access to the long_term tier and may not write it.",
    }  # fmt: skip
    assert experiment.memory_documents.count() == 0
    audit = AccessAudit.objects.get(experiment=experiment)
    assert (audit.agent_id, audit.tier, audit.action, audit.allowed) == ("report_writer", "long_term", "write", False)
    # The same agent may still write its daily log, and that write is audited too.
    status, body = call(client, token, experiment.slug, "memory/write",
                        {"agent_id": "report_writer", "target": "daily", "content": "noted"})  # fmt: skip
    assert status == 200 and body["data"]["date"] == today().isoformat()
    assert AccessAudit.objects.filter(experiment=experiment, allowed=True, tier="working").count() == 1


def test_write_long_term_adds_a_version_and_reads_back(client, experiment) -> None:
    token = make_token(experiment, ["memory:read", "memory:write"])
    call(client, token, experiment.slug, "memory/write", {"agent_id": "a", "target": "long_term", "content": "fact one"})
    call(client, token, experiment.slug, "memory/write", {"agent_id": "a", "target": "long_term", "content": "fact two"})
    response = client.get(f"/api/v1/experiments/{experiment.slug}/memory/long-term", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.json()["version"] == 2 and response.json()["content"] == "fact one\n\nfact two\n"
    versions = client.get(
        f"/api/v1/experiments/{experiment.slug}/memory/long-term/versions", HTTP_AUTHORIZATION=f"Bearer {token}"
    ).json()
    assert [(v["version"], v["author"]) for v in versions] == [(2, "a"), (1, "a")]
    _, read = call(client, token, experiment.slug, "memory/read", {"target": "long_term"})
    assert read["data"]["exists"] is True and read["data"]["version"] == 2


def test_write_needs_the_write_scope(client, experiment) -> None:
    token = make_token(experiment, ["memory:read"])
    status, body = call(client, token, experiment.slug, "memory/write", {"target": "daily", "content": "x"})
    assert status == 403 and body["code"] == "missing_scope"
    assert not MemoryEntry.objects.filter(experiment=experiment).exists()


def test_bad_requests_get_specific_envelopes(client, experiment, seeded) -> None:
    token = seeded["token"]
    assert call(client, token, experiment.slug, "memory/search", {"mode": "psychic", "query": "x"})[0] == 422
    status, body = call(client, token, experiment.slug, "memory/search", {"mode": "keyword", "query": " "})
    assert (status, body["code"]) == (400, "empty_query")
    status, body = call(client, token, experiment.slug, "memory/search",
                        {"mode": "date_range", "date_range": {"start": "2026-03-05", "end": "2026-03-01"}})  # fmt: skip
    assert (status, body["code"]) == (400, "bad_date_range")
    status, body = call(client, token, experiment.slug, "memory/search", {"query": "x", "tiers": ["dreams"]})
    assert (status, body["code"]) == (400, "unknown_tier")
    status, body = call(client, token, experiment.slug, "memory/write", {"target": "daily", "content": ""})
    assert status == 422 and body["ok"] is False


def test_semantic_search_with_the_embedder_off_is_a_400_with_a_sentence(client, experiment, seeded, settings) -> None:
    settings.AWP_EMBEDDER = "none"
    status, body = call(client, seeded["token"], experiment.slug, "memory/search",
                        {"query": "how do workers coordinate", "mode": "semantic"})  # fmt: skip
    assert status == 400 and body["code"] == "semantic_disabled" and "AWP_EMBEDDER=none" in body["error"]


def test_board_post_appends_to_the_run_ledger_and_reads_back(client, experiment) -> None:
    run = make_run(experiment)
    token = make_token(experiment, ["memory:read", "memory:write"])
    status, first = call(client, token, experiment.slug, "board/post",
                         {"run_id": run.run_id, "topic": "findings", "payload": {"x": 1}, "worker_id": "w1"})  # fmt: skip
    assert status == 200 and first["ok"]
    call(client, token, experiment.slug, "board/post", {"run_id": run.run_id, "topic": "progress", "payload": {"x": 2}})
    assert run.events.filter(kind="board.post").count() == 2
    _, everything = call(client, token, experiment.slug, "board/read", {"run_id": run.run_id})
    assert [e["topic"] for e in everything["data"]["entries"]] == ["findings", "progress"]
    _, newer = call(client, token, experiment.slug, "board/read", {"run_id": run.run_id, "since": first["data"]["entry_id"]})
    assert [e["payload"] for e in newer["data"]["entries"]] == [{"x": 2}]
    _, topic = call(client, token, experiment.slug, "board/read", {"run_id": run.run_id, "topic": "findings"})
    assert [e["worker_id"] for e in topic["data"]["entries"]] == ["w1"]
    status, missing = call(client, token, experiment.slug, "board/read", {"run_id": "nope"})
    assert status == 404 and missing["code"] == "run_not_found"


def test_digest_fetch_by_sha(client, experiment) -> None:
    token = make_token(experiment, ["memory:read"])
    sha = "a" * 64
    Digest.objects.create(experiment=experiment, sha=sha, run_ref="r", record={"goal": "g", "api_key": "s3cret"})
    status, body = call(client, token, experiment.slug, "digest/fetch", {"sha": sha})
    assert status == 200 and body["data"]["record"] == {"goal": "g", "api_key": "[redacted]"}
    status, body = call(client, token, experiment.slug, "digest/fetch", {"sha": "b" * 64})
    assert status == 404 and body["code"] == "digest_not_found"


def test_memory_write_event_pushed_into_a_run_is_applied(client, experiment) -> None:
    run = make_run(experiment)
    token = make_token(experiment, ["memory:write"])
    status, body = call(client, token, experiment.slug, "memory/write",
                        {"agent_id": "a", "target": "daily", "content": "via the ledger", "run_id": run.run_id})  # fmt: skip
    assert status == 200 and run.events.filter(kind="memory.write").count() == 1
    assert MemoryEntry.objects.get(experiment=experiment).run == run


def test_prior_block_comes_from_promoted_memory(client, experiment) -> None:
    token = make_token(experiment, ["memory:read"])
    status, body = call(client, token, experiment.slug, "memory/prior", {})
    assert status == 200 and body["ok"] is True
    assert isinstance(body["data"]["block"], str) and len(body["data"]["block"]) <= 3000
