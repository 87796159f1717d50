"""Sharing views (full / selective / isolated, never_share, x-awp-shareable) and conflict strategies, pure."""

from __future__ import annotations

from state.deltas import Delta
from state.merge import ConflictPolicy, conflict_groups, resolve
from state.sharing import policy_from_protocol, view_for

STATE = {
    "task": "t",
    "researcher": {"findings": [1], "summary": "s", "raw_api_responses": "raw", "scratch": "x"},
    "analyst": {"score": 0.8},
}
AGENTS = {"researcher", "analyst", "writer"}


def policy(strategy, **extra):
    sharing = {"strategy": strategy, "never_share": ["raw_api_responses"], **extra}
    protocol = {
        "state": {"sharing": sharing},
        "agents": {"researcher": {"output_contract": {"properties": {"scratch": {"type": "string", "x-awp-shareable": False}}}}},
    }
    return policy_from_protocol(protocol)


def test_full_shows_everything_but_never_share_and_unshareable():
    view = view_for(STATE, "analyst", policy("full"), AGENTS)
    assert view == {"task": "t", "researcher": {"findings": [1], "summary": "s"}, "analyst": {"score": 0.8}}


def test_producer_sees_its_own_fields():
    assert view_for(STATE, "researcher", policy("isolated"), AGENTS)["researcher"] == STATE["researcher"]


def test_selective_rules_and_share_output():
    rules = [{"from": "researcher", "to": ["writer"], "fields": ["summary", "raw_api_responses"]}]
    p = policy("selective", rules=rules, share_output={"analyst": ["score"]})
    assert view_for(STATE, "writer", p, AGENTS) == {"task": "t", "researcher": {"summary": "s"}, "analyst": {"score": 0.8}}
    assert view_for(STATE, "analyst", p, AGENTS) == {"task": "t", "analyst": {"score": 0.8}}


def test_isolated_share_input():
    p = policy("isolated", share_input={"writer": ["researcher.findings"]})
    assert view_for(STATE, "writer", p, AGENTS) == {"task": "t", "researcher": {"findings": [1]}}
    assert view_for(STATE, "analyst", p, AGENTS) == {"task": "t", "analyst": {"score": 0.8}}


def _d(agent, value, weight):
    return Delta(agent_id=agent, round=1, op="add", path="$.v", provenance="p", value=value, weight=weight)


def test_conflict_groups_need_two_agents_same_round_and_path():
    deltas = [_d("a", 1, 0.1), _d("b", 2, 0.2), _d("a", 3, 0.3), Delta("c", 2, "add", "$.v", "p", 1)]
    assert conflict_groups(deltas) == [[0, 1, 2]]
    assert conflict_groups([_d("a", 1, 0.1), _d("a", 2, 0.2)]) == []


def test_strategies_pick_the_documented_winner():
    group = [_d("mapper", "x", 0.5), _d("linker", "y", 0.9), _d("judge", "y", 0.1)]
    assert resolve(group, ConflictPolicy("highest-weight")).value == "y"
    majority = resolve(group, ConflictPolicy("majority-vote"))
    assert majority.value == "y" and majority.outcomes == ("lost", "applied", "merged")
    expert = resolve(group, ConflictPolicy.from_config({"strategy": "expert_override", "expert": "mapper"}))
    assert expert.value == "x" and expert.outcomes == ("applied", "lost", "lost")
    assert resolve([_d("a", [1, 2], 0.1), _d("b", [2, 3], 0.2)], ConflictPolicy("union")).value == [1, 2, 3]
    assert resolve([_d("a", {"k": 1, "z": 0}, 0.9), _d("b", {"z": 2}, 0.1)], ConflictPolicy()).value == {"k": 1, "z": 0}
