"""Live fan-out benchmark: steady ingest into one run, 50 websocket clients on loopback, through daphne.

    .venv/bin/python bench/live.py                 # 100, 1,000 and 5,000 events/s, 10 s each, Postgres layer
    .venv/bin/python bench/live.py --quick         # 100 and 1,000 events/s, 3 s each
    .venv/bin/python bench/live.py --redis         # the same through RedisPubSubChannelLayer (REDIS_URL)
    .venv/bin/python bench/live.py --layers        # channel layers alone: ours vs channels-postgres 1.1.4
    .venv/bin/python bench/live.py --watch [--watch-checkout DIR]
                                                   # file write → open page through awp_watch: notifications
                                                   # vs polling (and another checkout's watcher, e.g. the old one)

Ingest commits batches every 20 ms with experiments.ingest.append_events (what the API and the watcher
call) in this process; every client acknowledges frames as live.js does. Latency is from the commit of an
event to the first frame on a client whose #live-mark seq covers it, over all (client, event) pairs.
RSS is daphne's resident memory before the clients connect and after the run. Printed, never asserted.

--layers needs channels-postgres outside the project's venv (it is not a dependency):
    .venv/bin/pip install --target /tmp/cpg/site --no-deps channels-postgres==1.1.4 psycopg-pool
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    ROOT,
    child_env,
    free_port,
    machine,
    print_table,
    setup_django,
    summary_ms,
    wait_for_port,
)

CLIENTS = 50
BATCH_EVERY = 0.02
MARK = re.compile(r'id="live-mark"[^>]*data-frame="(\d+)" data-seq="(\d+)"')


def start_daphne(url: str, **env: str) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = Path(f"/tmp/awp-bench-live-{port}.log").open("ab")
    command = [sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "awp_site.asgi:application"]
    proc = subprocess.Popen(command, cwd=ROOT, env=child_env(url, **env), stdout=log, stderr=subprocess.STDOUT)
    wait_for_port(port, proc)
    return proc, port


def rss_mb(pid: int) -> float:
    import psutil

    return psutil.Process(pid).memory_info().rss / 2**20


def fixtures() -> tuple[object, str]:
    """A fresh run and a session cookie for a member who may watch it."""
    from django.contrib.auth import get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    from experiments.models import Experiment, Membership, Run

    user, _ = get_user_model().objects.get_or_create(username="bench-live")
    experiment, _ = Experiment.objects.get_or_create(slug="bench-live", defaults={"name": "Bench live"})
    Membership.objects.get_or_create(user=user, experiment=experiment, defaults={"role": "viewer"})
    run = Run.objects.create(experiment=experiment, run_id=f"bench-{time.time_ns()}")
    session = SessionStore()
    session["_auth_user_id"] = str(user.pk)
    session["_auth_user_backend"] = "django.contrib.auth.backends.ModelBackend"
    session["_auth_user_hash"] = user.get_session_auth_hash()
    session.create()
    return run, session.session_key or ""


async def client(port: int, run_pk: int, after: int, cookie: str, received: list[tuple[float, int]], ready: asyncio.Event, stop: asyncio.Event) -> int:
    from websockets.asyncio.client import connect

    frames = 0
    async with connect(
        f"ws://127.0.0.1:{port}/ws/runs/{run_pk}/?after={after}",
        origin=f"http://127.0.0.1:{port}",
        additional_headers={"Cookie": f"sessionid={cookie}"},
        max_size=None,
    ) as ws:
        ready.set()
        while not stop.is_set():
            try:
                text = await asyncio.wait_for(ws.recv(), timeout=0.5)
            except TimeoutError:
                continue
            now = time.perf_counter()
            mark = MARK.search(text)
            if mark:
                frames += 1
                received.append((now, int(mark.group(2))))
                await ws.send(f'{{"ack": {mark.group(1)}}}')
    return frames


def ingest_steadily(run: object, rate: int, seconds: float, commits: dict[int, float]) -> None:
    from django.db import connection

    from experiments.ingest import EventIn, append_events

    per_batch = max(1, round(rate * BATCH_EVERY))
    batches = int(seconds / BATCH_EVERY)
    start = time.perf_counter()
    n = 0
    for b in range(batches):
        delay = start + b * BATCH_EVERY - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        events = [EventIn(kind="log", dedupe_key=f"b:{n + i}", payload={"msg": "tick", "i": n + i}) for i in range(per_batch)]
        seqs = append_events(run, events).seqs  # committed when this returns
        at = time.perf_counter()
        for seq in seqs:
            commits[seq] = at
        n += per_batch
    connection.close()


async def one_rate(port: int, pid: int, run: object, cookie: str, rate: int, seconds: float) -> list[object]:
    received = [[] for _ in range(CLIENTS)]  # type: list[list[tuple[float, int]]]
    readies = [asyncio.Event() for _ in range(CLIENTS)]
    stop = asyncio.Event()
    rss_before = rss_mb(pid)
    head = run.last_seq  # type: ignore[attr-defined]
    tasks = [
        asyncio.create_task(client(port, run.pk, head, cookie, received[i], readies[i], stop))  # type: ignore[attr-defined]
        for i in range(CLIENTS)
    ]
    # A client that fails to connect must not hang the run: wait a bounded time and count who made it.
    await asyncio.wait([asyncio.ensure_future(r.wait()) for r in readies], timeout=30)
    if not all(r.is_set() for r in readies):
        print(f"  only {sum(r.is_set() for r in readies)}/{CLIENTS} clients connected", file=sys.stderr)
    await asyncio.sleep(0.5)
    print(f"  {rate:,} events/s: {CLIENTS} clients connected, ingesting for {seconds:.0f} s", file=sys.stderr)
    commits: dict[int, float] = {}
    import psutil

    server, me = psutil.Process(pid), psutil.Process()
    cpu0, mine0, wall0 = sum(server.cpu_times()[:2]), sum(me.cpu_times()[:2]), time.perf_counter()
    await asyncio.to_thread(ingest_steadily, run, rate, seconds, commits)
    wall = time.perf_counter() - wall0
    server_cpu = (sum(server.cpu_times()[:2]) - cpu0) / wall * 100
    bench_cpu = (sum(me.cpu_times()[:2]) - mine0) / wall * 100
    last = max(commits)
    deadline = time.perf_counter() + 15
    while time.perf_counter() < deadline and any(not r or r[-1][1] < last for r in received):
        await asyncio.sleep(0.1)
    stop.set()
    frames = [f if isinstance(f, int) else 0 for f in await asyncio.gather(*tasks, return_exceptions=True)]
    rss_after = rss_mb(pid)
    latencies: list[float] = []
    complete = 0
    for frames_of_client in received:
        covered = 0
        for at, seq in frames_of_client:
            for s in range(covered + 1, seq + 1):
                if s in commits:
                    latencies.append(at - commits[s])
            covered = max(covered, seq)
        complete += covered >= last
    s = summary_ms(latencies)
    return [f"{rate:,}", len(commits), f"{complete}/{CLIENTS}", s["p50"], s["p95"], s["p99"], sum(frames) / CLIENTS, rss_before, rss_after, f"{server_cpu:.0f}%", f"{bench_cpu:.0f}%"]


def fanout(args: argparse.Namespace) -> None:
    url = setup_django("live")
    env = {"REDIS_URL": os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/14")} if args.redis else {}
    os.environ.update(env)  # the announcing side (this process) uses the same layer as daphne
    proc, port = start_daphne(url, **env)
    rates = [100, 1000] if args.quick else [100, 1000, 5000]
    if args.rates:
        rates = [int(r) for r in args.rates.split(",")]
    seconds = 3.0 if args.quick else 10.0
    rows = []
    try:
        for rate in rates:
            run, cookie = fixtures()
            rows.append(asyncio.run(one_rate(port, proc.pid, run, cookie, rate, seconds)))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    layer = "RedisPubSubChannelLayer" if args.redis else "PostgresNotifyLayer (LISTEN/NOTIFY)"
    print(f"\nLive fan-out · {CLIENTS} clients · {seconds:.0f} s per rate · {layer} · {machine()}\n")
    print_table(["events/s", "events", "clients complete", "p50 ms", "p95 ms", "p99 ms", "frames/client", "RSS before MB", "RSS after MB", "daphne CPU", "bench CPU"], rows)


# -- layers alone ----------------------------------------------------------------------------------------


async def layer_round(layer: object, rate: int, seconds: float, receivers: int = CLIENTS) -> list[object]:
    channels = [await layer.new_channel() for _ in range(receivers)]  # type: ignore[attr-defined]
    for ch in channels:
        await layer.group_add("bench", ch)  # type: ignore[attr-defined]
    await asyncio.sleep(0.5)
    got = [0] * receivers
    lat: list[float] = []

    async def drain(i: int) -> None:
        while True:
            msg = await layer.receive(channels[i])  # type: ignore[attr-defined]
            got[i] += 1
            lat.append(time.perf_counter() - msg["t"])

    tasks = [asyncio.create_task(drain(i)) for i in range(receivers)]
    sent = int(rate * seconds)
    start = time.perf_counter()
    for n in range(sent):
        await asyncio.sleep(max(0.0, start + n / rate - time.perf_counter()))
        await layer.group_send("bench", {"type": "x", "t": time.perf_counter(), "n": n})  # type: ignore[attr-defined]
    await asyncio.sleep(3)
    for t in tasks:
        t.cancel()
    s = summary_ms(lat)
    delivered = sum(got) / (sent * receivers) * 100
    return [rate, sent * receivers, sum(got), f"{delivered:.0f}%", s["p50"], s["p99"]]


def layers(args: argparse.Namespace) -> None:
    sys.path.insert(0, "/tmp/cpg/site")
    url = setup_django("live_layers")
    from django.conf import settings

    from awp_site.channel_layer import PostgresNotifyLayer

    rows = []
    for rate in (20, 60):
        rows.append(["ours (LISTEN/NOTIFY, notify only)", *asyncio.run(layer_round(PostgresNotifyLayer(capacity=10_000), rate, 5))])
    try:
        import channels_postgres  # noqa: F401
    except ImportError:
        print("channels-postgres not importable from /tmp/cpg/site; see the module docstring")
    else:
        # Its tables come from its own migrations, applied to the benchmark database.
        settings.INSTALLED_APPS.append("channels_postgres")
        from django.apps import apps

        apps.app_configs.clear()
        apps.ready = apps.apps_ready = apps.models_ready = apps.loading = False
        apps.populate(settings.INSTALLED_APPS)
        from django.core.management import call_command

        call_command("migrate", "channels_postgres", verbosity=0, interactive=False)
        from channels_postgres.core import PostgresChannelLayer

        db = dict(settings.DATABASES["default"])
        for rate in (20, 60):
            layer = PostgresChannelLayer(**db)
            rows.append(["channels-postgres 1.1.4", *asyncio.run(layer_round(layer, rate, 5))])
    print(f"\nChannel layers alone · {CLIENTS} receivers in one group · 5 s · {machine()} · {url.rsplit('/', 1)[-1]}\n")
    print_table(["layer", "messages/s", "expected deliveries", "deliveries", "delivered", "p50 ms", "p99 ms"], rows)


# -- file write → open page, through a watcher ------------------------------------------------------------


async def write_to_page(port: int, run: object, cookie: str, board: Path, writes: int) -> list[float]:
    """Append one blackboard line at a time; the latency until the open run page gets the frame covering it."""
    import json as _json

    from websockets.asyncio.client import connect

    latencies = []
    head = run.last_seq  # type: ignore[attr-defined]
    async with connect(
        f"ws://127.0.0.1:{port}/ws/runs/{run.pk}/?after={head}",  # type: ignore[attr-defined]
        origin=f"http://127.0.0.1:{port}",
        additional_headers={"Cookie": f"sessionid={cookie}"},
        max_size=None,
    ) as ws:
        await asyncio.sleep(0.5)
        for n in range(writes):
            line = {"id": f"bench-{time.time_ns()}", "ts": time.time(), "topic": "bench", "worker_id": "bench",
                    "payload": {"n": n}}  # fmt: skip
            written = time.perf_counter()
            with board.open("a") as handle:
                handle.write(_json.dumps(line) + "\n")
            while True:
                text = await asyncio.wait_for(ws.recv(), timeout=30)
                mark = MARK.search(text)
                if mark:
                    await ws.send(f'{{"ack": {mark.group(1)}}}')
                    if int(mark.group(2)) > head:
                        head = int(mark.group(2))
                        latencies.append(time.perf_counter() - written)
                        break
            await asyncio.sleep(0.25 + (n % 5) * 0.05)  # writes land at every phase of a polling cycle
    return latencies


def one_watcher(url: str, port: int, label: str, python: str, checkout: Path, options: list[str], writes: int) -> list[object]:
    import shutil
    import tempfile

    from experiments.demo import replay_demo
    from experiments.models import Experiment, Membership, Run

    run, cookie = fixtures()  # the bench user and its session
    slug = f"bench-watch-{time.time_ns()}"
    folder = Path(tempfile.mkdtemp(prefix="awp-bench-watch-")) / "wf"
    replay_demo(folder, delay=0)
    log = Path(f"/tmp/awp-bench-watch-{port}.log").open("ab")
    watcher = subprocess.Popen([python, "manage.py", "awp_watch", str(folder), "--experiment", slug, *options],
                               cwd=checkout, env=child_env(url), stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not Run.objects.filter(experiment__slug=slug, depth=0, status="complete").exists():
            if time.monotonic() > deadline or watcher.poll() is not None:
                raise RuntimeError(f"{label}: the watcher did not import the demo run")
            time.sleep(0.2)
        time.sleep(1.0)
        watched = Run.objects.get(experiment__slug=slug, depth=0)
        Membership.objects.get_or_create(user=Membership.objects.filter(experiment=run.experiment).first().user,  # type: ignore[attr-defined]
                                         experiment=Experiment.objects.get(slug=slug), defaults={"role": "viewer"})  # fmt: skip
        board = next((folder / "workspace" / "blackboard").glob("*.jsonl"))
        latencies = asyncio.run(write_to_page(port, watched, cookie, board, writes))
    finally:
        watcher.terminate()
        watcher.wait(timeout=30)
        shutil.rmtree(folder.parent, ignore_errors=True)
    s = summary_ms(latencies)
    return [label, len(latencies), s["p50"], s["p95"], s["p99"]]


def watch(args: argparse.Namespace) -> None:
    url = setup_django("live")
    proc, port = start_daphne(url)
    writes = 20 if args.quick else 60
    plan = [("notifications (awp_watch)", sys.executable, ROOT, ["--watch-mode", "notify"]),
            ("polling every 0.2 s (awp_watch --watch-mode poll)", sys.executable, ROOT, ["--watch-mode", "poll", "--interval", "0.2"])]  # fmt: skip
    if args.watch_checkout:
        # An older checkout with its own .venv (e.g. before notifications: a Python pass every 0.2 s).
        other = Path(args.watch_checkout).resolve()
        plan.append((f"{other.name} (its awp_watch, --interval 0.2)", str(other / ".venv" / "bin" / "python"), other, ["--interval", "0.2"]))
    rows = []
    try:
        for label, python, checkout, options in plan:
            rows.append(one_watcher(url, port, label, python, checkout, options, writes))
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(f"\nFile write → open run page, one blackboard line at a time through awp_watch and daphne · {machine()}\n")
    print_table(["watcher", "writes", "p50 ms", "p95 ms", "p99 ms"], rows)


def main() -> None:
    global CLIENTS
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--redis", action="store_true")
    parser.add_argument("--layers", action="store_true")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--rates", type=str, default="", help="comma-separated events/s, e.g. 100,1000")
    parser.add_argument("--watch", action="store_true", help="file write → open page latency through awp_watch")
    parser.add_argument("--watch-checkout", default="", help="with --watch: also measure this checkout's awp_watch")
    args = parser.parse_args()
    CLIENTS = args.clients
    os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    if args.layers:
        layers(args)
    elif args.watch:
        watch(args)
    else:
        fanout(args)
    threading.Event().wait(0)


if __name__ == "__main__":
    main()
