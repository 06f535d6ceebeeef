"""Reading the leaderboard site's pages back as a reader's browser gets them (tests only):
the board tables from the static HTML, with no JavaScript run."""

from __future__ import annotations

from html.parser import HTMLParser


class BoardPage(HTMLParser):
    """Rows of every board table on a page: ``rows[variant]`` is a list of dicts with the
    row's ``model``, ``classes``, ``reason`` (the "unranked, because ..." text) and, per cell class (``rank``, ``second``, ``score``,
    ``votes``), its ``data-v`` / ``data-v-all`` and the text of the default view."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.rows: dict[str, list[dict]] = {}
        self.variant: str | None = None
        self.row: dict | None = None
        self.cell: str | None = None
        self.hide = 0  # inside a span of the show-deprecated view (.v-all)
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        classes = (a.get("class") or "").split()
        if tag == "section" and any(c.startswith("variant-") for c in classes):
            self.variant = next(c for c in classes if c.startswith("variant-"))[8:]
            self.rows.setdefault(self.variant, [])
        elif tag == "tr" and "data-model" in a and self.variant:
            self.row = {"model": a["data-model"], "classes": classes, "cells": {},
                        "reason": None}
        elif tag == "td" and self.row is not None:
            kind = next((c for c in classes if c in ("rank", "second", "score", "votes")), None)
            self.cell = kind
            if kind:
                self.row["cells"][kind] = {"v": a.get("data-v"), "v_all": a.get("data-v-all"),
                                           "text": ""}
        elif tag == "span" and "v-all" in classes:
            self.hide += 1
        elif tag == "span" and self.hide:
            self.hide += 1

    def handle_endtag(self, tag):
        if tag == "span" and self.hide:
            self.hide -= 1
        elif tag == "td":
            self.cell = None
        elif tag == "tr" and self.row is not None:
            self.rows[self.variant].append(self.row)
            self.row = None
        elif tag == "section":
            self.variant = None

    def handle_data(self, data):
        if self.row is not None and self.cell and not self.hide:
            self.row["cells"][self.cell]["text"] += data.strip()
        if self.row is not None and data.strip().startswith("unranked, because"):
            self.row["reason"] = data.strip()
