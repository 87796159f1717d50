"""The pure ordering of a run's events: ts from the record, the iteration or the mtime; DAG files in the runtime's order."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypothesis import given
from hypothesis import strategies as st

from experiments.awp.events import EventSpec
from experiments.awp.timing import MTIME, PARENT, RECORD, Read, append_order, graph_rank, runtime_key, stamp

T0 = datetime(2026, 11, 22, 0, 29, 15, tzinfo=UTC)
CHAIN = {"orchestration": {"graph": [
    {"id": "alpha_judge", "depends_on": ["mid_builder"]},
    {"id": "mid_builder", "depends_on": ["zed_scout"]},
    {"id": "zed_scout", "depends_on": []},
]}}  # fmt: skip


def at(ms: int) -> datetime:
    return T0 + timedelta(milliseconds=ms)


def state_file(agent: str, ms: int | None, *, mtime_ms: int = 0) -> Read:
    when = at(ms) if ms is not None else None
    spec = EventSpec(
        kind="state.snapshot",
        dedupe_key=f"file:data/state/r/{agent}.json",
        payload={"agent_id": None if agent == "final" else agent, "state": {}},
        agent_id=agent,
        occurred_at=when,
        ts_source=RECORD if when else "",
    )
    return Read(spec, ((1, 0), f"data/state/r/{agent}.json", 0), at(mtime_ms))


def test_graph_rank_follows_dependencies_not_listing_or_names():
    assert graph_rank(CHAIN) == {"zed_scout": 0, "mid_builder": 1, "alpha_judge": 2}
    cycle = {"orchestration": {"graph": [{"id": "a", "depends_on": ["b"]}, {"id": "b", "depends_on": ["a"]}, {"id": "c"}]}}
    assert set(graph_rank(cycle)) == {"a", "b", "c"} and graph_rank(cycle)["c"] == 0
    assert graph_rank(None) == {} and graph_rank({"orchestration": {"graph": "nope"}}) == {} == graph_rank({"orchestration": "dag"})
    assert graph_rank({"orchestration": {"graph": [{"agent": "solo", "depends_on": "not a list"}, "junk"]}}) == {"solo": 0}


@given(st.data(), st.integers(1, 7))
def test_graph_rank_puts_every_dependency_first_whatever_the_listing(data, size):
    depends = [data.draw(st.sets(st.integers(0, i - 1), max_size=i)) if i else set() for i in range(size)]
    listing = data.draw(st.permutations(range(size)))
    graph = [{"id": f"n{i}", "depends_on": [f"n{d}" for d in depends[i]]} for i in listing]
    rank = graph_rank({"orchestration": {"graph": graph}})
    assert sorted(rank.values()) == list(range(size))
    assert all(rank[f"n{d}"] < rank[f"n{i}"] for i in range(size) for d in depends[i])


EXECUTION = ["zed_scout", "mid_builder", "alpha_judge"]
@given(
    st.permutations(range(4)),
    st.lists(st.integers(-10_000, 10_000), min_size=4, max_size=4),
    st.lists(st.integers(0, 3), min_size=3, max_size=3).map(sorted),
    st.booleans(),
)
def test_any_file_order_and_mtimes_give_the_runtime_order(order, mtimes, stamps, finished):
    reads = [state_file(agent, ms) for agent, ms in zip(EXECUTION, stamps, strict=True)] + [state_file("final", 5)]
    shuffled = [reads[i] for i in order]
    shuffled = [Read(r.spec, r.order, at(m)) for r, m in zip(shuffled, mtimes, strict=True)]
    agents = [r.spec.agent_id for r in append_order(stamp(shuffled), graph_rank(CHAIN), finished=finished)]
    assert agents == [*EXECUTION, "final"]


def test_state_files_without_timestamps_fall_back_to_the_graph_not_the_mtime():
    reads = [state_file("alpha_judge", None, mtime_ms=1), state_file("zed_scout", None, mtime_ms=3), state_file("mid_builder", None, mtime_ms=2)]
    ordered = sorted(stamp(reads), key=lambda r: runtime_key(r, graph_rank(CHAIN)))
    assert [r.spec.agent_id for r in ordered] == EXECUTION
    assert {r.spec.ts_source for r in stamp(reads)} == {MTIME}


def event(kind: str, *, ms: int | None = None, iteration: int | None = None, agent: str = "", key: str = "", layout: int = 0) -> Read:
    when = at(ms) if ms is not None else None
    spec = EventSpec(kind=kind, dedupe_key=key or f"{kind}:{iteration}:{agent}:{ms}", agent_id=agent, iteration=iteration, occurred_at=when)
    return Read(spec, ((layout,), key or kind, 0), at(99_000))


def test_untimed_files_take_their_iterations_times_else_the_mtime():
    reads = [
        event("log", ms=10, iteration=1),  # the manager's line: iteration 1 begins
        event("log", ms=20, iteration=1, agent="w"),  # worker w spawned
        event("log", ms=50, iteration=1, agent="w"),  # worker w done
        event("log", ms=70, iteration=1),  # budget: iteration 1 ends
        event("iteration.decision", iteration=1),
        event("worker.spawn", iteration=1, agent="w"),
        event("worker.complete", iteration=1, agent="w"),
        event("iteration.validation", iteration=1),
        event("digest", iteration=1),
        event("iteration.decision", iteration=7),
        event("run.start", ms=0),
    ]
    stamped = {(r.spec.kind, r.spec.iteration, r.spec.agent_id): r.spec for r in stamp(reads)}
    assert stamped[("iteration.decision", 1, "")].occurred_at == at(10)
    assert stamped[("worker.spawn", 1, "w")].occurred_at == at(20)
    assert stamped[("worker.complete", 1, "w")].occurred_at == at(50)
    assert stamped[("iteration.validation", 1, "")].occurred_at == at(70) == stamped[("digest", 1, "")].occurred_at
    assert {stamped[k].ts_source for k in [("iteration.decision", 1, ""), ("worker.complete", 1, "w"), ("digest", 1, "")]} == {PARENT}
    assert stamped[("iteration.decision", 7, "")].occurred_at == at(99_000) and stamped[("iteration.decision", 7, "")].ts_source == MTIME
    assert stamped[("run.start", None, "")].ts_source == RECORD


reads_strategy = st.lists(
    st.builds(
        lambda n, ms, iteration, agent, kind, layout: event(kind, ms=ms, iteration=iteration, agent=agent, key=f"k{n}", layout=layout),
        st.integers(0, 10_000),
        st.one_of(st.none(), st.integers(0, 50)),
        st.one_of(st.none(), st.integers(1, 3)),
        st.sampled_from(["", "w1", "w2"]),
        st.sampled_from(["log", "metric.eval", "iteration.decision", "worker.spawn", "worker.complete", "digest", "board.post"]),
        st.integers(0, 6),
    ),
    max_size=25,
    unique_by=lambda r: r.spec.dedupe_key,
)


@given(reads_strategy, st.randoms(use_true_random=False))
def test_a_finished_run_is_appended_in_ts_order_whatever_the_listing_order(reads, random):
    ordered = append_order(stamp(reads), {}, finished=True)
    times = [r.spec.occurred_at for r in ordered]
    assert all(t is not None for t in times) and times == sorted(times)  # type: ignore[type-var]
    shuffled = list(reads)
    random.shuffle(shuffled)
    assert [r.spec.dedupe_key for r in append_order(stamp(shuffled), {}, finished=True)] == [r.spec.dedupe_key for r in ordered]


@given(reads_strategy)
def test_a_live_run_keeps_arrival_order(reads):
    assert [r.spec.dedupe_key for r in append_order(stamp(reads), {}, finished=False)] == [r.spec.dedupe_key for r in reads]
