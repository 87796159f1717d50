"""Footprint of a local install: memory, CPU at rest, an idle watcher, the venv, semantic recall.

    .venv/bin/python bench/footprint.py                 # starts what `make run` starts on a scratch data dir
    .venv/bin/python bench/footprint.py --quick         # shorter rest windows
    .venv/bin/python bench/footprint.py --attach PID --url http://127.0.0.1:8001 --checkout /path/to/clone
                                                        # measures a running `make run` (PID: make or awp_serve)

Prints, for every process `make run` starts (awp_serve with the demo follower and the embedding worker in its
threads, daphne, the embedding model's process while it runs, and the embedded Postgres with its backends): PSS after the demo run was ingested and one semantic search was answered (at rest),
and again in a used state (`--used-events`, default 40,000 agent-sized events pushed through the API in batches
of 5,000 — bench/ingest.py's model and tool calls — then a 2,000-event run page and its Timeline's last page
opened several times, so every worker serves them, and the embed worker given time for what the results added); the
CPU share of all of them at rest; the CPU share of an idle `awp_watch` over a few hundred files; the size of
the virtual environment; recall@10 on the labelled set (bench/search_recall.py). PSS counts shared pages once
across processes, so the sum is what the install really holds.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.common import free_port, machine  # noqa: E402

DEMO_USER, DEMO_PASSWORD = "demo", "awp-demo-pass"
QUERY = "how do workers share what they found"


def processes(root: psutil.Process, data_dir: Path) -> list[psutil.Process]:
    """The root, its descendants, and the embedded Postgres of `data_dir` with its backends."""
    found = {root.pid: root}
    for child in root.children(recursive=True):
        found[child.pid] = child
    pg_dir = str(data_dir / "pg")
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(arg == pg_dir for arg in cmdline) and "postgres" in (cmdline[0] if cmdline else ""):
            found[proc.pid] = proc
            for child in proc.children(recursive=True):
                found[child.pid] = child
    return list(found.values())


def label(proc: psutil.Process) -> str:
    try:
        cmdline = proc.cmdline()
    except psutil.Error:
        return "?"
    if cmdline and cmdline[0].endswith("postgres") or (cmdline and cmdline[0].startswith("postgres:")):
        return "postgres" if len(cmdline) > 1 and cmdline[1] == "-D" else cmdline[0][:40]
    if any("memory.model_process" in arg for arg in cmdline):
        return "embedding model (on demand)"
    try:
        if proc.name() == "awp-daphne":  # a worker forked by awp_serve (its command line is awp_serve's)
            return "daphne"
    except psutil.Error:
        return "?"
    for word in ("awp_serve", "awp_demo", "awp_embed", "daphne", "awp_watch", "make"):
        if any(word in arg for arg in cmdline):
            return word
    return " ".join(cmdline)[:40]


def pss_mb(procs: list[psutil.Process]) -> list[tuple[str, float]]:
    rows = []
    for proc in procs:
        try:
            rows.append((label(proc), proc.memory_full_info().pss / 2**20))
        except psutil.Error:
            continue
    return rows


def cpu_seconds(procs: list[psutil.Process]) -> dict[int, float]:
    out = {}
    for proc in procs:
        try:
            times = proc.cpu_times()
            out[proc.pid] = times.user + times.system
        except psutil.Error:
            continue
    return out


def cpu_share(find: callable, seconds: float) -> float:  # type: ignore[valid-type]
    """Percent of one core used by the processes `find()` returns, over `seconds` (late arrivals count from 0)."""
    before = cpu_seconds(find())
    started = time.monotonic()
    time.sleep(seconds)
    after = cpu_seconds(find())
    elapsed = time.monotonic() - started
    used = sum(value - before.get(pid, 0.0) for pid, value in after.items())
    return 100.0 * used / elapsed


def login(url: str) -> requests.Session:
    session = requests.Session()
    session.get(f"{url}/login/", timeout=30)
    response = session.post(
        f"{url}/login/",
        data={"username": DEMO_USER, "password": DEMO_PASSWORD, "csrfmiddlewaretoken": session.cookies["csrftoken"]},
        headers={"Referer": f"{url}/login/"},
        timeout=30,
    )
    response.raise_for_status()
    return session


def wait_for(what: str, check: callable, timeout: float, interval: float = 1.0) -> None:  # type: ignore[valid-type]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (requests.RequestException, OSError):
            pass
        time.sleep(interval)
    raise SystemExit(f"timed out waiting for {what}")


def demo_complete(session: requests.Session, url: str) -> bool:
    runs = session.get(f"{url}/api/v1/experiments/demo/runs", timeout=30).json()
    return bool(runs) and all(r.get("status") == "complete" for r in runs if not r.get("parent_run_id"))


def semantic_search(session: requests.Session, url: str) -> float:
    started = time.perf_counter()
    response = session.get(f"{url}/experiments/demo/memory/search/", params={"q": QUERY, "mode": "semantic"}, timeout=300)
    response.raise_for_status()
    return time.perf_counter() - started


def watcher_folders(base: Path, files: int) -> list[Path]:
    """Copies of the recorded demo workflow (44 files each), one folder (and experiment) per copy."""
    source = ROOT / "experiments" / "demo_data" / "workflow"
    per_copy = sum(1 for p in source.rglob("*") if p.is_file())
    folders = []
    for i in range((files + per_copy - 1) // per_copy):
        target = base / f"footprint-watch-{i}"
        shutil.copytree(source, target)
        folders.append(target)
    return folders


def idle_watcher_cpu(python: str, checkout: Path, env: dict[str, str], files: int, seconds: float, mode: str = "") -> tuple[int, float]:
    with tempfile.TemporaryDirectory(prefix="awp-footprint-") as tmp:
        folders = watcher_folders(Path(tmp), files)
        count = sum(1 for f in folders for p in f.rglob("*") if p.is_file())
        options = ["--watch-mode", mode] if mode else []
        watcher = subprocess.Popen([python, "manage.py", "awp_watch", *map(str, folders), *options], cwd=checkout, env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        try:
            proc = psutil.Process(watcher.pid)
            # Imported and idle: wait until a 3 s window uses under 3% (the first pass takes a while).
            wait_for("the watcher to go idle", lambda: cpu_share(lambda: [proc], 3.0) < 3.0, timeout=300, interval=0)
            return count, cpu_share(lambda: [proc], seconds)
        finally:
            watcher.send_signal(signal.SIGINT)
            try:
                watcher.wait(timeout=20)
            except subprocess.TimeoutExpired:
                watcher.kill()


def dir_size(path: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(path):
        for name in names:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total


def print_pss(rows: list[tuple[str, float]]) -> None:
    print("| process | PSS MB |")
    print("|---|---|")
    grouped: dict[str, list[float]] = {}
    for name, mb in rows:
        grouped.setdefault(name if not name.startswith("postgres") else "postgres (all processes)", []).append(mb)
    for name, values in sorted(grouped.items(), key=lambda kv: -sum(kv[1])):
        print(f"| {name}{f' ×{len(values)}' if len(values) > 1 else ''} | {sum(values):.0f} |")
    print(f"| **total ({len(rows)} processes)** | **{sum(mb for _, mb in rows):.0f}** |")


def use(python: str, checkout: Path, env: dict[str, str], url: str, session: requests.Session, events: int, rest: float) -> None:
    """The used state: agent-sized events through the API, then a 2,000-event run page opened on every worker."""
    import json

    from bench.ingest import agent_events

    def manage(*command: str) -> str:
        out = subprocess.run([python, "manage.py", *command], cwd=checkout, env=env, check=True, capture_output=True, text=True).stdout
        return out.strip().splitlines()[-1]  # the shell may print a banner first

    secret = manage("awp_token", "create", "--experiment", "demo", "--name", f"footprint-{time.time_ns()}")
    headers = {"Authorization": f"Bearer {secret}", "Content-Type": "application/json"}
    tag = f"fp{time.time_ns()}"
    start = {"kind": "run.start", "idempotency_key": "start", "payload": {"task": "footprint: a used install"}}
    pushed = agent_events(events, tag)
    runs = {f"{tag}-page": [start, *pushed[:1999]], f"{tag}-bulk": [start, *pushed[1999:]]}  # the page's run: 2,000 events
    for run_id, run_events in runs.items():
        for i in range(0, len(run_events), 5000):
            body = json.dumps({"run_id": run_id, "events": run_events[i : i + 5000]})
            response = requests.post(f"{url}/api/v1/ingest", data=body, headers=headers, timeout=600)
            if response.status_code != 200:
                raise SystemExit(f"used state: ingest answered {response.status_code}: {response.text[:300]}")
    pk = manage("shell", "-c", f"from experiments.models import Run; print(Run.objects.get(experiment__slug='demo', run_id='{tag}-page').pk)")
    run_path = f"{url}/experiments/demo/runs/{int(pk)}/"
    for _ in range(8):  # the workers share one port: several requests reach every one of them
        assert session.get(run_path, timeout=120).status_code == 200
        assert session.get(f"{run_path}?after=1800", headers={"HX-Request": "true"}, timeout=120).status_code == 200
    time.sleep(max(rest, 10.0))  # the embed worker's passes over the chunks the results added


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="10 s rest windows instead of 60 s")
    parser.add_argument("--attach", type=int, help="pid of a running `make run` (or awp_serve) to measure")
    parser.add_argument("--url", help="its base URL (with --attach)")
    parser.add_argument("--checkout", type=Path, default=ROOT, help="its checkout (with --attach); .venv/ inside")
    parser.add_argument("--watch-files", type=int, default=300)
    parser.add_argument("--watch-mode", default="", help="pass --watch-mode to the idle awp_watch (notify, poll)")
    parser.add_argument("--no-recall", action="store_true")
    parser.add_argument("--used-events", type=int, default=40_000, help="agent-sized events pushed for the used state (0: skip it)")
    args = parser.parse_args()
    rest = 10.0 if args.quick else 60.0
    checkout = args.checkout.resolve()
    python = str(checkout / ".venv" / "bin" / "python") if args.attach else sys.executable
    venv = Path(python).parent.parent
    scratch = None
    server = None
    if args.attach:
        root, url = psutil.Process(args.attach), args.url
        data_dir = Path(os.environ.get("AWP_DATA_DIR", checkout / ".awp-data")).resolve()
        env = {**os.environ, "AWP_DATA_DIR": str(data_dir)}
    else:
        scratch = Path(tempfile.mkdtemp(prefix="awp-footprint-data-"))
        data_dir, port = scratch, free_port()
        url = f"http://127.0.0.1:{port}"
        env = {**os.environ, "AWP_DATA_DIR": str(data_dir), "PORT": str(port)}
        for command in (["migrate", "--no-input", "-v", "0"], ["awp_seed_demo"]):
            subprocess.run([python, "manage.py", *command], cwd=checkout, env=env, check=True, stdout=subprocess.DEVNULL)
        server = subprocess.Popen([python, "manage.py", "awp_serve", "--port", str(port)], cwd=checkout, env=env,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
        root = psutil.Process(server.pid)
    try:
        wait_for("the dashboard", lambda: requests.get(f"{url}/login/", timeout=5).status_code == 200, timeout=300)
        session = login(url)
        wait_for("the demo run", lambda: demo_complete(session, url), timeout=300)
        search_s = semantic_search(session, url)
        time.sleep(5.0)  # the embed worker's next pass (every 5 s) has embedded the demo's chunks
        search_s = min(search_s, semantic_search(session, url))
        rows = pss_mb(processes(root, data_dir))
        cpu_rest = cpu_share(lambda: processes(root, data_dir), rest)
        used_rows: list[tuple[str, float]] = []
        if args.used_events:
            use(python, checkout, env, url, session, args.used_events, rest)
            used_rows = pss_mb(processes(root, data_dir))
        files, cpu_watch = idle_watcher_cpu(python, checkout, env, args.watch_files, rest, args.watch_mode)
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)

    print(f"# Footprint — {machine()} (load average {os.getloadavg()[0]:.1f}; 2 cores shared, figures under load)")
    print()
    print_pss(rows)
    total = sum(mb for _, mb in rows)
    print()
    print(f"pss_total_mb {total:.0f}")
    if used_rows:
        print()
        print(f"Used state: {args.used_events:,} agent-sized events pushed, a 2,000-event run page opened on every worker")
        print()
        print_pss(used_rows)
        print(f"pss_used_total_mb {sum(mb for _, mb in used_rows):.0f}")
    print(f"semantic_search_s {search_s:.3f}")
    print(f"cpu_at_rest_percent {cpu_rest:.2f}   (all of the above, {rest:.0f} s)")
    how = f"--watch-mode {args.watch_mode}" if args.watch_mode else "default mode"
    print(f"cpu_idle_watcher_percent {cpu_watch:.2f}   (awp_watch over {files} files, {how}, {rest:.0f} s)")
    print(f"venv_mb {dir_size(venv) / 2**20:.0f}   ({venv})")
    if not args.no_recall:
        from bench.search_recall import recall_at_k

        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "awp_site.settings")
        import django

        django.setup()
        from memory import embeddings

        result = recall_at_k(lambda texts: __import__("numpy").array(embeddings.embed_texts(texts)))
        print(f"recall_at_10 {result['recall']:.3f}   (MRR {result['mrr']:.3f}, {result['queries']} queries, {result['docs']} docs)")


if __name__ == "__main__":
    main()
