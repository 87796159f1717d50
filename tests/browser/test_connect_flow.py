"""Issue 27 acceptance, in Chromium: a new owner connects their own runtime from the browser; live pages stay quiet.

- log in, create an experiment, land on Connect, create a token, copy the push snippet, run it with the
  standalone client installed into a fresh virtualenv from the repository (offline), and see the run appear
  live at the top of the Runs tab with no console error;
- a live run with every page of the experiment open: no page logs a console error for fragments meant for
  another page.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from django.db import connections
from playwright.sync_api import expect

from tests.conftest import ROOT, login
from tests.factories import make_experiment, make_member, make_run, make_token

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def watch_console(page) -> list[str]:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def fresh_venv_with_client(tmp_path: Path) -> Path:
    """python -m venv + pip install clients/python with no index at all: the client must install alone."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(ROOT / "clients" / "python")], check=True, env=env)
    return venv / "bin" / "python"


def test_a_new_owner_connects_a_runtime_and_sees_the_run_arrive_live(asgi_server, browser, tmp_path):
    owner = make_member(make_experiment(name="Somebody else's"), "owner")
    context = browser.new_context(viewport={"width": 1366, "height": 900}, permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    page.set_default_timeout(15_000)
    errors = watch_console(page)
    login(page, asgi_server, owner.username)

    page.click("details.create summary")
    page.fill("input[name=name]", "My agents")
    page.click("details.create button[type=submit]")
    page.wait_for_url("**/experiments/my-agents/connect/")
    page.fill("input[name=name]", "laptop")
    page.click("text=Create token")
    expect(page.locator("#new-token")).to_be_visible()
    page.click("#snippet-push button.copy")
    expect(page.locator("#snippet-push button.copy")).to_have_text("Copied")
    snippet = page.evaluate("navigator.clipboard.readText()")
    assert "from awp_memory_client import IngestClient" in snippet and page.locator("#new-token-secret").inner_text() in snippet

    page.click("nav.tabs >> text=Runs")
    page.wait_for_url("**/experiments/my-agents/runs/")
    page.wait_for_selector("#live-indicator[data-state=live]", state="attached")
    expect(page.locator("#run-rows tr.empty")).to_have_count(1)

    python = fresh_venv_with_client(tmp_path)
    script = tmp_path / "push.py"
    script.write_text(snippet)
    pushed = subprocess.run([str(python), str(script)], check=True, capture_output=True, text=True, timeout=60)
    run_id = pushed.stdout.split()[-1]
    first = page.locator("#run-rows tr").first
    expect(first).to_contain_text(run_id)
    expect(first).to_contain_text("complete")
    expect(page.locator("#run-rows tr.empty")).to_have_count(0)
    assert errors == []
    context.close()
    connections.close_all()


def test_no_page_logs_console_errors_while_a_run_is_live(asgi_server, browser):
    experiment = make_experiment(name="Busy")
    viewer = make_member(experiment, "owner")
    token = make_token(experiment, ["ingest"])
    older = make_run(experiment, run_id="older-run")
    run = make_run(experiment, run_id="live-run")
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    base = f"{asgi_server.url}/experiments/{experiment.slug}"
    paths = ["/", f"{base}/", f"{base}/runs/", f"{base}/protocol/", f"{base}/memory/", f"{base}/review/", f"{base}/connect/",
             f"{base}/runs/{run.pk}/", f"{base}/runs/{run.pk}/board/", f"{base}/runs/{run.pk}/digests/", f"{base}/runs/{run.pk}/iterations/",
             f"{base}/runs/{run.pk}/problems/", f"{base}/runs/{run.pk}/state/", f"{base}/runs/{older.pk}/"]  # fmt: skip
    pages, errors = [], []
    for i, path in enumerate(paths):
        page = context.new_page()
        page.set_default_timeout(15_000)
        errors.append(watch_console(page))
        if i == 0:
            login(page, asgi_server, viewer.username)
        page.goto(path if path.startswith("http") else asgi_server.url + path)
        page.wait_for_selector("#live-indicator[data-state=live]", state="attached")
        pages.append(page)

    events = [{"kind": "run.start", "payload": {"task": "busy"}, "idempotency_key": "s"}]
    events += [{"kind": "log", "payload": {"msg": f"line {i}"}, "idempotency_key": f"l{i}"} for i in range(5)]
    events += [{"kind": "worker.spawn", "agent_id": "w1", "iteration": 1, "payload": {}, "idempotency_key": "w"}]
    events += [{"kind": "run.complete", "payload": {"status": "complete", "reason": "done"}, "idempotency_key": "c"}]
    for kind_batch in (events[:3], events[3:]):
        answer = requests.post(f"{asgi_server.url}/api/v1/ingest", json={"run_id": "live-run", "events": kind_batch},
                               headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
        assert answer.status_code == 200, answer.text
    new_run = requests.post(f"{asgi_server.url}/api/v1/ingest", json={"run_id": "brand-new", "events": [events[0]]},
                            headers={"Authorization": f"Bearer {token}"}, timeout=10)  # fmt: skip
    assert new_run.status_code == 200

    expect(pages[7].locator("#live-mark")).to_have_attribute("data-seq", str(len(events)))
    expect(pages[2].locator("#run-rows tr").first).to_contain_text("brand-new")
    for page in pages[:-1]:  # every page has had frames about these runs by now (the older run's page has none)
        expect(page.locator("#live-mark[data-frame]")).to_have_count(1)
    expect(pages[2].locator(f"#run-row-{run.pk}")).to_contain_text("complete")
    assert [e for e in errors if e] == []
    context.close()
    connections.close_all()
