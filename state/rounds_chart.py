"""Geometry of the 'paths changed per round' bar chart, drawn as server-side SVG by the Rounds view (pure)."""

from __future__ import annotations

import math
from dataclasses import dataclass

LEFT, RIGHT, TOP, BOTTOM = 48, 12, 22, 40


@dataclass(frozen=True)
class Bar:
    round: int
    count: int
    x: float
    y: float
    width: float
    height: float
    is_converged: bool
    is_oscillating: bool
    show_label: bool

    @property
    def center(self) -> float:
        return self.x + self.width / 2


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    top: int
    right: int
    bottom: int
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]


def changes_chart(points: list[tuple[int, int, bool, bool]], *, width: int = 640, height: int = 220) -> Chart:
    """Bars for (round, paths changed, converged, oscillating) points; y ticks at whole numbers, ≤ 20 x labels."""
    left, top, right, bottom = LEFT, TOP, width - RIGHT, height - BOTTOM
    peak = max((count for _, count, _, _ in points), default=0)
    step = max(1, math.ceil(peak / 4))
    top_value = max(step * 4, 1)
    scale = (bottom - top) / top_value
    slot = (right - left) / max(len(points), 1)
    every = max(1, math.ceil(len(points) / 20))
    bars = tuple(
        Bar(
            round=round_,
            count=count,
            x=round(left + i * slot + slot * 0.15, 2),
            y=round(bottom - count * scale, 2),
            width=round(slot * 0.7, 2),
            height=round(count * scale, 2),
            is_converged=converged,
            is_oscillating=oscillating,
            show_label=i % every == 0 or i == len(points) - 1,
        )
        for i, (round_, count, converged, oscillating) in enumerate(points)
    )
    ticks = tuple(Tick(value, round(bottom - value * scale, 2)) for value in range(0, top_value + 1, step))
    return Chart(width, height, left, top, right, bottom, bars, ticks)
