"""{% chart_svg chart id %} and {% chart_rows chart %}: the markup experiments/charts.py builds (already escaped)."""

from __future__ import annotations

from django import template
from django.utils.safestring import SafeString, mark_safe

from experiments.charts import Chart, rows_markup, svg_markup

register = template.Library()


@register.simple_tag
def chart_svg(chart: Chart, chart_id: str) -> SafeString:
    return mark_safe(svg_markup(chart, chart_id))  # noqa: S308 - every text in it is escaped by experiments.charts._e


@register.simple_tag
def chart_rows(chart: Chart) -> SafeString:
    return mark_safe(rows_markup(chart))  # noqa: S308 - escaped by experiments.charts._e
