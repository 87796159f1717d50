"""`{% pool_subscription experiment can_edit %}`: the Curated panel's pool subscription form."""

from __future__ import annotations

from typing import Any

from django import template

from pool.shared import subscription_of

register = template.Library()


@register.inclusion_tag("pool/_subscription.html")
def pool_subscription(experiment: Any, can_edit: bool) -> dict[str, Any]:
    subscription = subscription_of(experiment)
    mode = "off" if subscription is None else "all" if subscription.all_facts else "tags"
    return {"experiment": experiment, "can_edit": can_edit, "mode": mode, "tags": ", ".join(subscription.tags) if subscription else ""}
