"""The one redaction step on every way out: key, shape, pattern and known-value masking for an experiment.

`redact_for(experiment, value)` for JSON-like values and `redact_text_for(experiment, text)` for free text are
what every page, fragment, frame, API answer, search result, export and log line calls. `mask_output_for` is
the last-line net over rendered output (HTML, JSON): known secrets in their escaped forms too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from state.redaction import KnownSecrets, redact, redact_at, redact_text, sensitive_set
from state.secrets import known_secrets_for


def sensitive_fields_for(experiment: Any) -> frozenset[str]:
    """The experiment's protocol `state.sharing.sensitive_fields` plus settings.AWP_SENSITIVE_FIELDS."""
    sharing = (experiment.protocol.get("state") or {}).get("sharing") or {}
    names = list(sharing.get("sensitive_fields") or []) + list((experiment.protocol.get("security") or {}).get("sensitive_fields") or [])
    return sensitive_set([*names, *contract_sensitive_fields(experiment.protocol), *settings.AWP_SENSITIVE_FIELDS])


def contract_sensitive_fields(protocol: dict[str, Any]) -> list[str]:
    """Output-contract fields marked `x-awp-sensitive: true` in the protocol's agents."""
    agents = protocol.get("agents") or {}
    specs = agents.values() if isinstance(agents, dict) else agents if isinstance(agents, list) else []
    names = []
    for spec in specs:
        contract = (spec.get("output_contract") or spec.get("contract") or {}) if isinstance(spec, dict) else {}
        properties = contract.get("properties", contract) if isinstance(contract, dict) else {}
        names += [name for name, schema in properties.items() if isinstance(schema, dict) and schema.get("x-awp-sensitive") is True]
    return names


# Inside a read-only request's view: each experiment's known secrets, checked for freshness once per request.
_view_known: ContextVar[dict[int, KnownSecrets] | None] = ContextVar("awp_view_known_secrets", default=None)


@contextmanager
def known_secrets_checked_once() -> Iterator[None]:
    """Around a read-only view: redaction checks each experiment's known secrets once, not once per call.

    A page redacts in many places (rows, header, charts), each a freshness query of the known secrets; within one
    read they are the same. A secret learnt by a concurrent ingest meanwhile is still caught: the response net
    (`mask_output_for`) checks again after the view.
    """
    token = _view_known.set({})
    try:
        yield
    finally:
        _view_known.reset(token)


def read_known_stamp(experiment_id: int, stamp: Any) -> None:
    """Inside a read-only view: the experiment's known-secret stamp (count, max id) that the view's own look-up read
    (experiments.access), so its redaction needs no freshness query of its own. The response net still checks
    after the view."""
    memo = _view_known.get()
    if memo is not None and experiment_id not in memo and isinstance(stamp, list | tuple) and len(stamp) == 2:
        memo[experiment_id] = known_secrets_for(experiment_id, stamp=(int(stamp[0]), int(stamp[1])))


def _known(experiment_id: int) -> KnownSecrets:
    memo = _view_known.get()
    if memo is None:
        return known_secrets_for(experiment_id)
    found = memo.get(experiment_id)
    if found is None:
        found = memo[experiment_id] = known_secrets_for(experiment_id)
    return found


def redact_for(experiment: Any, value: Any) -> Any:
    """Redact `value` for the experiment: sensitive keys at any depth, every string leaf as free text."""
    return redact(value, sensitive_fields_for(experiment), _known(experiment.pk))


def redact_text_for(experiment: Any, text: str) -> str:
    """Redact free text (logs, search content, snippets, prompts) for the experiment: the one text way out."""
    return redact_text(text, sensitive_fields_for(experiment), _known(experiment.pk))


def mask_output_for(experiment: Any, rendered: str) -> str:
    """The last-line net over rendered output: every known secret, also HTML/JSON/URL-escaped, masked."""
    return known_secrets_for(experiment.pk, escaped=True).mask(rendered)



@dataclass(frozen=True)
class Redactor:
    """The experiment's masks resolved once, for loops over many rows (one matcher look-up, not one per row)."""

    sensitive: frozenset[str]
    known: KnownSecrets

    def value(self, value: Any) -> Any:
        return redact(value, self.sensitive, self.known)

    def text(self, text: str) -> str:
        return redact_text(text, self.sensitive, self.known)

    def at(self, segments: Any, value: Any) -> Any:
        """A value found at a path: whole when the path itself is sensitive, else as `value`."""
        return redact_at(segments, value, self.sensitive, self.known)


def redactor_for(experiment: Any) -> Redactor:
    """The same masks as redact_for / redact_text_for, resolved once for many calls."""
    return Redactor(sensitive_fields_for(experiment), _known(experiment.pk))


# -- the response net: which experiments a request reads, so every answer is value-masked for them -------------


def mark_in_scope(request: Any, experiment: Any, *, known_stamp: tuple[int, int] | None = None) -> None:
    """Note that this request reads `experiment`: its answer passes the experiment's known-secret net.

    `known_stamp`: the freshness stamp of its known secrets (state.secrets.STAMP_SQL) that the view's own
    statement read after its last write, so the net needs no query of its own."""
    scoped = getattr(request, "awp_redaction_scope", None)
    if scoped is None:
        scoped = request.awp_redaction_scope = {}
    scoped[experiment.pk] = experiment
    if known_stamp is not None:
        request.awp_known_stamps = {**getattr(request, "awp_known_stamps", {}), experiment.pk: known_stamp}


def mark_revealed(request: Any) -> None:
    """An owner's audited reveal: this answer shows sensitive values on purpose (the net leaves it alone)."""
    request.awp_revealed = True


def mask_response_text(request: Any, body: str) -> str:
    """The body masked for every experiment the request read (unless it is an audited reveal)."""
    if getattr(request, "awp_revealed", False):
        return body
    for experiment in getattr(request, "awp_redaction_scope", {}).values():
        body = mask_output_for(experiment, body)
    return body


def net_known_secrets(request: Any) -> KnownSecrets:
    """One matcher (escaped forms too) over the known secrets of every experiment an answer reads (the net's,
    for whole bodies, streamed bodies, headers and the access-log line); empty for an audited reveal."""
    if getattr(request, "awp_revealed", False):
        return KnownSecrets.empty()
    scoped = list(getattr(request, "awp_redaction_scope", {}).values())
    if len(scoped) == 1:
        # Compiled once per process and change; a view whose statement read the freshness stamp left it here.
        stamp = getattr(request, "awp_known_stamps", {}).get(scoped[0].pk)
        return known_secrets_for(scoped[0].pk, escaped=True, stamp=stamp)
    values: set[str] = set()
    for experiment in scoped:
        values |= known_secrets_for(experiment.pk).values
    return KnownSecrets.of(values, escaped=True)

