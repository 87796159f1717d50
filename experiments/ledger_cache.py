"""Values read from a run's ledger, kept in this process per (run, head seq): the run page's chart series,
graph rows and worker list, which a 100k-event run would otherwise read on every request.

The ledger is append-only and its seqs are gap-free (experiments/ingest.py), so the events up to a run's
last_seq never change: a value computed from events with seq <= last_seq stays true for as long as its key
names that head, and a new event is a new head, hence a new key. There is no invalidation step to miss.
Readers bound their queries by the head they key on (`seq <= run.last_seq`), so what is stored under a key
is exactly what that prefix of the ledger says, never a newer event that happened to be committed meanwhile.

What is stored is what the ledger says before redaction (numbers, agent ids, times). Callers redact on every
read, so secrets learnt later and protocol changes apply at once; and nothing here depends on who asks (no
role, no user), which is why one entry can serve every viewer of the run. The key carries the run's
experiment and creation time next to its pk, so a reused pk (a test database, a restore) cannot pick up
another run's entry.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from experiments.models import Run

T = TypeVar("T")
SIZE = 128  # (run, name) pairs kept; a 100k-event run's entries take ~190 KiB (the reads are capped), a small run's a few

_lock = threading.Lock()
# (name, run pk, experiment, created_at, *extra) -> (last_seq, value): only the newest head of each run is kept,
# since heads only move forward and an older one is never asked for again (a request racing an ingest recomputes).
_entries: OrderedDict[tuple[Hashable, ...], tuple[int, Any]] = OrderedDict()


def key_of(run: Run, name: str, *extra: Hashable) -> tuple[Hashable, ...]:
    """Which value of which run: its pk, experiment and creation time (a reused pk is another run)."""
    return (name, run.pk, run.experiment_id, run.created_at, *extra)


def cached(run: Run, name: str, compute: Callable[[Run], T], *extra: Hashable) -> T:
    """`compute(run)` at the run's current head (run.last_seq), computed once per head and key.

    `compute` must read only events with seq <= run.last_seq (plus what `extra` names); its value is shared
    by every caller at that head, so callers treat it as read-only.
    """
    key, head = key_of(run, name, *extra), run.last_seq
    with _lock:
        entry = _entries.get(key)
        if entry is not None and entry[0] == head:
            _entries.move_to_end(key)
            return entry[1]  # type: ignore[no-any-return]
    # Computed outside the lock: two requests at one head may both compute it, and they compute the same value.
    value = compute(run)
    with _lock:
        entry = _entries.get(key)
        if entry is None or entry[0] <= head:
            _entries[key] = (head, value)
            _entries.move_to_end(key)
        while len(_entries) > SIZE:
            _entries.popitem(last=False)
    return value


def clear() -> None:
    """Drop every entry (tests)."""
    with _lock:
        _entries.clear()
        _settled.clear()


# -- settled ranges: values of a seq range the head has passed, kept whatever the head ----------------------------

SETTLED_SIZE = 48  # a Timeline page's rows are ~100-150 KB of markup: ~6 MB at most per process
# (name, run pk, experiment, created_at, *extra) -> (made_with, value), least recently used first.
_settled: OrderedDict[tuple[Hashable, ...], tuple[object, Any]] = OrderedDict()


def settled(run: Run, name: str, upto: int, compute: Callable[[], T], *extra: Hashable, made_with: object) -> T:
    """`compute()` of the run's events with seq <= `upto`, a prefix its head has passed (upto <= run.last_seq).

    Those events never change (append-only, gap-free), so the value holds at every later head: it is kept per
    key, not per head. `made_with` is the one input that can change meanwhile without being part of the key (the
    known-secret matcher a rendering masked with: a secret learnt later makes a new matcher): the value is reused
    only with that same object, held here so its identity cannot be recycled. A None from `compute` (the range
    was not what the invariant says) is answered, not kept.
    """
    if upto > run.last_seq:
        raise ValueError(f"seq {upto} is past the run's head {run.last_seq}: that range is not settled")
    key = key_of(run, name, upto, *extra)
    with _lock:
        entry = _settled.get(key)
        if entry is not None and entry[0] is made_with:
            _settled.move_to_end(key)
            return entry[1]  # type: ignore[no-any-return]
    value = compute()
    if value is None:
        return value
    with _lock:
        _settled[key] = (made_with, value)
        _settled.move_to_end(key)
        while len(_settled) > SETTLED_SIZE:
            _settled.popitem(last=False)
    return value
