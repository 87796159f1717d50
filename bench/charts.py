"""Chart technology: server-rendered SVG (what the dashboard uses) against a vendored JS library (uPlot), same data.

Three charts of the run page (confidence, eval score, budget use) for ITERATIONS × WORKERS points each.
- Page weight: the HTML the server sends for the SVG charts, against uPlot's script + CSS + the same data as JSON
  (raw and gzip bytes).
- Server time: building and rendering the three SVG charts in this process (the JS alternative would still need
  the data serialised, not measured).
- Browser time in Chromium (Debian's, headless): from inserting the SVG markup to the next frame, against
  evaluating uPlot's script plus drawing the three charts to the next frame (median of REPEAT runs).

    python bench/charts.py [--iterations 150] [--workers 4] [--uplot /path/to/uPlot.iife.min.js]

uPlot is not vendored (it is the alternative); get it with `npm pack uplot@1.6.32` and pass --uplot.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import time
from pathlib import Path

from common import machine, print_table, setup_django

REPEAT = 15


def series_for(iterations: int, workers: int) -> dict[str, list[object]]:
    """Deterministic values for three charts: confidence, score (0–1) and budget % per iteration and worker."""
    from experiments.charts import Point, Series

    def values(offset: float) -> list[Series]:
        return [
            Series(f"worker_{w}", tuple(Point(i, round(((i * 37 + w * 11 + offset) % 100) / 100, 3), f"worker_{w} · iteration {i}") for i in range(1, iterations + 1)))
            for w in range(workers)
        ]

    return {"confidence": values(0), "score": values(13), "budget": values(29)}


def svg_markup(data: dict[str, list[object]]) -> tuple[str, float]:
    """(HTML of the three charts, ms to build and render them)."""
    from django.template.loader import render_to_string

    from experiments.charts import line_chart

    started = time.perf_counter()
    html = "".join(
        render_to_string("charts/_chart.html", {"chart": line_chart(series, title=name, x_label="iteration", y_label=name, y_range=(0, 1), integer_x=True), "id": f"chart-{name}"})  # type: ignore[arg-type]
        for name, series in data.items()
    )
    return html, (time.perf_counter() - started) * 1000


def uplot_data(data: dict[str, list[object]]) -> str:
    """The same values as uPlot wants them: per chart [[x...], [y of series 1...], ...]."""
    out = {}
    for name, series in data.items():
        xs = [p.x for p in series[0].points]  # type: ignore[attr-defined]
        out[name] = [xs] + [[p.y for p in s.points] for s in series]  # type: ignore[attr-defined]
    return json.dumps(out, separators=(",", ":"))


def browser_times(svg_html: str, uplot_js: str | None, uplot_css: str, data_json: str) -> tuple[float, float | None]:
    """Median ms to the next frame: SVG markup inserted; uPlot script evaluated and three charts drawn."""
    from playwright.sync_api import sync_playwright

    svg_times, uplot_times = [], []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox", "--disable-gpu"], headless=True)
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        for _ in range(REPEAT):
            page.set_content("<!doctype html><html><body><div id=c style='width:1200px'></div></body></html>")
            svg_times.append(page.evaluate(
                """(html) => new Promise(done => { const t0 = performance.now(); const c = document.getElementById('c');
                   c.innerHTML = html; c.getBoundingClientRect(); requestAnimationFrame(() => done(performance.now() - t0)); })""",
                svg_html,
            ))
            if uplot_js is None:
                continue
            page.set_content(f"<!doctype html><html><head><style>{uplot_css}</style></head><body><div id=c style='width:1200px'></div></body></html>")
            uplot_times.append(page.evaluate(
                """([src, raw]) => new Promise(done => { const t0 = performance.now(); (0, eval)(src);
                   const data = JSON.parse(raw); const c = document.getElementById('c');
                   for (const name of Object.keys(data)) {
                     const series = [{}].concat(data[name].slice(1).map((_, i) => ({label: 'worker_' + i, stroke: 'blue'})));
                     new uPlot({title: name, width: 380, height: 220, series: series, scales: {x: {time: false}}}, data[name], c);
                   }
                   c.getBoundingClientRect(); requestAnimationFrame(() => done(performance.now() - t0)); })""",
                [uplot_js, data_json],
            ))
        browser.close()
    return statistics.median(svg_times), (statistics.median(uplot_times) if uplot_times else None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--uplot", type=Path, help="uPlot.iife.min.js (its uPlot.min.css is read beside it)")
    args = parser.parse_args()
    setup_django("pages", migrate=False)
    data = series_for(args.iterations, args.workers)
    svg_markup(data)  # warm the template cache
    server_ms = statistics.median(svg_markup(data)[1] for _ in range(REPEAT))
    svg_html, _ = svg_markup(data)
    data_json = uplot_data(data)
    uplot_js = args.uplot.read_text() if args.uplot else None
    uplot_css = (args.uplot.parent / "uPlot.min.css").read_text() if args.uplot else ""
    svg_ms, uplot_ms = browser_times(svg_html, uplot_js, uplot_css, data_json)
    points = 3 * args.iterations * args.workers
    print(f"# bench/charts.py · {machine()} · 3 charts × {args.iterations} iterations × {args.workers} workers = {points:,} points · median of {REPEAT}")

    def size(text: str) -> str:
        raw = text.encode()
        return f"{len(raw) / 1024:.1f} KiB ({len(gzip.compress(raw)) / 1024:.1f} gz)"

    rows = [("server-rendered SVG (used)", size(svg_html), "0", f"{server_ms:.1f}", f"{svg_ms:.1f}")]
    if uplot_js is not None:
        rows.append(("uPlot 1.6.32 (alternative)", size(data_json), size(uplot_js + uplot_css), "–", f"{uplot_ms:.1f}"))
    print_table(["charts", "markup or data", "script + CSS", "server ms", "browser ms to next frame"], rows)


if __name__ == "__main__":
    main()
