"""The Runs tab's query: newest first, search, sort, keyset pages (never OFFSET), for experiments with 10k+ runs.

A page is read by `WHERE (key, pk) < (cursor key, cursor pk) ORDER BY key DESC, pk DESC LIMIT n+1`: the cost
of page 200 is the cost of page 1. Every sort key is made non-null (COALESCE), so one comparison covers all rows.
Unfiltered, the pages hold top-level runs with their sub-manager runs nested under them; a search or a status
filter lists matching runs flat (a matching sub-manager run is shown even when its parent does not match).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db.models import DecimalField, ExpressionWrapper, F, Q, QuerySet, Value
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce

from experiments.models import Experiment, Run

PAGE_SIZE = 50
CHILDREN_PER_ROOT = 100

# The tokens a run consumed, from its latest budget snapshot; -1 when the runtime reported none.
_TOKENS_SQL = (
    "CASE WHEN jsonb_typeof(experiments_run.budget_used->'tokens'->'consumed') = 'number'"
    " THEN (experiments_run.budget_used->'tokens'->>'consumed')::numeric ELSE -1 END"
)
# Seconds from start to end (to the last activity while running); -1 before a start is known.
_DURATION_SQL = (
    "COALESCE(EXTRACT(EPOCH FROM COALESCE(experiments_run.ended_at, experiments_run.updated_at)"
    " - experiments_run.started_at), -1)"
)

_STARTED_SQL = "COALESCE(experiments_run.started_at, experiments_run.created_at)"

SORTS = {"started": "Started", "duration": "Duration", "iterations": "Iterations", "tokens": "Tokens"}


def _sort_expression(sort: str) -> Any:
    if sort == "duration":
        return RawSQL(_DURATION_SQL, [], output_field=DecimalField())
    if sort == "tokens":
        return RawSQL(_TOKENS_SQL, [], output_field=DecimalField())
    if sort == "iterations":
        return ExpressionWrapper(F("iterations"), output_field=DecimalField())
    return Coalesce(F("started_at"), F("created_at"))


def _parse_key(sort: str, raw: str) -> Any:
    if sort == "started":
        return datetime.fromisoformat(raw)
    return Decimal(raw)


def encode_cursor(sort: str, run: Run) -> str:
    key = run.sort_key  # type: ignore[attr-defined]
    return f"{key.isoformat() if isinstance(key, datetime) else key}~{run.pk}"


def decode_cursor(sort: str, raw: str) -> tuple[Any, int] | None:
    """(key, pk) from a cursor, or None when it is not one (a hand-edited URL starts from the top)."""
    key, _, pk = raw.rpartition("~")
    try:
        return _parse_key(sort, key), int(pk)
    except (ValueError, InvalidOperation):
        return None


@dataclass
class RunPage:
    rows: list[tuple[int, Run]]  # (indent, run)
    total: int
    next_cursor: str | None
    prev_cursor: str | None
    is_first: bool


def runs_page(experiment: Experiment, *, q: str = "", status: str = "", sort: str = "started", descending: bool = True,
              after: str = "", before: str = "", size: int = PAGE_SIZE) -> RunPage:  # fmt: skip
    """One page of the experiment's runs for the Runs tab."""
    sort = sort if sort in SORTS else "started"
    # Not joined to the experiment: every row would carry (and decode) its protocol; the rows get this one.
    runs: QuerySet[Run] = experiment.runs.select_related("task")
    is_flat = bool(q or status)
    if status:
        runs = runs.filter(status=status)
    if q:
        runs = runs.filter(_search(q))
    if not is_flat:
        runs = runs.filter(parent__isnull=True)
    runs = runs.annotate(sort_key=_sort_expression(sort))
    total = runs.count()
    backwards = bool(before) and not after
    cursor = decode_cursor(sort, before if backwards else after) if (before or after) else None
    # Reading backwards (the page before `before`) is reading forwards in the opposite order, then reversing.
    newest_first = descending != backwards
    if cursor is not None and sort == "started":
        # A row comparison, which Postgres reads as a range of the run_list_started index (an OR of two
        # comparisons is a filter over every row before the cursor).
        key, pk = cursor
        op = "<" if newest_first else ">"
        runs = runs.extra(where=[f"({_STARTED_SQL}, experiments_run.id) {op} (%s, %s)"], params=[key, pk])  # noqa: S610 - no user text in the SQL
    elif cursor is not None:
        key, pk = cursor
        if newest_first:
            runs = runs.filter(Q(sort_key__lt=Value(key)) | Q(sort_key=Value(key), pk__lt=pk))
        else:
            runs = runs.filter(Q(sort_key__gt=Value(key)) | Q(sort_key=Value(key), pk__gt=pk))
    order = ("-sort_key", "-pk") if newest_first else ("sort_key", "pk")
    page = list(runs.order_by(*order)[: size + 1])
    has_more = len(page) > size
    page = page[:size]
    if backwards:
        page.reverse()
    is_first = cursor is None or (backwards and not has_more)
    next_cursor = encode_cursor(sort, page[-1]) if page and (has_more or backwards) else None
    prev_cursor = encode_cursor(sort, page[0]) if page and not is_first else None
    for run in page:
        run.experiment = experiment
    rows = [(0, run) for run in page] if is_flat else _with_children(page)
    return RunPage(rows=rows, total=total, next_cursor=next_cursor, prev_cursor=prev_cursor, is_first=is_first)


def _search(q: str) -> Q:
    """Run id, status, or every word in the task text (the run's own or its task's prompt)."""
    match = Q(run_id__icontains=q) | Q(status__iexact=q)
    words = [w for w in q.split() if w]
    if words:
        in_task = Q()
        for word in words[:8]:
            in_task &= Q(task_text__icontains=word) | Q(task__prompt__icontains=word)
        match |= in_task
    return match


def _with_children(roots: list[Run]) -> list[tuple[int, Run]]:
    """Each root followed by its sub-manager runs (depth-first, by start), indented by depth."""
    if not roots:
        return []
    experiment = roots[0].experiment
    descendants: dict[int, list[Run]] = {}
    frontier = [r.pk for r in roots]
    for _ in range(4):  # sub-manager runs nest a few levels deep at most
        children = list(Run.objects.select_related("task").filter(experiment_id=experiment.pk, parent_id__in=frontier)
                        .order_by("created_at", "pk")[: CHILDREN_PER_ROOT * len(frontier)])  # fmt: skip
        if not children:
            break
        for child in children:
            child.experiment = experiment
            descendants.setdefault(child.parent_id or 0, []).append(child)
        frontier = [c.pk for c in children]
    out: list[tuple[int, Run]] = []

    def walk(run: Run, depth: int) -> None:
        out.append((depth, run))
        for child in descendants.get(run.pk, [])[:CHILDREN_PER_ROOT]:
            walk(child, depth + 1)

    for root in roots:
        walk(root, 0)
    return out
