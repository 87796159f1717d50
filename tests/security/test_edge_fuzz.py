"""Bad input at the edge, in process (Django's test client, the real middleware and API): zero 5xx, every 4xx
with a code, nothing stored on refusal. Deterministic and bounded (derandomized hypothesis, fixed corpora).

- schemathesis strategies (positive and negative) for every operation of the /api/v1 OpenAPI schema;
- a hostile corpus on every body operation (NUL, lone surrogates, 1,000- and 10k-deep nesting, huge integers,
  NaN/Infinity, long strings, `text/plain`, not-JSON) and on every path and query parameter;
- the accepting edge (`Prefer: respond-async`, a drainer alive): the hostile corpus, schemathesis cases and
  hypothesis batches of known kinds; what is accepted is then applied or refused with a code, never `apply_failed`;
- hypothesis for the memory API bodies;
- the pages' query parameters (seq, page, date, after, …) with the same hostile values.

The live-server run of schemathesis' CLI stays in test_api_fuzz.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import psycopg
import pytest
import schemathesis
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from awp_site.api import api
from awp_site.db import dedicated_params
from experiments.inbox import DRAINER_LOCK, drain_pending
from experiments.ingest import EventIn, ProjectionContext, append_events
from experiments.models import AcceptedBatch, ApiToken, BoardPost, Event, Run
from memory.models import MemoryEntry
from pool.models import PoolEnvelope, PoolProposal, PoolVote
from tests.factories import PASSWORD, make_experiment, make_member, make_run
from tests.pool.helpers import create_claw

pytestmark = pytest.mark.django_db

SCHEMA = schemathesis.openapi.from_dict(api.get_openapi_schema())
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]
BODY_OPERATIONS = [op for op in OPERATIONS if op.method.upper() == "POST"]
GET_OPERATIONS = [op for op in OPERATIONS if op.method.upper() == "GET"]
def fuzz(examples: int) -> settings:
    return settings(max_examples=examples, derandomize=True, deadline=None, database=None, suppress_health_check=list(HealthCheck))


@pytest.fixture
def world() -> dict[str, Any]:
    """An experiment `fuzz` with a run, events and an owner; an all-scopes token and a pool participant."""
    experiment = make_experiment(slug="fuzz")
    owner = make_member(experiment, "owner")
    run = make_run(experiment, run_id="fuzz-run")
    append_events(run, [EventIn(kind="log", dedupe_key=f"l{i}", payload={"msg": f"line {i}"}) for i in range(3)], ctx=ProjectionContext(strict=False, source="test"))
    _token, secret = ApiToken.issue(experiment=experiment, name="fuzz", scopes=list(ApiToken.SCOPES), user=owner)
    return {"token": secret, "claw": create_claw("fuzz-claw"), "owner": owner}


def stored() -> tuple[int, ...]:
    return (Event.objects.count(), Run.objects.count(), MemoryEntry.objects.count(), BoardPost.objects.count(),
            PoolEnvelope.objects.count(), PoolProposal.objects.count(), PoolVote.objects.count())  # fmt: skip


def send(world: dict[str, Any], method: str, path: str, *, body: bytes | None = None, content_type: str = "application/json", query: str = "",
         **headers: str) -> Any:  # fmt: skip
    token = world["claw"] if path.startswith("/api/v1/pool/") else world["token"]
    client = Client(raise_request_exception=False)
    url = path + (f"?{query}" if query else "")
    if method == "GET":
        return client.get(url, HTTP_AUTHORIZATION=f"Bearer {token}", **headers)
    return client.generic(method, url, data=body or b"", content_type=content_type, HTTP_AUTHORIZATION=f"Bearer {token}", **headers)


def explained(response: Any) -> bool:
    """A 4xx says what is wrong: JSON with a code and a sentence (the memory API's tool envelope too)."""
    try:
        body = response.json()
    except ValueError:
        return False
    return isinstance(body, dict) and bool(body.get("code")) and bool(body.get("message") or body.get("error"))


def check(response: Any, where: str) -> None:
    assert response.status_code < 500, f"{where} → {response.status_code}: {response.content[:300]!r}"
    if 400 <= response.status_code < 500 and response.status_code != 405:
        assert explained(response), f"{where} → {response.status_code} without code+message: {response.content[:300]!r}"


def concrete(path: str, values: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: values.get(m.group(1), m.group(1)), path)


KNOWN = {"slug": "fuzz", "run_id": "fuzz-run", "sha": "a" * 64, "proposal_id": "1"}


# ---------------------------------------------------------------- schemathesis strategies, every operation


@fuzz(80)
@given(data=st.data())
def test_schema_driven_cases_never_answer_5xx(world, data):
    operation = data.draw(st.sampled_from(OPERATIONS), label="operation")
    mode = data.draw(st.sampled_from(list(schemathesis.GenerationMode)), label="mode")
    case = data.draw(operation.as_strategy(generation_mode=mode), label="case")
    parameters = {k: quote(str(v), safe="") for k, v in (case.path_parameters or {}).items()}
    if data.draw(st.booleans(), label="aim at real objects"):
        parameters.update(KNOWN)
    path = concrete(operation.path, parameters)
    query = "&".join(f"{quote(str(k))}={quote(str(v))}" for k, v in (case.query or {}).items() if not isinstance(v, list))
    body = None
    if operation.method.upper() == "POST":
        payload = case.body if type(case.body).__name__ != "NotSet" else {}
        body = payload if isinstance(payload, bytes) else json.dumps(payload, allow_nan=True, default=str).encode("utf-8", "surrogatepass")
    check(send(world, operation.method.upper(), f"/api/v1{path}" if not path.startswith("/api/") else path, body=body, query=query), f"{operation.method} {path}")


# ---------------------------------------------------------------- a hostile corpus on every body operation


def nested(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


def document(value: str) -> bytes:
    """One JSON document carrying `value` (raw JSON text) in every field the body operations read."""
    fields = ["query", "content", "topic", "sha", "agent_id", "proposal_id", "statement", "verdict", "reason"]
    parts = [f'"{name}": {value}' for name in fields]
    event = f'{{"kind": "log", "idempotency_key": "hostile", "payload": {{"m": {value}}}}}'
    envelope = f'"schemaVersion": 1, "type": "presence", "traceId": {value}, "timestamp": "2026-11-25T10:00:00Z", "idempotencyKey": {value}, "clawId": "fuzz-claw", "instanceId": "i", "payload": {{"x": {value}}}'
    return ("{" + ", ".join([*parts, '"run_id": "fuzz-run"', f'"events": [{event}]', f'"payload": {{"x": {value}}}', envelope]) + "}").encode()


HOSTILE: dict[str, tuple[bytes, str, bool]] = {  # name → (body, content type, must be refused)
    "nul": (document('"a\\u0000b"'), "application/json", True),
    "nul as text/plain": (document('"a\\u0000b"'), "text/plain", True),
    "lone surrogate": (document('"\\ud800x"'), "application/json", True),
    "lone low surrogate as text/plain": (document('"\\udc00"'), "text/plain", True),
    "NaN": (document("NaN"), "application/json", True),
    "Infinity": (document("Infinity"), "application/json", True),
    "-Infinity": (document("-Infinity"), "application/json", True),
    "1,000 deep": (document(nested(1000)), "application/json", True),
    "10k deep": (document(nested(10_000)), "application/json", True),
    "10k deep arrays": (b"[" * 10_000 + b"]" * 10_000, "application/json", True),
    "huge integer (400 digits)": (document("9" * 400), "application/json", True),
    "huge integer (40 digits)": (document("9" * 40), "application/json", False),
    "long string (1 MB)": (document(json.dumps("word " * 200_000)), "application/json", False),
    "not JSON, text/plain": (b"hello, server", "text/plain", True),
    "invalid UTF-8": (b'{"query": "\xff\xfe"}', "application/json", True),
    "truncated": (b'{"query": "x"', "application/json", True),
    "empty": (b"", "application/json", False),
    "top-level array": (b"[1, 2]", "application/json", False),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_hostile_bodies_on_every_body_operation_are_4xx_and_store_nothing(world, hostile):
    body, content_type, refused = HOSTILE[hostile]
    for operation in BODY_OPERATIONS:
        path = "/api/v1" + concrete(operation.path, KNOWN) if not operation.path.startswith("/api/") else concrete(operation.path, KNOWN)
        before = stored()
        response = send(world, "POST", path, body=body, content_type=content_type)
        check(response, f"{hostile}: POST {path}")
        if refused:
            assert 400 <= response.status_code < 500, f"{hostile}: POST {path} → {response.status_code} {response.content[:200]!r}"
            assert stored() == before, f"{hostile}: POST {path} stored something"


# ---------------------------------------------------------------- the accepting edge (Prefer: respond-async)


@pytest.fixture
def drainer_alive() -> Iterator[None]:
    """A drainer's shared lock held on a connection of its own: pushes that prefer it are accepted (202)."""
    with psycopg.connect(**dedicated_params(), autocommit=True) as held:
        held.execute("SELECT pg_advisory_lock_shared(%s, %s)", DRAINER_LOCK)
        yield


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_hostile_bodies_pushed_to_be_accepted_are_refused_at_the_edge_or_applied_never_5xx(world, drainer_alive, hostile):
    body, content_type, refused = HOSTILE[hostile]
    before = stored()
    response = send(world, "POST", "/api/v1/ingest", body=body, content_type=content_type, HTTP_PREFER="respond-async")
    check(response, f"{hostile}: POST /api/v1/ingest, Prefer: respond-async")
    if refused:
        assert 400 <= response.status_code < 500 and not AcceptedBatch.objects.exists(), (hostile, response.status_code)
        assert stored() == before
    drain_pending()
    assert not AcceptedBatch.objects.filter(result__code="apply_failed").exists()


INGEST = next(op for op in BODY_OPERATIONS if op.path.endswith("/ingest"))


@fuzz(60)
@given(data=st.data())
def test_schema_driven_pushes_to_be_accepted_are_answered_and_applied_or_refused_with_a_code(world, drainer_alive, data):
    mode = data.draw(st.sampled_from(list(schemathesis.GenerationMode)), label="mode")
    case = data.draw(INGEST.as_strategy(generation_mode=mode), label="case")
    payload = case.body if type(case.body).__name__ != "NotSet" else {}
    body = payload if isinstance(payload, bytes) else json.dumps(payload, allow_nan=True, default=str).encode("utf-8", "surrogatepass")
    check(send(world, "POST", "/api/v1/ingest", body=body, HTTP_PREFER="respond-async"), "POST /api/v1/ingest, Prefer: respond-async")
    drain_pending()
    for state, result in AcceptedBatch.objects.values_list("state", "result"):
        assert state == "applied" or (state == "refused" and result["code"] != "apply_failed" and result["message"]), result


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
)
pushed_events = st.fixed_dictionaries(
    {"kind": st.sampled_from(["log", "run.start", "metric.loss", "tool.call", "board.post", "digest", "state.delta", "memory.write", "worker.complete"])},
    optional={"payload": json_values, "idempotency_key": json_values, "agent_id": json_values, "iteration": json_values, "ts": json_values},
)


@fuzz(60)
@given(run_id=st.sampled_from(["fuzz-run", "new-run"]) | st.text(min_size=1, max_size=30), events=st.lists(pushed_events, min_size=1, max_size=4))
def test_batches_of_known_kinds_are_accepted_then_applied_or_refused_with_a_code(world, drainer_alive, run_id, events):
    response = send(world, "POST", "/api/v1/ingest", body=json.dumps({"run_id": run_id, "events": events}).encode("utf-8", "surrogatepass"),
                    HTTP_PREFER="respond-async")  # fmt: skip
    check(response, "POST /api/v1/ingest, Prefer: respond-async")
    drain_pending()
    for state, result in AcceptedBatch.objects.values_list("state", "result"):
        assert state == "applied" or (state == "refused" and result["code"] != "apply_failed" and result["message"]), result


def test_nan_and_infinity_are_refused_with_422_naming_the_field_not_stored_as_null(world):
    body = b'{"run_id": "fuzz-run", "events": [{"kind": "metric.loss", "idempotency_key": "nan", "payload": {"value": NaN, "api_key": "sk-live-1234567890"}}]}'
    before = stored()
    response = send(world, "POST", "/api/v1/ingest", body=body)
    assert response.status_code == 422 and response.json()["code"] == "non_finite_number"
    assert response.json()["field"] == "events[0].payload.value" and b"sk-live" not in response.content
    assert stored() == before


def test_a_2_mb_search_query_is_a_fast_400_not_a_503(world):
    for words, code in (("word " * 400_000, "query_too_long"), ("w " * 65, "query_too_many_words")):
        response = send(world, "POST", "/api/v1/experiments/fuzz/memory/search", body=json.dumps({"query": words}).encode())
        assert response.status_code == 400 and response.json()["code"] == code, response.content[:200]
    within = send(world, "POST", "/api/v1/experiments/fuzz/memory/search", body=json.dumps({"query": "line " * 64}).encode())
    assert within.status_code == 200, within.content[:200]


# ---------------------------------------------------------------- hostile path and query parameters

HOSTILE_PARAMETERS = ["%00", "a%00b", "x" * 3000, "%ED%A0%80", "%FF", "..%2F..%2Fetc", "9" * 40, "-1", "NaN", "Infinity", "1e999", "2026-13-45", "%20"]


@pytest.mark.parametrize("value", HOSTILE_PARAMETERS)
def test_hostile_path_and_query_parameters_on_every_read_are_answered_without_5xx(world, value):
    for operation in GET_OPERATIONS:
        path_names = re.findall(r"\{(\w+)\}", operation.path)
        query_names = [p.name for p in operation.query] if hasattr(operation, "query") else []
        prefix = "" if operation.path.startswith("/api/") else "/api/v1"
        for name in path_names:  # one hostile path parameter at a time, the others real
            path = prefix + concrete(operation.path, {**KNOWN, name: value})
            check(send(world, "GET", path), f"GET {path[:120]}")
        if query_names:
            path = prefix + concrete(operation.path, KNOWN)
            query = "&".join(f"{name}={value}" for name in query_names)
            check(send(world, "GET", path, query=query), f"GET {path}?{query[:120]}")


# ---------------------------------------------------------------- hypothesis for the memory API

SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40), st.sampled_from(["", "\x00", "a\x00", "\ud800", "x" * 3000, "2026-11-25", "2026-13-45", "fuzz-run", "a" * 64, "long_term", "daily", "dates", "keyword", "semantic"]),
)
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
MEMORY_FIELDS = {
    "search": ["query", "mode", "tiers", "date_range", "agent_filter", "max_results", "agent_id", "include_archived", "salience"],
    "write": ["agent_id", "target", "content", "run_id"],
    "read": ["agent_id", "target", "date", "inject"],
    "recall": ["agent_id", "query", "turn", "top_k"],
    "prior": ["agent_id"],
    "board/post": ["run_id", "topic", "payload", "worker_id", "agent_id"],
    "board/read": ["run_id", "topic", "since", "agent_id"],
    "digest/fetch": ["sha", "agent_id"],
}


@fuzz(100)
@given(data=st.data())
def test_memory_api_bodies_never_answer_5xx_and_refusals_store_nothing(world, data):
    action = data.draw(st.sampled_from(sorted(MEMORY_FIELDS)), label="action")
    names = data.draw(st.lists(st.sampled_from(MEMORY_FIELDS[action]), unique=True, max_size=len(MEMORY_FIELDS[action])), label="fields")
    body = {name: data.draw(VALUES, label=name) for name in names}
    area = "memory/" if action in ("search", "write", "read", "recall", "prior") else ""
    before = stored()
    response = send(world, "POST", f"/api/v1/experiments/fuzz/{area}{action}", body=json.dumps(body, allow_nan=True).encode("utf-8", "surrogatepass"))
    check(response, f"{action} {body!r:.200}")
    if response.status_code >= 400:
        assert response.json()["ok"] is False and stored() == before


# ---------------------------------------------------------------- the pages' query parameters

PAGE_PARAMETERS = ["seq", "seq_a", "seq_b", "page", "day", "date", "after", "round", "iteration", "from", "a", "b", "v", "q", "path", "as",
                   "agent", "worker", "kind", "status", "tag", "topic", "trace", "selected", "reveal", "archived", "part", "mode", "tiers",
                   "start", "end", "agents", "max_results"]  # fmt: skip
PAGE_VALUES = ["%00", "9" * 40, "-1", "NaN", "Infinity", "1e999", "2026-13-45", "x" * 3000, "%ED%A0%80", "0"]


def test_page_query_parameters_never_answer_5xx(world):
    client = Client(raise_request_exception=False)
    assert client.login(username=world["owner"].username, password=PASSWORD)
    run = Run.objects.get(run_id="fuzz-run")
    pages = [
        "/", "/experiments/fuzz/", "/experiments/fuzz/runs/", f"/experiments/fuzz/runs/{run.pk}/", f"/experiments/fuzz/runs/{run.pk}/iterations/",
        f"/experiments/fuzz/runs/{run.pk}/board/", f"/experiments/fuzz/runs/{run.pk}/digests/", f"/experiments/fuzz/runs/{run.pk}/problems/",
        f"/experiments/fuzz/runs/{run.pk}/state/", f"/experiments/fuzz/runs/{run.pk}/state/rounds/", "/experiments/fuzz/compare/",
        "/experiments/fuzz/memory/", "/experiments/fuzz/memory/long-term/", "/experiments/fuzz/memory/long-term/diff/",
        "/experiments/fuzz/memory/working/", "/experiments/fuzz/memory/episodic/", "/experiments/fuzz/memory/recall/",
        "/experiments/fuzz/memory/search/", "/experiments/fuzz/memory/audit/", "/experiments/fuzz/memory/curated/", "/pool/",
    ]  # fmt: skip
    failures = []
    for page in pages:
        for value in PAGE_VALUES:
            query = "&".join(f"{name}={value}" for name in PAGE_PARAMETERS)
            response = client.get(f"{page}?{query}")
            if response.status_code >= 500:
                failures.append(f"{page}?…={value[:20]} → {response.status_code}")
    assert failures == []
