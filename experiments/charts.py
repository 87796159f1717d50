"""Line charts as server-rendered SVG geometry (pure: values in, pixel coordinates and labels out).

Chosen over a vendored JS chart library (bench/README.md, "Charts"): no script to load or run, works under
`script-src 'self'` as it is, renders inside websocket frames like every other fragment, and its numbers are
text the browser, a screen reader and the tests can read. Templates draw the result (experiments/_chart.html).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape

WIDTH, HEIGHT = 560, 220
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 24, 40


@dataclass(frozen=True)
class Point:
    """One value: x, y, and the words its tooltip says; `mark` names a highlight (e.g. "best") or is ""."""

    x: float
    y: float
    label: str = ""
    mark: str = ""
    css: str = ""


@dataclass(frozen=True)
class Series:
    name: str
    points: tuple[Point, ...]


@dataclass(frozen=True)
class Dot:
    cx: float
    cy: float
    label: str
    mark: str
    css: str
    x: float
    y: float


@dataclass(frozen=True)
class Line:
    name: str
    index: int  # picks the stroke colour and dash pattern (never colour alone)
    path: str  # "x,y x,y" for <polyline points>
    dots: tuple[Dot, ...]


@dataclass(frozen=True)
class Tick:
    at: float  # pixel position along the axis
    label: str


@dataclass
class Chart:
    """What a template needs: size, plot box, ticks, lines with dots, and the same numbers as table rows."""

    title: str
    x_label: str
    y_label: str
    width: int
    height: int
    plot: tuple[float, float, float, float]  # left, top, right, bottom in pixels
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    lines: list[Line]
    rows: list[tuple[str, list[str]]] = field(default_factory=list)  # (x label, one cell per series)
    show_lines: bool = True

    @property
    def point_count(self) -> int:
        return sum(len(line.dots) for line in self.lines)

    @property
    def is_empty(self) -> bool:
        return self.point_count == 0


def nice_step(span: float, target: int = 5) -> float:
    """A 1/2/5 × 10^k step that cuts `span` into about `target` intervals."""
    if span <= 0 or not math.isfinite(span):
        return 1.0
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def nice_range(low: float, high: float) -> tuple[float, float, float]:
    """(low, high, step) widened to whole steps; a flat range gets one step around its value."""
    if high < low:
        low, high = high, low
    # A span below what floats resolve at this magnitude (or a subnormal one) is drawn as flat: dividing it
    # into steps would underflow.
    if high - low <= max(abs(low), abs(high)) * 1e-9 or high - low < 1e-300:
        pad = max(abs(low), abs(high)) * 0.1 or 1.0
        low, high = low - pad, high + pad
    step = nice_step(high - low)
    bottom, top = math.floor(low / step) * step, math.ceil(high / step) * step
    # low / step can round to 0 (a tiny negative low): widen by one step rather than cut the value off.
    return (bottom - step if bottom > low else bottom), (top + step if top < high else top), step


def fmt_number(value: float) -> str:
    """Short tick text: integers without decimals, small numbers with up to three significant decimals."""
    if value == int(value) and abs(value) < 1e15:
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"


def line_chart(
    series: list[Series],
    *,
    title: str,
    x_label: str,
    y_label: str,
    y_range: tuple[float, float] | None = None,
    x_format: Callable[[float], str] = fmt_number,
    y_format: Callable[[float], str] = fmt_number,
    integer_x: bool = False,
    x_time: bool = False,
    show_lines: bool = True,
    x_pad: float = 1.0,
    width: int = WIDTH,
    height: int = HEIGHT,
) -> Chart:
    """Scale every series into one plot box with shared axes; each input point becomes exactly one dot."""
    points = [p for s in series for p in s.points if math.isfinite(p.x) and math.isfinite(p.y)]
    left, top, right, bottom = LEFT, TOP, width - RIGHT, height - BOTTOM
    chart = Chart(title, x_label, y_label, width, height, (left, top, right, bottom), [], [], [], show_lines=show_lines)
    if not points:
        return chart
    xs, ys = [p.x for p in points], [p.y for p in points]
    # A single x value gets `x_pad` either side (an hour-scale pad for time axes, not 10% of an epoch).
    x_low, x_high, x_step = nice_range(min(xs) - x_pad, max(xs) + x_pad) if min(xs) == max(xs) else nice_range(min(xs), max(xs))
    if integer_x:
        x_step = max(1.0, math.ceil(x_step))
        x_low, x_high = math.floor(min(xs)), math.ceil(max(xs))
        if x_low == x_high:
            x_low, x_high = x_low - 1, x_high + 1
    if x_time:
        x_low, x_high, x_step = time_range(min(xs) - (x_pad if min(xs) == max(xs) else 0), max(xs) + (x_pad if min(xs) == max(xs) else 0))
    y_low, y_high, y_step = nice_range(*(y_range if y_range else (min(ys), max(ys))))
    if y_range:
        y_low, y_high = min(y_range[0], min(ys)), max(y_range[1], max(ys))
        y_step = nice_step(y_high - y_low)

    def px(x: float) -> float:
        return round(left + (x - x_low) / (x_high - x_low) * (right - left), 1)

    def py(y: float) -> float:
        return round(bottom - (y - y_low) / (y_high - y_low) * (bottom - top), 1)

    x_values = _ticks(x_low, x_high, x_step)
    label = time_labeller(x_values, x_step) if x_time else x_format
    chart.x_ticks = _distinct_labels([Tick(px(v), label(v)) for v in x_values])
    chart.y_ticks = [Tick(py(v), y_format(v)) for v in _ticks(y_low, y_high, y_step)]
    for index, s in enumerate(series):
        kept = sorted((p for p in s.points if math.isfinite(p.x) and math.isfinite(p.y)), key=lambda p: p.x)
        dots = tuple(Dot(px(p.x), py(p.y), p.label or f"{s.name}: {x_format(p.x)}, {y_format(p.y)}", p.mark, p.css, p.x, p.y) for p in kept)
        chart.lines.append(Line(s.name, index, " ".join(f"{d.cx},{d.cy}" for d in dots), dots))
    chart.rows = _rows(series, x_format, y_format)
    return chart


# Steps a time axis may take (seconds): calendar units, so ticks fall on whole minutes, hours and days.
TIME_STEPS = (60, 300, 600, 900, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400)


def time_range(low: float, high: float, target: int = 6) -> tuple[float, float, float]:
    """(low, high, step) of a UTC time axis: the smallest calendar step giving at most `target` intervals."""
    span = max(high - low, 60.0)
    step = next((s for s in TIME_STEPS if span / s <= target), float(math.ceil(span / target / 86400) * 86400))
    return math.floor(low / step) * step, math.ceil(high / step) * step, float(step)


def time_labeller(values: list[float], step: float) -> Callable[[float], str]:
    """Tick labels that say each thing once: days for day steps, hours for ticks within one day, both otherwise."""
    from datetime import UTC, datetime

    days = {datetime.fromtimestamp(v, tz=UTC).date() for v in values}
    pattern = "%Y-%m-%d" if step >= 86400 else ("%H:%M" if len(days) == 1 else "%m-%d %H:%M")
    return lambda v: datetime.fromtimestamp(v, tz=UTC).strftime(pattern)


def _distinct_labels(ticks: list[Tick]) -> list[Tick]:
    """Drop a tick whose label repeats the previous one (a day label on every 6-hour tick said nothing new)."""
    out: list[Tick] = []
    for tick in ticks:
        if not out or out[-1].label != tick.label:
            out.append(tick)
    return out


def _ticks(low: float, high: float, step: float) -> list[float]:
    count = int(round((high - low) / step))
    if count > 12:  # integer x axes over long runs: thin the labels, keep the scale
        step *= math.ceil(count / 10)
        count = int(math.floor((high - low) / step))
    return [round(low + i * step, 10) for i in range(count + 1)]


def _rows(series: list[Series], x_format: Callable[[float], str], y_format: Callable[[float], str]) -> list[tuple[str, list[str]]]:
    """The text fallback: one row per x, one cell per series (empty where a series has no value)."""
    by_x: dict[float, list[str]] = {}
    for index, s in enumerate(series):
        for p in s.points:
            cells = by_x.setdefault(p.x, [""] * len(series))
            text = y_format(p.y) + (f" ({p.mark})" if p.mark else "")
            cells[index] = f"{cells[index]}; {text}" if cells[index] else text
    return [(x_format(x), cells) for x, cells in sorted(by_x.items())]


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def svg_markup(chart: Chart, chart_id: str) -> str:
    """The chart's <svg> (axes, ticks, labelled axes, lines, dots with <title> tooltips), escaped.

    Built as a string rather than through template loops: a run chart has hundreds of dots, and Django's
    template engine spent ~0.3 ms on each.
    """
    left, top, right, bottom = chart.plot
    out = [
        f'<svg class="chart-svg" viewBox="0 0 {chart.width} {chart.height}" role="img" aria-labelledby="{_e(chart_id)}-desc" preserveAspectRatio="xMinYMin meet">',
        f'<desc id="{_e(chart_id)}-desc">{_e(chart.title)}: {_e(chart.y_label)} by {_e(chart.x_label)}, {chart.point_count} points. The numbers are listed below the chart.</desc><g class="axis">',
    ]
    for t in chart.y_ticks:
        out.append(f'<line class="grid" x1="{left}" x2="{right}" y1="{t.at}" y2="{t.at}"/><text x="{left - 6}" y="{t.at}" text-anchor="end" dominant-baseline="middle">{_e(t.label)}</text>')
    for i, t in enumerate(chart.x_ticks):
        # The outermost labels lean inwards: centred on the plot's edge, half of the last one was cut off.
        anchor = "end" if i == len(chart.x_ticks) - 1 and t.at >= right - 40 else "start" if i == 0 and t.at <= left + 40 else "middle"
        out.append(f'<line class="tick" x1="{t.at}" x2="{t.at}" y1="{bottom}" y2="{bottom + 4}"/><text x="{t.at}" y="{bottom + 16}" text-anchor="{anchor}">{_e(t.label)}</text>')
    out.append(f'<line class="frame" x1="{left}" x2="{left}" y1="{top}" y2="{bottom}"/><line class="frame" x1="{left}" x2="{right}" y1="{bottom}" y2="{bottom}"/>')
    out.append(f'<text class="axis-label" x="{right}" y="{chart.height - 4}" text-anchor="end">{_e(chart.x_label)}</text><text class="axis-label" x="4" y="12">{_e(chart.y_label)}</text></g>')
    for line in chart.lines:
        out.append(f'<g class="series series-{line.index % 8}" data-series="{_e(line.name)}">')
        if chart.show_lines and len(line.dots) > 1:
            out.append(f'<polyline points="{line.path}"/>')
        for d in line.dots:
            css = "point" + (f" {_e(d.css)}" if d.css else "") + (f" mark-{_e(d.mark)}" if d.mark else "")
            out.append(f'<circle class="{css}" cx="{d.cx}" cy="{d.cy}" r="{6 if d.mark else 3.5}"><title>{_e(d.label)}</title></circle>')
            if d.mark:
                out.append(f'<text class="mark-label" x="{d.cx}" y="{d.cy - 9}" text-anchor="middle">{_e(d.mark.upper())}</text>')
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def rows_markup(chart: Chart) -> str:
    """The text fallback: a <dl> of x → each series' value (a list, not a <table>: this markup rides websocket
    frames that start with <tbody> rows, and a nested table there breaks the frame's parse)."""
    names = [_e(line.name) for line in chart.lines]
    out = ['<dl class="chart-rows">']
    for x, cells in chart.rows:
        values = "".join(f"<span>{names[i]}: {_e(c)}</span>" for i, c in enumerate(cells) if c)
        out.append(f"<div><dt>{_e(chart.x_label)} {_e(x)}</dt><dd>{values}</dd></div>")
    out.append("</dl>")
    return "".join(out)
