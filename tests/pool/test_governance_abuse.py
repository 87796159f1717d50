"""One participant cannot block the pool: keys are scoped by clawId, the coordinator's keys are its own,
replays answer the original outcome (also concurrently), curated proposal ids cannot be squatted, and every
malformed envelope is a 4xx naming the field, audited, with nothing else stored (hypothesis)."""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory.curation.models import Proposal
from memory.curation.services import curate_run, review_proposal
from pool import rules, services
from pool.models import Participant, PoolAudit, PoolEnvelope, PoolFactVersion, PoolProposal, PoolVote
from tests.curation.builders import two_iteration_run
from tests.factories import make_experiment, make_member
from tests.pool.helpers import create_claw, envelope


def present(*claws: str) -> None:
    for claw in claws:
        assert services.apply_envelope(envelope("presence", claw, {}), origin="api").status == 200


def send(kind: str, claw: str, payload: dict, **kwargs) -> services.Applied:
    return services.apply_envelope(envelope(kind, claw, payload, **kwargs), origin="api", caller_claw_id=claw)


@pytest.mark.django_db
def test_a_participant_key_named_like_the_decision_does_not_stop_the_tipping_vote():
    present("c1", "c2", "c3")
    assert send("proposal", "c1", {"proposal_id": "p1", "statement": "Deploys need a green canary"}).status == 200
    # The old coordinator key shape is just a key of c2's own now; the reserved shape is refused with its field.
    assert send("presence", "c2", {}, key="decision:p1").status == 200
    assert send("presence", "c2", {}, key="fact:fact:p1:v1").status == 200
    squat = send("presence", "c3", {}, key=rules.coordinator_key("decision", "p1"))
    assert (squat.status, squat.body["code"], squat.body["field"]) == (400, "reserved_idempotency_key", "idempotencyKey")

    assert send("vote", "c1", {"proposal_id": "p1", "vote": "yes"}).status == 200
    tipping = send("vote", "c2", {"proposal_id": "p1", "vote": "yes"})
    assert tipping.status == 200 and tipping.body["decision"]["outcome"] == "accepted", tipping.body
    assert PoolProposal.objects.get(proposal_id="p1").status == "accepted"
    assert PoolFactVersion.objects.filter(fact_id="fact:p1", version=1).exists()
    decision = PoolEnvelope.objects.get(type="decision")
    assert decision.idempotency_key == "awp-coordinator:decision:p1" and decision.claw_id == services.local_claw_id()
    assert PoolAudit.objects.filter(outcome="rejected", code="reserved_idempotency_key", claw_id="c3").count() == 1


@pytest.mark.django_db
def test_the_same_key_from_two_participants_is_two_envelopes_and_a_replay_answers_its_own_original():
    present("c1", "c2", "c3")
    send("proposal", "c1", {"proposal_id": "p2", "statement": "Retries back off exponentially"})
    first = send("vote", "c1", {"proposal_id": "p2", "vote": "no", "reason": "seen linear"}, key="my-vote")
    second = send("vote", "c3", {"proposal_id": "p2", "vote": "yes"}, key="my-vote")
    assert first.body["outcome"] == second.body["outcome"] == "accepted"
    assert (first.body["vote"], second.body["vote"]) == ("no", "yes")
    assert sorted(PoolVote.objects.values_list("claw_id", "vote")) == [("c1", "no"), ("c3", "yes")]

    replay = send("vote", "c3", {"proposal_id": "p2", "vote": "yes"}, key="my-vote")
    assert replay.status == 200 and replay.body == {**second.body, "outcome": "duplicate"}
    assert PoolEnvelope.objects.filter(idempotency_key="my-vote").count() == 2


@pytest.mark.django_db
def test_a_long_proposal_id_gets_a_bounded_unique_decision_key():
    present("c1", "c2", "c3")
    long_a, long_b = "a" * 199 + "1", "a" * 199 + "2"
    for pid in (long_a, long_b):
        assert send("proposal", "c1", {"proposal_id": pid, "statement": "x"}).status == 200
        send("vote", "c1", {"proposal_id": pid, "vote": "yes"})
        assert send("vote", "c2", {"proposal_id": pid, "vote": "yes"}).body["decision"]["outcome"] == "accepted"
    keys = list(PoolEnvelope.objects.filter(type__in=["decision", "fact"]).values_list("idempotency_key", flat=True))
    assert len(keys) == len(set(keys)) == 4 and all(len(k) <= rules.MAX_ID for k in keys)
    assert PoolFactVersion.objects.values("fact_id").distinct().count() == 2


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("kind", ["proposal", "vote"])
def test_concurrent_replays_of_one_key_all_answer_the_original(kind):
    present("c1", "c2", "c3", "c4")
    send("proposal", "c4", {"proposal_id": "base", "statement": "The cache is warm after 30 s"})
    payload = {"proposal_id": "hammered", "statement": "Queues drain in order"} if kind == "proposal" else {"proposal_id": "base", "vote": "yes"}
    raw = envelope(kind, "c1", payload, key="same-key")
    workers = 8
    start = threading.Barrier(workers)

    def apply_once(_: int) -> tuple[int, dict]:
        try:
            start.wait(timeout=30)
            applied = services.apply_envelope(json.loads(json.dumps(raw)), origin="api", caller_claw_id="c1")
            return applied.status, applied.body
        finally:
            connection.close()

    with ThreadPoolExecutor(workers) as pool:
        answers = list(pool.map(apply_once, range(workers)))
    assert {status for status, _ in answers} == {200}, answers
    outcomes = sorted(body["outcome"] for _, body in answers)
    assert outcomes == ["accepted"] + ["duplicate"] * (workers - 1), answers
    originals = [{k: v for k, v in body.items() if k != "outcome"} for _, body in answers]
    assert all(o == originals[0] for o in originals)
    assert PoolEnvelope.objects.filter(claw_id="c1", idempotency_key="same-key").count() == 1
    if kind == "vote":
        assert PoolVote.objects.filter(claw_id="c1").count() == 1
    else:
        assert PoolProposal.objects.filter(proposal_id="hammered").count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_replays_through_the_server_never_answer_409_or_5xx(live_server_factory):
    import requests

    server = live_server_factory()
    token = create_claw("hammer")
    body = json.dumps(envelope("proposal", "hammer", {"proposal_id": "srv-1", "statement": "Nightly builds are reproducible"}, key="srv-key"))
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with ThreadPoolExecutor(6) as pool:
        responses = list(pool.map(lambda _: requests.post(f"{server.url}/api/v1/pool/envelopes", data=body, headers=headers, timeout=60), range(12)))
    assert [r.status_code for r in responses] == [200] * 12, [(r.status_code, r.text[:200]) for r in responses]
    assert sorted(r.json()["outcome"] for r in responses) == ["accepted"] + ["duplicate"] * 11
    assert {r.json()["proposal_id"] for r in responses} == {"srv-1"}


@pytest.mark.django_db
def test_a_curated_fact_proposal_id_cannot_be_squatted_by_a_participant():
    experiment = make_experiment(slug="exp-squat")
    curator = make_member(experiment, "curator")
    run, _shas = two_iteration_run(experiment, fact="fact_collector: FACT_SQUAT: 7 is prime")
    curate_run(run=run)
    curated = Proposal.objects.get(experiment=experiment, kind="fact")
    review_proposal(proposal=curated, reviewer=curator, verdict="approve")
    # The id the page used to pick, and every id a participant can derive from what it sees, taken first.
    present("squatter")
    for guess in (f"{services.local_claw_id()}:{experiment.slug}:{curated.pk}", f"{experiment.slug}:{curated.pk}"):
        assert send("proposal", "squatter", {"proposal_id": guess, "statement": "mine now"}).status == 200

    applied = services.propose_curated_fact(experiment=experiment, curated=curated, user=curator)
    assert applied.status == 200, applied.body
    pooled = PoolProposal.objects.get(proposal_id=applied.body["proposal_id"])
    assert "FACT_SQUAT" in pooled.statement and pooled.proposer == f"user:{curator.username}"
    assert applied.body["proposal_id"] == services.curated_proposal_id(experiment.slug, curated.pk)  # stable: a second click conflicts
    assert services.propose_curated_fact(experiment=experiment, curated=curated, user=curator).body["code"] == "conflict"


# ---------------------------------------------------------------- hypothesis: malformed envelopes

JSON_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["", " ", "\x00", "a\x00b", "\ud800", "x" * 250, "yes", "no", "2026-11-23T10:00:00Z", "9999-12-31T23:59:59-05:00"]),
)
JSON_VALUES = st.recursive(JSON_SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)
FIELDS = ["schemaVersion", "type", "traceId", "timestamp", "idempotencyKey", "clawId", "instanceId", "payload"]
PAYLOAD_FIELDS = ["proposal_id", "statement", "tags", "confidence", "source", "amends_fact_id", "vote", "reason", "capabilities", "outcome", "fact_id", "version"]


def deep(levels: int) -> object:
    value: object = 1
    for _ in range(levels):
        value = {"a": value}
    return value


@st.composite
def malformed_envelopes(draw: st.DrawFn, depths: tuple[int, ...] = (33, 1000, 10_000)) -> dict:
    kind = draw(st.sampled_from(["proposal", "vote", "presence", "capabilities", "decision", "fact"]))
    raw = envelope(kind, "fuzzer", {"proposal_id": "fz-open", "statement": "s", "vote": "yes", "capabilities": ["a"]})
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        where = draw(st.sampled_from(["drop", "top", "payload", "deep"]))
        if where == "drop":
            raw.pop(draw(st.sampled_from(FIELDS)), None)
        elif where == "top":
            raw[draw(st.sampled_from(FIELDS))] = draw(JSON_VALUES)
        elif where == "payload" and isinstance(raw.get("payload"), dict):
            raw["payload"][draw(st.sampled_from(PAYLOAD_FIELDS))] = draw(JSON_VALUES)
        elif where == "deep" and isinstance(raw.get("payload"), dict):
            raw["payload"]["source"] = deep(draw(st.sampled_from(depths)))
    return raw


def stored() -> tuple[int, ...]:
    return (PoolEnvelope.objects.count(), PoolProposal.objects.count(), PoolVote.objects.count(), PoolFactVersion.objects.count(), Participant.objects.count())


@pytest.mark.django_db
@settings(max_examples=150, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(raw=malformed_envelopes())
def test_malformed_envelopes_are_4xx_naming_the_field_audited_and_store_nothing(raw):
    if not Participant.objects.filter(claw_id="fuzzer").exists():
        present("fuzzer")
        send("proposal", "fuzzer", {"proposal_id": "fz-open", "statement": "an open proposal to vote on"})
    before, audits = stored(), PoolAudit.objects.count()
    applied = services.apply_envelope(raw, origin="api", caller_claw_id="fuzzer")
    assert applied.status < 500, applied.body
    assert PoolAudit.objects.count() == audits + 1  # every outcome, refusals included, is in the audit
    if applied.status >= 400:
        assert applied.body["code"] and applied.body["message"], applied.body
        if applied.status in (400, 422):  # malformed: the answer names the field
            assert applied.body["field"], applied.body
        assert stored() == before, applied.body


@pytest.mark.django_db
@settings(max_examples=60, derandomize=True, deadline=None, database=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(body=st.one_of(
    st.binary(max_size=200),
    st.sampled_from([b"", b"null", b"[]", b"{}", b'{"a": NaN}', b'{"a": Infinity}', b'"\\ud800"', b'{"x": "\\u0000"}', b"[" * 10_000 + b"]" * 10_000, b"1e400"]),
    malformed_envelopes(depths=(33, 200)).map(lambda raw: json.dumps(raw, allow_nan=True).encode("utf-8", "surrogatepass")),
))
def test_any_body_to_the_envelope_endpoint_is_answered_without_a_5xx(body):
    token = getattr(test_any_body_to_the_envelope_endpoint_is_answered_without_a_5xx, "token", None)
    if token is None or not Participant.objects.filter(claw_id="fuzzer").exists():
        token = test_any_body_to_the_envelope_endpoint_is_answered_without_a_5xx.token = create_claw("fuzzer")  # type: ignore[attr-defined]
    before, audits = stored(), PoolAudit.objects.count()
    response = Client().post("/api/v1/pool/envelopes", data=body, content_type="text/plain", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code < 500, (response.status_code, response.content[:300])
    if response.status_code >= 400:
        answer = response.json()
        assert answer["code"] and answer["message"], answer
        assert response.status_code not in (400, 422) or answer["field"], answer
        assert stored() == before and PoolAudit.objects.count() == audits + 1
