"""Create the demo user and demo experiment (idempotent) and print how to log in."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from experiments.models import Experiment, Membership
from experiments.protocol import parse_protocol

DEMO_USER = "demo"
DEMO_PASSWORD = "awp-demo-pass"
DEMO_PROTOCOL = """\
state:
  model: shared_dict
  sharing:
    strategy: selective
    rules:
      - from: fact_collector
        to: [verifier]
        fields: [findings, summary]
    never_share: [internal_reasoning]
    sensitive_fields: [api_key, user_credentials]
  limits:
    max_state_size_mb: 10
    max_field_size_mb: 1
    max_fields: 1000
    on_violation: reject
memory:
  enabled: true
  daily_log:
    retention_days: 30
"""


class Command(BaseCommand):
    help = "Create the demo user and experiment; safe to run again."

    def handle(self, *args: Any, **options: Any) -> None:
        user, created = get_user_model().objects.get_or_create(username=DEMO_USER, defaults={"is_staff": True})
        if created:
            user.is_superuser = True
            user.set_password(DEMO_PASSWORD)
            user.save()
        experiment, _ = Experiment.objects.get_or_create(
            slug="demo",
            defaults={
                "name": "Demo: facts about 42",
                "goal": "Collect short facts about the number 42 and summarise them.",
                "hypothesis": "Two workers that share a blackboard converge faster than one.",
                "status": Experiment.Status.RUNNING,
                "tags": ["demo"],
                "protocol_yaml": DEMO_PROTOCOL,
                "protocol": parse_protocol(DEMO_PROTOCOL),
            },
        )
        if "from: researcher" in experiment.protocol_yaml:
            # A demo seeded before its sharing rules named the demo run's own agents: give it the current ones.
            experiment.protocol_yaml, experiment.protocol = DEMO_PROTOCOL, parse_protocol(DEMO_PROTOCOL)
            experiment.save(update_fields=["protocol_yaml", "protocol", "updated_at"])
        Membership.objects.get_or_create(user=user, experiment=experiment, defaults={"role": Membership.Role.OWNER})
        self.stdout.write("")
        self.stdout.write("  Demo login:  username " + DEMO_USER + "   password " + DEMO_PASSWORD)
        if not created:
            self.stdout.write("  (the demo user existed already; its password was left as it was)")
        self.stdout.write(f"  Data lives in {settings.AWP_DATA_DIR}")
        self.stdout.write("")
