"""The pool's rules through the real server: envelopes over HTTP to daphne, the test database behind it."""

from __future__ import annotations

import pytest

from pool.models import Participant, PoolAudit, PoolEnvelope, PoolFactVersion, PoolVote
from tests.pool.helpers import PoolClient, create_claw, envelope

pytestmark = pytest.mark.django_db(transaction=True)


def clients(server, *names: str) -> list[PoolClient]:
    return [PoolClient(server.url, name, create_claw(name, "logs.read:/var/log/app/*")) for name in names]


def test_governed_pool_through_the_server(live_server_factory):
    server = live_server_factory(AWP_POOL_CLAW_ID="deploy-test")
    c1, c2, c3 = clients(server, "claw-1", "claw-2", "claw-3")

    # Two active participants only: a proposal with two yes votes waits.
    for c in (c1, c2):
        assert c.presence().json()["outcome"] == "accepted"
    assert c1.propose("p0", "Error E142 with a DB timeout maps to mitigation M7", tags=["incident"]).json()["status"] == "open"
    assert c1.vote("p0", "yes").status_code == 200
    assert c2.vote("p0", "yes").status_code == 200
    assert c1.proposal("p0")["status"] == "open"
    assert c1.facts() == []

    # A third participant arrives: the waiting proposal now has a majority of three (2) and is decided.
    c3.send(envelope("capabilities", "claw-3", {"capabilities": ["db.read:orders"]}))
    assert c3.presence().json()["outcome"] == "accepted"
    assert Participant.objects.get(claw_id="claw-3").capabilities == ["db.read:orders"]
    p0 = c1.proposal("p0")
    assert p0["status"] == "accepted" and p0["decision"]["fact_id"] == "fact:p0" and p0["decision"]["version"] == 1

    # Three present: a proposal, one yes waits, the second yes accepts it and publishes fact v1.
    c1.propose("p1", "Checkout retries hide DB timeouts", tags=["checkout"], confidence=0.8, source={"experiment": "ext"})
    assert c1.vote("p1", "yes", "seen in logs").json()["outcome"] == "accepted"
    assert c1.proposal("p1")["status"] == "open"
    vote = envelope("vote", "claw-2", {"proposal_id": "p1", "vote": "yes", "reason": "rows agree"}, trace="trace-p1")
    answer = c2.send(vote)
    assert answer.status_code == 200 and answer.json()["decision"]["outcome"] == "accepted"
    proposal = c1.proposal("p1")
    assert proposal["status"] == "accepted"
    assert [(v["claw_id"], v["vote"], v["reason"]) for v in proposal["votes"]] == [("claw-1", "yes", "seen in logs"), ("claw-2", "yes", "rows agree")]
    facts = {f["fact_id"]: f for f in c1.facts()}
    assert facts["fact:p1"]["version"] == 1 and facts["fact:p1"]["statement"] == "Checkout retries hide DB timeouts"
    assert facts["fact:p1"]["confidence"] == 0.8 and facts["fact:p1"]["tags"] == ["checkout"]

    # A replayed envelope answers "duplicate" and changes nothing.
    counts = (PoolEnvelope.objects.count(), PoolVote.objects.count(), PoolFactVersion.objects.count())
    replay = c2.send(vote)
    assert replay.status_code == 200 and replay.json()["outcome"] == "duplicate"
    assert (PoolEnvelope.objects.count(), PoolVote.objects.count(), PoolFactVersion.objects.count()) == counts

    # A second vote by one participant (new key) is refused, not counted.
    again = c1.vote("p1", "no")
    assert again.status_code == 409 and again.json()["code"] == "already_voted"
    assert PoolVote.objects.filter(proposal__proposal_id="p1").count() == 2

    # An amendment accepted by a majority becomes v2 of the same fact.
    c2.propose("p2", "Checkout retries hide DB timeouts; cap them at 3", amends_fact_id="fact:p1", tags=["checkout"])
    c1.vote("p2", "yes")
    assert c3.vote("p2", "yes").json()["decision"] == {"proposal_id": "p2", "outcome": "accepted", "yes": 2, "no": 0, "active": 3, "fact_id": "fact:p1", "version": 2}
    facts = {f["fact_id"]: f for f in c1.facts()}
    assert facts["fact:p1"]["version"] == 2 and facts["fact:p1"]["statement"].endswith("cap them at 3")
    assert list(PoolFactVersion.objects.filter(fact_id="fact:p1").values_list("version", flat=True)) == [1, 2]

    # A fact envelope with a stale version, or one that skips ahead, is refused; the fact stays at v2.
    stale = c1.send(envelope("fact", "claw-1", {"fact_id": "fact:p1", "version": 2, "statement": "rewrite", "proposal_id": "p2"}, trace="trace-stale"))
    assert stale.status_code == 409 and stale.json()["code"] == "stale"
    gap = c1.send(envelope("fact", "claw-1", {"fact_id": "fact:p1", "version": 4, "statement": "rewrite", "proposal_id": "p2"}, trace="trace-gap"))
    assert gap.status_code == 409 and gap.json()["code"] == "conflict"
    assert {f["fact_id"]: f["version"] for f in c1.facts()}["fact:p1"] == 2

    # A rejected proposal: two no votes.
    c3.propose("p3", "The moon is made of cheese")
    c1.vote("p3", "no", "no evidence")
    assert c2.vote("p3", "no").json()["decision"]["outcome"] == "rejected"
    assert c1.proposal("p3")["status"] == "rejected" and "fact:p3" not in {f["fact_id"] for f in c1.facts()}

    # Specific refusals.
    missing = envelope("presence", "claw-1", {})
    del missing["traceId"]
    assert c1.send(missing).json() == {"code": "invalid_envelope", "message": "traceId is required.", "field": "traceId"}
    assert c1.send(envelope("vote", "claw-1", {"proposal_id": "p1", "vote": "maybe"})).json()["code"] == "invalid_envelope"
    assert c1.send("not json").json()["code"] == "invalid_envelope"
    unknown = c1.vote("nope", "yes")
    assert unknown.status_code == 404 and unknown.json()["code"] == "unknown_proposal"
    assert c1.send(envelope("presence", "claw-2", {})).status_code == 403  # claw-1's token cannot speak for claw-2
    decision = c1.send(envelope("decision", "claw-1", {"proposal_id": "p3", "outcome": "accepted"}))
    assert decision.status_code == 400 and decision.json()["code"] == "invalid_envelope"
    assert PoolClient(server.url, "claw-1", "awpclaw_wrong").presence().status_code == 401

    # The audit holds every outcome with its traceId.
    audit = {(a.trace_id, a.outcome, a.code) for a in PoolAudit.objects.all()}
    assert ("trace-p1", "accepted", "") in audit and ("trace-p1", "duplicate", "") in audit
    assert ("trace-p1", "rejected", "already_voted") in audit
    assert ("trace-stale", "rejected", "stale") in audit and ("trace-gap", "rejected", "conflict") in audit
    assert ("trace-nope", "rejected", "unknown_proposal") in audit and ("trace-p3", "accepted", "") in audit
    decisions = PoolAudit.objects.filter(origin="coordinator", trace_id="trace-p2").values_list("type", flat=True)
    assert sorted(decisions) == ["decision", "fact"]  # the coordinator's decision and fact carry the proposal's traceId

    # Governance off (a second server on the same database): governed types are refused, presence is not.
    off = live_server_factory(AWP_POOL_CLAW_ID="deploy-test", AWP_POOL_GOVERNANCE="0")
    c1_off = PoolClient(off.url, "claw-1", c1.token)
    for kind, payload in [
        ("proposal", {"proposal_id": "p9", "statement": "anything"}),
        ("vote", {"proposal_id": "p3", "vote": "yes"}),
        ("fact", {"fact_id": "fact:p1", "version": 3, "statement": "x", "proposal_id": "p2"}),
        ("decision", {"proposal_id": "p3", "outcome": "accepted"}),
    ]:
        refused = c1_off.send(envelope(kind, "claw-1", payload, trace=f"trace-off-{kind}"))
        assert refused.status_code == 403 and refused.json()["code"] == "governance_disabled", kind
        assert PoolAudit.objects.filter(trace_id=f"trace-off-{kind}", outcome="rejected", code="governance_disabled").exists()
    assert c1_off.presence().json()["outcome"] == "accepted"
    assert {f["fact_id"]: f["version"] for f in c1.facts()}["fact:p1"] == 2
