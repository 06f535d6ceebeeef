"""The shrink guard's rule: may a new build of a month replace the one the lake holds?

A month folder that holds only some of its files (a sync cut short, a prefix half
copied, a daily file deleted by mistake) parses without a single error: every line read is
fine, there are just fewer of them. Replacing the lake's month with that result would drop
the lost days from every table downstream, silently. So before ``raw_logs`` and
``raw_rejects`` replace a month, the new build is compared with the one the lake holds
(its row count, and the files of its manifest), and refused when it looks shrunk:

- a source file it was built from is gone, or was cut short (fewer lines than it had);
- or there are more than ``max_fraction`` (0.2) fewer accepted lines.

Files added, grown or rewritten are fine: a month grows as its logs arrive. A month built
before manifests were kept has no file list: only the line counts are compared, and the
comparison says so. A month whose ``raw_logs`` partition is gone (retention deletes it and
keeps the manifest) is still compared: its files with the manifest's, and the new accepted
lines with the manifest's total; only a month with neither is a first build. An operator allows an intended shrink explicitly (a setting, or a run
tag for one run); the comparison is kept in the metadata either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from arena_assets.ingest.manifest import Manifest, SourceFile

DEFAULT_MAX_FRACTION = 0.2
NAMES_SHOWN = 3  # files named in the one-line refusal; the metadata lists them all


class ShrinkError(RuntimeError):
    """A new build of a month would replace a bigger one; nothing was written."""

    def __init__(self, message: str, comparison: BuildComparison) -> None:
        super().__init__(message)
        self.comparison = comparison


@dataclass(frozen=True)
class ShrinkRule:
    """``max_fraction``: the share of accepted lines a month may lose; ``allowed_by``: who
    allowed a shrink for this build (a setting or a run tag), empty = nobody;
    ``how_to_allow``: the end of the refusal line (what the operator can do)."""

    max_fraction: float = DEFAULT_MAX_FRACTION
    allowed_by: str = ""
    how_to_allow: str = "set ARENA_ALLOW_SHRINK=true"


@dataclass
class BuildComparison:
    """A new build of a month against the one in the lake (``lines_before`` None: the lake
    has no such month, nothing is replaced)."""

    month: str
    lines_before: int | None
    lines_after: int
    files_before: int | None  # None: the lake's month has no manifest
    files_after: int
    bytes_before: int | None
    bytes_after: int
    gone: list[str] = field(default_factory=list)
    cut_short: list[str] = field(default_factory=list)  # "name (lines before → after)"
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)  # same name, other content
    compared: str = ""  # what was compared, in words
    asset: str = "raw_logs"  # the table the build replaces

    @property
    def lost_fraction(self) -> float:
        """Share of the accepted lines the new build loses (negative when it grows)."""
        if not self.lines_before:
            return 0.0
        return (self.lines_before - self.lines_after) / self.lines_before

    def shrinks(self, max_fraction: float) -> bool:
        if self.lines_before is None:
            return False
        return bool(self.gone or self.cut_short) or self.lost_fraction > max_fraction

    def losses(self, max_fraction: float) -> str:
        """What the new build lost, in words: files gone or cut short, and the counts."""
        what = []
        if self.gone:
            what.append(
                f"{len(self.gone)} of its {self.files_before} source files are gone "
                f"({_some(self.gone)})"
            )
        if self.cut_short:
            what.append(f"{len(self.cut_short)} cut short ({_some(self.cut_short)})")
        what.append(
            f"accepted lines {self.lines_before or 0:,} → {self.lines_after:,} "
            f"({-self.lost_fraction:+.1%}; the limit is -{max_fraction:.0%})"
        )
        return "; ".join(what)

    def refusal(self, rule: ShrinkRule) -> str:
        """The one line that refuses the build: the month, what went missing, the counts,
        and how to allow it."""
        return (
            f"{self.asset} {self.month}: refused to replace the month with a smaller build "
            f"(nothing written, the lake keeps it): {self.losses(rule.max_fraction)}. If the "
            f"shrink is intended, {rule.how_to_allow}"
        )

    def as_metadata(self) -> dict:
        return {
            "compared": self.compared,
            "accepted_lines": {"before": self.lines_before, "after": self.lines_after},
            "change": None if not self.lines_before else round(-self.lost_fraction, 4),
            "files": {"before": self.files_before, "after": self.files_after},
            "bytes": {"before": self.bytes_before, "after": self.bytes_after},
            "files_gone": self.gone,
            "files_cut_short": self.cut_short,
            "files_added": self.added,
            "files_changed": self.changed,
        }


def _some(names: list[str]) -> str:
    shown = ", ".join(names[:NAMES_SHOWN])
    more = len(names) - NAMES_SHOWN
    return shown + (f" and {more} more" if more > 0 else "")


def compare_builds(
    month: str,
    lines_before: int | None,
    before: Manifest | None,
    files: list[SourceFile],
    lines_after: int,
    no_manifest_why: str = "",
    asset: str = "raw_logs",
) -> BuildComparison:
    """The new build (``files``, ``lines_after`` accepted lines) against the lake's month
    (``lines_before`` accepted rows, None when it has none; ``before``: its manifest).
    ``no_manifest_why``: why the manifest is missing, when it is (e.g. unreadable)."""
    out = BuildComparison(
        month,
        lines_before,
        lines_after,
        None if before is None else len(before.files),
        len(files),
        None if before is None else before.bytes,
        sum(f.size for f in files),
        asset=asset,
    )
    gone_partition = lines_before is None and before is not None
    if gone_partition:  # raw_logs deleted (retention), its manifest kept: what it was built from
        out.lines_before = before.accepted
    if out.lines_before is None:
        out.compared = "first build: the lake had no such month"
        return out
    if before is None:
        why = no_manifest_why or "it was built before manifests were kept"
        out.compared = f"accepted lines only: the lake's month has no file list ({why})"
        return out
    now = {f.name: f for f in files}
    then = {f.name: f for f in before.files}
    out.gone = sorted(set(then) - set(now))
    out.added = sorted(set(now) - set(then))
    for name in sorted(set(then) & set(now)):
        old, new = then[name], now[name]
        if new.lines < old.lines:
            out.cut_short.append(f"{name} ({old.lines:,} → {new.lines:,} lines)")
        elif (old.size, old.sha256) != (new.size, new.sha256):
            out.changed.append(name)
    out.compared = "source files (names, sizes, SHA-256, lines) and accepted lines"
    if gone_partition:
        out.compared += f" of the manifest: the month's {asset} partition is gone (retention?)"
    return out
