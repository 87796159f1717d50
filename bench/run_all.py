"""Run every benchmark under bench/ (what `make bench` runs) and print each one's figures.

    python bench/run_all.py            # every benchmark in full
    python bench/run_all.py --quick    # pass --quick through (minutes, not tens of minutes)
    python bench/run_all.py pages ingest   # only these

Each benchmark is its own process (so one crashing does not stop the others); its output is streamed and
kept in bench/results/<name>.txt. The exit status is non-zero when any benchmark failed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Helpers and this runner are not benchmarks.
NOT_BENCHMARKS = {"run_all.py", "common.py", "__init__.py"}
ORDER = ["ingest", "live", "replay", "search", "pages"]


def benchmarks() -> list[Path]:
    """The benchmark scripts that exist, in a stable order (known ones first)."""
    found = [p for p in HERE.glob("*.py") if p.name not in NOT_BENCHMARKS and not p.name.startswith("_")]
    rank = {name: i for i, name in enumerate(ORDER)}
    return sorted(found, key=lambda p: (rank.get(p.stem, len(ORDER)), p.stem))


def run_one(script: Path, quick: bool, results: Path) -> tuple[int, float]:
    """Run one benchmark, streaming its output to the terminal and to results/<name>.txt."""
    command = [sys.executable, str(script)] + (["--quick"] if quick else [])
    started = time.monotonic()
    out_path = results / f"{script.stem}{'-quick' if quick else ''}.txt"
    with out_path.open("w") as out:
        out.write(f"# {' '.join(command[1:])} · {dt.datetime.now().isoformat(timespec='seconds')}\n")
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            sys.stdout.write(line)
            sys.stdout.flush()
            out.write(line)
        code = proc.wait()
    return code, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="pass --quick to every benchmark")
    parser.add_argument("only", nargs="*", help="benchmark names (e.g. pages ingest); default: all")
    args = parser.parse_args()
    scripts = [s for s in benchmarks() if not args.only or s.stem in args.only]
    if not scripts:
        print("no benchmark scripts found under bench/")
        return 1
    results = HERE / "results"
    results.mkdir(exist_ok=True)
    print(f"# {len(scripts)} benchmark(s): {', '.join(s.stem for s in scripts)} · {os.cpu_count()} cores")
    outcome: list[tuple[str, int, float]] = []
    for script in scripts:
        print(f"\n===== {script.stem} {'(--quick)' if args.quick else ''} =====", flush=True)
        code, seconds = run_one(script, args.quick, results)
        outcome.append((script.stem, code, seconds))
    print("\n===== summary =====")
    for name, code, seconds in outcome:
        print(f"{name:10s} {'ok' if code == 0 else f'FAILED ({code})':12s} {seconds:7.1f} s")
    return 0 if all(code == 0 for _, code, _ in outcome) else 1


if __name__ == "__main__":
    sys.exit(main())
