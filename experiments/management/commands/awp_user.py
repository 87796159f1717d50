"""`awp_user create --username U --password P [--experiment SLUG --role viewer|curator|owner] [--staff]`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments.models import Experiment, Membership


class Command(BaseCommand):
    help = "Create or update a user and, optionally, their membership of an experiment (non-interactive)."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("--username", required=True)
        create.add_argument("--password", required=True)
        create.add_argument("--experiment")
        create.add_argument("--role", choices=[r.value for r in Membership.Role], default=Membership.Role.VIEWER)
        create.add_argument("--staff", action="store_true", help="staff and superuser (admin access)")

    def handle(self, *args: Any, **options: Any) -> None:
        user_model = get_user_model()
        user, created = user_model.objects.get_or_create(username=options["username"])
        user.set_password(options["password"])
        if options["staff"]:
            user.is_staff = user.is_superuser = True
        user.save()
        self.stdout.write(f"{'Created' if created else 'Updated'} user {user.username}.")
        if options.get("experiment"):
            experiment = Experiment.objects.filter(slug=options["experiment"]).first()
            if experiment is None:
                raise CommandError(f"No experiment with slug '{options['experiment']}'.")
            Membership.objects.update_or_create(user=user, experiment=experiment, defaults={"role": options["role"]})
            self.stdout.write(f"{user.username} is {options['role']} of {experiment.slug}.")
