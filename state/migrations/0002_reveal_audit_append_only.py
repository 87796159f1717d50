"""Reveal audits are evidence: the table refuses UPDATE and DELETE, like the ledger."""

from importlib import import_module

from django.db import migrations

append_only = import_module("experiments.migrations.0002_ledger_append_only").append_only


class Migration(migrations.Migration):
    dependencies = [("state", "0001_initial"), ("experiments", "0002_ledger_append_only")]

    operations = [append_only("state_revealaudit")]
