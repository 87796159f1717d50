"""Shape ledger rows for the run pages: redacted payloads, budget bars, run trees, confidence sparklines."""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import orjson
from django.utils import timezone
from django.utils.html import escape
from django.utils.text import slugify

from experiments.models import Digest, Event, Experiment, IngestProblem, Run
from experiments.summaries import event_summary
from state.services_redaction import redact_for, redactor_for

BUDGET_KEYS = (("loops", "used"), ("workers", "spawned"), ("tokens", "consumed"), ("tool_calls", "used"), ("wall_time", "elapsed_s"))


@dataclass
class EventView:
    seq: int
    kind: str
    agent_id: str
    iteration: int | None
    depth: int
    ts: Any
    ts_source: str
    summary: str
    compact: str  # the redacted payload as compact JSON; static/js/app.js indents it when its row is opened

    @property
    def ts_note(self) -> str:
        """A word beside a time that is not the record's own (none for a record's time)."""
        return TS_NOTES.get(self.ts_source, "")

    # The text of the `date` filter's 'c' and 'H:i:s' formats, without its cost (~20 µs a call, 400 a page).
    @property
    def ts_iso(self) -> str:
        """The time in the current time zone, ISO 8601 (a <time datetime>)."""
        return timezone.localtime(self.ts).isoformat() if self.ts else ""

    @property
    def ts_clock(self) -> str:
        """The date and time in the current time zone, YYYY-MM-DD HH:MM:SS (runs span days)."""
        return timezone.localtime(self.ts).strftime("%Y-%m-%d %H:%M:%S") if self.ts else ""


# Shown beside the Timeline's time when it was not in the record itself (experiments.awp.timing).
TS_NOTES = {"parent": "from its iteration", "mtime": "file time", "received": "received"}


def present_events(experiment: Experiment, events: list[Event], *, redactor: Any = None) -> list[EventView]:
    """Redacted, one-line-summarised events for templates (one redaction call for the whole page, no indenting:
    pretty-printing every payload up front was most of the run page's server time). `redactor`: the
    experiment's masks when the caller has resolved them already."""
    redactor = redactor or redactor_for(experiment)
    payloads = redactor.value([e.payload for e in events])
    # Kind and agent id are masked before anything is derived from them (the row's CSS class slugifies the
    # kind: a lower-cased secret would no longer be the text the last-line net looks for).
    names = _masked_names(redactor, [name for e in events for name in (e.kind, e.agent_id)])
    return [
        EventView(e.seq, names[e.kind], names[e.agent_id], e.iteration, e.depth, e.ts, e.ts_from, event_summary(e.kind, p), compact_json(p))
        for e, p in zip(events, payloads, strict=True)
    ]


def _masked_names(redactor: Any, names: list[str]) -> dict[str, str]:
    """Each distinct label (kind, agent id, metric name) masked once (a page repeats a few labels)."""
    return {name: redactor.text(name) if name else name for name in set(names)}


def timeline_rows_markup(events: list[EventView]) -> str:
    """The Timeline's <tr> rows (the page and the websocket frames both print these), every text escaped.

    Built as strings rather than through a template include per row: a page has 200 rows and Django's
    template engine spent ~60 µs on each, a quarter of the run page's server time.
    """
    return "".join(_timeline_row(e) for e in events)


def _timeline_row(e: EventView) -> str:
    note = f" <small>{escape(e.ts_note)}</small>" if e.ts_note else ""
    iteration = "" if e.iteration is None else e.iteration
    return (
        f'<tr id="event-{e.seq}" class="event kind-{escape(slugify(e.kind))}">\n'
        f'  <td class="num">{e.seq}</td>\n'
        f"  <td><code>{escape(e.kind)}</code></td>\n"
        f"  <td>{escape(e.agent_id or '')}</td>\n"
        f'  <td class="num">{iteration}</td>\n'
        f'  <td class="muted nowrap"><time datetime="{escape(e.ts_iso)}">{escape(e.ts_clock)}</time>{note}</td>\n'
        f'  <td class="event-summary"><details class="payload-toggle"><summary>{escape(e.summary or "(empty payload)")}</summary>'
        f'<pre class="payload" data-json tabindex="0">{escape(e.compact)}</pre></details></td>\n'
        "</tr>\n"
    )


def compact_json(value: Any, limit: int = 20_000) -> str:
    """JSON without indentation (orjson), cut at `limit` characters."""
    try:
        text = orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + " …"


def budget_bars(run: Run) -> list[dict[str, Any]]:
    """Budget used vs max per dimension, from the latest snapshot (or the manifest's maxima)."""
    used = run.budget_used or {}
    bars = []
    for key, used_key in BUDGET_KEYS:
        entry = used.get(key) if isinstance(used.get(key), dict) else {}
        value = entry.get(used_key)
        maximum = entry.get("max") or entry.get("max_s")
        if isinstance(value, int | float) and isinstance(maximum, int | float) and maximum > 0:
            bars.append({"name": key.replace("_", " "), "used": value, "max": maximum, "pct": min(100, round(100 * value / maximum, 1))})
    return bars


def sparkline(values: list[Any], width: int = 160, height: int = 36) -> dict[str, Any]:
    """Points of an SVG polyline for confidence values in 0..1 (server-rendered; no scripts)."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
    if not numbers:
        return {"points": "", "dots": [], "width": width, "height": height}
    step = width / max(1, len(numbers) - 1)
    dots = [(round(i * step if len(numbers) > 1 else width / 2, 1), round(height - 2 - max(0.0, min(1.0, v)) * (height - 4), 1), v) for i, v in enumerate(numbers)]
    return {"points": " ".join(f"{x},{y}" for x, y, _ in dots), "dots": dots, "width": width, "height": height}


@dataclass
class RunNode:
    run: Run
    children: list[RunNode] = field(default_factory=list)
    is_best: bool = False


def run_forest(runs: list[Run], best_ids: set[int]) -> list[RunNode]:
    """Roots with their sub-manager runs nested (runs whose parent is filtered out become roots)."""
    nodes = {run.pk: RunNode(run, is_best=run.pk in best_ids) for run in runs}
    roots: list[RunNode] = []
    for node in nodes.values():
        parent = nodes.get(node.run.parent_id) if node.run.parent_id else None
        (parent.children if parent else roots).append(node)
    return roots


def flatten(nodes: list[RunNode], depth: int = 0) -> list[tuple[int, RunNode]]:
    """Depth-first (indent, node) pairs for a table."""
    out: list[tuple[int, RunNode]] = []
    for node in nodes:
        out.append((depth, node))
        out.extend(flatten(node.children, depth + 1))
    return out


def iterations_of(experiment: Experiment, run: Run) -> list[dict[str, Any]]:
    """Per iteration: the manager decision, budget, validation, critique and each worker's envelope/result/tools."""
    events = list(run.events.filter(kind__regex=r"^(iteration|worker)\.").order_by("seq"))
    payloads = redact_for(experiment, [e.payload for e in events])
    table: dict[int, dict[str, Any]] = defaultdict(lambda: {"workers": defaultdict(dict)})
    for event, payload in zip(events, payloads, strict=True):
        number = event.iteration or 0
        slot = table[number]
        slot["number"] = number
        name = event.kind.split(".", 1)[1]
        if event.kind.startswith("iteration."):
            slot[name] = payload
        else:
            slot["workers"][event.agent_id or "?"][name] = payload
    out = []
    for number in sorted(table):
        slot = table[number]
        workers = []
        for worker_id, parts in slot["workers"].items():
            result = parts.get("complete") or {}
            workers.append(
                {
                    "id": worker_id,
                    "instructions": (parts.get("spawn") or {}).get("instructions", ""),
                    "result": json.dumps(result, indent=2, ensure_ascii=False, default=str)[:8000] if result else "",
                    "confidence": result.get("confidence") if isinstance(result, dict) else None,
                    "tool_calls": (parts.get("tool_calls") or {}).get("calls", []),
                    "critique": parts.get("critique"),
                    "is_submanager": bool(result.get("_submanager")) if isinstance(result, dict) else False,
                }
            )
        out.append({"number": number, "decision": slot.get("decision") or {}, "budget": slot.get("budget"), "validation": slot.get("validation"), "critique": slot.get("critique"), "workers": workers})
    return out


def digest_tree(experiment: Experiment, root: Digest | None, max_depth: int = 4) -> dict[str, Any] | None:
    """The digest with its children resolved by SHA across the experiment's runs (missing ones marked)."""
    if root is None:
        return None
    seen: set[str] = set()

    def build(digest: Digest, depth: int) -> dict[str, Any]:
        seen.add(digest.sha)
        children = []
        if depth < max_depth and digest.child_digest_hashes:
            found = {d.sha: d for d in Digest.objects.filter(experiment=experiment, sha__in=digest.child_digest_hashes)}
            for sha in digest.child_digest_hashes:
                child = found.get(sha)
                children.append(build(child, depth + 1) if child and sha not in seen else {"sha": sha, "missing": child is None})
        body = redact_for(experiment, {"goal": digest.goal, "key_facts": digest.key_facts, "open_questions": digest.open_questions})
        return {"sha": digest.sha, "missing": False, "digest": digest, "iteration": digest.iteration, "run_ref": digest.run_ref, "chart": sparkline(digest.confidence_trend), "children": children, **body}

    return build(root, 0)


def problems_of(run: Run, limit: int = 200) -> list[IngestProblem]:
    return list(IngestProblem.objects.filter(run=run).order_by("-created_at")[:limit])


def mask_run_text(run: Run) -> Run:
    """The run with its free-text header fields (task, reason) masked for display; never saved."""
    redactor = redactor_for(run.experiment)
    run.task_text, run.reason = redactor.text(run.task_text), redactor.text(run.reason)
    return run
