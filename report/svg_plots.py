"""Inline SVG for the HTML report: a shared time axis, fault bands, line and band
charts, and lanes. No script and no library: the report must open offline, from a
CI artifact, with nothing to fetch, and stay small enough to attach to a ticket."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from html import escape

WIDTH = 1100
LEFT = 130  # room for lane and axis labels
RIGHT = 20

PALETTE = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


@dataclass(frozen=True)
class Band:
    """A fault from its start to its heal, in seconds on the page's clock."""

    t0: float
    t1: float
    label: str
    unknown: bool = False  # the fault op completed `info`: it may or may not have hit


@dataclass(frozen=True)
class Axis:
    t0: float
    t1: float

    @property
    def span(self) -> float:
        return max(self.t1 - self.t0, 1e-9)

    def x(self, t: float) -> float:
        return LEFT + (min(max(t, self.t0), self.t1) - self.t0) / self.span * (WIDTH - LEFT - RIGHT)

    def ticks(self) -> list[float]:
        steps = (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200)
        step = next((s for s in steps if self.span / s <= 12), steps[-1])
        first = int(self.t0 // step + 1) * step
        return [float(t) for t in range(int(first), int(self.t1) + 1, step)]


def _num(v: float) -> str:
    return f"{v:.1f}"


def _frame(height: int, body: list[str], title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" role="img" aria-label="{escape(title)}">'
        + "".join(body)
        + "</svg>"
    )


def bands_svg(axis: Axis, bands: Sequence[Band], height: int, top: int = 0) -> list[str]:
    """Shaded fault bands across a chart, each with a tooltip naming the fault."""
    out = []
    for b in bands:
        x0, x1 = axis.x(b.t0), axis.x(b.t1)
        w = max(x1 - x0, 2.0)
        fill = "url(#unknown)" if b.unknown else "rgba(214,39,40,0.13)"
        out.append(
            f'<rect class="fault-band" x="{_num(x0)}" y="{top}" width="{_num(w)}" '
            f'height="{height - top}" fill="{fill}" stroke="rgba(214,39,40,0.5)" '
            f'stroke-width="0.5"><title>{escape(b.label)} '
            f"({b.t0:.1f}s to {b.t1:.1f}s)</title></rect>"
        )
    return out


_DEFS = (
    '<defs><pattern id="unknown" width="6" height="6" patternUnits="userSpaceOnUse" '
    'patternTransform="rotate(45)"><rect width="3" height="6" fill="rgba(214,39,40,0.18)"/>'
    "</pattern></defs>"
)


def axis_svg(axis: Axis, y: int, label: bool = True) -> list[str]:
    out = [f'<line x1="{LEFT}" y1="{y}" x2="{WIDTH - RIGHT}" y2="{y}" stroke="#888"/>']
    for t in axis.ticks():
        x = axis.x(t)
        out.append(f'<line x1="{_num(x)}" y1="{y}" x2="{_num(x)}" y2="{y + 4}" stroke="#888"/>')
        if label:
            out.append(
                f'<text x="{_num(x)}" y="{y + 15}" font-size="10" text-anchor="middle">'
                f"{t:g}s</text>"
            )
    return out


def text_width(text: str, size: float = 10) -> float:
    """A generous estimate of a label's width in system-ui at `size` px: labels are laid
    out by it, so overestimating only costs a row."""
    return 0.62 * size * len(text)


def rows_for(spans: Sequence[tuple[float, float]], gap: float = 4) -> list[int]:
    """The row of each (x0, x1) span, in order: the first row whose last span ends
    before this one starts, so nothing drawn in a row overlaps."""
    ends: list[float] = []
    out: list[int] = []
    for x0, x1 in spans:
        row = next((i for i, end in enumerate(ends) if end + gap < x0), len(ends))
        if row == len(ends):
            ends.append(x1)
        else:
            ends[row] = x1
        out.append(row)
    return out


def _band_rows(axis: Axis, bands: Sequence[Band]) -> list[tuple[Band, int]]:
    """Overlapping faults stack, and so do faults whose label runs past its band into
    the next one."""
    ordered = sorted(bands, key=lambda b: b.t0)
    spans = [
        (axis.x(b.t0), max(axis.x(b.t1), axis.x(b.t0) + 3 + text_width(b.label))) for b in ordered
    ]
    return list(zip(ordered, rows_for(spans), strict=True))


def fault_strip(axis: Axis, bands: Sequence[Band], markers: Sequence[tuple[float, str]]) -> str:
    """The labelled fault bands in rows, witness markers (W1, W2 ...) in rows under
    them, and the time axis; no label is drawn over another."""
    placed = _band_rows(axis, bands)
    row_h, mark_h = 18, 13
    n_rows = max([r + 1 for _, r in placed], default=1)
    marks = sorted(markers)
    mark_rows = rows_for([(axis.x(t), axis.x(t) + 2 + text_width(n, 9)) for t, n in marks])
    n_marks = max(mark_rows, default=0) + 1
    my = 24 + row_h * n_rows
    height = my + mark_h * n_marks + 4 + 20
    body = [_DEFS, '<text x="4" y="14" font-size="11" font-weight="bold">faults</text>']
    if not bands:
        body.append(
            f'<text x="{LEFT}" y="30" font-size="11" fill="#555">no fault in this run</text>'
        )
    for b, row in placed:
        y = 20 + row * row_h
        x0, x1 = axis.x(b.t0), axis.x(b.t1)
        fill = "url(#unknown)" if b.unknown else "rgba(214,39,40,0.25)"
        body.append(
            f'<g class="fault-band"><rect x="{_num(x0)}" y="{y}" width="{_num(max(x1 - x0, 3.0))}" '
            f'height="{row_h - 3}" fill="{fill}" stroke="#d62728" stroke-width="0.7"/>'
            f'<text x="{_num(x0 + 3)}" y="{y + 11}" font-size="10">{escape(b.label)}</text>'
            f"<title>{escape(b.label)} ({b.t0:.1f}s to {b.t1:.1f}s)</title></g>"
        )
    for (t, name), row in zip(marks, mark_rows, strict=True):
        x, y = axis.x(t), my + row * mark_h
        # The tick spans its own row only: one reaching down from the bands would
        # cross the labels of the rows above it.
        body.append(
            f'<g class="witness-marker"><line x1="{_num(x)}" y1="{y}" x2="{_num(x)}" '
            f'y2="{y + mark_h - 1}" stroke="#000"/><text x="{_num(x + 2)}" y="{y + 10}" '
            f'font-size="9">{escape(name)}</text><title>{escape(name)} at {t:.2f}s</title></g>'
        )
    body += axis_svg(axis, height - 20)
    return _frame(height, body, "faults over time")


@dataclass(frozen=True)
class LogScale:
    """Whole decades from just below the smallest positive value to just above the
    largest, so every decade gets a labelled tick."""

    lo: float
    hi: float

    @classmethod
    def of(cls, values: Iterable[float]) -> LogScale:
        pos = [v for v in values if v > 0]
        lo = 10.0 ** math.floor(math.log10(min(pos, default=0.1)))
        hi = 10.0 ** math.ceil(math.log10(max(pos, default=1.0)))
        return cls(lo, max(hi, lo * 10))

    def frac(self, v: float) -> float:
        """0 at the bottom, 1 at the top; zero and below sit on the bottom."""
        return math.log10(max(v, self.lo) / self.lo) / math.log10(self.hi / self.lo)

    def ticks(self) -> list[float]:
        n = round(math.log10(self.hi / self.lo))
        return [self.lo * 10.0**i for i in range(n + 1)]


def tick_label(v: float, unit: str) -> str:
    """1000 ms reads as 1 s: a latency axis spans microseconds to tens of seconds."""
    if unit == "ms" and v >= 1000:
        return f"{v / 1000:g} s"
    return f"{v:g} {unit}"


def _y_ticks(ticks: Sequence[tuple[float, str]]) -> list[str]:
    out = []
    for y, label in ticks:
        out.append(
            f'<line class="y-tick" x1="{LEFT}" y1="{_num(y)}" x2="{WIDTH - RIGHT}" '
            f'y2="{_num(y)}" stroke="#e4e4e4" stroke-width="0.7"/>'
            f'<text x="{LEFT - 4}" y="{_num(y + 3)}" font-size="10" text-anchor="end">'
            f"{escape(label)}</text>"
        )
    return out


def line_chart(
    axis: Axis,
    series: dict[str, list[tuple[float, float]]],
    bands: Sequence[Band],
    title: str,
    unit: str,
    log_scale: bool = False,
    colors: dict[str, str] | None = None,
    max_gap: float | None = None,
) -> str:
    """Lines over time; with `max_gap`, points further apart than that (no data in
    between, e.g. no op completed) are not joined."""
    height, top, bottom = 184, 34, 162
    ys = [y for pts in series.values() for _, y in pts]
    scale = LogScale.of(ys) if log_scale else None
    ymax = max(ys, default=1.0) or 1.0

    def sy(v: float) -> float:
        frac = scale.frac(v) if scale is not None else v / ymax
        return bottom - frac * (bottom - top)

    body = [_DEFS, *bands_svg(axis, bands, bottom, top)]
    body.append(f'<text x="4" y="12" font-size="11" font-weight="bold">{escape(title)}</text>')
    if scale is not None:
        body += _y_ticks([(sy(v), tick_label(v, unit)) for v in scale.ticks()])
    else:
        body.append(f'<text x="4" y="{top + 10}" font-size="10">{ymax:.4g} {escape(unit)}</text>')
        body.append(f'<text x="4" y="{bottom}" font-size="10">0 </text>')
    legend_x = LEFT
    for i, (name, pts) in enumerate(series.items()):
        color = (colors or {}).get(name, PALETTE[i % len(PALETTE)])
        runs: list[list[tuple[float, float]]] = []
        for t, v in sorted(pts):
            if runs and (max_gap is None or t - runs[-1][-1][0] <= max_gap):
                runs[-1].append((t, v))
            else:
                runs.append([(t, v)])
        for run in runs:
            path = " ".join(f"{_num(axis.x(t))},{_num(sy(v))}" for t, v in run)
            if len(run) == 1:  # a lone bucket is a dot, not an invisible line
                x, y = path.split(",")
                body.append(f'<circle cx="{x}" cy="{y}" r="1.5" fill="{color}"/>')
                continue
            body.append(
                f'<polyline fill="none" stroke="{color}" stroke-width="1.3" points="{path}">'
                f"<title>{escape(name)}</title></polyline>"
            )
        body.append(
            f'<rect x="{legend_x}" y="18" width="10" height="8" fill="{color}"/>'
            f'<text x="{legend_x + 13}" y="26" font-size="10">{escape(name)}</text>'
        )
        legend_x += 20 + 7 * len(name)
    if not series:
        body.append(f'<text x="{LEFT}" y="80" font-size="11" fill="#555">no data</text>')
    body += axis_svg(axis, bottom)
    return _frame(height, body, title)


@dataclass(frozen=True)
class Segment:
    t0: float
    t1: float
    text: str
    color: str
    fill: float = 1.0  # share of the lane's height, e.g. ISR size / replicas
    tip: str = ""


def lanes_chart(
    axis: Axis, lanes: dict[str, list[Segment]], bands: Sequence[Band], title: str
) -> str:
    lane_h = 20
    top = 18
    height = top + lane_h * max(len(lanes), 1) + 22
    bottom = top + lane_h * max(len(lanes), 1)
    body = [_DEFS, *bands_svg(axis, bands, bottom, top)]
    body.append(f'<text x="4" y="12" font-size="11" font-weight="bold">{escape(title)}</text>')
    for i, (name, segs) in enumerate(lanes.items()):
        y = top + i * lane_h
        body.append(f'<text x="4" y="{y + 14}" font-size="10">{escape(name)}</text>')
        for s in segs:
            x0, x1 = axis.x(s.t0), axis.x(s.t1)
            h = (lane_h - 4) * s.fill
            body.append(
                f'<g><rect x="{_num(x0)}" y="{_num(y + 2 + (lane_h - 4) - h)}" '
                f'width="{_num(max(x1 - x0, 1.0))}" height="{_num(h)}" fill="{s.color}" '
                f'opacity="0.75"/><title>{escape(s.tip or s.text)}</title></g>'
            )
            if x1 - x0 > 7 * len(s.text) + 4:
                body.append(
                    f'<text x="{_num(x0 + 2)}" y="{y + 14}" font-size="10" fill="#000">'
                    f"{escape(s.text)}</text>"
                )
    body += axis_svg(axis, bottom)
    return _frame(height, body, title)


def offsets_chart(
    axis: Axis,
    bars: Iterable[tuple[float, float, int, int, str]],
    marks: Sequence[tuple[float, int, str, str]],
    bands: Sequence[Band],
    title: str,
) -> str:
    """bars: (t, width_s, lo, hi, color) per bucket and kind, drawn as vertical spans; marks:
    (t, offset, label, color), every one drawn, so down-sampling hides no marked position."""
    height, top, bottom = 170, 18, 148
    bars = list(bars)
    offs = [o for _, _, lo, hi, _ in bars for o in (lo, hi)] + [m[1] for m in marks]
    omin, omax = min(offs, default=0), max(offs, default=1)
    span = max(omax - omin, 1)

    def sy(o: float) -> float:
        return bottom - (o - omin) / span * (bottom - top)

    body = [_DEFS, *bands_svg(axis, bands, bottom, top)]
    body.append(f'<text x="4" y="12" font-size="11" font-weight="bold">{escape(title)}</text>')
    body.append(f'<text x="4" y="{top + 10}" font-size="10">offset {omax}</text>')
    body.append(f'<text x="4" y="{bottom}" font-size="10">offset {omin}</text>')
    for t, w, lo, hi, color in bars:
        x0, x1 = axis.x(t), axis.x(t + w)
        body.append(
            f'<rect x="{_num(x0)}" y="{_num(sy(hi))}" width="{_num(max(x1 - x0 - 0.5, 1))}" '
            f'height="{_num(max(sy(lo) - sy(hi), 1))}" fill="{color}" opacity="0.45"/>'
        )
    for t, o, label, color in marks:
        x, y = axis.x(t), sy(o)
        body.append(
            f'<g class="marked-position"><path d="M{_num(x - 4)},{_num(y - 4)} l8,8 m0,-8 l-8,8" '
            f'stroke="{color}" stroke-width="2"/><title>{escape(label)}</title></g>'
        )
    body += axis_svg(axis, bottom)
    return _frame(height, body, title)
