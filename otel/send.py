"""Memory work out as OpenTelemetry `gen_ai.memory` spans (optional, off unless the server names an OTLP endpoint).

With `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) in the server's environment, and
`AWP_OTEL_SEND` not "off", every memory tool call of the API (search, recall, read, prior, write, board, digest),
every promotion or rejection of a reviewed proposal and every pool decision is one span, exported with the SDK's
OTLP/HTTP exporter (its own environment variables: headers, protocol, batch delay), so a team sees memory work in
the tracing tool it already uses. A request's `traceparent` makes the span a child of the agent's own span.

Attributes are ids, counts and states only, in the `awp.*` namespace beside the GenAI ones: never a memory's
content, a query or a message. The strings among them (agent ids, kinds) leave through the one redaction step.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import transaction

if TYPE_CHECKING:
    from experiments.models import Experiment

_lock = threading.Lock()
_tracer: Any = None
# Keys that could carry text a person wrote: refused whatever a caller passes.
_TEXT_KEYS = frozenset({"content", "query", "text", "message", "messages", "prompt", "reason", "detail"})
# Strings of the server's own vocabulary (operation names, enums): sent as they are. Other strings are redacted
# for their experiment, or dropped when there is none (pool envelopes belong to no one experiment).
_VOCABULARY_KEYS = frozenset({"gen_ai.operation.name", "gen_ai.provider.name", "awp.memory.tool", "awp.memory.tier", "awp.review.status",
                              "awp.proposal.kind", "awp.pool.type", "awp.pool.outcome", "awp.pool.origin"})  # fmt: skip


def enabled() -> bool:
    """Whether memory work is exported (settings.AWP_OTEL_SEND: an OTLP endpoint is configured and not "off")."""
    return bool(settings.AWP_OTEL_SEND)


def _get_tracer() -> Any:
    global _tracer
    with _lock:
        if _tracer is None:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor

            # A provider of our own (not the global one): the server's memory spans, flushed at exit.
            provider = TracerProvider(resource=Resource.create({"service.name": settings.AWP_OTEL_SERVICE_NAME}))
            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            _tracer = provider.get_tracer("awp.memory")
        return _tracer


def safe_attributes(experiment: Experiment | None, attributes: Mapping[str, Any]) -> dict[str, Any]:
    """Numbers and booleans as they are; short strings redacted for the experiment; text-bearing keys dropped."""
    from state.services_redaction import redact_text_for

    out: dict[str, Any] = {}
    strings: dict[str, str] = {}
    for key, value in attributes.items():
        if value is None or key.rsplit(".", 1)[-1].lower() in _TEXT_KEYS:
            continue
        if isinstance(value, bool | int | float):
            out[key] = value
        elif isinstance(value, str) and value and key in _VOCABULARY_KEYS:
            out[key] = value[:100]
        elif isinstance(value, str) and value:
            strings[key] = value[:200].replace("\n", " ")
    if strings and experiment is not None:
        shown = redact_text_for(experiment, "\n".join(strings.values())).split("\n")
        out.update(zip(strings, shown, strict=False))
    return out


def _emit(operation: str, experiment: Experiment | None, attributes: Mapping[str, Any], *, start_ns: int, end_ns: int, error: str = "", carrier: Mapping[str, str] | None = None) -> None:
    from opentelemetry.trace import SpanKind, Status, StatusCode
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    namespace = experiment.slug if experiment is not None else ""
    base = {"gen_ai.operation.name": operation, "gen_ai.provider.name": "awp", "gen_ai.memory.namespace": namespace}
    context = TraceContextTextMapPropagator().extract(carrier={key.lower(): value for key, value in carrier.items()}) if carrier else None
    span = _get_tracer().start_span(f"{operation} {namespace}".strip(), context=context, kind=SpanKind.INTERNAL, start_time=start_ns,
                                    attributes=safe_attributes(experiment, {**base, **attributes}))  # fmt: skip
    if error:
        span.set_attribute("error.type", error)
        span.set_status(Status(StatusCode.ERROR))
    span.end(end_time=end_ns)


@contextmanager
def memory_span(operation: str, *, experiment: Experiment | None, carrier: Mapping[str, str] | None = None, **attributes: Any) -> Iterator[dict[str, Any]]:
    """Time the block as one memory span; the caller may add outcome attributes to the dict it gets."""
    outcome: dict[str, Any] = {}
    if not enabled():
        yield outcome
        return
    start, error = time.time_ns(), ""
    try:
        yield outcome
    except Exception as exc:
        error = type(exc).__name__
        raise
    finally:
        _emit(operation, experiment, {**attributes, **outcome}, start_ns=start, end_ns=time.time_ns(), error=error, carrier=carrier)


def memory_event(operation: str, *, experiment: Experiment | None, **attributes: Any) -> None:
    """One instant memory span once the surrounding transaction commits (work rolled back sends nothing)."""
    if not enabled():
        return
    moment = time.time_ns()
    transaction.on_commit(lambda: _emit(operation, experiment, attributes, start_ns=moment, end_ns=time.time_ns()))
