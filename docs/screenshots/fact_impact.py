"""One-off: write docs/screenshots/fact-impact.png, a fact's impact page on a small seeded experiment.

    .venv/bin/python docs/screenshots/fact_impact.py

Runs against its own embedded Postgres in a temporary AWP_DATA_DIR (your data is not touched), starts daphne
on a loopback port and takes the screenshot with the system Chromium. Not a test: tests never write docs/.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "docs" / "screenshots" / "fact-impact.png"
DATA = Path(tempfile.mkdtemp(prefix="awp-fact-shot-"))
os.environ.update({"AWP_DATA_DIR": str(DATA), "DJANGO_SETTINGS_MODULE": "awp_site.settings"})
os.environ.pop("DATABASE_URL", None)
sys.path.insert(0, str(ROOT))

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from experiments.ingest import EventIn, append_events  # noqa: E402
from experiments.models import Experiment, Membership, Run  # noqa: E402
from memory.curation import lifecycle  # noqa: E402
from memory.curation.models import Evidence, Proposal  # noqa: E402
from memory.curation.prior import prior_run_block  # noqa: E402

PASSWORD = "screenshot-only-pass"


def seed() -> tuple[str, int]:
    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user(username="ana", password=PASSWORD)
    experiment = Experiment.objects.create(slug="invoices", name="Invoice extraction")
    Membership.objects.create(experiment=experiment, user=user, role=Membership.Role.OWNER)
    fact = Proposal.objects.create(experiment=experiment, kind="fact", key="k-a4", text="Invoice totals are printed bottom-right; read them last.")
    Evidence.objects.create(proposal=fact, ref="digest:seed", run_ref="2026-11-20_seed")
    trial = lifecycle.approve_on_trial(proposal=fact, reviewer=user, runs=8, reason="try it on the next runs")
    scores = {True: [0.86, 0.91, 0.83, 0.9, 0.88], False: [0.62, 0.7, 0.58, 0.66, 0.71]}
    for n in range(10):
        run = Run.objects.create(experiment=experiment, run_id=f"2026-11-25_10-{n:02d}-00_run{n:02d}", engine="delegation_loop")
        given = fact.promoted_text in prior_run_block(experiment, run_id=run.run_id, agent_id="manager")
        score = scores[given][n // 2]
        append_events(run, [
            EventIn(kind="worker.complete", dedupe_key="w1", agent_id="extractor", iteration=1,
                    payload={"confidence": score, "_eval_score": round(score - 0.05, 3)}),
            EventIn(kind="run.complete", dedupe_key="file:run_completion.json", payload={"status": "complete"}),
        ])  # fmt: skip
    assert trial is not None
    connection.close()
    return experiment.slug, fact.pk


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    slug, fact_id = seed()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "awp_site.asgi:application"],
                              cwd=ROOT, env=os.environ.copy(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        for _ in range(200):
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.1)
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--disable-sync"])  # fmt: skip
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            base = f"http://127.0.0.1:{port}"
            page.goto(f"{base}/login/")
            page.fill("input[name=username]", "ana")
            page.fill("input[name=password]", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url(f"{base}/")
            page.goto(f"{base}/experiments/{slug}/memory/facts/{fact_id}/")
            page.wait_for_selector("#impact-heading")
            page.screenshot(path=str(OUT), full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(OUT)


if __name__ == "__main__":
    main()
