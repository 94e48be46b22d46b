"""Charts for the job page, drawn on the server as inline SVG (the page runs no script).

Pure functions from `Findings` to SVG markup. Every label comes from a plan built from
issue text, so each one is escaped; numbers are formatted here.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from html import escape

from markupsafe import Markup

from triagebot.analyze.findings_models import CellFinding, Findings

WIDTH = 760
LABEL_W = 230
VALUE_W = 150
ROW_H = 28
TOP = 34
# Colour-blind-safe series colours (Okabe-Ito).
SERIES = ("#0072b2", "#e69f00", "#009e73", "#cc79a7", "#56b4e9", "#d55e00", "#f0e442")
INK = "#1f2328"
MUTED = "#59636e"
GRID = "#d0d7de"


def _nice_max(value: float) -> float:
    """A round axis end at or above `value` (1, 2, 2.5 or 5 times a power of ten)."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


def _num(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _svg(height: int, title: str, body: list[str]) -> Markup:
    head = (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {height}" '
            f'width="100%" role="img" aria-label="{escape(title)}" class="chart">'
            f"<title>{escape(title)}</title>")
    # Safe: every label was escaped where it was put in, and numbers are formatted here.
    return Markup(head + "".join(body) + "</svg>")


def throughput_chart(findings: Findings) -> Markup | None:
    """Median tok/s per cell with its confidence interval as a whisker; None without data."""
    cells = findings.cells
    measured = [c for c in cells if c.throughput.median is not None]
    if not measured:
        return None
    top = max(max(c.throughput.ci_high or 0.0, c.throughput.median or 0.0) for c in measured)
    end = _nice_max(top * 1.05)
    plot_w = WIDTH - LABEL_W - VALUE_W
    height = TOP + ROW_H * len(cells) + 30

    def x(value: float) -> float:
        return LABEL_W + plot_w * max(0.0, value) / end

    level = measured[0].throughput.ci_level
    body = [f'<text x="0" y="16" font-size="14" font-weight="600" fill="{INK}">'
            f"Throughput per cell (tok/s, median and {level:.0%} CI)</text>"]
    axis_y = TOP + ROW_H * len(cells) + 4
    for i in range(5):
        value = end * i / 4
        body.append(f'<line x1="{x(value):.1f}" y1="{TOP - 6}" x2="{x(value):.1f}" '
                    f'y2="{axis_y}" stroke="{GRID}" stroke-width="1"/>'
                    f'<text x="{x(value):.1f}" y="{axis_y + 16}" font-size="11" '
                    f'text-anchor="middle" fill="{MUTED}">{_num(value)}</text>')
    for row, cell in enumerate(cells):
        body.append(_throughput_row(cell, TOP + ROW_H * row + ROW_H / 2, x, row))
    return _svg(height, "Throughput per cell", body)


def _throughput_row(cell: CellFinding, y: float, scale: Callable[[float], float],
                    row: int) -> str:
    label = (f'<text x="{LABEL_W - 10}" y="{y + 4:.1f}" font-size="12" text-anchor="end" '
             f'fill="{INK}">{escape(cell.label[:40])}</text>')
    stats = cell.throughput
    if stats.median is None:
        why = escape((cell.error or stats.reason or "no usable runs")[:60])
        return label + (f'<text x="{LABEL_W + 6}" y="{y + 4:.1f}" font-size="12" '
                        f'fill="#cf222e">{why}</text>')
    colour = SERIES[row % len(SERIES)]
    parts = [label]
    if stats.ci_low is not None and stats.ci_high is not None:
        lo, hi = scale(stats.ci_low), scale(stats.ci_high)
        parts.append(f'<line class="ci" x1="{lo:.1f}" y1="{y:.1f}" x2="{hi:.1f}" y2="{y:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>'
                     f'<line x1="{lo:.1f}" y1="{y - 6:.1f}" x2="{lo:.1f}" y2="{y + 6:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>'
                     f'<line x1="{hi:.1f}" y1="{y - 6:.1f}" x2="{hi:.1f}" y2="{y + 6:.1f}" '
                     f'stroke="{colour}" stroke-width="2"/>')
        text = f"{_num(stats.median)} [{_num(stats.ci_low)}, {_num(stats.ci_high)}]"
    else:
        text = f"{_num(stats.median)} (n={stats.n})"
    parts.append(f'<circle class="median" cx="{scale(stats.median):.1f}" cy="{y:.1f}" r="5" '
                 f'fill="{colour}"/>'
                 f'<text x="{WIDTH - VALUE_W + 8}" y="{y + 4:.1f}" font-size="12" '
                 f'fill="{INK}">{escape(text)}</text>')
    return "".join(parts)


def acceptance_chart(findings: Findings) -> Markup | None:
    """Acceptance rate at each draft position, one bar series per speculative cell."""
    series = [(c.label, c.acceptance.per_position) for c in findings.cells
              if c.acceptance is not None and c.acceptance.per_position]
    if not series:
        return None
    positions = max(len(rates) for _, rates in series)
    plot_left, plot_right, plot_top, plot_h = 50, WIDTH - 10, TOP + 8, 180
    group_w = (plot_right - plot_left) / positions
    bar_w = max(2.0, min(28.0, (group_w - 12) / len(series)))
    body = [f'<text x="0" y="16" font-size="14" font-weight="600" fill="{INK}">'
            "Acceptance rate by draft position</text>"]
    base = plot_top + plot_h
    for i in range(5):
        share = i / 4
        y = base - plot_h * share
        body.append(f'<line x1="{plot_left}" y1="{y:.1f}" x2="{plot_right}" y2="{y:.1f}" '
                    f'stroke="{GRID}"/><text x="{plot_left - 6}" y="{y + 4:.1f}" '
                    f'font-size="11" text-anchor="end" fill="{MUTED}">{share:.0%}</text>')
    for pos in range(positions):
        left = plot_left + group_w * pos + (group_w - bar_w * len(series)) / 2
        body.append(f'<text x="{plot_left + group_w * (pos + 0.5):.1f}" y="{base + 16}" '
                    f'font-size="11" text-anchor="middle" fill="{MUTED}">{pos + 1}</text>')
        for index, (_, rates) in enumerate(series):
            if pos >= len(rates):
                continue
            rate = min(1.0, max(0.0, rates[pos]))
            h = plot_h * rate
            body.append(f'<rect class="bar" x="{left + bar_w * index:.1f}" y="{base - h:.1f}" '
                        f'width="{bar_w - 1:.1f}" height="{h:.1f}" '
                        f'fill="{SERIES[index % len(SERIES)]}"><title>'
                        f"{escape(series[index][0][:40])}, position {pos + 1}: {rate:.1%}"
                        "</title></rect>")
    legend_y = base + 36
    for index, (label, _) in enumerate(series):
        col = index % 3
        row = index // 3
        lx, ly = plot_left + col * 235, legend_y + row * 18
        body.append(f'<rect x="{lx}" y="{ly - 9}" width="10" height="10" '
                    f'fill="{SERIES[index % len(SERIES)]}"/><text x="{lx + 15}" y="{ly}" '
                    f'font-size="12" fill="{INK}">{escape(label[:34])}</text>')
    height = legend_y + 18 * ((len(series) + 2) // 3) + 4
    return _svg(int(height), "Acceptance rate by draft position", body)
