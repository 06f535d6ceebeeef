"""Copilot Arena's records as completion battles: its server's records and its release.

``records`` reads one record (a completion shown, an outcome, a release row; the layouts
are described there); here the month's files are read, the records grouped into pairs by
the top completion's ``completionId`` and merged into one battle per pair:

- the two completion records of a pair and its outcome (when the user accepted one) make
  one battle (``records`` = 3; 2 without an outcome, 1 for an outcome whose completion
  records are not in the month's files). The time is the outcome's own ``timestamp``
  (when the choice arrived) where there is one, else the later completion's (as Copilot
  Arena's ``scores.process_completions`` does); a choice that arrives after midnight on
  the last day of a month belongs to the next month, where its outcome is a battle of its
  own, while its completions make an unaccepted battle in the earlier month;
- a pair shown and never accepted is a battle with winner ``tie (bothbad)`` (``accepted``
  false): Copilot Arena's ``scores.process_completions`` labels such pairs so, but its
  board (``get_scores``) is fitted on outcomes alone, as ``copilot_leaderboard`` is;
- a completion whose partner is missing is ``unpaired_completion``; records that disagree
  (models, ids) are ``bad_items``; a repeated record is ``duplicate_pair``.

Every record ends in a battle or in a reject with a reason (``COMPLETION_REJECT_REASONS``).
A record of a user on the lake's forget list (``ingest/forgotten.py``) is a
``forgotten_user`` reject that keeps no text, only its file, line and user hash.

Cleaning: the code text is kept only where Copilot Arena's release keeps it, i.e. for
users whose privacy setting is ``Research`` (the release's rows are published, so they
are Research too), and only the parts the release has (prefix, suffix, the two
completions): never the model prompt, the raw completion, the full prefix / suffix, the
repository URL or the username. Kept text goes through the project's PII redaction, which
includes secrets (provider API keys, JWTs, credentials in URLs). The userId becomes a
salted hash. A rejected record keeps its shape, never its code or identity: every
sensitive key's value is ``"<REMOVED>"`` (``records.blank_sensitive``), the userId is
blanked by ``clean.rejects`` (which knows it as an identity field), then the text is
PII-redacted and cut.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from arena_assets.clean.pii import redact_frame
from arena_assets.clean.rejects import blank_reject, redact_rejects
from arena_assets.completions.records import (
    COPILOT_LOG,
    COPILOT_RELEASE,
    KEEP_TEXT,
    PARSERS,
    RELEASE_FIELDS,
    Half,
    blank_sensitive,
    detect,
)
from arena_assets.completions.schema import COMPLETION_BATTLES_SCHEMA, COMPLETION_REJECTS_SCHEMA
from arena_assets.contracts import FORGOTTEN_USER, REJECT_RAW_CHARS
from arena_assets.ingest import sources
from arena_assets.ingest.releases import loads_lenient
from arena_assets.ingest.validate import Checker, Reject, short, tname


@dataclass
class ParsedCompletions:
    halves: list[Half] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)
    records_read: int = 0


def _reject(
    out: ParsedCompletions,
    month: str,
    source: str,
    line_no: int,
    reason: str,
    detail: str,
    raw: str,
    checker: Checker,
) -> None:
    detail2, text, user = blank_reject(blank_sensitive(raw), detail, checker.user_hash)
    if user is not None and user in checker.forgotten:
        reason, detail2, text = FORGOTTEN_USER, "", ""
    out.rejects.append(
        {
            "month": month,
            "source_file": source,
            "line_no": line_no,
            "reason": reason,
            "detail": detail2,
            "raw": text,
            "user_hash": user,
        }
    )


def _late_reject(out: ParsedCompletions, month: str, half: Half, reason: str, detail: str) -> None:
    """A record refused when its pair is merged (its text is not kept past parsing)."""
    out.rejects.append(
        {
            "month": month,
            "source_file": half.source_file,
            "line_no": half.line_no,
            "reason": reason,
            "detail": detail,
            "raw": "",
            "user_hash": half.fields["user"],
        }
    )


def _records(url: str, storage_options: dict | None) -> Iterator[tuple[Any, str]]:
    """(decoded record or a Reject, raw text) of every record of one file, in order."""
    kind = sources.file_kind(url)
    if kind == "parquet":
        for batch in sources.iter_parquet_records(url, storage_options):
            for rec in batch:
                yield rec, orjson.dumps(rec, default=str).decode()
    elif kind == "csv":
        for batch in sources.iter_csv_records(url, storage_options):
            for rec in batch:
                yield rec, orjson.dumps(rec, default=str, option=orjson.OPT_NON_STR_KEYS).decode()
    elif kind == "json":
        value = loads_lenient(sources.read_bytes(url, storage_options))
        for rec in value if type(value) is list else [value]:
            yield rec, orjson.dumps(rec, default=str).decode()
    else:
        for block in sources.iter_line_blocks(url, storage_options):
            for line in block:
                text = line.decode("utf-8", "replace")
                if not line.strip():
                    yield Reject("empty_line", "blank line"), text
                    continue
                try:
                    yield loads_lenient(line), text
                except ValueError as exc:
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as err:
                        yield Reject("invalid_utf8", f"byte {err.start}: {err.reason}"), text
                        continue
                    yield Reject("invalid_json", str(exc)[:200]), text


def parse_files(
    root: str,
    month: str,
    *,
    salt: str,
    known_models: set[str] | None = None,
    storage_options: dict | None = None,
    forgotten: frozenset[str] = frozenset(),
) -> tuple[ParsedCompletions, sources.MonthListing]:
    """Every record of the month's files under ``root`` as a Half or a reject; the
    records of ``forgotten`` user hashes as ``forgotten_user`` rejects without text."""
    listing = sources.scan_month(root, month, storage_options)
    checker = Checker(month, salt, known_models, forgotten)
    out = ParsedCompletions()
    for url in listing.files:
        source = sources.relative_name(root, url, storage_options)
        for line_no, (rec, raw) in enumerate(_records(url, storage_options), start=1):
            out.records_read += 1
            try:
                if isinstance(rec, Reject):
                    raise rec
                if type(rec) is not dict:
                    raise Reject("not_an_object", f"record is {tname(rec)}")
                fmt = detect(rec)
                if fmt is None:
                    raise Reject(
                        "unknown_layout",
                        f"keys {sorted(map(str, rec))[:12]}; expected a "
                        "Copilot Arena record (/add_completion: completionId, "
                        "model; /add_completion_outcome: completionItems) or a "
                        "release row (" + ", ".join(RELEASE_FIELDS) + ")",
                    )
                kind, key, fields = PARSERS[fmt](checker, rec)
                if fields["user"] in checker.forgotten:
                    out.rejects.append(
                        {
                            "month": month,
                            "source_file": source,
                            "line_no": line_no,
                            "reason": FORGOTTEN_USER,
                            "detail": "",
                            "raw": "",
                            "user_hash": fields["user"],
                        }
                    )
                    continue
                source_format = COPILOT_RELEASE if fmt == COPILOT_RELEASE else COPILOT_LOG
                out.halves.append(Half(kind, key, fields, line_no, source, source_format))
            except Reject as rej:
                _reject(out, month, source, line_no, rej.reason, rej.detail, raw, checker)
    return out, listing


def _sides(slot: dict[str, Half]) -> dict:
    """The battle's per-side fields (a / b) from its completion records, else its outcome."""
    out = {}
    outcome = slot.get("outcome")
    for side, kind in (("a", "top"), ("b", "bottom")):
        rec = slot.get(kind)
        for name in ("model", "latency", "completion", "completion_length", "completion_id"):
            value = rec.fields[name] if rec is not None else None
            if value is None and outcome is not None:
                value = outcome.fields[f"{name}_{side}"]
            out[f"{name}_{side}"] = value
    return out


def _check_pair(slot: dict[str, Half]) -> str | None:
    """Why the records of one pair cannot be one battle, or None."""
    top, bottom, outcome = slot.get("top"), slot.get("bottom"), slot.get("outcome")
    if (
        top is not None
        and bottom is not None
        and top.fields["pair_completion_id"] != bottom.fields["completion_id"]
    ):
        return "the top completion's pairCompletionId is not the bottom one's completionId"
    if outcome is not None:
        for side, rec in (("a", top), ("b", bottom)):
            if rec is not None and (rec.fields["model"], rec.fields["completion_id"]) != (
                outcome.fields[f"model_{side}"],
                outcome.fields[f"completion_id_{side}"],
            ):
                return f"the outcome's side {side} disagrees with its completion record"
    return None


def merge_pairs(parsed: ParsedCompletions, month: str) -> pl.DataFrame:
    """One battle per pair (see the module docstring); records that cannot join one
    become rejects in ``parsed``."""
    pairs: dict[str, dict[str, Half]] = {}
    for half in parsed.halves:
        slot = pairs.setdefault(half.key, {})
        if half.kind in slot:
            _late_reject(
                parsed,
                month,
                half,
                "duplicate_pair",
                f"pair {short(half.key)}: its {half.kind} record appeared earlier in the month",
            )
            continue
        slot[half.kind] = half
    rows = []
    for key, slot in pairs.items():
        halves = list(slot.values())
        why = _check_pair(slot)
        if why is None and "outcome" not in slot and len(slot) == 1:
            missing = "bottom" if "top" in slot else "top"
            why = f"the pair's {missing} completion is not in the month's files"
            reason = "unpaired_completion"
        else:
            reason = "bad_items"
        sides = _sides(slot)
        if why is None and sides["model_a"] == sides["model_b"]:
            why, reason = f"both completions are {short(sides['model_a'])}", "same_model_battle"
        if why is not None:
            for half in halves:
                _late_reject(parsed, month, half, reason, why)
            continue
        outcome = slot.get("outcome")
        shared = next(
            h for h in (outcome, slot.get("top"), slot.get("bottom")) if h is not None
        ).fields
        text = next((h.fields for h in halves if h.fields.get("prefix") is not None), shared)
        ts = (
            outcome.fields["tstamp"]
            if outcome is not None
            else max(h.fields["tstamp"] for h in halves)
        )
        accepted = outcome.fields["accepted_index"] if outcome is not None else None
        first = min(halves, key=lambda h: (h.source_file, h.line_no))
        rows.append(
            {
                **{
                    k: shared[k]
                    for k in ("user", "privacy", "mid_span", "prefix_length", "suffix_length")
                },
                **sides,
                "file_type": next(
                    (h.fields["file_type"] for h in halves if h.fields["file_type"]), None
                ),
                "prefix": text["prefix"],
                "suffix": text["suffix"],
                "tstamp": ts,
                "month": month,
                "pair_id": key,
                "winner": "tie (bothbad)" if accepted is None else ("model_a", "model_b")[accepted],
                "accepted": accepted is not None,
                "records": len(halves),
                "source_file": first.source_file,
                "source_format": first.source_format,
            }
        )
    return _battle_frame(rows)


_ROW_TYPES = {
    **{
        c: t
        for c, t in COMPLETION_BATTLES_SCHEMA.items()
        if c not in ("tstamp", "user_hash", "prefix_lines", "redactions", "secrets_redacted")
    },
    "tstamp": pl.Int64,
    "user": pl.String,
}


def _battle_frame(rows: list[dict]) -> pl.DataFrame:
    frame = pl.DataFrame({c: [r.get(c) for r in rows] for c in _ROW_TYPES}, schema=_ROW_TYPES)
    return frame.rename({"user": "user_hash"}).with_columns(
        pl.from_epoch("tstamp", time_unit="us").dt.replace_time_zone("UTC")
    )


def clean_battles(battles: pl.DataFrame) -> pl.DataFrame:
    """Text only for privacy Research, redacted (PII and secrets counted), the position in
    the file taken before the text is dropped; columns in the contract's order."""
    keep = pl.col("privacy") == KEEP_TEXT
    out = battles.with_columns(
        (pl.col("prefix").str.count_matches("\n") + 1).cast(pl.Int32).alias("prefix_lines"),
        pl.col("completion_length_a").fill_null(
            pl.col("completion_a").str.len_chars().cast(pl.Int64)
        ),
        pl.col("completion_length_b").fill_null(
            pl.col("completion_b").str.len_chars().cast(pl.Int64)
        ),
    ).with_columns(
        *[
            pl.when(keep).then(pl.col(c)).otherwise(None).alias(c)
            for c in ("prefix", "suffix", "completion_a", "completion_b")
        ]
    )
    redactions = pl.zeros(out.height, pl.Int32, eager=True)
    secrets = pl.zeros(out.height, pl.Int32, eager=True)
    for col in ("prefix", "suffix", "completion_a", "completion_b"):
        done = redact_frame(out.select(pl.col(col).fill_null("")), col)
        counts = done.select(pl.sum_horizontal(pl.selectors.starts_with("pii_"))).to_series()
        redactions = redactions + counts.cast(pl.Int32)
        secrets = secrets + done["pii_secret"]
        out = out.with_columns(
            pl.when(pl.col(col).is_not_null()).then(done[col]).otherwise(None).alias(col)
        )
    out = out.with_columns(redactions.alias("redactions"), secrets.alias("secrets_redacted"))
    return out.select([pl.col(c).cast(t) for c, t in COMPLETION_BATTLES_SCHEMA.items()]).sort(
        "tstamp", "pair_id"
    )


def reject_frame(rejects: list[dict]) -> pl.DataFrame:
    """Rejects with their detail and text PII-redacted, then cut (as ingest's are)."""
    details, raws = redact_rejects([r["detail"] for r in rejects], [r["raw"] for r in rejects])
    rows = [
        {**r, "detail": d, "raw": x[:REJECT_RAW_CHARS]}
        for r, d, x in zip(rejects, details, raws, strict=True)
    ]
    return pl.DataFrame(rows, schema=COMPLETION_REJECTS_SCHEMA)
