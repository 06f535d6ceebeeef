"""Headless figures as PNG bytes: matplotlib on the Agg backend (no display on servers)."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt

__all__ = ["plt", "png_bytes"]


def png_bytes(fig, dpi: int = 110) -> bytes:
    """``fig`` as PNG bytes, closed afterwards; no software tag, so reruns give equal bytes."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
