"""Create, list and revoke API tokens: `awp_token create --experiment SLUG --name NAME --scopes ingest,...`."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError, CommandParser

from experiments.models import ApiToken, Experiment
from experiments.tokens import TokenRefused, issue_token, revoke_token


class Command(BaseCommand):
    help = "Manage API tokens. `create` prints the new secret alone on its last line."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create")
        create.add_argument("--experiment", required=True)
        create.add_argument("--name", required=True)
        create.add_argument("--scopes", default="ingest", help=f"comma separated: {', '.join(ApiToken.SCOPES)}")
        create.add_argument("--user", help="issue the token to this user (needed for the review scope)")
        listing = sub.add_parser("list")
        listing.add_argument("--experiment", required=True)
        revoke = sub.add_parser("revoke")
        revoke.add_argument("--experiment", required=True)
        revoke.add_argument("--name", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        experiment = Experiment.objects.filter(slug=options["experiment"]).first()
        if experiment is None:
            raise CommandError(f"No experiment with slug '{options['experiment']}'.")
        action = options["action"]
        if action == "create":
            self.create(experiment, options)
        elif action == "list":
            for token in experiment.tokens.all():
                state = "revoked" if token.revoked_at else "active"
                used = token.last_used_at.isoformat() if token.last_used_at else "never"
                self.stdout.write(f"{token.name}\t{token.key_prefix}…\t{','.join(token.scopes)}\t{state}\tlast used {used}")
        else:
            ids = list(experiment.tokens.filter(name=options["name"], revoked_at__isnull=True).values_list("pk", flat=True))
            count = sum(revoke_token(experiment=experiment, token_id=pk, via="awp_token") is not None for pk in ids)
            if not count:
                raise CommandError(f"No active token named '{options['name']}' on {experiment.slug}.")
            self.stdout.write(f"Revoked {count} token(s).")

    def create(self, experiment: Experiment, options: dict[str, Any]) -> None:
        scopes = [scope.strip() for scope in options["scopes"].split(",") if scope.strip()]
        user = None
        if options.get("user"):
            user = get_user_model().objects.filter(username=options["user"]).first()
            if user is None:
                raise CommandError(f"No user '{options['user']}'.")
        if "review" in scopes and user is None:
            raise CommandError("The review scope needs --user: votes are cast by a person.")
        try:
            _token, secret = issue_token(experiment=experiment, name=options["name"], scopes=scopes, user=user, via="awp_token")
        except TokenRefused as exc:
            raise CommandError(str(exc)) from None
        self.stderr.write(f"Token '{options['name']}' for {experiment.slug} ({', '.join(scopes)}). Shown once:")
        self.stdout.write(secret)
