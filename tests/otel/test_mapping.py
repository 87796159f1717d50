"""Span attributes of both GenAI convention generations, OpenInference span kinds and memory spans, through the
receiver (SDK spans, the SDK's protobuf encoder)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from experiments.models import Event, Run
from memory.models import MemoryEntry
from tests.factories import make_token
from tests.otel.spans import Collect, protobuf_body, provider
from tests.otel.test_receive import send

pytestmark = pytest.mark.django_db


def _export(experiment, build) -> Run:  # type: ignore[no-untyped-def]
    collect = Collect()
    build(provider(collect).get_tracer("tests.otel.mapping"))
    assert send(Client(), make_token(experiment), protobuf_body(collect.spans)).status_code == 200
    return Run.objects.get(experiment=experiment)


def test_openinference_span_kinds_and_token_counts(experiment):
    def build(tracer):  # type: ignore[no-untyped-def]
        with tracer.start_as_current_span("Researcher", attributes={"openinference.span.kind": "AGENT", "agent.name": "researcher", "output.value": "Found 3 sources."}):
            with tracer.start_as_current_span("ChatCompletion", attributes={"openinference.span.kind": "LLM", "llm.model_name": "gpt-oi", "llm.provider": "openai",
                                                                           "llm.token_count.prompt": 11, "llm.token_count.completion": 7, "llm.token_count.completion_details.reasoning": 3}):  # fmt: skip
                pass
            with tracer.start_as_current_span("web_search", attributes={"openinference.span.kind": "TOOL", "tool.name": "web_search", "input.value": '{"q": "otel"}', "output.value": "3 hits"}):
                pass
            with tracer.start_as_current_span("guard", attributes={"openinference.span.kind": "GUARDRAIL"}):
                pass

    run = _export(experiment, build)
    agent = Event.objects.get(run=run, kind="worker.complete")
    assert agent.agent_id == "researcher" and agent.payload["output"] == "Found 3 sources."
    call = Event.objects.get(run=run, kind="metric.model_call")
    assert (call.payload["input_tokens"], call.payload["output_tokens"], call.payload["reasoning_tokens"], call.payload["model"]) == (11, 7, 3, "gpt-oi")
    tool = Event.objects.get(run=run, kind="tool.call")
    assert tool.payload["tool_name"] == "web_search" and tool.payload["arguments"] == {"q": "otel"} and tool.agent_id == "researcher"
    assert Event.objects.get(run=run, kind="log").payload["msg"] == "guard"


def test_older_conventions_prompt_and_completion_events(experiment):
    def build(tracer):  # type: ignore[no-untyped-def]
        with tracer.start_as_current_span("invoke_agent helper", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.system": "openai"}) as span:
            span.add_event("gen_ai.user.message", {"content": "What is 6 x 7?"})
            span.add_event("gen_ai.choice", {"message": json.dumps({"role": "assistant", "content": "42"})})
            with tracer.start_as_current_span("text_completion old", attributes={"gen_ai.operation.name": "text_completion", "gen_ai.system": "openai", "gen_ai.prompt": "6 x 7 =", "gen_ai.completion": "42",
                                                                                "gen_ai.usage.prompt_tokens": 5, "gen_ai.usage.completion_tokens": 1}):  # fmt: skip
                pass

    run = _export(experiment, build)
    agent = Event.objects.get(run=run, kind="worker.complete")
    assert agent.agent_id == "helper" and agent.payload["output"] == "42"
    assert run.task_text == "What is 6 x 7?"
    call = Event.objects.get(run=run, kind="metric.model_call")
    assert (call.payload["provider"], call.payload["input_tokens"], call.payload["output_tokens"], call.payload["output"]) == ("openai", 5, 1, "42")


def test_memory_spans_are_memory_events_and_writes_reach_the_daily_log(experiment):
    def build(tracer):  # type: ignore[no-untyped-def]
        with tracer.start_as_current_span("invoke_agent keeper", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "keeper"}):
            with tracer.start_as_current_span("update_memory prefs", attributes={"gen_ai.operation.name": "update_memory", "gen_ai.memory.scope": "user", "gen_ai.memory.content": "The user prefers window seats."}):
                pass
            with tracer.start_as_current_span("search_memory prefs", attributes={"gen_ai.operation.name": "search_memory", "gen_ai.memory.query": "seat", "gen_ai.memory.search.result.count": 1}):
                pass

    run = _export(experiment, build)
    write = Event.objects.get(run=run, kind="memory.write")
    assert write.payload["content"] == "The user prefers window seats." and write.agent_id == "keeper" and write.payload["memory"] == {"scope": "user"}
    search = Event.objects.get(run=run, kind="memory.search")
    assert search.payload["memory"] == {"query": "seat", "search.result.count": 1}
    assert MemoryEntry.objects.filter(experiment=experiment, content__contains="window seats").exists()
