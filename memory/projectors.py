"""How ingested runs feed memory: worker results to the working/episodic tiers, memory.write events,
and workspace MEMORY.md / daily log files."""

from __future__ import annotations

from experiments.models import Event, Experiment, Run
from experiments.projections import IngestRefused, ProjectionContext, WorkspaceFile
from memory.access import TARGET_TIER
from memory.longterm import import_long_term
from memory.services import Actor, MemoryDenied, import_daily_file, log_worker_results, write_memory


def project_worker_results(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """Auto-log every worker.complete result (agent id, time, summary); replays add nothing."""
    log_worker_results(run=run, events=[event for event in events if event.kind == "worker.complete"])


def project_memory_writes(run: Run, events: list[Event], ctx: ProjectionContext) -> None:
    """Apply memory.write events; a write the agent may not make is refused (pushed) or skipped (from disk)."""
    for event in events:
        if event.kind != "memory.write":
            continue
        payload = event.payload if isinstance(event.payload, dict) else {}
        target = payload.get("target", "daily")
        content = payload.get("content")
        agent_id = str(payload.get("agent_id") or event.agent_id or "")
        if target not in TARGET_TIER or not isinstance(content, str) or not content.strip():
            if ctx.strict:
                raise IngestRefused(
                    "bad_memory_write", "memory.write needs target daily|long_term and a non-empty content.",
                    dedupe_key=event.dedupe_key,
                )  # fmt: skip
            continue
        try:
            write_memory(
                experiment=run.experiment, actor=Actor(agent_id=agent_id), target=target, content=content,
                run=run, when=event.occurred_at or event.recorded_at,
            )  # fmt: skip
        except MemoryDenied as denied:
            if ctx.strict:
                raise IngestRefused("memory_access_denied", denied.message, dedupe_key=event.dedupe_key) from denied


def handle_long_term_file(experiment: Experiment, file: WorkspaceFile) -> None:
    """workspace/MEMORY.md: a new version only when its text changed."""
    import_long_term(experiment=experiment, content=file.content, relpath=file.relpath)


def handle_daily_file(experiment: Experiment, file: WorkspaceFile) -> None:
    """workspace/memory/YYYY-MM-DD.md: entries imported once each."""
    try:
        import_daily_file(experiment=experiment, relpath=file.relpath, content=file.content, run=file.run)
    except ValueError:
        return  # not a dated daily log (e.g. memory/README.md): nothing to import
