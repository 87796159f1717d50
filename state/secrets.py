"""Known secrets of an experiment: learnt where data enters, turned into one cached matcher per experiment.

Every value seen under a sensitive key (ledger events through the projector below, memory text through
`memory.chunks.upsert_chunk`) is stored once in `KnownSecret`, a table no view, API, admin page or export reads.
`known_secrets_for` compiles them into one trie regex per experiment and process, and recompiles only when the
experiment's rows changed (one indexed count per call; ids are never reused, so count + max id is exact).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from django.db import connection

from state.detection import detect_secrets, learnable, with_fail_closed
from state.detector_switch import fail_closed_enabled
from state.failclosed import may_fail_closed
from state.models import KnownSecret
from state.redaction import (
    MIN_SECRET_LENGTH,
    KnownSecrets,
    is_maskable,
    may_hold_announced,
    may_hold_secrets,
    secrets_in,
)

if TYPE_CHECKING:
    from experiments.models import Event, Run
    from experiments.projections import ProjectionContext

_lock = threading.Lock()
# experiment id (None: the pool) -> ((count, max id), plain matcher, matcher of escaped forms or None until first asked)
_cache: dict[int | None, tuple[tuple[int, int], KnownSecrets, KnownSecrets | None]] = {}

# A JSON escape (`\\n`, `\\"`, …): two characters that end a token as whitespace or a quote does.
_JSON_ESCAPE = re.compile(r'\\[nrtbf"\\/]')


def _unescaped(text: str) -> str:
    """The serialized event with its JSON escapes read as spaces, a line break still a line break (the fail-closed
    pass reads a token's line: joined into one line, `UserID` a line above labelled `Hint: Fjord42#` an
    identifier). Offsets are kept: each escape stays two characters. Three C passes (a callback per escape cost the
    gate as much as the rest of it)."""
    return _JSON_ESCAPE.sub("  ", text.replace("\\n", " \n").replace("\\r", " \r"))


# Called with (experiment_id, new values) after new secrets were stored: derivatives stored earlier (memory
# chunks) are masked again. Registered by apps that keep text derived from the ledger.
_on_learnt: list[Callable[[int, list[str]], None]] = []


def on_new_secrets(callback: Callable[[int, list[str]], None]) -> None:
    """Register a callback for newly learnt secrets (idempotent)."""
    if callback not in _on_learnt:
        _on_learnt.append(callback)


def learn_secrets(*, experiment_id: int | None, values: Iterable[str]) -> int:
    """Store values as known secrets of the experiment (None: of the pool), each once; returns how many were new."""
    rows = {}
    for value in values:
        text = value.strip()
        if is_maskable(text):
            digest = hashlib.sha256(text.encode()).hexdigest()
            rows[digest] = KnownSecret(experiment_id=experiment_id, digest=digest, value=text)
    if not rows:
        return 0
    known = set(KnownSecret.objects.filter(experiment_id=experiment_id, digest__in=list(rows)).values_list("digest", flat=True))
    new = [row for digest, row in rows.items() if digest not in known]
    if new:
        KnownSecret.objects.bulk_create(new, ignore_conflicts=True)
        for callback in _on_learnt if experiment_id is not None else ():  # the pool keeps no derivatives
            callback(experiment_id, [row.value for row in new])
    return len(new)


def learn_from_text(*, experiment: Any, text: str) -> None:
    """Learn what the detector finds in free text (a daily log, a note, MEMORY.md, a reflection's answer)."""
    from state.services_redaction import sensitive_fields_for

    if text:
        learn_secrets(experiment_id=experiment.pk, values=detect_secrets(text, sensitive_fields_for(experiment)))


def learn_from_events(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """Projector: learn what the detector finds in each event: its payload's values and keys, its kind, its agent
    (read while the rows were written when ingest could: see prepare_learning)."""
    from state.services_redaction import sensitive_fields_for

    sensitive = sensitive_fields_for(run.experiment)
    found: set[str] = set()
    for event in events:
        read = event.__dict__.pop("found_secrets", None)
        found |= read if read is not None else _event_found(event, sensitive)
    if found:
        learn_secrets(experiment_id=run.experiment_id, values=found)


def prepare_learning(run: Run, events: list[Event], ctx: ProjectionContext) -> Callable[[], None]:
    """Preparer of learn_from_events: the detector's reading of the batch is pure, so it runs while Postgres
    stores the rows; each event carries what was found (learn_from_events then only stores it)."""
    from state.services_redaction import sensitive_fields_for

    sensitive = sensitive_fields_for(run.experiment)  # may query: now, before the rows go

    def read() -> None:
        for event in events:
            event.__dict__["found_secrets"] = _event_found(event, sensitive)

    return read


def _event_found(event: Event, sensitive: frozenset[str]) -> set[str]:
    stored = event.__dict__.get("stored_json")  # bytes the ingest already wrote (JSON text, UTF-8)
    return event_secrets(event.kind, event.agent_id or "", event.payload, sensitive, serialized=stored.decode() if stored else None)


def may_learn_from(event: Any, experiment: Any) -> bool:
    """Whether learn_from_events could find anything in this one event (its `applies`: False means it learns nothing)."""
    from state.services_redaction import sensitive_fields_for

    stored = getattr(event, "stored_json", None)  # as learn_from_events reads it
    serialized = stored.decode() if stored else None
    return event_may_hold_secrets(event.kind, event.agent_id or "", event.payload, sensitive_fields_for(experiment), serialized=serialized)


def event_may_hold_secrets(kind: str, agent_id: str, payload: Any, sensitive: frozenset[str], *, serialized: str | None = None) -> bool:
    """One C-speed pass over the serialized event and its strings as they are: False means event_secrets finds nothing
    in it (most events)."""
    return _gate(_gated_text(_event_text(kind, agent_id, payload, serialized), payload), sensitive) is not None


def event_secrets(kind: str, agent_id: str, payload: Any, sensitive: frozenset[str], *, serialized: str | None = None) -> set[str]:
    """The credentials one event carries: under sensitive keys, in any free-text shape of its strings, and in its
    dict keys, kind and agent id (a token used as a metric name or a key is a token all the same). `serialized`:
    the payload's JSON text when the caller has it (non-ASCII unescaped, as `json.dumps(ensure_ascii=False)`)."""
    text = _event_text(kind, agent_id, payload, serialized)
    if _gate(_gated_text(text, payload), sensitive) is None:
        return set()
    # Class (round 16, by construction): an event never hides what its strings hold read alone. Inside the serialized
    # event a string reads otherwise (a line's start is `\n` or a quote, a quoted value `\"…\"`), so each string is
    # also read as the document it is (the detector's whole reading, its own gate first), as a tool's output or a
    # pasted file is read alone.
    alone: set[str] = set()
    for leaf in _strings(payload):
        if may_hold_secrets(leaf, sensitive):
            alone |= detect_secrets(leaf, sensitive)
    unescaped = _gate(text, sensitive)
    if unescaped is None:
        return alone
    found = secrets_in(payload, sensitive)
    if fail_closed_enabled():
        # Fail-closed over the serialized event (keys label their values), JSON escapes read as spaces.
        found = with_fail_closed(unescaped or _unescaped(text), sensitive, found)
    else:
        found = learnable(found, sensitive)
    # Each name alone: one key is never the value of the key before it.
    for name in {kind, agent_id, *_keys(payload)}:
        if len(name) >= MIN_SECRET_LENGTH:
            found |= detect_secrets(name, sensitive)
    return found | alone


def _gated_text(text: str, payload: Any) -> str:
    """What the event's gate reads: its serialized text, then each of its strings as it is, one per line (one pass,
    one call: most events open nothing, and a call's fixed cost was most of a small event's)."""
    return "\n".join([text, *_strings(payload)])


_TEXT = re.compile(r"\s")


def _strings(value: Any) -> Iterable[str]:
    """The payload's strings that are texts (a space or a line break in them; values, not keys), long enough to hold a
    secret. A single token is read with its key, never alone: alone, a commit's SHA under `sha` or an id under `id` is
    just a random-looking token."""
    if isinstance(value, str):
        if len(value) >= MIN_SECRET_LENGTH and _TEXT.search(value):
            yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)




def _event_text(kind: str, agent_id: str, payload: Any, serialized: str | None) -> str:
    """The text the detector reads of one event: kind, agent and the payload's JSON, one per line."""
    if serialized is None:
        serialized = json.dumps(payload, ensure_ascii=False, default=str)
    return f"{kind}\n{agent_id}\n{serialized}"


def _gate(text: str, sensitive: frozenset[str]) -> str | None:
    """None when the detector finds nothing in the event's text; else "" (a name or form announces a value), or
    the text with its JSON escapes read as spaces when only the fail-closed pass finds something there."""
    if may_hold_announced(text, sensitive):
        return ""
    if not fail_closed_enabled():
        return None
    unescaped = _unescaped(text)
    return unescaped if may_fail_closed(unescaped, sensitive) else None


def learn_from_pool_envelope(raw: Any) -> int:
    """Learn what the detector finds in a pool envelope (its payload's values and keys, its type): secrets of the
    pool, masked on every Pool way out (`pool.redaction`)."""
    from django.conf import settings

    from state.redaction import sensitive_set

    if not isinstance(raw, dict):
        return 0
    found = event_secrets(str(raw.get("type") or ""), str(raw.get("clawId") or ""), raw.get("payload"), sensitive_set(settings.AWP_SENSITIVE_FIELDS))
    return learn_secrets(experiment_id=None, values=found) if found else 0


def _keys(value: Any) -> Iterable[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield str(key)
            yield from _keys(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _keys(item)


# The freshness stamp of an experiment's known secrets, in SQL: a statement that reads it with its own work saves
# known_secrets_for its query (pass what it read as `stamp`).
STAMP_SQL = "SELECT ARRAY[count(*), coalesce(max(id), 0)] FROM state_knownsecret WHERE experiment_id = %s"


def stamp_sql(experiment_id: str) -> str:
    """STAMP_SQL with the experiment's id given as SQL: a column of the statement it is a subquery of (correlated:
    inside it, `id` and `experiment_id` are the known secret's own columns), or a typed parameter."""
    return STAMP_SQL.replace("%s", experiment_id)


def known_secrets_for(experiment_id: int | None, *, escaped: bool = False, stamp: tuple[int, int] | None = None) -> KnownSecrets:
    """The experiment's (None: the pool's) known secrets as one matcher; escaped=True also matches their
    HTML/JSON/URL forms. `stamp`: (count, max id) as STAMP_SQL read it just now (no query then)."""
    if stamp is None:
        scope = "experiment_id = %s" if experiment_id is not None else "experiment_id IS NULL"
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT count(*), coalesce(max(id), 0) FROM state_knownsecret WHERE {scope}",
                           [experiment_id] if experiment_id is not None else [])  # fmt: skip
            count, top = cursor.fetchone()
        stamp = (int(count), int(top))
    cached = _cache.get(experiment_id)
    if cached is None or cached[0] != stamp:
        values = list(KnownSecret.objects.filter(experiment_id=experiment_id).values_list("value", flat=True))
        cached = (stamp, KnownSecrets.of(values), None)
        with _lock:
            _cache[experiment_id] = cached
    if not escaped:
        return cached[1]
    if cached[2] is None:
        cached = (cached[0], cached[1], KnownSecrets.of(cached[1].values, escaped=True))
        with _lock:
            _cache[experiment_id] = cached
    return cached[2]


def compiled_known_secrets(experiment_id: int, *, stamp: tuple[int, int], escaped: bool = False) -> KnownSecrets | None:
    """known_secrets_for's matcher when this process has it compiled at `stamp` already, else None; never queries
    (for a caller on an event loop, experiments.push_edge)."""
    cached = _cache.get(experiment_id)
    if cached is None or cached[0] != stamp:
        return None
    return cached[2] if escaped else cached[1]


def forget_cache() -> None:
    """Drop every compiled matcher (tests that reuse experiment ids across databases)."""
    with _lock:
        _cache.clear()


def learn_from_history(*, experiment: Any, chunk: int = 2000) -> int:
    """Learn the known secrets of data stored before this step existed: the ledger and the memory texts.

    Ingest learns as data arrives; this is for a database upgraded from an older version (awp_learn_secrets).
    """
    from experiments.models import Event
    from memory.models import MemoryDocument, MemoryEntry, Note
    from state.services_redaction import sensitive_fields_for

    sensitive = sensitive_fields_for(experiment)
    found: set[str] = set()
    after = 0
    while True:
        rows = list(Event.objects.filter(run__experiment=experiment, pk__gt=after).order_by("pk").values_list("pk", "kind", "agent_id", "payload")[:chunk])
        if not rows:
            break
        for _, kind, agent_id, payload in rows:
            found |= event_secrets(kind, agent_id or "", payload, sensitive)
        after = rows[-1][0]
    for model in (MemoryEntry, MemoryDocument, Note):
        for text in model.objects.filter(experiment=experiment).values_list("content", flat=True).iterator():
            found |= detect_secrets(text, sensitive)
    return learn_secrets(experiment_id=experiment.pk, values=found)
