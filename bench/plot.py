"""Draw the scale curve of bench/results.json as docs/performance.svg.

    .venv/bin/python -m bench.plot           # writes docs/performance.svg
    .venv/bin/python -m bench.plot --table   # prints the figures as a Markdown table

One panel per figure that matters as the board grows (reads, around-me,
ingest, rebuild), value and baseline against the number of learners on a
log scale. Plain SVG: no plotting library, no build step.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
PANELS = [
    ("top-100 reads (req/s)", "top-100 reads, req/s"),
    ("around-me reads (req/s)", "around-me reads, req/s"),
    ("GET /healthz (req/s)", "GET /healthz, req/s"),
    ("durable batch ingest (completions/s)", "batch ingest, completions/s"),
    ("rebuild of the season (completions/s)", "rebuild, completions/s"),
    ("top-100 read latency p99 (ms)", "top-100 p99, ms"),
]
W, H, PAD = 300, 190, 42
COLORS = {"value": "#1f6feb", "baseline": "#8b949e"}


def series(results: dict[str, Any], name: str) -> list[tuple[int, float, float]]:
    out = []
    for size in results["sizes"]:
        for f in size["figures"]:
            if f["name"] == name:
                out.append((size["learners"], f["value"], f["baseline"]))
    return out


def panel(x0: int, y0: int, title: str, points: list[tuple[int, float, float]],
          baseline_is: str) -> list[str]:
    out = [f'<g transform="translate({x0},{y0})">',
           f'<text x="{W / 2}" y="14" text-anchor="middle" font-size="12">{title}</text>']
    if not points:
        return [*out, "</g>"]
    xs = [math.log10(n) for n, _, _ in points]
    top = max(max(v, b) for _, v, b in points) * 1.15 or 1
    x_lo, x_hi = min(xs) - 0.3, max(xs) + 0.3

    def px(x: float) -> float:
        return PAD + (x - x_lo) / (x_hi - x_lo) * (W - PAD - 10)

    def py(y: float) -> float:
        return H - 24 - y / top * (H - 54)

    out.append(f'<line x1="{PAD}" y1="{H - 24}" x2="{W - 10}" y2="{H - 24}" stroke="#ccc"/>')
    out.append(f'<line x1="{PAD}" y1="30" x2="{PAD}" y2="{H - 24}" stroke="#ccc"/>')
    for frac in (0, 0.5, 1):
        y = top / 1.15 * frac
        out.append(f'<text x="{PAD - 4}" y="{py(y) + 4}" text-anchor="end" font-size="9">'
                   f"{y:,.0f}</text>")
    for (n, _, _), x in zip(points, xs, strict=True):
        out.append(f'<text x="{px(x)}" y="{H - 10}" text-anchor="middle" font-size="9">'
                   f"{n:,}</text>")
    for key, index in (("baseline", 2), ("value", 1)):
        coords = " ".join(f"{px(x):.1f},{py(p[index]):.1f}"
                          for x, p in zip(xs, points, strict=True))
        out.append(f'<polyline points="{coords}" fill="none" stroke="{COLORS[key]}" '
                   'stroke-width="2"/>')
        for x, p in zip(xs, points, strict=True):
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(p[index]):.1f}" r="3" '
                       f'fill="{COLORS[key]}"/>')
    out.append(f'<text x="{PAD + 4}" y="28" font-size="9" fill="{COLORS["baseline"]}">'
               f"grey: {baseline_is[:46]}</text>")
    return [*out, "</g>"]


def number(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


MODES = {"quick": " --quick", "full": " --full", "default": ""}


def table(results: dict[str, Any], command: str | None = None) -> str:
    """One row per figure and board size: value, baseline, ratio, goal, and
    the command that measures it again (bench.run in the run's mode)."""
    command = command or f"python -m bench.run{MODES.get(results.get('mode', ''), '')}"
    rows = ["| learners | figure | laurels | baseline | ratio | goal | notes | reproduce |",
            "|---:|---|---:|---:|---:|---|---|---|"]
    groups = [(f"{size['learners']:,}", size["figures"]) for size in results["sizes"]]
    groups.append(("—", results["once"]))
    for learners, figures in groups:
        for f in figures:
            notes = "; ".join(part for part in (f["baseline_is"], f["context"]) if part)
            rows.append(f"| {learners} | {f['name']} | {number(f['value'])} | "
                        f"{number(f['baseline'])} | {f['ratio']:.2f} | {f['goal']} | {notes} | "
                        f"`{command}` |")
    return "\n".join(rows)


def main() -> int:
    results = orjson.loads((ROOT / "bench" / "results.json").read_bytes())
    if "--table" in sys.argv[1:]:
        print(table(results))
        return 0
    cols = 3
    rows = math.ceil(len(PANELS) / cols)
    body = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W * cols}" '
            f'height="{H * rows + 30}" font-family="sans-serif">',
            '<rect width="100%" height="100%" fill="white"/>',
            f'<text x="10" y="18" font-size="13">laurels bench, {results["mode"]} mode, '
            f'{results["when"]}: blue laurels, grey its baseline, against learners on the '
            "board</text>"]
    for i, (name, title) in enumerate(PANELS):
        points = series(results, name)
        baseline_is = next((f["baseline_is"] for size in results["sizes"]
                            for f in size["figures"] if f["name"] == name), "")
        body += panel((i % cols) * W, 30 + (i // cols) * H, title, points, baseline_is)
    body.append("</svg>")
    target = ROOT / "docs" / "performance.svg"
    target.write_text("\n".join(body) + "\n")
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
