"""Recall of PII redaction per type, on the hand-written corpus and on the simulator's plants.

    .venv/bin/python benchmarks/pii_recall.py [--sessions 3000]

Corpus: `arena_assets_tests/data/pii_corpus.jsonl` (split "dev": written before the rules
were tuned and then tuned on; split "heldout": written after, never tuned on; "tail": the
formats an independently written corpus found leaking, tuned on; "heldout3": written
after those fixes, run once, never tuned on), scored by
`arena_assets_tests.pii_scoring` (found = every letter and digit of the labelled span
redacted; decoys flagged = any detection in a line with no PII). Simulator: every item
planted in a simulated month (`_truth/pii`), looked up in the message that carries it;
found = the item's text no longer occurs after redaction. Both the redactor
(`find_pii`) and the independent `no_raw_pii` scanner (`find_raw_pii`) are scored.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from collections import Counter
from pathlib import Path

from arena_assets.clean.pii import find_pii, redact_text
from arena_assets.clean.pii_check import find_raw_pii
from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets_tests.pii_scoring import load_corpus, report, score


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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sessions", type=int, default=3000)
    args = parser.parse_args()
    for split in ("dev", "heldout", "heldout2", "tail", "heldout3"):
        rows = load_corpus(split)
        if not rows:
            continue
        print(f"== corpus, split {split} ({len(rows)} lines), redactor")
        print(report(score(find_pii, rows)))
        checker = score(lambda t: [(k, 0, len(t)) for k, _ in find_raw_pii(t)], rows)
        print(
            "-- same lines, no_raw_pii scanner (line level): "
            + ", ".join(f"{k} {f}/{n}" for k, (f, n, _) in checker["recall"].items())
            + f"; decoys flagged {checker['decoys'][0]}/{checker['decoys'][1]}"
        )
    print(f"== simulator plants ({args.sessions} sessions, pii_rate 0.2)")
    for kind, (done, total, flagged) in simulator_recall(args.sessions).items():
        print(
            f"{kind:15s} redacted {done / total:6.1%} ({done}/{total}); "
            f"scanner flags it unredacted {flagged / total:6.1%}"
        )


if __name__ == "__main__":
    main()
