"""Pool participants: `awp_claw create --claw-id ID [--capabilities a,b]` prints the bearer token on its last line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from pool import rules, services
from pool.models import Participant


class Command(BaseCommand):
    help = "Manage pool participants (claws). `create` prints the new token alone on its last line."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="register a participant (or re-key an existing one)")
        create.add_argument("--claw-id", required=True)
        create.add_argument("--capabilities", default="", help="comma separated, e.g. logs.read:/var/log/app/*,db.read:orders")
        sub.add_parser("list")
        revoke = sub.add_parser("revoke", help="stop the participant's token from working")
        revoke.add_argument("--claw-id", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            claw_id = options["claw_id"].strip()
            if not claw_id or len(claw_id) > rules.MAX_ID or claw_id.startswith("user:"):
                raise CommandError(f"--claw-id must be 1–{rules.MAX_ID} characters and not start with 'user:' (people vote from the Pool page).")
            capabilities = [c.strip() for c in options["capabilities"].split(",") if c.strip()]
            participant, secret = services.create_claw(claw_id=claw_id, capabilities=capabilities)
            self.stdout.write(f"Participant {participant.claw_id} ({', '.join(participant.capabilities) or 'no capabilities'}). Token, shown once:")
            self.stdout.write(secret)
        elif action == "list":
            for participant in Participant.objects.all():
                state = "active" if participant.is_active() else "away"
                token = f"{participant.key_prefix}…" if participant.hashed_secret else "no token"
                self.stdout.write(f"{participant.claw_id}\t{participant.kind}\t{state}\t{token}\t{','.join(participant.capabilities)}")
        else:
            count = Participant.objects.filter(claw_id=options["claw_id"]).exclude(hashed_secret=None).update(hashed_secret=None, key_prefix="")
            if not count:
                raise CommandError(f"No participant '{options['claw_id']}' with a token.")
            self.stdout.write("Token revoked.")
