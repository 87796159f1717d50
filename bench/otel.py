"""OTLP receive throughput: spans/s through POST /otel/v1/traces at batch 512 (the SDK's default export batch),
against events/s through POST /api/v1/ingest of the very same events (what the spans become), in the same run.

    python bench/otel.py            # 20,480 spans (40 exports of 512), each way, twice, alternating
    python bench/otel.py --quick    # 5,120 spans

Bodies are encoded before the clock starts (the SDK's own protobuf encoder; json.dumps for the push API), so
both figures measure the server. Prints a table, the load average, the ratio of the medians and `ratio <x>` = best OTLP spans/s ÷ best push
events/s over the rounds (goal: at least 0.8).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import requests
from common import daphne, machine, print_table, setup_django

# The repository first: this file's own name would otherwise shadow the `otel` app.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BATCH = 512


def make_spans(n: int, conversation: str) -> list[Any]:
    """n finished SDK spans of one trace, in the order the SDK ends them (the root last): a manager agent, under it
    worker agents, under each of them model calls and tool calls taking turns."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tests.otel.spans import Collect

    collect = Collect()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(collect))
    tracer = tracer_provider.get_tracer("bench.otel")
    with tracer.start_as_current_span("invoke_agent manager", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "manager", "gen_ai.conversation.id": conversation}):
        made = 1
        while made < n:
            with tracer.start_as_current_span("invoke_agent worker", attributes={"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"worker_{made % 4}"}) as agent:
                made += 1
                for i in range(min(BATCH - 1, n - made)):
                    made += 1
                    if i % 2:
                        attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "search", "gen_ai.tool.call.id": f"call-{made}",
                                      "gen_ai.tool.call.arguments": json.dumps({"query": f"facts about {i}"}), "gen_ai.tool.call.result": f"result {i}"}  # fmt: skip
                    else:
                        attributes = {"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "gpt-bench",
                                      "gen_ai.usage.input_tokens": 100 + i, "gen_ai.usage.output_tokens": 20}  # fmt: skip
                    with tracer.start_as_current_span(f"{attributes['gen_ai.operation.name']} {i}", attributes=attributes):
                        pass
                agent.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant", "parts": [{"type": "text", "content": f"part {made} done"}]}]))
    return collect.spans


def post_all(base: str, token: str, path: str, bodies: list[bytes], content_type: str) -> float:
    session = requests.Session()
    session.headers.update({"Authorization": f"Bearer {token}", "Content-Type": content_type})
    started = time.perf_counter()
    for body in bodies:
        response = session.post(f"{base}{path}", data=body, timeout=300)
        while response.status_code in (429, 503):
            time.sleep(float(response.headers.get("Retry-After", 1)))
            response = session.post(f"{base}{path}", data=body, timeout=300)
        if response.status_code != 200:
            raise SystemExit(f"{path} failed: {response.status_code} {response.text[:300]}")
    return time.perf_counter() - started


def push_bodies(spans: list[Any], run_id: str) -> list[bytes]:
    """The events the spans become (otel.mapping, run.start and run.complete included), as push API batches."""
    from otel.decode import PROTOBUF, decode_request, spans_of
    from otel.mapping import map_spans
    from tests.otel.spans import protobuf_body

    bodies = []
    for start in range(0, len(spans), BATCH):
        decoded = spans_of(decode_request(protobuf_body(spans[start : start + BATCH]), PROTOBUF))
        events = [
            {"kind": e.kind, "idempotency_key": e.dedupe_key, "agent_id": e.agent_id, "ts": e.occurred_at.isoformat() if e.occurred_at else None, "payload": e.payload}
            for batch in map_spans(decoded.spans)
            for e in batch.events
            if start == 0 or e.kind != "run.start"
        ]
        bodies.append(json.dumps({"run_id": run_id, "events": events}).encode())
    return bodies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    url = setup_django("otel")
    from experiments.models import ApiToken, Experiment
    from tests.otel.spans import protobuf_body

    total = 5_120 if args.quick else 20_480
    experiment = Experiment.objects.create(slug=f"bench-otel-{uuid.uuid4().hex[:8]}", name="otel benchmark")
    _token, secret = ApiToken.issue(experiment=experiment, name="bench", scopes=["ingest"])
    print(f"# otel benchmark · {machine()} · {total} spans per round · batch {BATCH}")
    rows: list[list[Any]] = []
    otel_rates: list[float] = []
    push_rates: list[float] = []
    with daphne(url) as base:
        for round_number in range(1, args.rounds + 1):
            spans = make_spans(total, f"bench-{uuid.uuid4().hex[:12]}")
            otlp = [protobuf_body(spans[i : i + BATCH]) for i in range(0, len(spans), BATCH)]
            pushed = push_bodies(spans, f"bench-push-{uuid.uuid4().hex[:8]}")
            elapsed = post_all(base, secret, "/api/v1/ingest", pushed, "application/json")
            push_rates.append(total / elapsed)
            rows.append([f"round {round_number}: push API, batch {BATCH}", total, elapsed, total / elapsed])
            elapsed = post_all(base, secret, "/otel/v1/traces", otlp, "application/x-protobuf")
            otel_rates.append(total / elapsed)
            rows.append([f"round {round_number}: OTLP protobuf, batch {BATCH}", total, elapsed, total / elapsed])
    print_table(["path", "spans / events", "seconds", "per second"], rows)
    load = os.getloadavg()
    print(f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"median ratio {statistics.median(otel_rates) / statistics.median(push_rates):.3f}")
    print(f"ratio {max(otel_rates) / max(push_rates):.3f}")


if __name__ == "__main__":
    main()
