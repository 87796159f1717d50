"""Issuing and revoking API tokens: one service for the awp_token command and the Connect page, both audited.

Every issue and revoke leaves an audit line (logger `awp.audit`) and, when a person did it, an entry in
Django's admin log (Admin → Recent actions, and the token's History), so a token never appears unexplained.
"""

from __future__ import annotations

import logging
from typing import Any

from django.contrib.admin.models import ADDITION, CHANGE, LogEntry
from django.contrib.contenttypes.models import ContentType
from django.db import transaction
from django.utils import timezone

from experiments.models import ApiToken, Experiment

audit_log = logging.getLogger("awp.audit")

NAME_MAX = 100


class TokenRefused(ValueError):
    """A token request that cannot be granted; `field` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@transaction.atomic
def issue_token(*, experiment: Experiment, name: str, scopes: list[str], user: Any = None, actor: Any = None, via: str) -> tuple[ApiToken, str]:
    """Create a token (its secret returned once, never stored) and audit who made it and how."""
    name = name.strip()
    if not name or len(name) > NAME_MAX:
        raise TokenRefused("name", f"A token needs a name of 1 to {NAME_MAX} characters.")
    if not scopes:
        raise TokenRefused("scopes", "Choose at least one scope.")
    if "review" in scopes and user is None:
        raise TokenRefused("scopes", "The review scope needs a person: votes are cast by a person.")
    if experiment.tokens.filter(name=name, revoked_at__isnull=True).exists():
        raise TokenRefused("name", f"An active token named '{name}' exists already; revoke it or choose another name.")
    try:
        token, secret = ApiToken.issue(experiment=experiment, name=name, scopes=scopes, user=user)
    except ValueError as exc:
        raise TokenRefused("scopes", str(exc)) from None
    _audit(token, actor, ADDITION, f"issued token '{token.name}' ({', '.join(token.scopes)}) via {via}")
    return token, secret


@transaction.atomic
def revoke_token(*, experiment: Experiment, token_id: int, actor: Any = None, via: str) -> ApiToken | None:
    """Revoke one active token of the experiment; None when there is no such active token."""
    token = experiment.tokens.select_for_update().filter(pk=token_id, revoked_at__isnull=True).first()
    if token is None:
        return None
    token.revoked_at = timezone.now()
    token.save(update_fields=["revoked_at"])
    _audit(token, actor, CHANGE, f"revoked token '{token.name}' via {via}")
    return token


def _audit(token: ApiToken, actor: Any, action: int, message: str) -> None:
    who = actor.get_username() if actor is not None else "command line"
    audit_log.info("%s: %s on %s (%s…)", who, message, token.experiment.slug, token.key_prefix)
    if actor is not None and getattr(actor, "pk", None) is not None:
        LogEntry.objects.create(
            user_id=actor.pk,
            content_type=ContentType.objects.get_for_model(ApiToken),
            object_id=str(token.pk),
            object_repr=str(token)[:200],
            action_flag=action,
            change_message=message,
        )
