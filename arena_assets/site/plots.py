"""The site's figures as SVG, drawn by matplotlib (no JavaScript, no CDN, text kept as text).

Same data, same bytes: the SVG ids come from a fixed salt (``svg.hashsalt``) and no date
is written. Figures are built on ``matplotlib.figure.Figure`` (no pyplot state), with fixed
margins sized from the labels rather than ``bbox_inches="tight"``, which draws every
figure twice. Inputs are plain lists and numpy arrays, so a figure can be drawn in
another process.

Labels that come by the dozen (model names along a categorical axis, the value of each
point, bar and heatmap cell) are written as SVG text at positions taken from the axes'
transform (``Overlay``) instead of as matplotlib Tick and Text artists: each artist costs
~1-3 ms to lay out, which made the figures most of a month's build time (a 100-model
month has ~170 figures); formatted strings cost nothing. Axes, spines, numeric ticks,
titles and the data are matplotlib's.
"""

from __future__ import annotations

import io
from html import escape

import matplotlib
import numpy as np
from matplotlib.figure import Figure

BLUE, LIGHT, RED, GREEN, GREY = "#1f5fa6", "#8fb3de", "#c0392b", "#1e8449", "#888888"
STYLE = {
    "svg.hashsalt": "arena-assets-site",
    "svg.fonttype": "none",
    "font.size": 8,
    "axes.titlesize": 9,
    "font.family": "DejaVu Sans",
}
CHAR_IN = 0.062  # inches per character of a 7-point label
# the heatmaps are read cell by cell: cells of half an inch with 8-point values, drawn at
# their natural size (the page scrolls them rather than shrink them), ~11 px on screen
HEATMAP_CELL_IN = 0.5
HEATMAP_VALUE_SIZE = 8.0
HEATMAP_LABEL_SIZE = 8.0


def _svg(fig: Figure) -> bytes:
    buf = io.BytesIO()
    with matplotlib.rc_context(STYLE):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    return buf.getvalue()


def _figure(
    width: float, height: float, left: float, bottom: float, right: float = 0.2, top: float = 0.35
) -> tuple[Figure, object]:
    """A figure of width x height inches with margins in inches (labels need room)."""
    with matplotlib.rc_context(STYLE):
        # 72 dpi: display units are the SVG's points, so positions computed from the
        # transforms (the heatmap's cell values) land where the artists are drawn
        fig = Figure(figsize=(width, height), dpi=72)
        ax = fig.add_subplot()
    fig.subplots_adjust(
        left=left / width, right=1 - right / width, bottom=bottom / height, top=1 - top / height
    )
    return fig, ax


class Overlay:
    """SVG text placed at data coordinates of ``ax`` (offsets ``dx``/``dy`` in points, y
    downwards), added to the figure's SVG by ``svg()``. Call once the limits are final."""

    def __init__(self, fig: Figure, ax) -> None:
        self.fig, self.ax, self.items = fig, ax, []
        ax.get_xlim(), ax.get_ylim()  # settle autoscaled limits before reading transforms
        self.height = fig.get_figheight() * 72.0  # 72 dpi: display units are SVG points

    def add(
        self,
        x: float,
        y: float,
        text: str,
        *,
        anchor: str = "middle",
        baseline: str = "central",
        dx: float = 0.0,
        dy: float = 0.0,
        rotate: bool = False,
        size: float = 6.0,
        fill: str = "#000000",
    ) -> None:
        px, py = self.ax.transData.transform((x, y))
        cx, cy = px + dx, self.height - py + dy
        turn = f' transform="rotate(-90 {cx:.2f} {cy:.2f})"' if rotate else ""
        self.items.append(
            f'<text x="{cx:.2f}" y="{cy:.2f}" text-anchor="{anchor}" '
            f'dominant-baseline="{baseline}" font-size="{size}" '
            f'fill="{fill}"{turn}>{escape(text)}</text>'
        )

    def svg(self) -> bytes:
        group = (
            '<g class="labels" style="font-family: \'DejaVu Sans\', sans-serif">'
            + "".join(self.items)
            + "</g>\n"
        )
        return _svg(self.fig).replace(b"</svg>", group.encode() + b"</svg>")


def _categories(overlay: Overlay, names: list[str], y: float) -> None:
    """Model names below the x axis at 0..n-1, rotated, hanging from the axis."""
    overlay.ax.set_xticks([])
    for i, name in enumerate(names):
        overlay.add(i, y, name, anchor="end", dy=4, rotate=True, size=7)


def _errors(centre, lower, upper) -> tuple[np.ndarray, list[np.ndarray]]:
    """Centre and [below, above] error bar lengths; a percentile interval may miss its
    point estimate on thin data, so a negative or unknown length is drawn as none."""
    c = np.asarray(centre, dtype=float)
    below = np.nan_to_num(c - np.asarray(lower, dtype=float), nan=0.0).clip(0)
    above = np.nan_to_num(np.asarray(upper, dtype=float) - c, nan=0.0).clip(0)
    return c, [below, above]


def _label_room(labels: list[str], size: float = 7.0) -> float:
    return 0.25 + CHAR_IN * size / 7.0 * max((len(s) for s in labels), default=4)


def intervals(
    models: list[str], rating: list[float], lower: list[float], upper: list[float], title: str
) -> bytes:
    """Each model's score with its interval, best first (FastChat's "confidence intervals
    on model strength"), the rounded score written beside the point."""
    n = len(models)
    room = _label_room(models)
    fig, ax = _figure(max(4.0, 0.28 * n + 1.2), 3.2 + room, 0.7, room)
    x = np.arange(n)
    r, err = _errors(rating, lower, upper)
    ax.errorbar(x, r, yerr=err, fmt="o", color=BLUE, ecolor=LIGHT, capsize=2, markersize=3)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylabel("score (95% interval)" if n else "")
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    labels = Overlay(fig, ax)
    _categories(labels, models, ax.get_ylim()[0])
    for xi, ri in zip(x, r):
        labels.add(xi, ri, f"{ri:.0f}", anchor="start", dx=4)
    return labels.svg()


def bars(
    models: list[str], values: list[float], title: str, ylabel: str, fmt: str = "{:.2f}"
) -> bytes:
    """One bar per model with its value on top (FastChat's average win rate)."""
    n = len(models)
    room = _label_room(models)
    fig, ax = _figure(max(4.0, 0.28 * n + 1.2), 3.0 + room, 0.7, room)
    x = np.arange(n)
    ax.bar(x, values, color=BLUE)
    ax.set_xlim(-0.7, n - 0.3)
    ax.set_ylim(0, max([*values, 0.01]) * 1.12)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(axis="y", alpha=0.3)
    labels = Overlay(fig, ax)
    _categories(labels, models, 0.0)
    for xi, v in zip(x, values):
        labels.add(xi, v, fmt.format(v), baseline="auto", dy=-2)
    return labels.svg()


def heatmap(
    matrix: np.ndarray,
    models: list[str],
    title: str,
    *,
    fmt: str,
    cmap: str,
    vmin: float | None = None,
    vmax: float | None = None,
) -> bytes:
    """Row model (A) against column model (B), each cell annotated; blank where no battle
    (FastChat's win-fraction and battle-count heatmaps, column labels on top)."""
    matrix = np.asarray(matrix, dtype=float)
    n = len(models)
    room = _label_room(models, HEATMAP_LABEL_SIZE)
    cell = HEATMAP_CELL_IN
    fig, ax = _figure(
        cell * n + room + 1.3, cell * n + room + 0.6, room + 0.2, 0.4, right=1.1, top=room + 0.4
    )
    image = ax.imshow(
        np.ma.masked_invalid(matrix),
        cmap=cmap,
        vmin=vmin,
        vmax=vmax,
        aspect="auto",
        interpolation="nearest",
    )
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_xlabel(f"Model B · {title}")
    ax.set_ylabel("Model A", labelpad=room * 72 - 8)
    fig.colorbar(image, ax=ax, fraction=0.04, pad=0.02).ax.tick_params(labelsize=7)
    labels = Overlay(fig, ax)
    for i, name in enumerate(models):
        labels.add(-0.5, i, name, anchor="end", dx=-4, size=HEATMAP_LABEL_SIZE)
        labels.add(i, -0.5, name, anchor="start", dy=-4, rotate=True, size=HEATMAP_LABEL_SIZE)
    for i, j in zip(*np.nonzero(~np.isnan(matrix))):
        labels.add(
            j,
            i,
            fmt.format(matrix[i, j]),
            size=HEATMAP_VALUE_SIZE,
            fill=text_colour(image.to_rgba(matrix[i, j])),
        )
    return labels.svg()


def text_colour(rgba) -> str:
    """Black on a light cell, white on a dark one (the cell's relative luminance, as WCAG
    computes it, against the middle grey where both contrast the same)."""
    channels = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * channels[0] + 0.7152 * channels[1] + 0.0722 * channels[2]
    return "#000000" if luminance > 0.179 else "#ffffff"


def _draw_history(ax, series, months: list[str]) -> None:
    where = {m: i for i, m in enumerate(months)}
    for name, ms, rating, lower, upper in series:
        x = [where[m] for m in ms]
        (line,) = ax.plot(x, rating, marker="o", markersize=3, label=name)
        ax.fill_between(
            x,
            np.asarray(lower, dtype=float),
            np.asarray(upper, dtype=float),
            alpha=0.15,
            color=line.get_color(),
        )
    ax.set_xticks(range(len(months)), months, fontsize=7, rotation=45 if len(months) > 8 else 0)
    ax.set_xlim(-0.4, max(len(months) - 0.6, 0.4))


def history(
    series: list[tuple[str, list[str], list[float], list[float], list[float]]], title: str
) -> bytes:
    """Score per month with its interval band, one line per (model, months, rating, lower,
    upper)."""
    months = sorted({m for _, ms, *_ in series for m in ms})
    fig, ax = _figure(6.4, 3.4, 0.7, 0.6, right=2.0 if len(series) > 1 else 0.2)
    _draw_history(ax, series, months)
    ax.set_ylabel("score (interval)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if len(series) > 1:
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return _svg(fig)


def histories(
    series: list[tuple[str, list[str], list[float], list[float], list[float]]], titles: list[str]
) -> list[bytes]:
    """One single-model ``history`` figure per series, drawn on one reused figure (half the
    cost of a figure each; a month has a page, and this figure, per model)."""
    fig, ax = _figure(6.4, 3.4, 0.7, 0.6)
    ax.set_ylabel("score (interval)")
    ax.grid(alpha=0.3)
    out = []
    for one, title in zip(series, titles):
        for artist in [*ax.lines, *ax.collections]:
            artist.remove()
        ax.set_prop_cycle(None)
        _draw_history(ax, [one], sorted(set(one[1])))
        ax.relim()
        ax.autoscale_view(scalex=False)
        ax.set_title(title)
        out.append(_svg(fig))
    return out


def _interval_rows(
    names: list[str],
    value: list[float],
    lower: list[float],
    upper: list[float],
    reference: float,
    width: float,
    row: float,
    **marker,
) -> tuple:
    """One row per name: the value with its interval and a reference line (the figure
    and axes, for the caller's own limits)."""
    n = len(names)
    fig, ax = _figure(width, row * n + 1.0, _label_room(names), 0.5)
    y = np.arange(n)[::-1]
    v, err = _errors(value, lower, upper)
    ax.errorbar(v, y, xerr=err, fmt="o", color=BLUE, ecolor=LIGHT, **marker)
    ax.axvline(reference, color=GREY, linewidth=0.8)
    ax.set_yticks(y, names, fontsize=7)
    return fig, ax


def coefficients(
    names: list[str], coef: list[float], lower: list[float], upper: list[float], title: str
) -> bytes:
    """Style coefficients with their intervals (logit per standard deviation)."""
    fig, ax = _interval_rows(names, coef, lower, upper, 0, 5.0, 0.4, capsize=3)
    ax.set_xlabel("coefficient (logit per standard deviation)")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)


def bench_vs_human(models: list[str], bench: list[float], human: list[float], title: str) -> bytes:
    """Each shared model's bench score against its arena score."""
    fig, ax = _figure(5.0, 4.0, 0.7, 0.6)
    ax.scatter(human, bench, color=BLUE, s=14)
    ax.margins(x=0.2, y=0.1)  # room for the names beside the points
    for name, h, b in zip(models, human, bench):
        ax.annotate(name, (h, b), textcoords="offset points", xytext=(3, 3), fontsize=6)
    ax.set_xlabel("arena score (human votes)")
    ax.set_ylabel("bench score (LLM judge)")
    ax.set_title(title)
    ax.grid(alpha=0.3)
    return _svg(fig)


def win_rate_intervals(
    models: list[str], rate: list[float], lower: list[float], upper: list[float], title: str
) -> bytes:
    """Bench win rate against the baseline with its interval, one row per model."""
    fig, ax = _interval_rows(models, rate, lower, upper, 0.5, 5.5, 0.3, capsize=2, markersize=3)
    ax.set_xlim(0, 1)
    ax.set_xlabel("win rate against the baseline")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    return _svg(fig)
