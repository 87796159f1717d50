"""Projectors and workspace-file handlers: how other apps hook into the one ingest path.

Projectors turn freshly appended ledger events into rows of other tables. Each app registers its
projectors in its AppConfig.ready(); `ingest.append_events` calls them inside the same transaction as the
ledger insert, with only the events that were new (a replay projects nothing). A projector must be
deterministic given the ledger, so projections can be rebuilt from it.

`ctx.strict` is True for pushed events (the API can refuse them: raise IngestRefused) and False for
events read from AWP folders (they already happened: record a violation on the run instead).

Workspace-file handlers receive files that are not run events (MEMORY.md, daily logs, the runtime's
curated memory/{tools,facts,antipatterns}) after the importer has stored them raw.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from experiments.models import Event, Experiment, Run


class IngestRefused(Exception):
    """A projector's refusal of a pushed event: rolls the whole batch back; the API answers 422 with `code`."""

    def __init__(self, code: str, message: str, *, dedupe_key: str | None = None) -> None:
        super().__init__(message)
        self.code, self.message, self.dedupe_key = code, message, dedupe_key


@dataclass(frozen=True)
class ProjectionContext:
    strict: bool = False
    source: str = "api"  # "api" | "watcher" | "import" | "rebuild"


Projector = Callable[["Run", list["Event"], ProjectionContext], None]
# applies(event, experiment) -> False only when the projector certainly reads, writes and refuses nothing for this
# one event (an EventSpec before it is stored, or an Event); the event's experiment is the run's.
Applies = Callable[[Any, "Experiment"], bool]

# (kind prefix, projector, name, applies); a prefix "board." matches "board.post", "" matches everything.
_PROJECTORS: list[tuple[str, Projector, str, Applies | None]] = []


def register_projector(prefix: str, projector: Projector, *, name: str | None = None, applies: Applies | None = None) -> None:
    """Register `projector` for events whose kind starts with `prefix` (idempotent by name).

    `applies` narrows what the prefix says (without it, every matching event applies): an event no projector
    applies to needs no projection step, so a one-event push of it is one statement (`experiments.push`). It
    must never say False for an event the projector would act on.
    """
    label = name or f"{projector.__module__}.{projector.__qualname__}"
    if any(existing == label for _, _, existing, _ in _PROJECTORS):
        return
    _PROJECTORS.append((prefix, projector, label, applies))


# prepare(run, events, ctx) -> pure work or None: called before the batch's ledger rows are written (it may query);
# the work it returns runs while Postgres takes the rows (no query then), so a projector's pure Python part (the
# secret detector's reading of every text) overlaps the database's part. Results travel on the events.
Preparer = Callable[["Run", list["Event"], ProjectionContext], Callable[[], None] | None]
_PREPARERS: list[Preparer] = []


def register_preparer(preparer: Preparer) -> None:
    """Register the pure part of a projector (idempotent): see Preparer."""
    if preparer not in _PREPARERS:
        _PREPARERS.append(preparer)


def prepare(run: Run, events: list[Event], ctx: ProjectionContext) -> Callable[[], None]:
    """Every preparer's set-up now; the returned call does their pure work (while the rows are being written)."""
    works = [work for preparer in _PREPARERS if (work := preparer(run, events, ctx)) is not None]

    def run_all() -> None:
        for work in works:
            work()

    return run_all


def needs_projection(event: Any, experiment: Experiment) -> bool:
    """Whether any registered projector applies to this one event (False: projecting it would do nothing)."""
    kind = event.kind
    for prefix, _, _, applies in _PROJECTORS:
        if kind.startswith(prefix) and (applies is None or applies(event, experiment)):
            return True
    return False


def project(run: Run, events: Iterable[Event], ctx: ProjectionContext) -> None:
    """Hand each registered projector the events (in seq order) whose kind matches its prefix."""
    ordered = sorted(events, key=lambda event: event.seq)
    if not ordered:
        return
    # One pass over the batch groups it by kind; each projector then gets its kinds without a scan per projector.
    by_kind: dict[str, list[Event]] = {}
    for event in ordered:
        by_kind.setdefault(event.kind, []).append(event)
    for prefix, projector, _, _ in _PROJECTORS:
        kinds = [kind for kind in by_kind if kind.startswith(prefix)]
        if len(kinds) == len(by_kind):
            matching = ordered
        elif len(kinds) == 1:
            matching = by_kind[kinds[0]]
        else:
            matching = sorted((event for kind in kinds for event in by_kind[kind]), key=lambda event: event.seq)
        if matching:
            projector(run, matching, ctx)


def registered() -> list[str]:
    """Names of the registered projectors, for the admin and tests."""
    return [name for _, _, name, _ in _PROJECTORS]


@dataclass(frozen=True)
class WorkspaceFile:
    """A memory file found in an AWP workflow folder.

    kind: "long_term" (workspace/MEMORY.md), "daily" (workspace/memory/YYYY-MM-DD.md),
    "tool" | "fact" | "antipattern" (the runtime curator's memory/<kind>s/*.md).
    """

    kind: str
    relpath: str
    content: str
    sha256: str
    workflow_dir: str
    run: Any = None  # the Run it belongs to when known


WorkspaceFileHandler = Callable[["Experiment", WorkspaceFile], None]
_FILE_HANDLERS: dict[str, list[WorkspaceFileHandler]] = {}


def register_file_handler(kind: str, handler: WorkspaceFileHandler) -> None:
    """Register a handler for workspace files of `kind` (idempotent)."""
    handlers = _FILE_HANDLERS.setdefault(kind, [])
    if handler not in handlers:
        handlers.append(handler)


def handle_workspace_file(experiment: Experiment, file: WorkspaceFile) -> int:
    """Give a newly seen (or changed) workspace file to its handlers; returns how many handled it."""
    handlers = _FILE_HANDLERS.get(file.kind, [])
    for handler in handlers:
        handler(experiment, file)
    return len(handlers)
