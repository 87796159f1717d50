"""POST /otel/v1/traces in process: both encodings from the SDK's own encoders, gzip, the JSON quirks, refusals."""

from __future__ import annotations

import base64
import gzip
import json

import orjson
import pytest
from django.test import Client
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from experiments.models import Event, IngestProblem, Run
from experiments.run_charts import run_series
from tests.factories import make_experiment, make_token
from tests.otel.spans import collected, json_body, protobuf_body

pytestmark = pytest.mark.django_db
PROTOBUF, JSON = "application/x-protobuf", "application/json"


def send(client: Client, token: str | None, body: bytes, content_type: str = PROTOBUF, **headers: str):  # type: ignore[no-untyped-def]
    extra = {f"HTTP_{name.upper().replace('-', '_')}": value for name, value in headers.items()}
    extra["CONTENT_TYPE"] = content_type  # the test client drops it with an empty body; exporters always send it
    if token:
        extra["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    return client.post("/otel/v1/traces", body, content_type=content_type, **extra)


def ledger(run: Run) -> list[tuple[object, ...]]:
    """The ledger without its receive times: what two ways of sending the same spans must agree on."""
    return [(e.seq, e.kind, e.agent_id, e.occurred_at, e.ts_source, e.dedupe_key, e.payload) for e in Event.objects.filter(run=run).order_by("seq")]


def test_protobuf_export_becomes_one_event_per_span_and_answers_protobuf(experiment):
    spans = collected()
    response = send(Client(), make_token(experiment), protobuf_body(spans))
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == PROTOBUF
    answer = ExportTraceServiceResponse.FromString(response.content)
    assert not answer.HasField("partial_success")
    run = Run.objects.get(experiment=experiment)
    assert run.run_id == format(spans[0].context.trace_id, "032x") and run.engine == "otel"
    span_events = Event.objects.filter(run=run, ts_source="span").exclude(kind__startswith="run.")
    assert span_events.count() == len(spans) == 5
    assert sorted(span_events.values_list("kind", flat=True)) == ["metric.model_call", "metric.model_call", "tool.call", "worker.complete", "worker.complete"]
    by_id = {format(s.context.span_id, "016x"): s for s in spans}
    for event in span_events:
        span = by_id[event.payload["span_id"]]
        assert event.payload["name"] == span.name
        assert event.payload["parent_span_id"] == (format(span.parent.span_id, "016x") if span.parent else "")
        assert event.occurred_at.timestamp() == pytest.approx(span.start_time / 1e9, abs=1e-5)
    tool = span_events.get(kind="tool.call")
    assert tool.payload["tool_name"] == "lookup_weather" and tool.agent_id == "planner" and tool.payload["arguments"] == {"city": "Lisbon"}
    calls = {e.agent_id: e.payload for e in span_events.filter(kind="metric.model_call")}
    assert (calls["planner"]["input_tokens"], calls["planner"]["output_tokens"], calls["planner"]["cache_read_input_tokens"]) == (120, 30, 20)
    assert (calls["writer"]["input_tokens"], calls["writer"]["output_tokens"]) == (80, 40)  # the older attribute names
    run.refresh_from_db()
    assert run.status == "complete" and run.started_at is not None and run.budget_used["tokens"]["consumed"] == 270
    budget = run_series(run).budget  # no limits: the budget chart draws the run's token burn-up per model call
    assert [s.name for s in budget] == ["tokens"] and [p.y for p in budget[0].points] == [round(100 * 150 / 270, 2), 100.0]


def test_json_gzip_and_protobuf_of_the_same_spans_give_the_same_ledger():
    spans = collected()
    first, second = make_experiment(), make_experiment()
    gz = send(Client(), make_token(first), gzip.compress(json_body(spans)), JSON + "; charset=utf-8", content_encoding="gzip")
    pb = send(Client(), make_token(second), protobuf_body(spans))
    assert gz.status_code == pb.status_code == 200
    assert gz["Content-Type"] == JSON and orjson.loads(gz.content) == {}
    assert ledger(Run.objects.get(experiment=first)) == ledger(Run.objects.get(experiment=second))


def test_resent_export_adds_nothing(experiment):
    client, token, body = Client(), make_token(experiment), protobuf_body(collected())
    assert send(client, token, body).status_code == 200
    before = ledger(Run.objects.get(experiment=experiment))
    assert send(client, token, body).status_code == 200
    assert send(client, token, json_body(collected()[:0]) or b"{}", JSON).status_code == 200
    assert ledger(Run.objects.get(experiment=experiment)) == before


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (b"\xff\xff\xff\xff", PROTOBUF, "invalid_protobuf"),
        (b'{"resourceSpans": [', JSON, "invalid_json"),
        (b"[1, 2]", JSON, "invalid_json"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "x", "startTimeUnixNano": "soon"}]}]}]}', JSON, "invalid_otlp_json"),
    ],
)
def test_undecodable_bodies_are_400_and_store_nothing(experiment, body, content_type, code):
    response = send(Client(), make_token(experiment), body, content_type)
    assert response.status_code == 400 and response.json()["code"] == code
    assert not Run.objects.exists() and not Event.objects.exists()


def test_bad_gzip_unknown_media_type_and_missing_token_are_refused(experiment):
    client, token = Client(), make_token(experiment)
    assert send(client, token, b"not gzip", JSON, content_encoding="gzip").json()["code"] == "invalid_content_encoding"
    assert send(client, token, b"{}", "text/plain").status_code == 415
    assert send(client, None, b"{}", JSON).status_code == 401
    assert send(client, "awp_nope", b"{}", JSON).json()["code"] == "invalid_token"
    reader = make_token(experiment, scopes=["memory:read"])
    assert send(client, reader, b"{}", JSON).json()["code"] == "missing_scope"
    assert not Event.objects.exists()


def test_empty_requests_are_a_success(experiment):
    client, token = Client(), make_token(experiment)
    assert send(client, token, b"", PROTOBUF).status_code == 200
    assert send(client, token, b"{}", JSON).status_code == 200
    assert send(client, token, b'{"resourceSpans": []}', JSON).status_code == 200
    assert not Run.objects.exists()


def _json_spans() -> dict:
    return json.loads(json_body(collected()))


def test_json_quirks_base64_ids_int64_strings_and_int_enums_are_read(experiment):
    data = _json_spans()
    for span in data["resourceSpans"][0]["scopeSpans"][0]["spans"]:
        span["traceId"] = base64.b64encode(bytes.fromhex(span["traceId"])).decode()
        span["spanId"] = base64.b64encode(bytes.fromhex(span["spanId"])).decode()
        span["startTimeUnixNano"] = str(span["startTimeUnixNano"])
        span["kind"] = 1
        span.setdefault("status", {})["code"] = 0
        span["someFutureField"] = {"ignored": True}
    response = send(Client(), make_token(experiment), json.dumps(data).encode(), JSON)
    assert response.status_code == 200, response.content
    reference = make_experiment()
    send(Client(), make_token(reference), json_body(collected()), JSON)
    assert Event.objects.filter(run__experiment=experiment).count() == 7


def test_ids_of_the_wrong_length_are_rejected_spans_with_a_message(experiment):
    data = _json_spans()
    spans = data["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans[0]["traceId"] = "abcd"
    spans[1]["spanId"] = "0011223344556677889900"
    spans[2]["parentSpanId"] = "not an id!"
    response = send(Client(), make_token(experiment), json.dumps(data).encode(), JSON)
    assert response.status_code == 200
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 3 and "traceId" in partial["errorMessage"] and "parentSpanId" in partial["errorMessage"]
    assert Event.objects.filter(ts_source="span").exclude(kind__startswith="run.").count() == 2


def test_conversation_id_names_the_run_and_an_error_span_is_a_problem(experiment):
    spans = collected(conversation="conv-42", fail_tool=True)
    assert send(Client(), make_token(experiment), protobuf_body(spans)).status_code == 200
    run = Run.objects.get(experiment=experiment)
    assert run.run_id == "conv-42"
    tool = Event.objects.get(run=run, kind="tool.call")
    assert tool.payload["status"] == "error" and tool.payload["error"] == {"type": "TimeoutError", "message": "weather service timed out"}
    problem = IngestProblem.objects.get(run=run)
    assert problem.code == "span_error" and "lookup_weather" in problem.message


def test_overload_answers_503_with_retry_after(experiment, settings, monkeypatch):
    import threading

    from otel import views

    monkeypatch.setattr(views, "_inflight", threading.Semaphore(0))
    response = send(Client(), make_token(experiment), protobuf_body(collected()))
    assert response.status_code == 503 and response["Retry-After"].isdigit()
    assert not Event.objects.exists()


def _export(*spans: dict[str, object]) -> bytes:
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}).encode()


def _span(span_id: str, attributes: dict[str, dict[str, object]], name: str = "invoke_agent planner") -> dict[str, object]:
    return {
        "traceId": "0af7651916cd43dd8448eb211c80319c", "spanId": span_id, "name": name,
        "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": "1700000001000000000",
        "attributes": [{"key": key, "value": value} for key, value in attributes.items()],
    }  # fmt: skip


AGENT = {"gen_ai.operation.name": {"stringValue": "invoke_agent"}}
CHAT = {"gen_ai.operation.name": {"stringValue": "chat"}}


@pytest.mark.parametrize(
    ("attributes", "field"),
    [
        ({**AGENT, "gen_ai.agent.name": {"stringValue": "plan\u0000ner"}}, "attributes.gen_ai.agent.name"),
        ({"gen_ai.conversation.id": {"stringValue": "conv\u0000"}}, "attributes.gen_ai.conversation.id"),
        ({"note": {"stringValue": "a\u0000b"}}, "attributes.note"),
        ({"score": {"doubleValue": "NaN"}}, "attributes.score"),
        ({**CHAT, "gen_ai.usage.input_tokens": {"doubleValue": "Infinity"}}, "attributes.gen_ai.usage.input_tokens"),
        ({"nested": {"kvlistValue": {"values": [{"key": "x", "value": {"arrayValue": {"values": [{"doubleValue": "-Infinity"}]}}}]}}}, "attributes.nested"),
    ],
)
def test_a_span_holding_nul_or_a_non_finite_number_is_rejected_naming_the_field_and_the_others_go_in(experiment, attributes, field):
    good = _span("b7ad6b7169203331", AGENT)
    response = send(Client(raise_request_exception=False), make_token(experiment), _export(good, _span("c7ad6b7169203332", attributes)), JSON)
    assert response.status_code == 200, response.content[:300]
    partial = response.json()["partialSuccess"]
    assert int(partial["rejectedSpans"]) == 1 and field in partial["errorMessage"], partial
    assert list(Event.objects.filter(ts_source="span").exclude(kind__startswith="run.").values_list("payload__span_id", flat=True)) == ["b7ad6b7169203331"]


@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, "[" * 900 + "]" * 900, '[{"role": "user", "content": NaN}]', '{"a": ' * 400 + "1" + "}" * 400],
    ids=["5000 deep", "900 deep", "NaN", "400 deep object"],
)
def test_a_message_attribute_that_is_hostile_json_text_is_kept_as_text(experiment, text):
    """Message and argument attributes are JSON texts read as documents; a text that nests too deep or holds NaN is
    not one: it goes in as the text it is (a deep one used to be a RecursionError, NaN a 500 from Postgres)."""
    attributes = {**AGENT, "gen_ai.input.messages": {"stringValue": text}, "gen_ai.output.messages": {"stringValue": text}}
    tool = _span("d7ad6b7169203333", {"gen_ai.operation.name": {"stringValue": "execute_tool"}, "gen_ai.tool.call.arguments": {"stringValue": text}}, name="execute_tool t")
    tool["parentSpanId"] = "b7ad6b7169203331"
    response = send(Client(raise_request_exception=False), make_token(experiment), _export(_span("b7ad6b7169203331", attributes), tool), JSON)
    assert response.status_code == 200 and response.json() == {}, response.content[:300]
    assert Event.objects.get(kind="worker.complete").payload["input"] == text
    assert Event.objects.get(kind="tool.call").payload["arguments"] == text


@pytest.mark.parametrize("value", ["nan", "-inf", "1e400", "9" * 400])
def test_token_counts_that_are_no_number_the_ledger_holds_are_left_out(experiment, value):
    parent = _span("b7ad6b7169203331", AGENT)
    chat = _span("e7ad6b7169203334", {**CHAT, "gen_ai.usage.input_tokens": {"stringValue": value}, "gen_ai.usage.output_tokens": {"intValue": "7"}}, name="chat m")
    chat["parentSpanId"] = "b7ad6b7169203331"
    response = send(Client(raise_request_exception=False), make_token(experiment), _export(parent, chat), JSON)
    assert response.status_code == 200, response.content[:300]
    payload = Event.objects.get(kind="metric.model_call").payload
    assert payload["input_tokens"] == 0 and payload["output_tokens"] == 7
