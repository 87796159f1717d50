"""Live updates, notify-then-read: ingest announces 'run R reached seq N'; consumers read rows and render.

The live capability implements the transport (channel layer groups, consumers). Apps contribute what a
live page shows by registering fragment renderers: functions returning htmx out-of-band HTML strings, rendered with the same
partials as the pages and redacted for the viewer.

- Replace an element: give it its id and `hx-swap-oob="true"` (`<div id="run-header" hx-swap-oob="true">…`).
- Append rows: htmx inserts the *children* of the OOB element, so wrap them:
  `<tbody hx-swap-oob="beforeend:#timeline-rows"><tr id="event-41">…</tr><tr id="event-42">…</tr></tbody>`.
  Give each row an id: static/js/live.js drops appended rows whose id is already on the page, so a
  reconnect or a re-rendered tab never shows a row twice.
- Frames are cached per (run, seq range, role, reveal_sensitive) and shared by sockets at the same position:
  a run renderer must depend on the viewer only through `role` and `reveal_sensitive`.
- Every frame also carries `#live-mark` (data-seq = newest seq sent), so the page resumes from what it has.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from experiments.models import Event, Experiment, Run

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Viewer:
    """Who a fragment is rendered for: templates decide what to show, redaction what to mask."""

    user: Any
    role: str  # viewer | curator | owner
    reveal_sensitive: bool = False


# renderer(run, new_events, viewer) -> OOB fragments for a run page (timeline rows, header, board, digests, state)
RunFragmentRenderer = Callable[["Run", list["Event"], Viewer], list[str]]
# renderer(experiment, viewer, changed_run_ids) -> OOB fragments for experiment pages and the list (badges, status dots)
ExperimentFragmentRenderer = Callable[["Experiment", Viewer, list[int]], list[str]]

_RUN_RENDERERS: list[tuple[str, RunFragmentRenderer]] = []
_EXPERIMENT_RENDERERS: list[tuple[str, ExperimentFragmentRenderer]] = []


def register_run_fragment(name: str, renderer: RunFragmentRenderer) -> None:
    """Add a renderer of run-page fragments (idempotent by name)."""
    if all(existing != name for existing, _ in _RUN_RENDERERS):
        _RUN_RENDERERS.append((name, renderer))


def register_experiment_fragment(name: str, renderer: ExperimentFragmentRenderer) -> None:
    """Add a renderer of experiment-page fragments (idempotent by name)."""
    if all(existing != name for existing, _ in _EXPERIMENT_RENDERERS):
        _EXPERIMENT_RENDERERS.append((name, renderer))


def render_run_fragments(run: Run, events: list[Event], viewer: Viewer) -> list[str]:
    """All registered run fragments for these new events, in registration order."""
    out: list[str] = []
    for _, renderer in _RUN_RENDERERS:
        out.extend(renderer(run, events, viewer))
    return _masked(run.experiment_id, out)


def render_experiment_fragments(experiment: Experiment, viewer: Viewer, changed_run_ids: list[int]) -> list[str]:
    """All registered experiment fragments (experiment tabs and the experiments list), in registration order."""
    out: list[str] = []
    for _, renderer in _EXPERIMENT_RENDERERS:
        out.extend(renderer(experiment, viewer, changed_run_ids))
    return _masked(experiment.pk, out)


def _masked(experiment_id: int, fragments: list[str]) -> list[str]:
    """The frame's net (frames are never a reveal): every known secret of the experiment masked, escaped forms too."""
    from state.secrets import known_secrets_for

    known = known_secrets_for(experiment_id, escaped=True)
    return [known.mask(fragment) for fragment in fragments] if known else fragments


# Group names: one helper each, used by the announcers and the consumers alike.
EXPERIMENTS_GROUP = "awp.experiments"  # the experiments list: consumers filter by membership before rendering


def run_group(run_id: int) -> str:
    return f"awp.run.{int(run_id)}"


def experiment_group(experiment_id: int) -> str:
    return f"awp.experiment.{int(experiment_id)}"


def announce_run_advanced(*, run_id: int, experiment_id: int, seq: int) -> None:
    """Tell open pages that run `run_id` has events up to `seq`. Call from transaction.on_commit."""
    _broadcast(*_run_advanced(run_id, experiment_id, seq))


def run_advanced_statement(*, run_id: int, experiment_id: int, seq: int) -> tuple[str, list[Any]] | None:
    """The SQL that announces run_advanced from inside the ingest transaction, when the layer is Postgres NOTIFY.

    Postgres delivers a NOTIFY at commit and drops it on rollback (what on_commit gives), and ingest sends it in
    the statement that moves the run's head, saving a round trip per batch. None for other layers: use
    announce_run_advanced in on_commit then.
    """
    from channels.layers import get_channel_layer

    from awp_site.channel_layer import PostgresNotifyLayer

    layer = get_channel_layer()
    if not isinstance(layer, PostgresNotifyLayer):
        return None
    return layer.notify_statement(*_run_advanced(run_id, experiment_id, seq))


def run_advanced_expression(
    *, run_sql: str, seq_sql: str, experiment_id: int | None = None, experiment_sql: str | None = None
) -> tuple[str, list[Any]] | None:
    """run_advanced_statement as an SQL expression, for a statement that learns the run's id and new seq as it runs.

    `run_sql` and `seq_sql` are SQL expressions of the statement (e.g. a CTE's columns); the experiment is an id,
    or `experiment_sql`, an expression too (then the text is the same for every experiment: one prepared
    statement). None for other layers.
    """
    from channels.layers import get_channel_layer

    from awp_site.channel_layer import PostgresNotifyLayer

    layer = get_channel_layer()
    if not isinstance(layer, PostgresNotifyLayer):
        return None
    if experiment_sql is None:
        experiment_sql = str(int(experiment_id))  # type: ignore[arg-type]
        group = f"'{experiment_group(int(experiment_sql))}'"
    else:
        group = f"'awp.experiment.' || ({experiment_sql})"
    groups = f"json_build_array('awp.run.' || ({run_sql}), {group}, '{EXPERIMENTS_GROUP}')"
    message = (
        f"json_build_object('type', 'run.advanced', 'run', ({run_sql}), 'experiment', ({experiment_sql}), 'seq', ({seq_sql}),"
        f" 'coalesce', 'run.' || ({run_sql}))"
    )
    return layer.notify_expression(groups, message)


def _run_advanced(run_id: int, experiment_id: int, seq: int) -> tuple[list[str], dict[str, Any]]:
    message = {"type": "run.advanced", "run": int(run_id), "experiment": int(experiment_id), "seq": int(seq), "coalesce": f"run.{int(run_id)}"}
    return [run_group(run_id), experiment_group(experiment_id), EXPERIMENTS_GROUP], message


def announce_experiment_changed(*, experiment_id: int, what: str) -> None:
    """Tell open experiment pages that something besides a run's ledger changed (e.g. the review badge)."""
    message = {"type": "experiment.changed", "experiment": int(experiment_id), "what": str(what)[:64]}
    _broadcast([experiment_group(experiment_id), EXPERIMENTS_GROUP], message)


POOL_GROUP = "awp.pool"  # the shared knowledge pool's page (pool/consumers.py)


def announce_pool_changed(*, what: str) -> None:
    """Tell open Pool pages that proposals, votes, facts or participants changed. Call from on_commit."""
    _broadcast([POOL_GROUP], {"type": "pool.changed", "what": str(what)[:64]})


def _broadcast(groups: list[str], message: dict[str, Any]) -> None:
    """The one place sync code reaches the channel layer; only ids and seqs ride it (notify, then read)."""
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from awp_site.channel_layer import PostgresNotifyLayer

    layer = get_channel_layer()
    if layer is None:
        return
    try:
        # isinstance, not hasattr: the Redis pub/sub layer proxies attributes to a per-loop object.
        if isinstance(layer, PostgresNotifyLayer):
            layer.group_send_sync(groups, message)  # Postgres NOTIFY over Django's connection
        else:

            async def send_all() -> None:
                for group in groups:
                    await layer.group_send(group, message)

            async_to_sync(send_all)()
    except Exception:
        # The rows are committed already; a lost announcement only delays pages until the next one or a reconnect.
        logger.warning("live: announcing %s to %s failed", message.get("type"), groups, exc_info=True)
