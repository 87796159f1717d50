"""The one way to a third party: every text sent to the chat endpoint is built and sent here, and nowhere else.

- `reflection_prompt` builds the reflection prompt from what the reflected agent may see under the protocol's
  sharing rules (its own outputs, others' outputs as `view_for` shows them to it, the public record — decisions,
  `run.complete` — without never_share and unshareable contract fields, at any depth). A belief is public, so
  nothing the agent itself may not hand on goes into it.
- `outbound_messages` masks messages at the time they are sent: by key, by pattern, by value (the experiment's
  known secrets) and with the detector (`state.detection.detect_secrets`), so a credential quoted in prose
  before it was ever keyed is found when it would leave. What the detector finds is learnt as a known secret.
- `send_chat` is the only function that opens a connection to LLM_BASE_URL. It takes messages that already
  went through `outbound_messages` (the caller stores them first, exactly as sent) and returns the model's
  answer scanned and masked like ingested text: what the detector finds in it is learnt before it is stored.

tests/memory/test_outbound.py fails if another module opens a connection or names the endpoint.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from experiments.jsonb import json_document
from experiments.models import Experiment
from memory import recall
from state.config import state_settings
from state.detection import detect_secrets
from state.secrets import learn_secrets
from state.services_redaction import redactor_for, sensitive_fields_for

TIMEOUT_S = 60
OFF_SENTENCE = "Reflection is off: no chat endpoint is configured (set LLM_BASE_URL, LLM_API_KEY and AWP_REFLECTION_MODEL)."


class EndpointFailed(Exception):
    """The chat endpoint could not be reached or answered with an error."""


class UnmaskedOutbound(EndpointFailed):
    """Messages that were not masked by `outbound_messages` were handed to `send_chat`: nothing was sent."""


def is_configured() -> bool:
    """A chat endpoint is configured (LLM_BASE_URL); without one nothing is ever sent."""
    return bool(getattr(settings, "LLM_BASE_URL", ""))


def model_name() -> str:
    return str(getattr(settings, "AWP_REFLECTION_MODEL", "") or "gpt-4o-mini")


# -- building -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Prompt:
    """Outbound chat messages (already masked) and the episodes they were built from."""

    messages: list[dict[str, str]]
    episode_keys: list[str]


def reflection_prompt(experiment: Experiment, agent_id: str, *, limit: int) -> Prompt | None:
    """The reflection prompt for `agent_id`: its view of the `limit` most recent episodes, masked; None if empty."""
    from memory.episodes import load_episodes

    policy = state_settings(experiment.protocol).sharing
    visible = [
        (episode, content)
        # reader=None: every episode comes with its fields (the public record too), so the sharing rules can
        # drop never_share and unshareable fields from it instead of passing its stored text on.
        for episode in load_episodes(experiment, reader=None)
        if episode.kind != "reflection" and (content := recall.reflection_content(episode, agent_id, policy)) is not None
    ]
    visible.sort(key=lambda pair: (pair[0].clock, pair[0].key))
    recent = visible[-limit:]
    if not recent:
        return None
    messages = recall.reflection_messages(agent_id, [content for _, content in recent])
    return Prompt(outbound_messages(experiment, messages), [episode.key for episode, _ in recent])


# -- masking at the time of sending ---------------------------------------------------------------------------


def outbound_messages(experiment: Experiment, messages: list[dict[str, str]]) -> list[dict[str, str]]:
    """Messages masked as they would leave now: key, pattern, value and the detector; found secrets are learnt."""
    sensitive = sensitive_fields_for(experiment)
    found: set[str] = set()
    for message in messages:
        found |= detect_secrets(str(message.get("content") or ""), sensitive)
    if found:
        learn_secrets(experiment_id=experiment.pk, values=found)
    redactor = redactor_for(experiment)  # after learning: the detector's finds are known secrets now
    return [{**message, "content": _settled(redactor, str(message.get("content") or ""))} for message in messages]


def _settled(redactor: Any, text: str) -> str:
    """The text masked until masking changes nothing more, so masking what is sent again sends the same."""
    for _ in range(3):
        masked = redactor.text(text)
        if masked == text:
            break
        text = masked
    return text


def inbound_text(experiment: Experiment, text: str) -> str:
    """A third party's answer, scanned like any ingested text (its secrets are learnt), then masked."""
    if not text:
        return text
    sensitive = sensitive_fields_for(experiment)
    found = set().union(*(detect_secrets(part, sensitive) for part in _texts_of(text)))
    if found:
        learn_secrets(experiment_id=experiment.pk, values=found)
    return redactor_for(experiment).text(text)


def _texts_of(text: str) -> list[str]:
    """The text, and when it is a JSON document (a model's usual answer) each string in it, scanned one by one."""
    document = json_document(text)
    if document is None:
        return [text]
    out = [text]
    stack = [document]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            out.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return out


# -- sending ----------------------------------------------------------------------------------------------------


def send_chat(experiment: Experiment, messages: list[dict[str, str]]) -> str:
    """Send messages (as returned by `outbound_messages`, stored by the caller) to the chat endpoint; the answer
    comes back scanned and masked. The one place a connection to LLM_BASE_URL is opened."""
    if messages != outbound_messages(experiment, messages):
        # A caller must store what it sends: text that still needs masking was not built here.
        raise UnmaskedOutbound("Outbound messages must be masked by outbound_messages (and stored) before they are sent.")
    url = settings.LLM_BASE_URL.rstrip("/") + "/chat/completions"
    body = json.dumps({"model": model_name(), "messages": messages, "temperature": 0}).encode()
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {getattr(settings, 'LLM_API_KEY', '')}",
    })  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as response:  # noqa: S310 - a configured http(s) URL
            data: Any = json.loads(response.read() or b"{}")
    except (urllib.error.URLError, TimeoutError, OSError, ValueError) as exc:
        raise EndpointFailed(inbound_text(experiment, f"The chat endpoint failed: {exc}")) from exc
    try:
        answer = str(data["choices"][0]["message"]["content"] or "")
    except (KeyError, IndexError, TypeError):
        raise EndpointFailed("The chat endpoint's answer has no choices[0].message.content.") from None
    return inbound_text(experiment, answer)


# -- secrets learnt later ----------------------------------------------------------------------------------------


def remask_stored_prompts(experiment_id: int, values: list[str]) -> None:
    """A secret learnt after a prompt was stored (on_new_secrets): stored prompts, answers and beliefs that hold it
    are masked again, so what was kept of an outbound call never shows it (what left, left masked as it was then)."""
    from django.db.models import Q

    from memory.models import Reflection

    forms = {form for value in values for form in (value, json.dumps(value)[1:-1])}
    holds = Q()
    for form in forms:
        holds |= Q(belief__contains=form) | Q(answer__contains=form) | Q(error__contains=form) | Q(prompt__icontains=form)
    rows = list(Reflection.objects.filter(holds, experiment_id=experiment_id)) if forms else []
    if not rows:
        return
    redactor = redactor_for(rows[0].experiment)
    for row in rows:
        row.prompt = [{**m, "content": redactor.text(str(m.get("content") or ""))} for m in row.prompt or []]
        row.belief, row.answer, row.error = redactor.text(row.belief), redactor.text(row.answer), redactor.text(row.error)
        row.save(update_fields=["prompt", "belief", "answer", "error"])
