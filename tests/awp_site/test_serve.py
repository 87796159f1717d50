"""`manage.py awp_serve` (what `make run` starts): several daphne workers on one socket, all stopped by Ctrl-C."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import psutil
import pytest
import requests

from bench.common import free_port, wait_for_port
from experiments.models import Event
from tests.conftest import ROOT, subprocess_env
from tests.factories import make_experiment, make_token


def serve(port: int, workers: int) -> subprocess.Popen[str]:
    command = [sys.executable, "manage.py", "awp_serve", "--port", str(port), "--workers", str(workers), "--no-demo"]
    proc = subprocess.Popen(command, cwd=ROOT, env=subprocess_env(AWP_EMBEDDER="none"), stdout=subprocess.PIPE, text=True)
    wait_for_port(port, proc, timeout=60)
    return proc


def listening_workers(proc: subprocess.Popen[str], port: int) -> list[psutil.Process]:
    """The children of awp_serve that hold the listening socket on `port`."""
    return [
        child
        for child in psutil.Process(proc.pid).children()
        if any(c.status == psutil.CONN_LISTEN and c.laddr.port == port for c in child.net_connections(kind="tcp"))
    ]


def named_workers(proc: subprocess.Popen[str], port: int, *, count: int, timeout: float = 30) -> list[psutil.Process]:
    """listening_workers once `count` of them hold the socket under the workers' name (or what there is at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        workers = listening_workers(proc, port)
        if (len(workers) == count and all(worker.name() == "awp-daphne" for worker in workers)) or time.monotonic() > deadline:
            return workers
        time.sleep(0.05)


def stop(proc: subprocess.Popen[str]) -> list[psutil.Process]:
    """Ctrl-C awp_serve; return the processes it started that are still alive afterwards."""
    children = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    _gone, alive = psutil.wait_procs(children, timeout=30)
    return alive


def push(port: int, token: str, count: int) -> None:
    session = requests.Session()
    for i in range(count):
        events = [{"kind": "run.start", "idempotency_key": "s", "payload": {}}, {"kind": "log", "idempotency_key": f"e{i}", "payload": {"i": i}}]
        response = session.post(
            f"http://127.0.0.1:{port}/api/v1/ingest", json={"run_id": "served", "events": events}, headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert response.status_code == 200, response.text


@pytest.mark.django_db(transaction=True)
def test_workers_share_one_socket_ctrl_c_stops_all_and_a_restart_keeps_the_data():
    token = make_token(make_experiment(slug="served"))
    port = free_port()
    proc = serve(port, workers=2)
    try:
        assert proc.stdout is not None
        assert "2 daphne workers" in proc.stdout.readline()
        # Forked from awp_serve (sharing its loaded Django), named awp-daphne; no Twisted in awp_serve itself. A child
        # holds the inherited socket from the fork on, and names itself a moment later (its first lines): wait for that.
        workers = named_workers(proc, port, count=2)
        assert len(workers) == 2 and all(worker.name() == "awp-daphne" for worker in workers), workers
        push(port, token, 10)
    finally:
        alive = stop(proc)
    assert alive == [], f"still running after Ctrl-C: {[p.cmdline() for p in alive]}"

    proc = serve(port, workers=1)  # the port is free again at once, and the data is still there
    try:
        push(port, token, 12)
    finally:
        assert stop(proc) == []
    assert sorted(Event.objects.filter(run__run_id="served").values_list("seq", flat=True)) == list(range(1, 14))


@pytest.mark.django_db(transaction=True)
def test_a_worker_hands_a_broken_form_body_to_the_api_which_names_what_is_wrong():
    """The workers do not parse forms themselves (Twisted would read every POST's Content-Type, copy a form into
    memory it never uses, and answer a broken multipart body with a bare 400 of its own and a closed socket): the
    API answers it, with its code, and the next request on the same connection is served."""
    token = make_token(make_experiment(slug="forms"))
    port = free_port()
    proc = serve(port, workers=1)
    try:
        session = requests.Session()
        url, auth = f"http://127.0.0.1:{port}/api/v1/ingest", {"Authorization": f"Bearer {token}"}
        broken = session.post(url, data=b"no parts here", headers={**auth, "Content-Type": "multipart/form-data; boundary=x"}, timeout=30)
        assert broken.status_code in (400, 415), broken.text
        assert broken.headers["Content-Type"].startswith("application/json")
        assert broken.json()["code"]
        events = [{"kind": "run.start", "idempotency_key": "s", "payload": {}}]
        assert session.post(url, json={"run_id": "after", "events": events}, headers=auth, timeout=30).status_code == 200
    finally:
        assert stop(proc) == []
