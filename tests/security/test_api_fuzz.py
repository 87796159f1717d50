"""Schemathesis against /api/v1/openapi.json of a live daphne with a token: zero 5xx, every 4xx has code+message.

Driven through schemathesis' CLI in a subprocess (its HAR report holds every exchange, which the test reads).
AWP_FUZZ_EXAMPLES (default 4) sets the examples per operation; `make test` runs the short version.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from experiments.ingest import EventIn, ProjectionContext, append_events
from experiments.models import ApiToken
from tests.factories import make_experiment, make_member, make_run

pytestmark = pytest.mark.django_db(transaction=True)

SCHEMATHESIS = Path(__file__).resolve().parents[2] / ".venv" / "bin" / "schemathesis"


def seed() -> str:
    """An experiment with a run, events and a digest to aim at; returns an all-scopes token for it."""
    experiment = make_experiment(slug="fuzz")
    owner = make_member(experiment, "owner")
    run = make_run(experiment, run_id="fuzz-run")
    append_events(
        run,
        [EventIn(kind="log", dedupe_key=f"l{i}", payload={"msg": f"line {i}"}) for i in range(5)],
        ctx=ProjectionContext(strict=False, source="test"),
    )
    _token, secret = ApiToken.issue(experiment=experiment, name="fuzz", scopes=list(ApiToken.SCOPES), user=owner)
    return secret


def har_entries(path: Path) -> list[dict[str, object]]:
    entries: list[dict[str, object]] = []
    for har in sorted(path.glob("har-*.json")):
        entries += json.loads(har.read_text())["log"]["entries"]
    return entries


def framing_refusal(request: dict[str, object]) -> bool:
    """A multipart body without a boundary: Django's ASGI handler answers an empty 400 before any app code runs."""
    headers = {h["name"].lower(): h["value"] for h in request.get("headers", [])}  # type: ignore[union-attr,index]
    content_type = headers.get("content-type", "")
    return content_type.startswith("multipart/") and "boundary=" not in content_type


def test_fuzzed_api_never_answers_5xx_and_every_4xx_explains_itself(live_server_factory, tmp_path):
    server = live_server_factory(AWP_EMBEDDER="none")
    secret = seed()
    examples = os.environ.get("AWP_FUZZ_EXAMPLES", "4")
    report = tmp_path / "report"
    command = [
        str(SCHEMATHESIS), "run", f"{server.url}/api/v1/openapi.json",
        "-H", f"Authorization: Bearer {secret}",
        "-c", "not_a_server_error",
        "--phases", "examples,coverage,fuzzing",
        "-n", examples,
        "--seed", "20261121",
        "--generation-database", "none",
        "--request-timeout", "30",
        "--workers", "1",
        "--report", "har", "--report-dir", str(report),
        "--no-color",
        "--suppress-health-check", "all",
    ]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env={**os.environ, "NO_COLOR": "1"})
    output = result.stdout[-6000:] + result.stderr[-2000:]
    entries = har_entries(report)
    assert len(entries) > 100, output  # the fuzzer really ran
    server_errors, unexplained = [], []
    for entry in entries:
        request, response = entry["request"], entry["response"]  # type: ignore[index]
        status = int(response["status"])  # type: ignore[index]
        where = f"{request['method']} {request['url']} → {status}"  # type: ignore[index]
        if status >= 500:
            server_errors.append(where)
        elif 400 <= status < 500 and status != 405 and not framing_refusal(request):  # type: ignore[arg-type]
            text = response.get("content", {}).get("text", "")  # type: ignore[union-attr]
            try:
                body = json.loads(text)
                # The memory API answers in the AWP tool envelope {ok, status, data, error: <sentence>, code}.
                ok = isinstance(body, dict) and bool(body.get("code")) and bool(body.get("message") or body.get("error"))
            except ValueError:
                ok = False
            if not ok:
                unexplained.append(f"{where}: {text[:200]}")
    assert server_errors == [], f"{len(server_errors)} server errors, e.g. {server_errors[:10]}\n{output}"
    assert unexplained == [], f"{len(unexplained)} 4xx without code+message, e.g. {unexplained[:10]}"
    assert result.returncode == 0, output
