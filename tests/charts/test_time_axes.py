"""Time axes (issue 27): ticks on calendar steps, each label said once, the last label inside the chart."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from experiments.charts import Point, Series, line_chart, svg_markup
from experiments.run_charts import _date, _day

T0 = datetime(2026, 11, 20, 7, 13, tzinfo=UTC).timestamp()


def chart(xs: list[float], fmt=_date):  # type: ignore[no-untyped-def]
    return line_chart([Series("runs", tuple(Point(x, float(i)) for i, x in enumerate(xs)))], title="t", x_label="started (UTC)", y_label="y", x_format=fmt, x_time=True, x_pad=3600)


def test_ticks_fall_on_calendar_steps_and_never_repeat_a_label():
    for xs in ([T0 + h * 3600 for h in range(72)], [T0 + m * 60 for m in range(50)], [T0 + d * 86400 for d in range(40)], [T0]):
        labels = [t.label for t in chart(xs).x_ticks]
        assert len(labels) == len(set(labels)) and 2 <= len(labels) <= 8, labels
    within_day = [t.label for t in chart([T0 + m * 60 for m in range(50)]).x_ticks]
    assert all(re.fullmatch(r"\d\d:\d\d", label) for label in within_day), within_day  # no date repeated on every tick
    days = [t.label for t in chart([T0 + d * 86400 for d in range(40)], _day).x_ticks]
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d", label) for label in days), days


def test_the_outermost_labels_lean_inwards():
    svg = svg_markup(chart([T0 + h * 3600 for h in range(72)]), "c")
    anchors = re.findall(r'y2="[\d.]+"/><text x="[\d.]+" y="[\d.]+" text-anchor="(\w+)"', svg)
    assert anchors[-1] == "end"
