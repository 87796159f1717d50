"""GenAI spans → ledger events (pure): which run a span belongs to, what kind of event it is, and its payload.

Every span is one event, deduplicated by (trace id, span id), timed by its own start (`ts_source` "span"):

| span | event kind | agent_id |
|---|---|---|
| agent: `invoke_agent`, `create_agent`, `invoke_workflow`; OpenInference AGENT; pydantic-ai "agent run" | `worker.complete` (its output becomes the agent's state and an episode, like a worker's result) | the agent's name |
| tool: `execute_tool`; OpenInference TOOL | `tool.call` (`tool_name`, `arguments`, `result`) | the agent the span runs under |
| model: `chat`, `text_completion`, `generate_content`, `embeddings`; OpenInference LLM/EMBEDDING | `metric.model_call` (`input_tokens`, `output_tokens`, `latency_ms`) | the agent |
| memory: `gen_ai.memory.*` attributes or a `*_memory` operation | `memory.write` (writes with content) or `memory.<operation>` | the agent |
| anything else | `log` | the agent |

Both generations of the GenAI semantic conventions are read: the older `gen_ai.system`, `gen_ai.prompt` /
`gen_ai.completion` and the `gen_ai.*.message` span events, and the newer `gen_ai.provider.name`,
`gen_ai.input.messages` / `gen_ai.output.messages`, `gen_ai.conversation.id`, `gen_ai.agent.*`, `gen_ai.usage.*`
and `gen_ai.tool.call.*`. A run is the trace (its id in lowercase hex), or the `gen_ai.conversation.id` that a
span of the trace in the same export carries.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from experiments.awp.events import EventSpec
from experiments.jsonb import json_document
from otel.decode import SpanIn

AGENT_OPERATIONS = frozenset({"invoke_agent", "create_agent", "invoke_workflow"})
TOOL_OPERATIONS = frozenset({"execute_tool"})
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content", "embeddings"})
MEMORY_WRITES = frozenset({"create_memory", "update_memory", "upsert_memory", "store_memory"})
AGENT_NAME_PREFIXES = ("invoke_agent", "create_agent", "invoke_workflow", "agent run")
TOOL_NAME_PREFIXES = ("execute_tool", "running tool")
MAX_RUN_ID = 200
MAX_TEXT = 100_000
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Attributes lifted into the payload's own fields (not repeated under "attributes").
_MESSAGE_KEYS = (
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt", "gen_ai.completion",
    "input.value", "output.value", "pydantic_ai.all_messages", "all_messages_events", "final_result",
    "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "tool_arguments", "tool_response", "gen_ai.memory.content",
)  # fmt: skip


@dataclass
class RunBatch:
    """The events of one run in one export, in ledger order."""

    run_id: str
    events: list[EventSpec]
    trace_ids: list[str]


def category_of(span: SpanIn) -> str:
    """agent | tool | model | memory | other."""
    attrs = span.attributes
    operation = str(attrs.get("gen_ai.operation.name") or "").lower()
    openinference = str(attrs.get("openinference.span.kind") or "").upper()
    name = span.name.lower()
    if operation.endswith("_memory") or operation.endswith("_memory_store") or name.startswith("gen_ai.memory") or any(key.startswith("gen_ai.memory.") for key in attrs):
        return "memory"
    if operation in AGENT_OPERATIONS or openinference == "AGENT" or (not operation and name.startswith(AGENT_NAME_PREFIXES)):
        return "agent"
    if operation in TOOL_OPERATIONS or openinference == "TOOL" or (not operation and name.startswith(TOOL_NAME_PREFIXES)):
        return "tool"
    if operation in MODEL_OPERATIONS or openinference in ("LLM", "EMBEDDING"):
        return "model"
    return "other"


def run_id_of(spans: list[SpanIn]) -> str:
    """The run of one trace's spans: the gen_ai.conversation.id of the earliest span carrying one, else the trace id.

    The earliest: nested agents may each carry their own conversation (pydantic-ai does); the outermost one names the run.
    """
    for span in sorted(spans, key=lambda s: (s.start_ns, s.span_id)):
        conversation = span.attributes.get("gen_ai.conversation.id")
        if isinstance(conversation, str | int) and str(conversation).strip():
            return str(conversation).strip()[:MAX_RUN_ID]
    return spans[0].trace_id


def map_spans(spans: list[SpanIn]) -> list[RunBatch]:
    """Spans of one export → one batch of events per run (deterministic: the same spans give the same events)."""
    by_trace: dict[str, list[SpanIn]] = {}
    for span in spans:
        by_trace.setdefault(span.trace_id, []).append(span)
    runs: dict[str, RunBatch] = {}
    for trace_id in sorted(by_trace):
        trace_spans = by_trace[trace_id]
        run_id = run_id_of(trace_spans)
        batch = runs.setdefault(run_id, RunBatch(run_id, [], []))
        batch.trace_ids.append(trace_id)
    for batch in runs.values():
        members = sorted((span for trace_id in batch.trace_ids for span in by_trace[trace_id]), key=lambda s: (s.start_ns, s.trace_id, s.span_id))
        batch.events = _run_events(members)
    return [runs[run_id] for run_id in sorted(runs)]


def _run_events(spans: list[SpanIn]) -> list[EventSpec]:
    by_id = {(span.trace_id, span.span_id): span for span in spans}
    categories = {id(span): category_of(span) for span in spans}

    def agent_above(span: SpanIn) -> str:
        seen = 0
        current = by_id.get((span.trace_id, span.parent_span_id))
        while current is not None and seen < 64:
            if categories[id(current)] == "agent":
                return agent_name(current)
            current = by_id.get((current.trace_id, current.parent_span_id))
            seen += 1
        return str(span.attributes.get("gen_ai.agent.name") or "")[:200]

    events = [_start_event(spans, [span for span in spans if categories[id(span)] == "agent"])]
    for span in spans:
        category = categories[id(span)]
        events.append(_span_event(span, category, agent_name(span) if category == "agent" else agent_above(span)))
    events.extend(_complete_event(span) for span in spans if not span.parent_span_id)
    return events


def agent_name(span: SpanIn) -> str:
    """The agent a span is: gen_ai.agent.name (or the names frameworks used before it), else from the span name."""
    attrs = span.attributes
    for key in ("gen_ai.agent.name", "agent_name", "agent.name", "gen_ai.agent.id"):
        if isinstance(attrs.get(key), str) and attrs[key].strip():
            return attrs[key].strip()[:200]
    for prefix in AGENT_NAME_PREFIXES:
        if span.name.lower().startswith(prefix) and span.name[len(prefix) :].strip():
            return span.name[len(prefix) :].strip()[:200]
    return (span.name or "agent")[:200]


def _time(ns: int) -> datetime | None:
    return EPOCH + timedelta(microseconds=ns // 1000) if ns > 0 else None


def _iso(ns: int) -> str | None:
    moment = _time(ns)
    return moment.isoformat() if moment else None


def _number(value: Any) -> int | float | None:
    """A count as a number the ledger can hold (a 64-bit integer or a finite float); None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        try:
            value = int(value) if len(value) <= 20 else None
        except ValueError:
            try:
                value = float(value)
            except ValueError:
                return None
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return None


def _first(attrs: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        if attrs.get(key) not in (None, ""):
            return attrs[key]
    return None


def _json_value(value: Any) -> Any:
    """A JSON text attribute (messages, arguments) as its value; anything else (a text that is not a JSON document,
    nests too deep or holds NaN) as it is."""
    if isinstance(value, str) and value[:1] in ("[", "{"):
        document = json_document(value, allow_nan=False)
        return value if document is None else document
    return value


def message_text(value: Any, *, roles: tuple[str, ...] = ()) -> str:
    """The text of messages in any of the shapes frameworks send: semconv parts, OpenAI-style content, plain text."""
    value = _json_value(value)
    if isinstance(value, str):
        return value[:MAX_TEXT]
    texts: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, list):
            for part in item:
                walk(part)
        elif isinstance(item, dict):
            role = str(item.get("role") or "")
            if roles and role and role not in roles:
                return
            if "parts" in item:
                walk(item["parts"])
            elif "content" in item:
                walk(item["content"])
            elif item.get("type") in ("text", "output_text", "input_text") and isinstance(item.get("text"), str):
                texts.append(item["text"])
            elif isinstance(item.get("message"), dict):
                walk(item["message"])

    walk(value)
    return "\n".join(text for text in texts if text)[:MAX_TEXT]


def _event_messages(span: SpanIn, names: tuple[str, ...]) -> list[dict[str, Any]]:
    """The older conventions' span events (gen_ai.user.message, gen_ai.choice, …) as messages."""
    out = []
    for name, _, attrs in span.events:
        if name in names:
            content = attrs.get("content", attrs.get("message", attrs.get("gen_ai.prompt", attrs.get("gen_ai.completion"))))
            out.append({"role": name.split(".")[1] if name.count(".") >= 2 else "assistant", "content": _json_value(content)})
    return out


def input_of(span: SpanIn) -> Any:
    """What the span was asked: input messages in whichever convention the framework used (parsed when JSON)."""
    attrs = span.attributes
    found = _first(attrs, "gen_ai.input.messages", "pydantic_ai.all_messages", "input.value", "gen_ai.prompt")
    if found is None:
        indexed = (_indexed(attrs, "gen_ai.prompt.") or _indexed(attrs, "llm.input_messages.")) if _has_indexed(attrs) else None
        found = indexed or _event_messages(span, ("gen_ai.system.message", "gen_ai.user.message", "gen_ai.tool.message")) or None
    return _json_value(found)


def _has_indexed(attrs: dict[str, Any]) -> bool:
    return any(key.startswith(_INDEXED_PREFIXES) for key in attrs)


def output_of(span: SpanIn) -> str:
    """What the span answered, as text: the final result, output messages, or the older completion forms."""
    attrs = span.attributes
    if attrs.get("final_result") not in (None, ""):
        return message_text(attrs["final_result"])
    found = _first(attrs, "gen_ai.output.messages", "output.value", "gen_ai.completion")
    if found is None:
        indexed = (_indexed(attrs, "gen_ai.completion.") or _indexed(attrs, "llm.output_messages.")) if _has_indexed(attrs) else None
        found = indexed or _event_messages(span, ("gen_ai.choice", "gen_ai.assistant.message"))
    if found is None and attrs.get("pydantic_ai.all_messages"):
        return message_text(attrs["pydantic_ai.all_messages"], roles=("assistant",)).rsplit("\n", 1)[-1]
    return message_text(found) if found else ""


_INDEXED_PREFIXES = ("gen_ai.prompt.", "gen_ai.completion.", "llm.input_messages.", "llm.output_messages.")


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """Traceloop / OpenInference flattened messages: prefix.N.role and prefix.N.content (or .message.content)."""
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attrs.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if index.isdigit() and rest in ("role", "content", "message.role", "message.content"):
            rows.setdefault(int(index), {})[rest.rsplit(".", 1)[-1]] = value
    return [rows[i] for i in sorted(rows)]


_USAGE_NAMES = {
    "input_tokens": ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "llm.token_count.prompt"),
    "output_tokens": ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens", "llm.token_count.completion"),
    "cache_read_input_tokens": ("gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_read_input_tokens", "llm.token_count.prompt_details.cache_read"),
    "cache_creation_input_tokens": ("gen_ai.usage.cache_creation.input_tokens", "gen_ai.usage.cache_creation_input_tokens", "llm.token_count.prompt_details.cache_write"),
    "reasoning_tokens": ("gen_ai.usage.reasoning.output_tokens", "gen_ai.usage.output_tokens.reasoning", "gen_ai.usage.reasoning_tokens", "llm.token_count.completion_details.reasoning"),
    "total_tokens": ("gen_ai.usage.total_tokens", "llm.usage.total_tokens", "llm.token_count.total"),
}
# attribute → (payload field, rank): one pass over a span's attributes finds every count (the lowest rank wins).
_USAGE_KEYS = {key: (field, rank) for field, keys in _USAGE_NAMES.items() for rank, key in enumerate(keys)}


def usage_of(attrs: dict[str, Any]) -> dict[str, int | float]:
    """Token counts under their newer and older names (and OpenInference's)."""
    found: dict[str, tuple[int, int | float]] = {}
    for key, value in attrs.items():
        named = _USAGE_KEYS.get(key)
        if named is None:
            continue
        number = _number(value)
        if number is not None and (named[0] not in found or named[1] < found[named[0]][0]):
            found[named[0]] = (named[1], number)
    return {field: number for field, (_, number) in found.items()}


def _error_of(span: SpanIn) -> dict[str, Any] | None:
    if not span.is_error:
        return None
    error: dict[str, Any] = {"type": str(span.attributes.get("error.type") or ""), "message": span.status_message}
    for name, _, attrs in span.events:
        if name == "exception":
            error["type"] = error["type"] or str(attrs.get("exception.type") or "")
            error["message"] = error["message"] or str(attrs.get("exception.message") or "")
    return error


def _span_event(span: SpanIn, category: str, agent: str) -> EventSpec:
    attrs = span.attributes
    duration_ms = round((span.end_ns - span.start_ns) / 1e6, 3) if span.end_ns >= span.start_ns > 0 else None
    payload: dict[str, Any] = {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "trace_id": span.trace_id,
        "name": span.name,
        "operation": str(attrs.get("gen_ai.operation.name") or attrs.get("openinference.span.kind") or ""),
        "started": _iso(span.start_ns),
        "ended": _iso(span.end_ns),
        "duration_ms": duration_ms,
        "status": "error" if span.is_error else "ok" if span.status_code == 1 else "unset",
    }
    if span.resource.get("service.name"):
        payload["service"] = str(span.resource["service.name"])
    error = _error_of(span)
    if error:
        payload["error"] = error
    kind = "log"
    if category == "agent":
        kind = "worker.complete"
        output = output_of(span)
        payload.update(agent=agent, agent_id=str(attrs.get("gen_ai.agent.id") or ""), input=input_of(span), output=output, summary=output[:2000])
        payload.update(usage_of(attrs))
    elif category == "tool":
        kind = "tool.call"
        tool = _first(attrs, "gen_ai.tool.name", "tool.name", "tool_name")
        if tool is None:
            for prefix in TOOL_NAME_PREFIXES:
                if span.name.lower().startswith(prefix):
                    tool = span.name[len(prefix) :].strip()
        payload.update(
            tool_name=str(tool or span.name),
            tool_call_id=str(attrs.get("gen_ai.tool.call.id") or attrs.get("tool_call.id") or ""),
            arguments=_json_value(_first(attrs, "gen_ai.tool.call.arguments", "tool_arguments", "tool.parameters", "input.value")),
            result=_json_value(_first(attrs, "gen_ai.tool.call.result", "tool_response", "output.value")),
        )
    elif category == "model":
        kind = "metric.model_call"
        payload.update(
            model=str(_first(attrs, "gen_ai.response.model", "gen_ai.request.model", "llm.model_name") or ""),
            provider=str(_first(attrs, "gen_ai.provider.name", "gen_ai.system", "llm.provider", "llm.system") or ""),
            input_tokens=0, output_tokens=0, latency_ms=duration_ms,
            input=input_of(span), output=output_of(span),
        )  # fmt: skip
        payload.update(usage_of(attrs))
    elif category == "memory":
        operation = str(attrs.get("gen_ai.operation.name") or span.name.rsplit(".", 1)[-1] or "memory").lower()
        content = attrs.get("gen_ai.memory.content")
        payload.update(operation=operation, memory={k[len("gen_ai.memory.") :]: v for k, v in attrs.items() if k.startswith("gen_ai.memory.") and k != "gen_ai.memory.content"})
        if operation in MEMORY_WRITES and content not in (None, ""):
            kind = "memory.write"
            payload.update(content=content if isinstance(content, str) else json.dumps(content, ensure_ascii=False), target="daily", agent_id=agent)
        else:
            kind = f"memory.{operation.removesuffix('_memory') or 'memory'}"[:64]
            if content not in (None, ""):
                payload["content"] = content
    else:
        payload.update(level="error" if span.is_error else "info", category="span", msg=span.name)
    payload["attributes"] = {key: value for key, value in attrs.items() if key not in _MESSAGE_KEYS}
    return EventSpec(
        kind=kind, dedupe_key=f"span:{span.trace_id}:{span.span_id}", payload=payload, agent_id=agent,
        occurred_at=_time(span.start_ns), ts_source="span",
    )  # fmt: skip


def _start_event(spans: list[SpanIn], agents: list[SpanIn]) -> EventSpec:
    """run.start of an OTel run (added to every export; the ledger keeps the first one)."""
    first = spans[0]
    task = next((text for span in agents if (text := message_text(input_of(span), roles=("user",)))), "")
    models = sorted({str(m) for span in spans if (m := _first(span.attributes, "gen_ai.request.model", "llm.model_name"))})
    payload: dict[str, Any] = {"task": task, "started": _iso(min(span.start_ns for span in spans)), "source": "otel", "trace_id": first.trace_id}
    if models:
        payload["models"] = {"model": ", ".join(models)[:200]}
    if first.resource.get("service.name"):
        payload["service"] = str(first.resource["service.name"])
    return EventSpec(kind="run.start", dedupe_key="otel:run.start", payload=payload, occurred_at=_time(min(span.start_ns for span in spans)), ts_source="span")


def _complete_event(root: SpanIn) -> EventSpec:
    """run.complete when a trace's root span arrived (exporters send a parent after its children)."""
    payload = {"status": "failed" if root.is_error else "complete", "reason": root.status_message[:200], "completed": _iso(root.end_ns), "source": "otel", "root_span_id": root.span_id}
    return EventSpec(kind="run.complete", dedupe_key=f"otel:root:{root.trace_id}:{root.span_id}", payload=payload, occurred_at=_time(root.end_ns), ts_source="span")
