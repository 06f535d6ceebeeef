"""Copilot Arena's data as completion battles: its server log and its public release.

Layouts (read from ``lmarena/copilot-arena``: ``server/app.py``, ``vscode/src/api.ts``,
``data/copilot_arena_examples_v1.csv``), detected per record:

- ``copilot_log`` (JSON lines, a JSON list or Parquet): the server's records. A *shown
  pair* is what ``/create_pair`` answers, ``{pairId, completionItems: [item, item]}``; an
  *outcome* is what the extension sends to ``/add_completion_outcome`` when the user
  accepts one, ``{pairId, userId, acceptedIndex, fileType, privacy, version,
  completionItems}``. An item: ``completionId, userId, timestamp`` (epoch seconds),
  ``model, pairIndex`` (0 = shown on top), ``latency`` (seconds), ``prefix, suffix,
  completion`` (the code; absent when the user's privacy setting kept it from the log),
  ``prefix_length, suffix_length, completion_length``, ``privacy`` and the full prompt
  sent to the model (never kept here).
- ``copilot_release`` (CSV): ``prefix, suffix, model_a, model_b, acceptedIndex,
  completion_a, completion_b``: accepted pairs only, no user, no time (the month's first
  instant, as for other releases without one), no latency.

A pair's shown record and its outcome are merged into one battle (``records`` = 2); a
shown pair without an outcome is a battle with winner ``tie (bothbad)`` (neither accepted,
as Copilot Arena's own scores code counts it); an outcome alone is a battle too. Every
record ends in a battle or in a reject with a reason (``COMPLETION_REJECT_REASONS``).

Cleaning: the code text is kept only where Copilot Arena's release keeps it, i.e. for
users whose privacy setting is ``Research`` (the release's rows are published, so they
are Research too), and only the parts the release has (prefix, suffix, the two
completions): never the model prompt, the raw completion, the full prefix / suffix or the
repository URL. Kept text goes through the project's PII redaction, which includes
secrets (provider API keys, JWTs, credentials in URLs). The userId becomes a salted hash.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import polars as pl

from arena_assets.clean.pii import redact_frame
from arena_assets.completions.schema import COMPLETION_BATTLES_SCHEMA, COMPLETION_REJECTS_SCHEMA
from arena_assets.contracts import REJECT_RAW_CHARS
from arena_assets.ingest import sources
from arena_assets.ingest.validate import Checker, Reject, short, tname
from arena_assets.privacy.rejects import blank_reject, redact_rejects

COPILOT_LOG, COPILOT_RELEASE = "copilot_log", "copilot_release"
RELEASE_FIELDS = ("prefix", "suffix", "model_a", "model_b", "acceptedIndex", "completion_a", "completion_b")
# Copilot Arena names its user field userId: blanked in rejected text like ingest's ids
_USER_FIELD = re.compile(r'("userId"\s*:\s*)"(?:[^"\\]|\\.)*"')
_USER_VALUE = re.compile(r'"userId"\s*:\s*"((?:[^"\\]|\\.)*)"')
KEEP_TEXT = "Research"


def detect(record: dict) -> str | None:
    if "completionItems" in record:
        return COPILOT_LOG
    if "acceptedIndex" in record and "model_a" in record and "completion_a" in record:
        return COPILOT_RELEASE
    return None


@dataclass
class Half:
    """What one record says about a pair (``kind``: shown | outcome)."""

    kind: str
    pair_id: str
    fields: dict
    line_no: int
    source_file: str
    source_format: str


def _str(value: Any, what: str, reason: str) -> str:
    if type(value) is int:
        return str(value)
    if type(value) is not str or not value:
        raise Reject(reason, f"{what} is {'absent' if value in (None, '') else tname(value) + ' ' + short(value)}")
    return value


def _number(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if type(value) not in (int, float) or value != value or value < 0:
        raise Reject("wrong_type", f"{what} is {short(value)}, expected a non-negative number")
    return float(value)


def _text(value: Any, what: str) -> str | None:
    if value is None or type(value) is str:
        return value
    raise Reject("wrong_type", f"{what} is {tname(value)}, expected string")


def _accepted(value: Any) -> int | None:
    """0 / 1, or None for "neither" (-1 or null). The release writes 0.0 / 1.0 (a float
    column through pandas); JSON logs write integers."""
    if value is None:
        return None
    if type(value) is str:
        try:
            value = float(value.strip())
        except ValueError:
            raise Reject("bad_accepted_index", f"acceptedIndex is {short(value)}") from None
    if type(value) is float and value.is_integer():
        value = int(value)
    if value == -1 and type(value) is int:
        return None
    if type(value) is not int or value not in (0, 1):
        raise Reject("bad_accepted_index", f"acceptedIndex is {short(value)}")
    return value


def log_half(checker: Checker, rec: dict) -> tuple[str, dict]:
    """(kind, fields) of a Copilot Arena log record."""
    pair_id = _str(rec.get("pairId"), "pairId", "missing_pair_id")
    items = rec.get("completionItems")
    if type(items) is not list or len(items) != 2 or not all(type(i) is dict for i in items):
        raise Reject("bad_items", f"completionItems is {short(items)}, expected two objects")
    index = [i.get("pairIndex", k) for k, i in enumerate(items)]
    if sorted(index) != [0, 1]:
        raise Reject("bad_items", f"pairIndex values {index}, expected 0 and 1")
    top, bottom = sorted(items, key=lambda i: i.get("pairIndex", items.index(i)))
    model_a = _str(top.get("model"), "completionItems[top].model", "missing_model")
    model_b = _str(bottom.get("model"), "completionItems[bottom].model", "missing_model")
    if model_a == model_b:
        raise Reject("same_model_battle", f"both completions are {short(model_a)}")
    checker.check_model(model_a)
    checker.check_model(model_b)
    user = rec.get("userId") or top.get("userId")
    user = _str(user, "userId", "missing_user")
    times = [i.get("timestamp") for i in items if i.get("timestamp") is not None]
    if not times:
        raise Reject("missing_tstamp", "no completion carries a timestamp")
    ts = max(checker.tstamp_us(t) for t in times)
    privacy = rec.get("privacy") or top.get("privacy")
    prefix = _text(top.get("prefix"), "prefix")
    suffix = _text(top.get("suffix"), "suffix")
    kind = "outcome" if "acceptedIndex" in rec else "shown"
    fields = {
        "tstamp": ts, "user": checker.user_hash(user), "model_a": model_a, "model_b": model_b,
        "accepted_index": _accepted(rec.get("acceptedIndex")) if kind == "outcome" else None,
        "file_type": _text(rec.get("fileType") or top.get("fileType"), "fileType"),
        "latency_a": _number(top.get("latency"), "latency"), "latency_b": _number(bottom.get("latency"), "latency"),
        "prefix_length": top.get("prefix_length", len(prefix) if prefix is not None else None),
        "suffix_length": top.get("suffix_length", len(suffix) if suffix is not None else None),
        "mid_span": rec.get("midSpan") if type(rec.get("midSpan")) is bool else None,
        "privacy": _text(privacy, "privacy"),
        "prefix": prefix, "suffix": suffix,
        "completion_a": _text(top.get("completion"), "completion"),
        "completion_b": _text(bottom.get("completion"), "completion"),
        "completion_length_a": top.get("completion_length"), "completion_length_b": bottom.get("completion_length"),
    }
    for key in ("prefix_length", "suffix_length", "completion_length_a", "completion_length_b"):
        if fields[key] is not None and (type(fields[key]) is not int or fields[key] < 0):
            raise Reject("wrong_type", f"{key} is {short(fields[key])}, expected an integer >= 0")
    return kind, fields | {"pair_id": pair_id}


def release_half(checker: Checker, rec: dict) -> tuple[str, dict]:
    """A release row: an accepted pair, its text published (privacy Research)."""
    if None in rec:
        raise Reject("wrong_type", "the row has more fields than the header")
    missing = [k for k in RELEASE_FIELDS if rec.get(k) is None]
    if missing:
        raise Reject("bad_items", "missing " + ", ".join(missing))
    model_a = _str(rec["model_a"], "model_a", "missing_model")
    model_b = _str(rec["model_b"], "model_b", "missing_model")
    if model_a == model_b:
        raise Reject("same_model_battle", f"both completions are {short(model_a)}")
    accepted = _accepted(rec["acceptedIndex"])
    if accepted is None:
        raise Reject("bad_accepted_index", "a release row without an accepted completion")
    texts = {k: _text(rec[k], k) for k in ("prefix", "suffix", "completion_a", "completion_b")}
    digest = hashlib.sha256(orjson.dumps([rec[k] for k in RELEASE_FIELDS])).hexdigest()[:24]
    pair_id = f"cr-{digest}"
    return "outcome", {
        "pair_id": pair_id, "tstamp": checker.lo_us, "user": checker.user_hash(pair_id),
        "model_a": model_a, "model_b": model_b, "accepted_index": accepted, "file_type": None,
        "latency_a": None, "latency_b": None, "prefix_length": len(texts["prefix"]),
        "suffix_length": len(texts["suffix"]), "mid_span": None, "privacy": KEEP_TEXT, **texts,
        "completion_length_a": len(texts["completion_a"]), "completion_length_b": len(texts["completion_b"]),
    }


@dataclass
class ParsedCompletions:
    halves: list[Half] = field(default_factory=list)
    rejects: list[dict] = field(default_factory=list)
    records_read: int = 0


def _reject(out: ParsedCompletions, month: str, source: str, line_no: int, reason: str, detail: str,
            raw: str, checker: Checker) -> None:
    found = _USER_VALUE.search(raw)
    user = checker.user_hash(found.group(1)) if found else None
    detail2, text, _ = blank_reject(_USER_FIELD.sub(r'\1"<USER>"', raw), detail)
    out.rejects.append({"month": month, "source_file": source, "line_no": line_no, "reason": reason,
                        "detail": detail2, "raw": text, "user_hash": user})


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
        value = orjson.loads(sources.read_bytes(url, storage_options))
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
                    yield orjson.loads(line), text
                except orjson.JSONDecodeError as exc:
                    try:
                        line.decode("utf-8")
                    except UnicodeDecodeError as err:
                        yield Reject("invalid_utf8", f"byte {err.start}: {err.reason}"), text
                        continue
                    yield Reject("invalid_json", str(exc)[:200]), text


def parse_files(root: str, month: str, *, salt: str, known_models: set[str] | None = None,
                storage_options: dict | None = None) -> tuple[ParsedCompletions, sources.MonthListing]:
    """Every record of the month's files under ``root`` as a Half or a reject."""
    listing = sources.scan_month(root, month, storage_options)
    checker = Checker(month, salt, known_models)
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
                    raise Reject("unknown_layout", f"keys {sorted(map(str, rec))[:12]}; expected a "
                                                   "Copilot Arena log record (completionItems) or a "
                                                   "release row (" + ", ".join(RELEASE_FIELDS) + ")")
                kind, fields = (log_half if fmt == COPILOT_LOG else release_half)(checker, rec)
                out.halves.append(Half(kind, fields["pair_id"], fields, line_no, source, fmt))
            except Reject as rej:
                _reject(out, month, source, line_no, rej.reason, rej.detail, raw, checker)
    return out, listing


def merge_pairs(parsed: ParsedCompletions, month: str) -> pl.DataFrame:
    """One battle per pair id (see module docstring); duplicates and an outcome that
    disagrees with its shown pair become rejects in ``parsed``."""
    pairs: dict[str, dict[str, Half]] = {}
    for half in parsed.halves:
        slot = pairs.setdefault(half.pair_id, {})
        if half.kind in slot:
            parsed.rejects.append({"month": month, "source_file": half.source_file, "line_no": half.line_no,
                                   "reason": "duplicate_pair", "detail": f"pair {short(half.pair_id)} "
                                   f"({half.kind}) appeared earlier in the month", "raw": "", "user_hash":
                                   half.fields["user"]})
            continue
        other = slot.get("shown" if half.kind == "outcome" else "outcome")
        if other and (other.fields["model_a"], other.fields["model_b"]) != (half.fields["model_a"],
                                                                           half.fields["model_b"]):
            parsed.rejects.append({"month": month, "source_file": half.source_file, "line_no": half.line_no,
                                   "reason": "bad_items", "detail": "models disagree with the pair's other record",
                                   "raw": "", "user_hash": half.fields["user"]})
            continue
        slot[half.kind] = half
    rows = []
    for pair_id, slot in pairs.items():
        first, outcome = slot.get("shown") or slot["outcome"], slot.get("outcome")
        f = {**first.fields, **{k: v for k, v in (outcome.fields if outcome else {}).items() if v is not None}}
        accepted = f["accepted_index"]
        winner = "tie (bothbad)" if accepted is None else ("model_a", "model_b")[accepted]
        rows.append({**f, "month": month, "pair_id": pair_id, "winner": winner, "accepted": accepted is not None,
                     "records": len(slot), "source_file": first.source_file, "source_format": first.source_format})
    return _battle_frame(rows)


_ROW_TYPES = {**{c: t for c, t in COMPLETION_BATTLES_SCHEMA.items()
                 if c not in ("tstamp", "user_hash", "prefix_lines", "redactions", "secrets_redacted")},
              "tstamp": pl.Int64, "user": pl.String}


def _battle_frame(rows: list[dict]) -> pl.DataFrame:
    frame = pl.DataFrame({c: [r.get(c) for r in rows] for c in _ROW_TYPES}, schema=_ROW_TYPES)
    return frame.rename({"user": "user_hash"}).with_columns(
        pl.from_epoch("tstamp", time_unit="us").dt.replace_time_zone("UTC"))


def clean_battles(battles: pl.DataFrame) -> pl.DataFrame:
    """Text only for privacy Research, redacted (PII and secrets counted), the position in
    the file taken before the text is dropped; columns in the contract's order."""
    keep = pl.col("privacy") == KEEP_TEXT
    out = battles.with_columns(
        (pl.col("prefix").str.count_matches("\n") + 1).cast(pl.Int32).alias("prefix_lines"),
        pl.col("completion_length_a").fill_null(pl.col("completion_a").str.len_chars().cast(pl.Int64)),
        pl.col("completion_length_b").fill_null(pl.col("completion_b").str.len_chars().cast(pl.Int64)),
    ).with_columns(*[pl.when(keep).then(pl.col(c)).otherwise(None).alias(c)
                     for c in ("prefix", "suffix", "completion_a", "completion_b")])
    redactions = pl.zeros(out.height, pl.Int32, eager=True)
    secrets = pl.zeros(out.height, pl.Int32, eager=True)
    for col in ("prefix", "suffix", "completion_a", "completion_b"):
        done = redact_frame(out.select(pl.col(col).fill_null("")), col)
        counts = done.select(pl.sum_horizontal(pl.selectors.starts_with("pii_"))).to_series()
        redactions = redactions + counts.cast(pl.Int32)
        secrets = secrets + done["pii_secret"]
        out = out.with_columns(pl.when(pl.col(col).is_not_null()).then(done[col]).otherwise(None).alias(col))
    out = out.with_columns(redactions.alias("redactions"), secrets.alias("secrets_redacted"))
    return out.select([pl.col(c).cast(t) for c, t in COMPLETION_BATTLES_SCHEMA.items()]).sort("tstamp", "pair_id")


def reject_frame(rejects: list[dict]) -> pl.DataFrame:
    """Rejects with their detail and text PII-redacted, then cut (as ingest's are)."""
    details, raws = redact_rejects([r["detail"] for r in rejects], [r["raw"] for r in rejects])
    rows = [{**r, "detail": d, "raw": x[:REJECT_RAW_CHARS]} for r, d, x in zip(rejects, details, raws, strict=True)]
    return pl.DataFrame(rows, schema=COMPLETION_REJECTS_SCHEMA)
