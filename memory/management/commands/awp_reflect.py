"""Ask agents of an experiment to reflect now (or only those due, retrying failed ones). Last line: a JSON summary."""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments.models import Experiment
from memory import reflection
from memory.episodes import recall_agents
from memory.recall import RecallConfigError


class Command(BaseCommand):
    help = "Compact each agent's recent visible episodes into a belief (a reflection waiting in the Review queue)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--experiment", required=True, help="experiment slug")
        parser.add_argument("--agent", help="only this agent (default: every agent with episodes)")
        parser.add_argument("--due", action="store_true", help="only agents due under memory.reflection.every, and retries")

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = Experiment.objects.filter(slug=options["experiment"]).first()
        if experiment is None:
            raise CommandError(f"No experiment with slug '{options['experiment']}'.")
        agent = options["agent"]
        if agent and agent not in recall_agents(experiment):
            raise CommandError(f"No agent '{agent}' has episodes in '{experiment.slug}'.")
        if not reflection.is_enabled():
            self.stderr.write(reflection.OFF_SENTENCE)
        try:
            summary = reflection.reflect_experiment(
                experiment=experiment, agent_id=agent, force=not options["due"], trigger="command"
            )
        except RecallConfigError as exc:
            raise CommandError(f"The protocol's memory settings cannot be used: {exc}") from None
        self.stdout.write(json.dumps(summary.as_dict()))
        if not reflection.is_enabled():
            sys.exit(1)
