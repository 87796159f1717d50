"""Helpers for pool tests: participants with tokens, envelopes, and calls to a live server's pool API."""

from __future__ import annotations

import io
import uuid
from datetime import UTC, datetime
from typing import Any

import requests
from django.core.management import call_command


def create_claw(claw_id: str, capabilities: str = "") -> str:
    """`awp_claw create` in this process (the test database); the token is the last line."""
    out = io.StringIO()
    args = ["create", "--claw-id", claw_id] + (["--capabilities", capabilities] if capabilities else [])
    call_command("awp_claw", *args, stdout=out)
    return out.getvalue().strip().splitlines()[-1]


def envelope(kind: str, claw_id: str, payload: dict[str, Any], *, trace: str | None = None, key: str | None = None) -> dict[str, Any]:
    return {
        "schemaVersion": 1,
        "type": kind,
        "traceId": trace or f"trace-{uuid.uuid4().hex[:12]}",
        "timestamp": datetime.now(UTC).isoformat(),
        "idempotencyKey": key or f"{kind}-{uuid.uuid4().hex}",
        "clawId": claw_id,
        "instanceId": f"{claw_id}-proc-1",
        "payload": payload,
    }


class PoolClient:
    """One participant talking to one server's pool API."""

    def __init__(self, base_url: str, claw_id: str, token: str) -> None:
        self.base_url, self.claw_id, self.token = base_url, claw_id, token

    def send(self, raw: dict[str, Any] | str) -> requests.Response:
        headers = {"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"}
        data = raw if isinstance(raw, str) else None
        return requests.post(f"{self.base_url}/api/v1/pool/envelopes", json=None if data else raw, data=data, headers=headers, timeout=30)

    def presence(self) -> requests.Response:
        return self.send(envelope("presence", self.claw_id, {}))

    def propose(self, proposal_id: str, statement: str, **extra: Any) -> requests.Response:
        return self.send(envelope("proposal", self.claw_id, {"proposal_id": proposal_id, "statement": statement, **extra}, trace=f"trace-{proposal_id}"))

    def vote(self, proposal_id: str, vote: str, reason: str = "", **kwargs: Any) -> requests.Response:
        return self.send(envelope("vote", self.claw_id, {"proposal_id": proposal_id, "vote": vote, "reason": reason}, trace=f"trace-{proposal_id}", **kwargs))

    def proposal(self, proposal_id: str) -> dict[str, Any]:
        response = requests.get(f"{self.base_url}/api/v1/pool/proposals/{proposal_id}", headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def facts(self) -> list[dict[str, Any]]:
        response = requests.get(f"{self.base_url}/api/v1/pool/facts", headers={"Authorization": f"Bearer {self.token}"}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()
