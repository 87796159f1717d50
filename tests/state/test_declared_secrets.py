"""Declared secrets (state.declared): the runtime's own secret store, the push API and the Connect page make values
known secrets whatever their shape, so shapes no detector knows are masked on every way out."""

from __future__ import annotations

import io
import json
import random
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command
from django.test import Client

from experiments.importer import FolderImporter
from experiments.models import Event, IngestProblem, Run
from state.declared import StoreWatch, read_store
from state.detection import detect_secrets
from state.models import KnownSecret
from state.redaction import REDACTED, escaped_forms, sensitive_set
from tests.awp_runtime import Script, run_delegation_loop
from tests.factories import PASSWORD, make_experiment, make_member, make_token
from tests.security.surfaces import surfaces_for_a_viewer, token_answers

SENSITIVE = sensitive_set(settings.AWP_SENSITIVE_FIELDS)
WORDS = "plum orchard velvet harbor lantern meadow falcon juniper quartz willow cinder amber".split()


def _passphrase(rng: random.Random) -> str:
    """Four everyday words and a year: a shape that announces nothing and looks random to no one."""
    return " ".join(rng.sample(WORDS, 4)) + f" {rng.randint(1950, 2020)}"


def _store(folder: Path, yaml_text: str, dotenv_text: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "secrets.yaml").write_text(yaml_text)
    if dotenv_text:
        (folder / ".env").write_text(dotenv_text)
    return folder


def _visible(values: list[str], bodies: dict[str, str]) -> dict[str, list[str]]:
    return {v: [name for name, body in bodies.items() if any(form in body for form in escaped_forms(v))][:3] for v in values if any(form in body for body in bodies.values() for form in escaped_forms(v))}


# ---- the store, read as the runtime reads it ----------------------------------------------------------------


def test_the_store_declares_what_the_runtime_loads_and_leaves_settings_alone(tmp_path, monkeypatch):
    from awp.runtime.secrets import load_secrets

    phrase = _passphrase(random.Random(7))
    folder = _store(
        tmp_path / "wf",
        "# AWP Secrets\nsecrets:\n"
        f'  ARCHIVE_PASSPHRASE: "{phrase}"\n'
        "  PORTAL_LOGIN: 'k7wQp2mZ'\n"
        "  WAREHOUSE_URL: \"{{ env.WAREHOUSE_DSN }}\"\n"
        "  MISSING_ONE: \"{{ env.NOT_SET_ANYWHERE }}\"\n"
        "  PIN: 4711\n",
        "# local settings\nMODEL=gpt-4o-mini\nREGION=eu-west-1\nOPENAI_API_KEY='sk-proj-Zq8Lw2Xv9Rt4Ys6Uk1Np3Mb7'\n"
        "LOG_LEVEL=debug\nexport_not_a_line\nSERVICE_TOKEN=\"Vf93kQm2LxP8wZr4\"\n",
    )
    environ = {"WAREHOUSE_DSN": "postgresql://etl:Rb4!mNq8zW@db.internal:5432/wh", "HOME": str(tmp_path)}
    reading = read_store(folder, SENSITIVE, environ=environ)

    monkeypatch.setattr("os.environ", environ)  # the runtime's loader merges the process environment first
    monkeypatch.setattr("awp.runtime.secrets._get_global_env_path", lambda: tmp_path / "no-global.env")
    with pytest.raises(ValueError):  # the runtime refuses an unresolvable template; drop it to compare the rest
        load_secrets(folder)
    (folder / "secrets.yaml").write_text((folder / "secrets.yaml").read_text().replace('  MISSING_ONE: "{{ env.NOT_SET_ANYWHERE }}"\n', ""))
    loaded = load_secrets(folder)
    runtime_secrets = {loaded[name] for name in ("ARCHIVE_PASSPHRASE", "PORTAL_LOGIN", "WAREHOUSE_URL", "OPENAI_API_KEY", "SERVICE_TOKEN")}
    assert set(reading.values) == runtime_secrets  # the same values, byte for byte, as the runtime holds them
    assert {"gpt-4o-mini", "eu-west-1", "debug"}.isdisjoint(reading.values)  # .env settings are not secrets
    # The 4-digit PIN cannot be masked by value: named (file and key), never echoed.
    assert [(file, name) for file, name, _ in reading.unmaskable] == [("secrets.yaml", "PIN")]
    assert all("4711" not in message for _, _, message in reading.unmaskable)


def test_an_unreadable_store_is_named_with_its_line_and_nothing_else(tmp_path):
    folder = _store(tmp_path / "wf", "secrets:\n  A: 'ok-value-123'\n   B: [unclosed\n")
    reading = read_store(folder, SENSITIVE, environ={})
    assert reading.values == []
    assert len(reading.unreadable) == 1 and reading.unreadable[0][0] == "secrets.yaml" and "line" in reading.unreadable[0][1]
    assert "ok-value-123" not in reading.unreadable[0][1]
    (folder / "secrets.yaml").write_text("- just\n- a list\n")
    assert read_store(folder, SENSITIVE, environ={}).unreadable == [("secrets.yaml", "no `secrets:` mapping (the runtime skips it too)")]


@pytest.mark.django_db
def test_a_watcher_reads_the_store_once_per_version(tmp_path):
    experiment = make_experiment(slug="store-watch")
    folder = _store(tmp_path / "wf", "secrets:\n  ONE: 'first-secret-value'\n")
    watch = StoreWatch()
    assert watch.learn(experiment, folder) is not None
    assert watch.learn(experiment, folder) is None  # unchanged: not read again
    (folder / "secrets.yaml").write_text("secrets:\n  ONE: 'first-secret-value'\n  TWO: 'second-secret-value'\n")
    assert watch.learn(experiment, folder).values == ["first-secret-value", "second-secret-value"]
    assert set(KnownSecret.objects.filter(experiment=experiment).values_list("value", flat=True)) >= {"first-secret-value", "second-secret-value"}


# ---- a real run: secrets in shapes the detector cannot know -------------------------------------------------


@pytest.mark.interop
@pytest.mark.django_db(transaction=True)
def test_a_real_runs_declared_secrets_reach_no_viewer_and_no_read_token(tmp_path, fake_llm):
    rng = random.Random(2026)
    phrase, login = _passphrase(rng), "".join(rng.choice("abcdefghjkmnpqrstuvwxyz23456789") for _ in range(9))
    workflow = _store(tmp_path / "wf", f"secrets:\n  ARCHIVE_PASSPHRASE: '{phrase}'\n  VENDOR_LOGIN: '{login}'\n")
    prose = f"Mounted the archive with {phrase}; the vendor portal took {login} and the export finished."
    # The premise: nothing but the declaration can find them (else this test would prove the detector, not the store).
    assert detect_secrets(prose, SENSITIVE).isdisjoint({phrase, login})
    fake_llm.reset(Script(iterations=2, extra_fields={"handover": prose}))
    run_delegation_loop(workflow, fake_llm)
    experiment = make_experiment(slug="declared-run")
    call_command("awp_import", str(workflow), "--experiment", experiment.slug, "--json", stdout=io.StringIO())
    runs = list(Run.objects.filter(experiment=experiment).order_by("pk"))
    stored = json.dumps([e.payload for e in Event.objects.filter(run__in=runs)], ensure_ascii=False)
    assert phrase in stored and login in stored  # the ledger keeps what the runtime wrote: the crawl is not vacuous

    viewer = make_member(experiment, "viewer")
    browser = Client()
    assert browser.login(username=viewer.username, password=PASSWORD)
    bodies = surfaces_for_a_viewer(browser, experiment, runs)
    bodies.update(token_answers(experiment, make_token(experiment, ["memory:read"])))
    assert any("the vendor portal took" in body for body in bodies.values())  # the prose itself is shown
    assert _visible([phrase, login], bodies) == {}


# ---- the push API -------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_declared_values_are_masked_in_events_pushed_later_and_never_echoed():
    experiment = make_experiment(slug="declare-api")
    token = make_token(experiment, ["ingest", "memory:read"])
    agent = Client(HTTP_AUTHORIZATION=f"Bearer {token}")
    phrase = _passphrase(random.Random(11))
    answer = agent.post("/api/v1/secrets", json.dumps({"values": [phrase, phrase, "zx81-spectrum-qL"]}), content_type="application/json")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"declared": 3, "new": 2} and phrase not in answer.content.decode()
    again = agent.post("/api/v1/secrets", json.dumps({"values": [phrase]}), content_type="application/json")
    assert again.json() == {"declared": 1, "new": 0}
    events = [{"kind": "run.start", "idempotency_key": "s", "payload": {"task": "t"}},
              {"kind": "log", "idempotency_key": "l", "payload": {"msg": f"unlocked with {phrase} at noon"}}]  # fmt: skip
    assert agent.post("/api/v1/ingest", json.dumps({"run_id": "r1", "events": events}), content_type="application/json").status_code == 200
    read = agent.get("/api/v1/runs/r1/events").content.decode()
    assert "at noon" in read and REDACTED in read and phrase not in read


@pytest.mark.django_db
def test_refused_declarations_name_the_index_and_learn_nothing():
    experiment, other = make_experiment(slug="declare-bad"), make_experiment(slug="declare-other")
    ingest = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment, ['ingest'])}")

    def post(client: Client, body: object) -> tuple[int, dict]:
        response = client.post("/api/v1/secrets", json.dumps(body), content_type="application/json")
        return response.status_code, response.json()

    status, body = post(ingest, {"values": ["long-enough-value-1", "abc", 42, "12345678", "x" * 5000]})
    assert status == 422 and body["code"] == "invalid_secrets"
    assert [(e["index"], e["code"]) for e in body["errors"]] == [(1, "too_short"), (2, "invalid_value"), (3, "not_maskable"), (4, "too_long")]
    assert "long-enough-value-1" not in json.dumps(body) and "xxxxxx" not in json.dumps(body)
    assert post(ingest, {"values": ["a-valid-secret-1"] * 1001})[0] == 413
    assert post(ingest, {"values": "not-a-list"})[0] == 422
    assert post(ingest, {"values": ["a-valid-secret-1"], "experiment": other.slug}) == (403, {"code": "token_experiment_mismatch", "message": "This token belongs to another experiment."})
    reader = Client(HTTP_AUTHORIZATION=f"Bearer {make_token(experiment, ['memory:read'])}")
    assert post(reader, {"values": ["a-valid-secret-1"]})[1]["code"] == "missing_scope"
    assert Client().post("/api/v1/secrets", "{}", content_type="application/json").status_code == 401
    assert not KnownSecret.objects.filter(experiment__in=[experiment, other]).exists()


# ---- the Connect page ---------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_owner_declares_values_on_the_connect_page_and_never_sees_them_again():
    experiment = make_experiment(slug="declare-page")
    owner, viewer = make_member(experiment, "owner"), make_member(experiment, "viewer")
    browser = Client()
    assert browser.login(username=owner.username, password=PASSWORD)
    url = f"/experiments/{experiment.slug}/connect/secrets"
    phrase = _passphrase(random.Random(5))
    refused = browser.post(url, {"values": f"{phrase}\nabc\n"})
    assert refused.status_code == 400 and "Line 2" in refused.content.decode()
    assert refused.content.decode().count(phrase) == 1 and f">{phrase}\nabc\n</textarea>" in refused.content.decode()  # kept to fix, once
    assert not KnownSecret.objects.filter(experiment=experiment).exists()
    page = browser.post(url, {"values": f"  {phrase}  \n\nqL9-vendor-portal\n"})
    assert page.status_code == 200 and "2 values declared, 2 new" in page.content.decode() and phrase not in page.content.decode()
    assert set(KnownSecret.objects.filter(experiment=experiment).values_list("value", flat=True)) == {phrase, "qL9-vendor-portal"}
    other = Client()
    assert other.login(username=viewer.username, password=PASSWORD)
    assert other.post(url, {"values": "another-secret-1"}).status_code == 403


@pytest.mark.django_db
def test_the_importer_reports_an_entry_it_cannot_mask_as_a_problem(tmp_path):
    folder = _store(tmp_path / "wf", "secrets:\n  PIN: '4711'\n  TOKEN_A: 'Vf93kQm2LxP8wZr4'\n")
    (folder / "workspace").mkdir()  # a delegation-loop workflow before its first run
    experiment = make_experiment(slug="store-problem")
    FolderImporter(folder, experiment_slug=experiment.slug).sync()
    problems = list(IngestProblem.objects.filter(experiment=experiment).values_list("code", "message"))
    assert [code for code, _ in problems] == ["secret_not_maskable"] and problems[0][1].startswith("PIN: ")
    assert KnownSecret.objects.filter(experiment=experiment, value="Vf93kQm2LxP8wZr4").exists()
