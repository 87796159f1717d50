"""One line per ledger event for the Timeline (pure): what a person needs from each kind, never the raw JSON.

A decision's verdict and reasoning, a worker's summary and confidence, a metric's name and value, a tool's
name and outcome... Payloads arrive already redacted; the line is cut at LIMIT characters and has no newlines.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

LIMIT = 240


def _num(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return f"{value:.3g}" if isinstance(value, float) else str(value)


def _text(value: Any, limit: int = 160) -> str:
    if value is None or value == "":
        return ""
    text = value if isinstance(value, str) else str(value)
    return " ".join(text.split())[:limit]


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _decision(p: dict[str, Any]) -> str:
    verdict = _text(p.get("decision") or p.get("action") or p.get("verdict"), 40)
    return _join(verdict.upper() if verdict else "", _text(p.get("reasoning") or p.get("reason")))


def _worker_complete(p: dict[str, Any]) -> str:
    confidence = _num(p.get("confidence"))
    score = _num(p.get("_eval_score"))
    return _join(_text(p.get("summary") or p.get("error")), f"confidence {confidence}" if confidence else "", f"eval {score}" if score else "")


def _metric(kind: str, p: dict[str, Any]) -> str:
    name = kind.split(".", 1)[1] if "." in kind else kind
    if name == "eval":
        return _join("eval", _text(p.get("worker_id"), 60), f"score {_num(p.get('score'))}" if _num(p.get("score")) else "", _text(p.get("action"), 40))
    if name == "budget" and _num(p.get("budget_remaining_pct")):
        return _join("budget", f"{_num(p.get('budget_remaining_pct'))}% remaining", f"tokens {_num(p.get('tokens_used'))}" if _num(p.get("tokens_used")) else "")
    if name == "confidence" and _num(p.get("mean")):
        return f"confidence mean {_num(p.get('mean'))}"
    values = [f"{k} {v}" for k, raw in p.items() if not k.startswith("_") and k not in {"ts", "iteration"} and (v := _num(raw)) is not None]
    return _join(name, ", ".join(values[:6]))


def _budget(p: dict[str, Any]) -> str:
    parts = []
    for key, used in (("loops", "used"), ("workers", "spawned"), ("tokens", "consumed"), ("tool_calls", "used"), ("wall_time", "elapsed_s")):
        entry = p.get(key) if isinstance(p.get(key), dict) else {}
        if _num(entry.get(used)) is not None:
            limit = _num(entry.get("max") or entry.get("max_s"))
            parts.append(f"{key.replace('_', ' ')} {_num(entry.get(used))}" + (f"/{limit}" if limit else ""))
    return ", ".join(parts)


def _validation(p: dict[str, Any]) -> str:
    if isinstance(p.get("items"), list):  # awp-agents validation.json: one item per worker result
        parts = []
        for item in p["items"][:6]:
            if isinstance(item, dict):
                checks = item.get("deterministic") if isinstance(item.get("deterministic"), dict) else {}
                verdict = "passed" if checks.get("passed") is True else "failed" if checks.get("passed") is False else "checked"
                parts.append(_join(_text(item.get("worker_id"), 60), verdict, _text(item.get("feedback"), 80)))
        return "; ".join(parts) if parts else "no worker results to validate"
    verdict = p.get("passed", p.get("ok", p.get("valid")))
    issues = p.get("issues") or p.get("errors")
    return _join("passed" if verdict is True else "failed" if verdict is False else "", f"{len(issues)} issue(s)" if isinstance(issues, list) and issues else _text(p.get("summary")))


def _tool(p: dict[str, Any]) -> str:
    ok = p.get("ok", p.get("success"))
    return _join(_text(p.get("tool") or p.get("tool_name") or p.get("name"), 80), "ok" if ok is True else "failed" if ok is False else "", _text(p.get("error"), 120))


def _board(p: dict[str, Any]) -> str:
    inner = p.get("payload")
    shown = ", ".join(f"{k}: {v}" for k, v in inner.items()) if isinstance(inner, dict) else inner
    return _join(_text(p.get("topic"), 80), _text(shown, 160))


def _digest(p: dict[str, Any]) -> str:
    record = p.get("record") if isinstance(p.get("record"), dict) else {}
    facts = record.get("key_facts")
    return _join(_text(p.get("sha"), 12), _text(record.get("goal"), 120), f"{len(facts)} key fact(s)" if isinstance(facts, list) else "")


def _snapshot(p: dict[str, Any]) -> str:
    state = p.get("state") if isinstance(p.get("state"), dict) else {}
    return _join(_text(p.get("agent_id"), 60), f"keys: {', '.join(list(state)[:8])}" if state else "")


def _delta(p: dict[str, Any]) -> str:
    return _join(_text(p.get("op"), 10), _text(p.get("path"), 120), _text(p.get("provenance"), 80))


def _log(p: dict[str, Any]) -> str:
    return _join(_text(p.get("level"), 10).upper(), _text(p.get("msg") or p.get("message")))


PICKERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "iteration.decision": _decision,
    "iteration.budget": _budget,
    "iteration.validation": _validation,
    "iteration.critique": lambda p: _text(p.get("summary") or p.get("critique") or p.get("verdict")),
    "worker.spawn": lambda p: _text(p.get("instructions"), 200),
    "worker.complete": _worker_complete,
    "worker.critique": lambda p: _text(p.get("summary") or p.get("critique") or p.get("verdict")),
    "worker.tool_calls": lambda p: f"{len(p['calls'])} tool call(s)" if isinstance(p.get("calls"), list) else "",
    "tool.call": _tool,
    "board.post": _board,
    "digest": _digest,
    "state.snapshot": _snapshot,
    "state.delta": _delta,
    "log": _log,
    "run.start": lambda p: _text(p.get("task"), 200),
    "run.complete": lambda p: _join(_text(p.get("status"), 40), _text(p.get("reason"), 160)),
}


def event_summary(kind: str, payload: Any) -> str:
    """One line (≤ LIMIT characters, no newlines) saying what the event means; a compact fallback for other kinds."""
    body = payload if isinstance(payload, dict) else {"value": payload}
    picker = PICKERS.get(kind)
    try:
        line = _metric(kind, body) if kind.startswith("metric.") else picker(body) if picker else ""
    except (TypeError, ValueError, AttributeError):  # a payload of an unexpected shape falls back to its keys
        line = ""
    if not line:
        line = ", ".join(f"{k}: {_text(v, 60)}" for k, v in list(body.items())[:6])
    return " ".join(line.split())[:LIMIT]
