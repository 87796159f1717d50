"""{% timeline_rows events %}: the Timeline rows experiments/presenters.py builds (already escaped)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from experiments.presenters import EventView, timeline_rows_markup

register = template.Library()


@register.simple_tag
def timeline_rows(events: list[EventView]) -> SafeString:
    return mark_safe(timeline_rows_markup(events))  # noqa: S308 - every text in it is escaped by presenters._timeline_row
