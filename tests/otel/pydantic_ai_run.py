"""A two-agent, one-tool pydantic-ai task (instrument=True), exported with the OTLP/HTTP protobuf exporter.

Run as a child process so the exporter reads the real environment variables a team would set:
OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS (and OPENAI_BASE_URL for the fake model).
"""

from __future__ import annotations

import sys

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from pydantic_ai import Agent, RunContext
from pydantic_ai.models.instrumented import InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


def main(task: str) -> None:
    tracer_provider = TracerProvider(resource=Resource.create({"service.name": "trip-planner"}))
    tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    instrument = InstrumentationSettings(tracer_provider=tracer_provider)
    model = OpenAIChatModel("gpt-fake", provider=OpenAIProvider())
    writer = Agent(model, name="writer", instructions="Write a short packing list.")
    planner = Agent(model, name="planner", instructions="Plan the trip; ask the writer for the packing list.")
    writer.instrument = planner.instrument = instrument  # this release's spelling of Agent(instrument=…)

    @planner.tool
    async def ask_writer(ctx: RunContext[None], topic: str) -> str:
        """Ask the writer agent to write about a topic."""
        result = await writer.run(topic, usage=ctx.usage)
        return result.output

    result = planner.run_sync(task)
    print(result.output)
    tracer_provider.shutdown()  # flushes the batch to the server


if __name__ == "__main__":
    main(sys.argv[1])
