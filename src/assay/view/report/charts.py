"""Inline SVG charts for the self-contained report: no script, no external file. Every text
that comes from data (system names, metric names, item ids) is escaped here, since the
template inserts the returned markup as is."""

from __future__ import annotations

import math
from html import escape
from typing import TYPE_CHECKING

from assay.core._lazy import lazy_module

if TYPE_CHECKING:
    import numpy as np
else:
    np = lazy_module("numpy")


PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf")


def _svg(width: int, height: int, body: list[str], label: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(label)}" '
            f'font-family="system-ui, sans-serif" font-size="11">{"".join(body)}</svg>')


def scatter(series: dict[str, list[tuple[float, float, str]]], x_label: str, y_label: str,
            *, x_range: tuple[float, float] = (0, 1), y_range: tuple[float, float] = (0, 1),
            quadrants: tuple[float, float] | None = None, diagonal: bool = False, size: int = 320) -> str:
    """Points per series (x, y, tooltip); optional quadrant lines at (x, y), optional y = x line."""
    pad = 40
    inner = size - 2 * pad

    def px(x: float) -> float:
        return pad + (x - x_range[0]) / (x_range[1] - x_range[0] or 1) * inner

    def py(y: float) -> float:
        return size - pad - (y - y_range[0]) / (y_range[1] - y_range[0] or 1) * inner

    body = [f'<rect x="{pad}" y="{pad}" width="{inner}" height="{inner}" fill="none" stroke="#999"/>',
            f'<text x="{size / 2}" y="{size - 8}" text-anchor="middle">{escape(x_label)}</text>',
            f'<text x="12" y="{size / 2}" text-anchor="middle" transform="rotate(-90 12 {size / 2})">'
            f'{escape(y_label)}</text>']
    for value in (x_range[0], x_range[1]):
        body.append(f'<text x="{px(value)}" y="{size - pad + 14}" text-anchor="middle">{value:g}</text>')
    for value in (y_range[0], y_range[1]):
        body.append(f'<text x="{pad - 4}" y="{py(value) + 4}" text-anchor="end">{value:g}</text>')
    if quadrants is not None:
        qx, qy = quadrants
        body.append(f'<line x1="{px(qx)}" y1="{pad}" x2="{px(qx)}" y2="{size - pad}" stroke="#bbb" '
                    'stroke-dasharray="4 3"/>')
        body.append(f'<line x1="{pad}" y1="{py(qy)}" x2="{size - pad}" y2="{py(qy)}" stroke="#bbb" '
                    'stroke-dasharray="4 3"/>')
    if diagonal:
        lo, hi = max(x_range[0], y_range[0]), min(x_range[1], y_range[1])
        body.append(f'<line x1="{px(lo)}" y1="{py(lo)}" x2="{px(hi)}" y2="{py(hi)}" stroke="#bbb" '
                    'stroke-dasharray="4 3"/>')
    legend_y = 4
    for index, (name, points) in enumerate(series.items()):
        color = PALETTE[index % len(PALETTE)]
        for x, y, tip in points:
            body.append(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="4" fill="{color}" fill-opacity="0.65">'
                        f'<title>{escape(tip)}</title></circle>')
        body.append(f'<circle cx="{size - pad + 14}" cy="{pad + legend_y - 4}" r="4" fill="{color}"/>'
                    f'<text x="{size - pad + 22}" y="{pad + legend_y}">{escape(name[:18])}</text>')
        legend_y += 14
    return _svg(size + 110, size, body, f"{y_label} against {x_label}")


def radar(profiles: dict[str, dict[str, float | None]], axes: list[str], size: int = 460) -> str:
    """One polygon per system over the axes (values in [0, 1]; None drawn as 0)."""
    center, radius = size / 2, size / 2 - 125
    n = len(axes)

    def point(i: int, r: float) -> tuple[float, float]:
        angle = -math.pi / 2 + 2 * math.pi * i / n
        return center + r * math.cos(angle), center + r * math.sin(angle)

    body = []
    for level in (0.25, 0.5, 0.75, 1.0):
        ring = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, radius * level) for i in range(n)))
        body.append(f'<polygon points="{ring}" fill="none" stroke="#ddd"/>')
    for i, axis in enumerate(axes):
        x, y = point(i, radius)
        lx, ly = point(i, radius + 14)
        anchor = "middle" if abs(lx - center) < 5 else ("start" if lx > center else "end")
        body.append(f'<line x1="{center}" y1="{center}" x2="{x:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
                    f'<text x="{lx:.1f}" y="{ly:.1f}" text-anchor="{anchor}">{escape(axis)}</text>')
    for index, (name, values) in enumerate(profiles.items()):
        color = PALETTE[index % len(PALETTE)]
        pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, radius * (values.get(a) or 0.0))
                                                       for i, a in enumerate(axes)))
        body.append(f'<polygon points="{pts}" fill="{color}" fill-opacity="0.12" stroke="{color}" stroke-width="2">'
                    f'<title>{escape(name)}</title></polygon>')
        body.append(f'<rect x="8" y="{8 + 14 * index}" width="10" height="10" fill="{color}"/>'
                    f'<text x="22" y="{17 + 14 * index}">{escape(name)}</text>')
    return _svg(size, size, body, "metric profile per system")


def histograms(values: dict[str, list[float]], bins: int = 10, width: int = 230, height: int = 90) -> str:
    """Small multiples: one histogram over [0, 1] per metric."""
    cells = []
    for name, data in values.items():
        counts, _ = np.histogram(np.asarray(data, dtype=float), bins=bins, range=(0.0, 1.0))
        top = max(int(counts.max()) if len(data) else 0, 1)
        bar = (width - 20) / bins
        body = [f'<text x="4" y="12">{escape(name)} (n={len(data)})</text>',
                f'<line x1="10" y1="{height - 14}" x2="{width - 10}" y2="{height - 14}" stroke="#999"/>',
                f'<text x="10" y="{height - 2}">0</text><text x="{width - 10}" y="{height - 2}" '
                'text-anchor="end">1</text>']
        for i, count in enumerate(counts):
            h = (height - 34) * count / top
            body.append(f'<rect x="{10 + i * bar:.1f}" y="{height - 14 - h:.1f}" width="{bar - 1:.1f}" '
                        f'height="{h:.1f}" fill="#1f77b4"><title>{i / bins:.1f}–{(i + 1) / bins:.1f}: '
                        f'{int(count)}</title></rect>')
        cells.append(_svg(width, height, body, f"distribution of {name}"))
    return "".join(cells)


def heatmap(names: list[str], matrix: list[list[float | None]], cell: int = 44) -> str:
    """A correlation matrix in [−1, 1], blue negative to red positive, values printed."""
    label = 170
    size_x, size_y = label + cell * len(names), label + cell * len(names)
    body = []
    for i, name in enumerate(names):
        body.append(f'<text x="{label - 6}" y="{label + cell * i + cell / 2 + 4}" text-anchor="end">'
                    f'{escape(name)}</text>')
        x = label + cell * i + cell / 2
        body.append(f'<text x="{x}" y="{label - 6}" transform="rotate(-45 {x} {label - 6})">{escape(name)}</text>')
        for j in range(len(names)):
            value = matrix[i][j]
            if value is None or math.isnan(value):
                color, text = "#eee", "–"
            else:
                v = max(-1.0, min(1.0, value))
                shade = int(255 * (1 - abs(v)))
                color = f"rgb(255,{shade},{shade})" if v >= 0 else f"rgb({shade},{shade},255)"
                text = f"{v:.2f}"
            x0, y0 = label + cell * j, label + cell * i
            body.append(f'<rect x="{x0}" y="{y0}" width="{cell - 1}" height="{cell - 1}" fill="{color}"/>'
                        f'<text x="{x0 + cell / 2}" y="{y0 + cell / 2 + 4}" text-anchor="middle">{text}</text>')
    return _svg(size_x, size_y, body, "inter-metric correlation")
