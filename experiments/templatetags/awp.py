"""Template filters shared by the apps' templates."""

from __future__ import annotations

import json
from typing import Any

from django import template

register = template.Library()


@register.filter(name="json")
def as_json(value: Any) -> str:
    """Pretty JSON for display (autoescaped by the template like any other string)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False, default=str)
