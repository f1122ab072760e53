"""Inline SVG charts built with ElementTree (it escapes every label), no JavaScript needed.

Two shapes cover the view: stacked bars (one bar per turn or per agent, segments per part,
an optional reference mark per bar such as the token budget) and a cumulative line. Charts
size themselves from the number of bars; hover text comes from SVG <title> elements.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup

_HEIGHT = 240
_MARGIN_LEFT = 56
_MARGIN_RIGHT = 16
_MARGIN_TOP = 14
_MARGIN_BOTTOM = 44


@dataclass(frozen=True)
class Series:
    """One segment kind of a stacked bar: key into each bar's values, legend label, colour."""

    key: str
    label: str
    colour: str
    css: str = ""  # class of its legend swatch in the page's stylesheet


@dataclass(frozen=True)
class Bar:
    label: str  # x-axis label (a turn number, an agent id)
    values: dict[str, float]  # series key -> value
    marker: str = ""  # colour of a small square under the bar (the speaker), "" for none
    reference: float | None = None  # e.g. the token budget of this prompt
    tooltip: str = ""
    href: str = ""  # bars link to an anchor in the page


@dataclass(frozen=True)
class Point:
    label: str
    value: float
    colour: str
    tooltip: str = ""


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round axis ticks from 0 to at least `top` (steps of 1, 2 or 5 times a power of ten)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [i * step for i in range(math.ceil(top / step - 1e-9) + 1)]


def _fmt(value: float) -> str:
    if value >= 10_000:
        return f"{value / 1000:.0f}k"
    if value >= 1000:
        return f"{value / 1000:.1f}k".replace(".0k", "k")
    return f"{value:g}"


def _svg(width: float, label: str) -> ET.Element:
    svg = ET.Element(
        "svg",
        {
            "xmlns": "http://www.w3.org/2000/svg",
            "class": "chart",
            "viewBox": f"0 0 {width:.0f} {_HEIGHT}",
            "width": f"{width:.0f}",
            "height": str(_HEIGHT),
            "role": "img",
            "aria-label": label,
        },
    )
    ET.SubElement(svg, "title").text = label
    return svg


def _axis(svg: ET.Element, ticks: list[float], scale: float, right: float, unit: str) -> None:
    base = _HEIGHT - _MARGIN_BOTTOM
    for tick in ticks:
        y = base - tick * scale
        ET.SubElement(
            svg,
            "line",
            {
                "x1": str(_MARGIN_LEFT),
                "x2": f"{right:.1f}",
                "y1": f"{y:.1f}",
                "y2": f"{y:.1f}",
                "class": "grid" if tick else "axis",
            },
        )
        text = ET.SubElement(
            svg, "text", {"x": str(_MARGIN_LEFT - 6), "y": f"{y + 4:.1f}", "class": "tick-y"}
        )
        text.text = _fmt(tick)
    unit_label = ET.SubElement(
        svg,
        "text",
        {
            "x": "12",
            "y": f"{base / 2:.0f}",
            "class": "unit",
            "transform": f"rotate(-90 12 {base / 2:.0f})",
        },
    )
    unit_label.text = unit


def _x_labels(
    svg: ET.Element, centres: Sequence[float], labels: Sequence[str], slot: float
) -> None:
    """Every label when they fit, else every k-th (always the last)."""
    every = max(1, math.ceil(28 / slot))
    y = _HEIGHT - _MARGIN_BOTTOM + 26
    last = len(labels) - 1
    for i, (x, label) in enumerate(zip(centres, labels, strict=True)):
        if i != last and (i % every or last - i < every):
            continue
        ET.SubElement(svg, "text", {"x": f"{x:.1f}", "y": str(y), "class": "tick-x"}).text = label


@dataclass(frozen=True)
class _Frame:
    """A chart being drawn: its SVG with the y axis in place, pixels per unit, slot width."""

    svg: ET.Element
    scale: float
    slot: float

    def x(self, i: float) -> float:
        """The centre of slot `i`."""
        return _MARGIN_LEFT + self.slot * (i + 0.5)

    def y(self, value: float) -> float:
        return _HEIGHT - _MARGIN_BOTTOM - value * self.scale

    def done(self, labels: Sequence[str]) -> Markup:
        """The chart, its slots labelled along the x axis."""
        _x_labels(self.svg, [self.x(i) for i in range(len(labels))], labels, self.slot)
        return Markup(ET.tostring(self.svg, encoding="unicode"))


def _frame(count: int, top: float, label: str, unit: str, slot: float, min_width: float) -> _Frame:
    """An empty chart of `count` slots, each `slot` pixels wide or wider (the chart is at
    least `min_width`), whose y axis reaches `top` or a little above."""
    width = max(min_width, _MARGIN_LEFT + _MARGIN_RIGHT + slot * count)
    svg = _svg(width, label)
    ticks = nice_ticks(top)
    scale = (_HEIGHT - _MARGIN_TOP - _MARGIN_BOTTOM) / ticks[-1]
    right = width - _MARGIN_RIGHT
    _axis(svg, ticks, scale, right, unit)
    return _Frame(svg, scale, (right - _MARGIN_LEFT) / max(count, 1))


def stacked_bars(
    bars: Sequence[Bar],
    series: Sequence[Series],
    *,
    label: str,
    unit: str = "tokens",
    slot: float = 14.0,
    min_width: float = 420.0,
) -> Markup:
    """One stacked bar per entry; `reference` draws a dark tick across the bar (a limit).

    Bars share `min_width` (the width of the chart's box on a laptop screen) and never get
    narrower than `slot` pixels each: a longer run makes the chart wider and it scrolls.
    """
    top = max(
        [sum(b.values.get(s.key, 0) for s in series) for b in bars]
        + [b.reference or 0 for b in bars]
        + [1]
    )
    frame = _frame(len(bars), top, label, unit, slot, min_width)
    slot, scale = frame.slot, frame.scale
    bar_width = max(min(slot * 0.72, 36.0), 2.0)
    base = _HEIGHT - _MARGIN_BOTTOM
    for i, bar in enumerate(bars):
        centre = frame.x(i)
        group = ET.SubElement(frame.svg, "a", {"href": bar.href}) if bar.href else frame.svg
        group = ET.SubElement(group, "g", {"class": "bar"})
        if bar.tooltip:
            ET.SubElement(group, "title").text = bar.tooltip
        y = base
        for s in series:
            value = bar.values.get(s.key, 0)
            if value <= 0:
                continue
            height = value * scale
            y -= height
            ET.SubElement(
                group,
                "rect",
                {
                    "x": f"{centre - bar_width / 2:.1f}",
                    "y": f"{y:.1f}",
                    "width": f"{bar_width:.1f}",
                    "height": f"{height:.1f}",
                    "fill": s.colour,
                },
            )
        if bar.reference:
            ry = frame.y(bar.reference)
            ET.SubElement(
                group,
                "line",
                {
                    "x1": f"{centre - slot / 2 + 0.5:.1f}",
                    "x2": f"{centre + slot / 2 - 0.5:.1f}",
                    "y1": f"{ry:.1f}",
                    "y2": f"{ry:.1f}",
                    "class": "reference",
                },
            )
        if bar.marker:
            ET.SubElement(
                group,
                "rect",
                {
                    "x": f"{centre - bar_width / 2:.1f}",
                    "y": str(base + 4),
                    "width": f"{bar_width:.1f}",
                    "height": "6",
                    "rx": "1",
                    "fill": bar.marker,
                },
            )
    return frame.done([b.label for b in bars])


def cumulative_line(
    points: Sequence[Point],
    *,
    label: str,
    unit: str = "tokens",
    slot: float = 8.0,
    min_width: float = 420.0,
) -> Markup:
    """A running total: one line, one dot per point in its own colour (the speaker)."""
    totals: list[float] = []
    running = 0.0
    for p in points:
        running += p.value
        totals.append(running)
    frame = _frame(len(points), max([*totals, 1]), label, unit, slot, min_width)
    xy = [(frame.x(i), frame.y(t)) for i, t in enumerate(totals)]
    if xy:
        path = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in xy)
        ET.SubElement(frame.svg, "path", {"d": path, "class": "cumulative"})
    for (x, y), p, total in zip(xy, points, totals, strict=True):
        dot = ET.SubElement(
            frame.svg, "circle", {"cx": f"{x:.1f}", "cy": f"{y:.1f}", "r": "3.5", "fill": p.colour}
        )
        ET.SubElement(dot, "title").text = f"{p.tooltip} · running total {total:,.0f} {unit}"
    return frame.done([p.label for p in points])


@dataclass(frozen=True)
class Line:
    """One series of a line chart: its points as (x slot, value, hover text)."""

    label: str
    colour: str
    points: tuple[tuple[int, float, str], ...]


def line_chart(
    lines: Sequence[Line],
    x_labels: Sequence[str],
    *,
    label: str,
    unit: str = "%",
    top: float | None = None,
    slot: float = 8.0,
    min_width: float = 420.0,
) -> Markup:
    """Lines over shared x slots (e.g. turns), one colour each, a dot with hover text per
    point; the y axis runs from 0 to `top` (default: the largest value)."""
    highest = top if top is not None else max([v for ln in lines for _, v, _ in ln.points] + [1])
    frame = _frame(len(x_labels), highest, label, unit, slot, min_width)
    for line in lines:
        xy = [(frame.x(i), frame.y(v)) for i, v, _ in line.points]
        group = ET.SubElement(frame.svg, "g", {"class": "series"})
        ET.SubElement(group, "title").text = line.label
        if len(xy) > 1:
            path = "M" + " L".join(f"{x:.1f},{y:.1f}" for x, y in xy)
            ET.SubElement(group, "path", {"d": path, "class": "series-line", "stroke": line.colour})
        for (x, y), (_, _, tooltip) in zip(xy, line.points, strict=True):
            dot = ET.SubElement(
                group,
                "circle",
                {"cx": f"{x:.1f}", "cy": f"{y:.1f}", "r": "3.5", "fill": line.colour},
            )
            ET.SubElement(dot, "title").text = tooltip
    return frame.done(x_labels)
