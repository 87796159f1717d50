"""The commands scripts rely on, and a clear stop on a Postgres without pgvector."""

from __future__ import annotations

import subprocess
import sys

import psycopg
import pytest
from django.core.management import call_command

from experiments.models import ApiToken, Membership
from tests.conftest import ROOT, subprocess_env
from tests.factories import make_experiment

SYSTEM_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


def test_awp_token_create_prints_the_secret_alone_on_the_last_line(db, capsys):
    experiment = make_experiment(slug="tok")
    call_command("awp_token", "create", "--experiment", "tok", "--name", "ci", "--scopes", "ingest,memory:read")
    secret = capsys.readouterr().out.strip().splitlines()[-1]
    token = ApiToken.objects.get(experiment=experiment, name="ci")
    assert token.hashed_secret == ApiToken.hash_secret(secret)
    assert token.scopes == ["ingest", "memory:read"]


def test_awp_user_create_makes_user_and_membership_idempotently(db):
    make_experiment(slug="team")
    for role in ["viewer", "curator"]:
        call_command("awp_user", "create", "--username", "ada", "--password", "pw-123456", "--experiment", "team", "--role", role)
    membership = Membership.objects.get(user__username="ada")
    assert membership.role == "curator"
    assert membership.user.check_password("pw-123456")


def _system_postgres_has_pgvector() -> bool | None:
    try:
        with psycopg.connect(SYSTEM_POSTGRES, connect_timeout=3) as conn:
            row = conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
            return row is not None
    except psycopg.OperationalError:
        return None


def test_database_without_pgvector_stops_startup_with_a_clear_message(db):
    available = _system_postgres_has_pgvector()
    if available is None:
        pytest.skip("no system Postgres at 127.0.0.1:5432 on this machine")
    if available:
        pytest.skip("the system Postgres here has pgvector")
    env = subprocess_env(DATABASE_URL=SYSTEM_POSTGRES)
    result = subprocess.run([sys.executable, "manage.py", "migrate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "has no pgvector extension" in result.stderr
    assert "unset DATABASE_URL" in result.stderr
    assert "Traceback" not in result.stderr
