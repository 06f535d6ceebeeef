"""Recall of PII redaction per type, on hand-written corpora, on real text and on the simulator's plants.

    .venv/bin/python benchmarks/pii_recall.py [--sessions 3000] [--real ../shared/real] [--seeds 1 2 3 4 5]

Corpus: `arena_assets_tests/data/pii_corpus.jsonl` (split "dev": written before the rules
were tuned and then tuned on; split "heldout": written after, never tuned on; "tail": the
formats an independently written corpus found leaking, tuned on; "heldout3": written
after those fixes, run once, never tuned on), `pii_tail_dev.jsonl` (unlabelled IPv6,
7-digit local numbers, glued numbers and their look-alikes: tuned on) and
`pii_heldout_tail.jsonl` (written before that tuning), scored by
`arena_assets_tests.pii_scoring` (found = every letter and digit of the labelled span
redacted; decoy lines flagged = any detection in a line with no PII; look-alikes
redacted = any of their letters or digits redacted). Real text (`--real`, the turns of
`battles/*.jsonl`, read where they lie): the look-alikes in it (digit groups, colon-joined
hex, dotted numbers) and which of them are redacted, listed for a reader to judge; and
the held-out tail lines planted into real turns, one draw per seed. Simulator: every item
planted in a simulated month (`_truth/pii`), looked up in the message that carries it;
found = the item's text no longer occurs after redaction. Both the redactor
(`find_pii`) and the independent `no_raw_pii` scanner (`find_raw_pii`) are scored.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

from arena_assets.clean.pii import find_pii, redact_text
from arena_assets.clean.pii_check import find_raw_pii
from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets_tests.conftest import REAL  # ../shared/real, found as the tests find it
from arena_assets_tests.pii_scoring import (
    HELDOUT_TAIL,
    TAIL_DEV,
    load_corpus,
    plant,
    real_turns,
    report,
    score,
    touched,
)

# what a number, an address or a code looks like in text: the look-alikes of real turns
_LOOK_ALIKES = re.compile(
    r"(?<![\w.])\+?\(?\d[\d .\-/()]{4,}\d(?!\w)"  # digit groups
    r"|(?<![\w:])[0-9A-Fa-f]{0,4}(?::[0-9A-Fa-f]{0,4}){2,}(?![\w:])"  # colon-joined hex
    r"|(?<![\w.])\d+(?:\.\d+){2,}(?!\w)"  # dotted numbers
)


def _contents(node, out: set[str]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "content" and isinstance(value, str):
                out.add(value)
            else:
                _contents(value, out)
    elif isinstance(node, list):
        for value in node:
            _contents(value, out)


def _alnum(text: str) -> str:
    return "".join(c for c in text if c.isalnum())


def simulator_recall(sessions: int, seed: int = 5) -> dict[str, tuple[int, int, int]]:
    """type -> (redacted, planted, flagged by the scanner before redaction)."""
    month = "2024-04"
    with tempfile.TemporaryDirectory() as tmp:
        simulate_months(tmp, [month], sessions, seed=seed, config=WorldConfig(pii_rate=0.2))
        texts: set[str] = set()
        for path in sorted(Path(tmp, month).glob("*.jsonl")):
            for line in path.open(encoding="utf-8", errors="replace"):
                try:
                    _contents(json.loads(line), texts)
                except ValueError:
                    continue
        planted = load_truth(tmp)["pii"].filter(month=month)
    carriers: dict[str, str] = {}
    for item in set(planted["text"]):
        carriers[item] = next(t for t in texts if item in t)
    redacted = {t: redact_text(t)[0] for t in set(carriers.values())}
    done, total, flagged = Counter(), Counter(), Counter()
    for kind, item in planted.select("pii_type", "text").iter_rows():
        carrier = carriers[item]
        total[kind] += 1
        done[kind] += item not in redacted[carrier]
        bare = _alnum(
            item
        )  # the scanner reports tokens without brackets: compare letters and digits
        flagged[kind] += any(
            bare in _alnum(v) or _alnum(v) in bare for _, v in find_raw_pii(carrier)
        )
    return {k: (done[k], total[k], flagged[k]) for k in sorted(total)}


def real_look_alikes(turns: list[str]) -> tuple[int, list[tuple[str, str, str]]]:
    """(look-alikes in the real turns, the redacted ones as (type, value, context)): a
    look-alike is a run of 7+ digits with separators, 3+ colon-joined hex groups or a
    dotted number, found by a pattern that shares nothing with the redactor's."""
    total, redacted = 0, []
    for text in turns:
        spans = None
        for m in _LOOK_ALIKES.finditer(text):
            value = m.group()
            if sum(c.isdigit() for c in value) < (7 if value[:1] in "+(0123456789" else 1):
                continue
            if ":" in value and sum(c.isalnum() for c in value) < 6:
                continue  # "1:2", "a::b": too short to be mistaken for an address
            spans = find_pii(text) if spans is None else spans
            total += 1
            if touched(text, m.start(), m.end(), spans):
                kind = next(k for k, a, b in spans if a < m.end() and b > m.start())
                context = text[max(0, m.start() - 30) : m.end() + 10].replace("\n", " ")
                redacted.append((kind, value, context))
    return total, redacted


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=3000, help="0: no simulator")
    parser.add_argument("--real", type=Path, default=REAL, help="../shared/real")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3, 4, 5])
    args = parser.parse_args()
    corpora = [
        (f"split {s}", load_corpus(s)) for s in ("dev", "heldout", "heldout2", "tail", "heldout3")
    ]
    corpora += [
        ("pii_tail_dev.jsonl (tuned on)", load_corpus(path=TAIL_DEV)),
        ("pii_heldout_tail.jsonl (written before tuning)", load_corpus(path=HELDOUT_TAIL)),
    ]
    for name, rows in corpora:
        if not rows:
            continue
        print(f"== corpus, {name} ({len(rows)} lines), redactor")
        print(report(score(find_pii, rows)))
        checker = score(lambda t: [(k, 0, len(t)) for k, _ in find_raw_pii(t)], rows)
        flagged, lines = checker["decoys"]
        print(
            "-- same lines, no_raw_pii scanner (line level): "
            + ", ".join(f"{k} {f}/{n}" for k, (f, n, _) in checker["recall"].items())
            + (f"; decoy lines flagged {flagged}/{lines}" if lines else "")
        )
    if (args.real / "battles").is_dir():
        turns = real_turns(args.real)
        total, redacted = real_look_alikes(turns)
        print(f"== real text: {len(turns):,} distinct turns of {args.real / 'battles'}")
        print(f"look-alikes {total}, redacted {len(redacted)} (judge each below):")
        for kind, value, context in redacted:
            print(f"  {kind:14s} {value!r:28s} in ...{context}...")
        for seed in args.seeds:
            print(f"-- held-out tail lines planted in real turns, seed {seed}")
            print(report(score(find_pii, plant(load_corpus(path=HELDOUT_TAIL), turns, seed))))
    else:
        print(f"== real text: {args.real} is absent, skipped")
    if args.sessions:
        print(f"== simulator plants ({args.sessions} sessions, pii_rate 0.2)")
        for kind, (done, total, flagged) in simulator_recall(args.sessions).items():
            print(
                f"{kind:15s} redacted {done / total:6.1%} ({done}/{total}); "
                f"scanner flags it unredacted {flagged / total:6.1%}"
            )


if __name__ == "__main__":
    main()
