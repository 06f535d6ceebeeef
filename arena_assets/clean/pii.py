"""PII redaction: a vectorised polars prefilter, then exact detection on candidate texts.

Two stages so that cleaning stays fast and detection can still use real validators:

1. `PREFILTER`, one Rust-regex scan by polars over every text, flags the texts that hold
   anything PII could start from: an ``@``, seven digits joined by separators, a dotted
   quad, hex groups with colons, a key prefix (``sk-``, ``AKIA``, ``eyJ`` ...), a street
   word near a number, a PO box, a CJK / Cyrillic address marker. It is a superset by
   construction (a test checks it on the corpus), and most chat text never matches it.
2. `arena_assets.clean.pii_detect.detect_spans` runs on the flagged texts only: Python
   candidate regexes confirmed by `phonenumbers`, `python-stdnum` and `ipaddress`
   (addresses: `arena_assets.clean.pii_address`). Each span is replaced by its type's
   placeholder (`<EMAIL>`, `<PHONE>`, ...); the original characters are replaced even when
   detection saw them NFKC-normalised (full-width digits).

Why not a library for the whole job: presidio-analyzer needs a spaCy model downloaded at
run time (no network here) and runs per string; scrubadub is pure Python and US-centric.
The validators they would call are the ones used here.

`contains_pii`, used by the blocking `no_raw_pii` check, deliberately does not call any
of this: it is the independent scanner of `arena_assets.clean.pii_check`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from arena_assets.clean.pii_address import GATED as ADDRESS_GATED
from arena_assets.clean.pii_address import GATES as ADDRESS_GATES
from arena_assets.clean.pii_check import has_raw_pii
from arena_assets.clean.pii_detect import detect_spans, spans_before
from arena_assets.contracts import PII_PLACEHOLDERS, PII_TYPES

if TYPE_CHECKING:
    from arena_assets.clean.pii_json import View

_B = r"(?-u:\b)"  # ASCII word boundary: keeps the Rust lazy DFA usable on non-ASCII text
_STREET_WORDS = (
    r"street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|court|ct|place|pl|terrace|"
    r"parkway|pkwy|highway|hwy|way|square|sq|crescent|trail|plaza|rue|av|bd|allée|allee|impasse|"
    r"chemin|quai|cours|route|passage|calle|avenida|avda|paseo|pza|carrera|camino|rua|travessa|"
    r"largo|praça|alameda|via|viale|piazza|corso|vicolo|strada"
)


def _cased(words: str) -> str:
    """lower|Capitalised|UPPER of each word: case-insensitive groups slow the Rust DFA."""
    return "|".join(
        dict.fromkeys(v for w in words.split("|") for v in (w, w.capitalize(), w.upper()))
    )


_PREFILTER_GROUPS = {
    "email": (
        "@",
        rf"(?-u:\b)(?:{_cased('at|arroba')})[\])}}>]? *[A-Za-z0-9._-]{{1,30}} *[\[({{<]?"
        rf"(?:{_cased('dot|punto|ponto|point|punkt')})(?-u:\b)",
    ),
    "number": (
        r"[0-9０-９](?:[ .\-/()\x{a0}\x{2010}-\x{2013}－．（）]{0,3}[0-9０-９]){6}",  # 7+ digits
        r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}",  # IPv4
        r":[0-9A-Fa-f]{0,4}:",  # IPv6
        r"[0-9]{2}[A-Za-z][0-9]{2}[A-Za-z][0-9]{3}[A-Za-z]",  # codice fiscale
    ),
    "secret": (
        r"sk-|[sr]k_|whsec_|AKIA|ASIA|gh[pousr]_|github_pat_|xox[abprse]-|AIza|hf_|glpat-|eyJ",
        r"://[^\s/@:]+:[^\s/@]+@",
        rf"(?:{_cased('secret|token|api_key|api-key|apikey|access_key|access-key|password|passwd|pwd')})"
        r"[A-Za-z0-9_-]*[\"']? *[:=]",
    ),
    "passport": (
        "(?i:passport|passeport|pasaporte|passaporto|passaporte|reisepass|paspoort|paszport)"
        "|паспорт|Паспорт|ПАСПОРТ|护照|護照|パスポート|여권",
    ),
    "address": (
        # number, 1-3 words, street type ("221B Baker Street", "42 wallaby way")
        rf"[0-9][A-Za-z]?,? +(?:[0-9A-Za-zÀ-ž'’.-]+ +){{0,3}}(?:{_cased(_STREET_WORDS)})(?-u:\b)",
        # street type first ("Calle Mayor 10"); German / Dutch compounds ("Hauptstraße 5")
        rf"(?:{_cased('calle|c/|avenida|avda.|av.|paseo|carrera|rua|travessa|largo|praça|alameda|viale')}"
        rf"|{_cased('piazza|corso|vicolo|strada')}) +[A-Za-zÀ-ž0-9]|Via +[A-Z]",
        rf"(?:{_cased('straße|strasse|str.|gasse|allee|chaussee|straat|laan|gracht|plein|kade|singel')}) *[0-9]",
        r"[a-zäöüß](?:weg|ring|damm|ufer|platz|steig|markt) +[0-9]",
        r"[0-9]{1,5}[a-zA-Z]?, +(?:[0-9]{2,5}|[A-Z]{1,2}[0-9])",  # "Name 12, 10115 City"
        rf"(?:[Pp]\.? ?[Oo]\.? ?(?:[Bb]ox|BOX)|{_cased('postfach|boîte postale|boite postale|apartado')}"
        rf"|{_cased('caixa postal|casella postale')}) ?[0-9]|BP ?[0-9]|а/я",
        r"〒|丁目|[0-9０-９]号|[都府県][\x{3040}-\x{30ff}\x{4e00}-\x{9fff}]{1,20}[0-9０-９]",
        r"ул\.|улица|пр-т|просп|переулок|пер\.|шоссе|площадь|бульвар|наб\.|набережная|д\. ?[0-9]|дом [0-9]",
    ),
}
# No ".{0,n}" gaps and no case-insensitive groups above: a bounded gap over Unicode text
# blows up the Rust DFA (measured: one such part made the whole scan 200x slower).
GROUP_PATTERNS = {g: "|".join(f"(?:{p})" for p in parts) for g, parts in _PREFILTER_GROUPS.items()}
PREFILTER = "|".join(f"(?:{p})" for p in GROUP_PATTERNS.values())
ANY_PII_PATTERN = PREFILTER  # the name earlier releases exported


def redact_text(text: str, groups: frozenset[str] | None = None) -> tuple[str, dict[str, int]]:
    """`text` with each PII span replaced by its placeholder, and the count per type.

    ``groups``: the prefilter groups the text matched (None: run every detector)."""
    return _replace(text, detect_spans(text, groups))


def _replace(text: str, spans: list[tuple[str, int, int]]) -> tuple[str, dict[str, int]]:
    counts = dict.fromkeys(PII_TYPES, 0)
    pieces, cursor = [], 0
    for kind, start, end in spans:
        pieces += [text[cursor:start], PII_PLACEHOLDERS[kind]]
        counts[kind] += 1
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces), counts


def _matched_groups(texts: pl.Series) -> list[frozenset[str]]:
    """Per text, the prefilter groups it matches (run on candidate texts only: they are few),
    and for the address group the gates of its two patterns (``pii_address.GATES``)."""
    flags = (
        pl.DataFrame({"t": texts})
        .select(
            *[
                pl.col("t").str.contains(p).fill_null(False).alias(g)
                for g, p in GROUP_PATTERNS.items()
            ],
            *[
                pl.col("t").str.contains(p).fill_null(False).alias(g)
                for g, p in ADDRESS_GATES.items()
            ],
        )
        .with_columns(pl.col("address").alias(ADDRESS_GATED))
    )
    names = flags.columns
    return [frozenset(n for n, f in zip(names, row) if f) for row in flags.iter_rows()]


def _redact_unique(texts: pl.Series) -> list[tuple[str, dict[str, int]]]:
    """`redact_text` of each candidate text, each distinct text detected once (a month
    repeats prompts and turns: popular prompts, states of one conversation)."""
    unique = texts.unique()
    done = {t: redact_text(t, g) for t, g in zip(unique.to_list(), _matched_groups(unique))}
    return [done[t] for t in texts.to_list()]


def _redact_strings(texts: pl.Series) -> pl.Series:
    candidates = texts.str.contains(PREFILTER).fill_null(False).arg_true()
    if not len(candidates):
        return texts
    redacted = [r[0] for r in _redact_unique(texts.gather(candidates))]
    return texts.clone().scatter(candidates, pl.Series(redacted, dtype=pl.String))


def redact_expr(expr: pl.Expr) -> pl.Expr:
    """Text with every PII span replaced by its typed placeholder (prefiltered, see module)."""
    return expr.map_batches(_redact_strings, return_dtype=pl.String)


def contains_pii(expr: pl.Expr) -> pl.Expr:
    """Boolean expression for the `no_raw_pii` check: does the text still hold PII, as
    judged by the independent scanner (`arena_assets.clean.pii_check`), not by the
    redaction's own detector (a check that reuses the redactor's rules proves nothing)."""
    return expr.map_batches(has_raw_pii, return_dtype=pl.Boolean)


# the user's address or id inside a raw JSON line (any string value of those keys)
_RAW_USER_FIELD = r'("(?:ip|user_id)"\s*:\s*)"(?:[^"\\]|\\.)*"'


def scrub_raw_line(expr: pl.Expr) -> pl.Expr:
    """A raw log line made safe to keep in raw_rejects: the user's ``ip`` / ``user_id``
    values blanked to ``"<USER>"`` and every PII pattern replaced, as in conversations,
    but found in the line's JSON-decoded view (`arena_assets.clean.pii_json`): inside a
    raw line a message's text is escaped ("Hauptstra\\u00dfe 5", "\\n07700 900123"), which
    hides it from patterns written for text."""
    return expr.str.replace_all(_RAW_USER_FIELD, '${1}"<USER>"').map_batches(
        _redact_raw_strings, return_dtype=pl.String
    )


def _redact_raw_strings(texts: pl.Series) -> pl.Series:
    """`_redact_strings` of raw JSON text: detection on each text's unescaped view, the
    spans mapped back onto the escaped characters they came from."""
    from arena_assets.clean.pii_json import redact_escaped, unescaped_view

    values = texts.to_list()
    views = [unescaped_view(t) if t is not None and "\\" in t else None for t in values]
    if not any(views):
        return _redact_strings(texts)
    plain = pl.Series(
        [t if v is None else v[0] for t, v in zip(values, views, strict=True)], dtype=pl.String
    )
    hit = plain.str.contains(PREFILTER).fill_null(False).arg_true().to_list()
    if not hit:
        return texts
    out = list(values)
    for i, groups in zip(hit, _matched_groups(plain.gather(hit)), strict=True):
        view = views[i]
        out[i] = (
            redact_text(values[i], groups)[0]
            if view is None
            else redact_escaped(values[i], view, detect_spans(view[0], groups))
        )
    return pl.Series(out, dtype=pl.String)


def scrub_raw_text(text: str) -> str:
    """`scrub_raw_line` for one string (rejected lines are few: one small polars call each)."""
    return pl.select(scrub_raw_line(pl.lit(text, pl.String))).item()


def scrub_raw_prefixes(texts: list[str], keep: int) -> list[str]:
    """``scrub_raw_text(t)[:keep]`` for each text, exactly, at the cost of validating only
    the PII candidates that can reach the first ``keep`` characters.

    A rejected line may run to a megabyte and hold thousands of candidates (a message
    repeated to absurd length); only its first ``keep`` characters are stored. The
    identity fields are blanked, the prefilter run and the JSON escapes decoded over the
    whole line, and every detector scans the whole decoded text (`pii_detect.spans_before`),
    so a value that crosses the cut, or only matches with what follows it, is found as
    the whole line would find it; validation stops where the redacted text is known to
    cover ``keep`` characters. Placeholders are longer or shorter than what they replace,
    so that point is found by doubling a limit until the redaction before it is long
    enough."""
    from arena_assets.clean.pii_json import unescaped_view

    values = (
        pl.Series(texts, dtype=pl.String).str.replace_all(_RAW_USER_FIELD, '${1}"<USER>"').to_list()
    )
    views = [unescaped_view(t) if "\\" in t else None for t in values]
    plain = pl.Series(
        [t if v is None else v[0] for t, v in zip(values, views, strict=True)], dtype=pl.String
    )
    hit = plain.str.contains(PREFILTER).fill_null(False).arg_true().to_list()
    out = [t[:keep] for t in values]
    for i, groups in zip(hit, _matched_groups(plain.gather(hit)), strict=True):
        out[i] = _redact_prefix(values[i], views[i], groups, keep)
    return out


def _redact_prefix(raw: str, view: View | None, groups: frozenset[str], keep: int) -> str:
    from arena_assets.clean.pii_json import redact_escaped

    text = raw if view is None else view[0]
    stop = 2 * keep  # placeholders rarely shrink a text to half: one round, nearly always
    while True:
        spans, stop = spans_before(text, groups, stop)
        if view is None:
            redacted, boundary = _replace(raw, spans)[0], min(stop, len(raw))
        else:
            redacted, boundary = redact_escaped(raw, view, spans), view[1][min(stop, len(text))]
        # every span ends before `boundary`: the output up to it is final
        if boundary + len(redacted) - len(raw) >= keep or stop >= len(text):
            return redacted[:keep]
        stop *= 2


def redact_frame(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Redact `column` in place and add `pii_<type>` Int32 counts per row.

    Only rows that the prefilter flags reach the Python detector; the rest get zeros. The
    flagged rows' results are scattered back by position (no split, concat and re-sort
    of the whole frame).
    """
    texts = frame.get_column(column)
    counts = {t: pl.zeros(frame.height, pl.Int32, eager=True).alias(f"pii_{t}") for t in PII_TYPES}
    hit = texts.str.contains(PREFILTER).fill_null(False).arg_true()
    if len(hit):
        results = _redact_unique(texts.gather(hit))
        texts = texts.clone().scatter(hit, pl.Series([r[0] for r in results], dtype=pl.String))
        for t in PII_TYPES:
            counts[t] = counts[t].scatter(
                hit, pl.Series([r[1][t] for r in results], dtype=pl.Int32)
            )
    return frame.with_columns(texts, *counts.values())


def find_pii(text: str) -> list[tuple[str, int, int]]:
    """(type, start, end) of each PII span in `text`, sorted, as redaction replaces them."""
    groups = _matched_groups(pl.Series([text], dtype=pl.String))[0]
    return detect_spans(text, groups) if groups else []
