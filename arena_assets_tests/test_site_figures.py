"""The heatmaps' numbers can be read: every cell's value is written in the cell, at the
figure's value size, in black or white, whichever contrasts with the cell's colour by at
least WCAG's 4.5:1 (the win fractions' red-blue scale is dark at both ends, the counts'
blue scale light at its low end). The browser test measures their size on screen."""

from __future__ import annotations

import re

import numpy as np
import pytest
from matplotlib import colormaps
from matplotlib.colors import Normalize

from arena_assets.site.plots import HEATMAP_VALUE_SIZE, heatmap


def _luminance(rgb) -> float:
    c = [v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4 for v in rgb]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def _contrast(a: float, b: float) -> float:
    return (max(a, b) + 0.05) / (min(a, b) + 0.05)


@pytest.mark.parametrize(
    ("cmap", "fmt", "vmax"), [("RdBu", "{:.2f}", 1.0), ("Blues", "{:.0f}", None)]
)
def test_every_heatmap_value_contrasts_with_its_cell(cmap, fmt, vmax):
    n = 12
    values = np.linspace(0.0, 1.0 if vmax else 800.0, n * n).reshape(n, n)
    np.fill_diagonal(values, np.nan)
    models = [f"model-{i:02d}" for i in range(n)]
    svg = heatmap(values, models, "t", fmt=fmt, cmap=cmap, vmin=0.0, vmax=vmax).decode()
    labels = svg.split('<g class="labels"', 1)[1]
    cells = re.findall(r'font-size="([\d.]+)" fill="(#[0-9a-f]{6})">([^<]+)</text>', labels)
    cells = [(float(size), fill, text) for size, fill, text in cells if text not in models]
    assert len(cells) == n * n - n  # one value per cell, none on the empty diagonal
    norm = Normalize(0.0, vmax if vmax else float(np.nanmax(values)))
    shown = [fmt.format(v) for v in values[~np.isnan(values)]]
    assert [text for _, _, text in cells] == shown
    colours = colormaps[cmap](norm(values[~np.isnan(values)]))
    fills = set()
    for (size, fill, text), cell in zip(cells, colours, strict=True):
        assert size == HEATMAP_VALUE_SIZE >= 8
        ink = _luminance([int(fill[k : k + 2], 16) / 255 for k in (1, 3, 5)])
        assert _contrast(ink, _luminance(cell[:3])) >= 4.5, (text, fill, cell)
        fills.add(fill)
    assert fills == {"#000000", "#ffffff"}  # both inks used across the scale
