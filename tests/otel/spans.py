"""Real OpenTelemetry SDK spans of a small GenAI run (two agents, one tool, two model calls), and the SDK's own
encoders for both OTLP encodings: what an exporter would send, without hand-made payloads."""

from __future__ import annotations

import json
from collections.abc import Sequence

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode_protobuf
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import Status, StatusCode

SECRET = "sk-proj-Zq8WnR4tLm2Xv7Ke9Pb3Yc6Hd1Jf5Ga0Ts8Uw2Ve4Rn7Mq"


class Collect(SpanExporter):
    """Keeps finished spans in memory, in the order the SDK ends them."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def provider(*exporters: SpanExporter, service: str = "otel-tests") -> TracerProvider:
    """A TracerProvider (not the global one) that hands each ended span to the exporters."""
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": service}))
    for exporter in exporters:
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    return tracer_provider


def genai_run(tracer_provider: TracerProvider, *, conversation: str | None = None, fail_tool: bool = False) -> None:
    """A planner agent that calls a model, runs a tool and delegates to a writer agent (newer conventions)."""
    tracer = tracer_provider.get_tracer("tests.otel")
    common = {"gen_ai.conversation.id": conversation} if conversation else {}
    with tracer.start_as_current_span("invoke_agent planner", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "planner", "gen_ai.agent.id": "agent-planner", **common}) as planner:
        planner.set_attribute("gen_ai.input.messages", json.dumps([{"role": "user", "parts": [{"type": "text", "content": f"Plan the trip; my key is {SECRET}"}]}]))
        with tracer.start_as_current_span("chat gpt-test", attributes={"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-test"}) as chat:
            chat.set_attribute("gen_ai.usage.input_tokens", 120)
            chat.set_attribute("gen_ai.usage.output_tokens", 30)
            chat.set_attribute("gen_ai.usage.cache_read.input_tokens", 20)
        with tracer.start_as_current_span("execute_tool lookup_weather", attributes={"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_weather", "gen_ai.tool.call.id": "call-1"}) as tool:
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"city": "Lisbon"}))
            tool.set_attribute("gen_ai.tool.call.result", json.dumps({"forecast": "sunny"}))
            if fail_tool:
                tool.set_status(Status(StatusCode.ERROR, "weather service timed out"))
                tool.set_attribute("error.type", "TimeoutError")
        with tracer.start_as_current_span("invoke_agent writer", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "writer"}) as writer:
            with tracer.start_as_current_span("chat gpt-test", attributes={"gen_ai.operation.name": "chat", "gen_ai.system": "openai", "gen_ai.request.model": "gpt-test", "gen_ai.usage.prompt_tokens": 80, "gen_ai.usage.completion_tokens": 40}):
                pass
            writer.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Pack sunscreen for Lisbon."}]}]))
        planner.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": "Trip planned: Lisbon, sunny."}]}]))


def collected(**options: object) -> list[ReadableSpan]:
    collect = Collect()
    genai_run(provider(collect), **options)  # type: ignore[arg-type]
    return collect.spans


def protobuf_body(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_protobuf(spans).SerializeToString()


def json_body(spans: Sequence[ReadableSpan]) -> bytes:
    return encode_json(spans).to_json().encode()
