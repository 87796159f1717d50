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


@register.filter(name="duration")
def duration(seconds: Any) -> str:
    """Seconds as "3 d 14 h", "4 min 3 s", "1.2 s" (experiments/humanize.py)."""
    from experiments.humanize import human_duration

    try:
        return human_duration(None if seconds in (None, "") else float(seconds))
    except (TypeError, ValueError):
        return "–"


@register.filter(name="thousands")
def thousands(value: Any) -> str:
    """1234567 → "1,234,567"."""
    from experiments.humanize import thousands as fmt

    try:
        return fmt(value if isinstance(value, int | float) or value is None else float(value))
    except (TypeError, ValueError):
        return str(value)
