"""awp_memory export/import: redacted on the way out, proposals with provenance by default, idempotent,
a file that is not an archive refused."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from memory.curation import lifecycle
from memory.curation.models import Evidence, Proposal
from memory.curation.services import review_proposal
from tests.factories import make_experiment
from tests.facts.test_services_api import _proposed

pytestmark = pytest.mark.django_db

SECRET_FACT = "fact_collector: deploy with password=hunter2-archive-secret works."


def _command(*args: str) -> dict:
    out = io.StringIO()
    call_command("awp_memory", *args, stdout=out)
    return json.loads(out.getvalue().strip().splitlines()[-1])


def test_export_is_redacted_and_import_lands_proposals_with_provenance(experiment, curator, tmp_path):
    fact = _proposed(experiment, SECRET_FACT)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    lifecycle.retire_fact(proposal=fact, actor=curator, reason="rotated")
    path = tmp_path / "memory.jsonl"
    summary = _command("export", "--experiment", experiment.slug, "--out", str(path))
    text = path.read_text()
    assert "hunter2-archive-secret" not in text and summary["proposal"] == 1 and summary["event"] == 2
    assert {json.loads(line)["type"] for line in text.splitlines()} >= {"header", "memory_version", "proposal", "fact_version", "evidence", "event", "vote", "decision"}

    other = make_experiment(slug="elsewhere")
    landed = _command("import", str(path), "--experiment", other.slug)
    [proposal] = Proposal.objects.filter(experiment=other)
    assert proposal.status == "pending" and proposal.details["imported"] == {"from": experiment.slug, "status": "retracted", "retired_as": "retired"}
    assert landed["proposals"] == 1 and landed["evidence"] == Evidence.objects.filter(proposal=fact).count()
    assert sorted(Evidence.objects.filter(proposal=proposal).values_list("digest_sha", flat=True)) == sorted(
        Evidence.objects.filter(proposal=fact).values_list("digest_sha", flat=True)
    )
    assert not other.memory_documents.exists() and not proposal.lifecycle.exists()
    again = _command("import", str(path), "--experiment", other.slug)
    assert (again["proposals"], again["proposals_known"], again["evidence"]) == (0, 1, 0)


def test_a_file_that_is_not_an_archive_is_refused(experiment, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"type": "header", "format": "other/9"}) + "\n")
    with pytest.raises(CommandError, match="Not an awp-memory/1 archive"):
        _command("import", str(path), "--experiment", experiment.slug)
    path.write_text("not json\n")
    with pytest.raises(CommandError):
        _command("import", str(path), "--experiment", experiment.slug)
    assert not Proposal.objects.filter(experiment=experiment).exists()


def test_restore_into_an_experiment_with_its_own_memory_adds_one_version(experiment, curator, tmp_path):
    from memory.longterm import current_long_term, write_long_term_version

    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    path = tmp_path / "memory.jsonl"
    _command("export", "--experiment", experiment.slug, "--out", str(path))
    other = make_experiment(slug="has-memory")
    write_long_term_version(experiment=other, content="# MEMORY\n\nOur own notes.\n", reason="seed")
    summary = _command("import", str(path), "--experiment", other.slug, "--restore")
    [restored] = Proposal.objects.filter(experiment=other)
    memory = current_long_term(other)
    assert summary["memory_versions"] == 1 and memory.version == 2 and restored.status == "approved"
    assert "Our own notes." in memory.content and f"<!-- proposal:{restored.pk} v1 -->" in memory.content
    assert _command("import", str(path), "--experiment", other.slug, "--restore")["memory_versions"] == 0


def test_restored_exposures_follow_the_run_ids_and_the_new_fact_ids(experiment, curator, tmp_path):
    from memory.curation.models import Exposure
    from memory.curation.prior import prior_run_block
    from tests.factories import make_run

    fact = _proposed(experiment)
    review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    run = make_run(experiment, run_id="shared-run-1")
    prior_run_block(experiment, run_id=run.run_id, agent_id="manager")
    path = tmp_path / "memory.jsonl"
    _command("export", "--experiment", experiment.slug, "--out", str(path))
    other = make_experiment(slug="same-runs")
    make_run(other, run_id="shared-run-1")
    summary = _command("import", str(path), "--experiment", other.slug, "--restore")
    restored = Proposal.objects.get(experiment=other, key=fact.key)
    assert summary["exposures"] == 1
    assert list(Exposure.objects.filter(run__experiment=other).values_list("item", "proposal_id", "agent_id")) == [
        (f"proposal:{restored.pk}", restored.pk, "manager")
    ]


@pytest.mark.django_db(transaction=True)
def test_export_then_restore_into_a_fresh_database_reproduces_the_history(experiment, curator, tmp_path):
    """Another deployment: a new database, migrated from nothing, gets the same facts, versions, evidence links,
    lifecycle events and MEMORY.md versions from the archive alone (no ids of this database travel)."""
    import os
    import subprocess
    import sys

    from django.db import connection

    from awp_site.db import embedded_url
    from tests.conftest import ROOT, subprocess_env

    with connection.cursor() as cursor:  # this database's ids are not the fresh one's (MEMORY.md markers name them)
        cursor.execute(f"SELECT setval(pg_get_serial_sequence('{Proposal._meta.db_table}', 'id'), 1000)")
    pinned, retired = _proposed(experiment), _proposed(experiment, "fact_collector: FACT_ARCHIVE_B: 7 is prime.")
    for fact in (pinned, retired):
        review_proposal(proposal=fact, reviewer=curator, verdict="approve")
    lifecycle.pin_fact(proposal=pinned, actor=curator, reason="always relevant")
    lifecycle.retire_fact(proposal=retired, actor=curator, reason="superseded by a better source")
    path = tmp_path / "memory.jsonl"
    _command("export", "--experiment", experiment.slug, "--out", str(path))

    name = f"awp_fresh_{os.getpid()}"
    with connection.cursor() as cursor:
        cursor.execute(f'CREATE DATABASE "{name}"')
    env = {**subprocess_env(), "DATABASE_URL": embedded_url(connection.settings_dict, name)}

    def manage(*args: str) -> str:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    probe = ("import json; from tests.facts.test_archive import portable_history; "
             "print(json.dumps(portable_history('{slug}'), default=str))")  # fmt: skip
    try:
        manage("migrate", "--no-input", "-v", "0")
        manage("shell", "-c", "from experiments.models import Experiment; Experiment.objects.create(slug='fresh', name='Fresh')")
        summary = json.loads(manage("awp_memory", "import", str(path), "--experiment", "fresh", "--restore").strip().splitlines()[-1])
        there = json.loads(manage("shell", "-c", probe.format(slug="fresh")).strip().splitlines()[-1])
    finally:
        connection.close()  # the server refuses to drop a database while anything (ours is not) is connected to it
        with connection.cursor() as cursor:
            cursor.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    here = json.loads(json.dumps(portable_history(experiment.slug), default=str))
    assert summary["proposals"] == 2 and there == here
    assert [e[1] for e in there["events"]] == ["promote", "promote", "pin", "retire"]


def portable_history(slug: str) -> dict:
    """An experiment's memory history with MEMORY.md's `proposal:<id>` markers named by (kind, key): comparable
    across databases."""
    from experiments.models import Experiment
    from memory.curation.render import MARKER
    from tests.facts.test_real_runtime import _history

    experiment = Experiment.objects.get(slug=slug)
    history = _history(experiment)
    names = {p.pk: f"{p.kind}/{p.key}" for p in Proposal.objects.filter(experiment=experiment)}

    def named(match) -> str:  # type: ignore[no-untyped-def]
        start, end = match.start(1) - match.start(0), match.end(1) - match.start(0)
        return match.group(0)[:start] + names.get(int(match.group(1)), "?") + match.group(0)[end:]

    history["memory"] = [(v, MARKER.sub(named, c), src) for v, c, src in history["memory"]]
    return history
