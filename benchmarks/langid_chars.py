"""How many characters the language identifier needs: agreement and accuracy per cap.

    .venv/bin/python benchmarks/langid_chars.py [--chars 200 150 120 100] [--sim RAW_ROOT] [--lake LAKE]

For each cap on the detection text (``clean.language.detection_text``), fastText lid.176 as
the pipeline runs it (``FastTextLid``, min score 0.30) is compared with the first cap
(the reference) on every real user prompt in ../shared/real (2024 arena battles, 2023 hard
English votes, arena-hard v0.1 questions, MT-bench questions, VisionArena bench candidates)
and on a simulated month's prompts: agreement = share of texts given the same code as at the
reference cap. Accuracy where a label exists: FastChat's ``language`` of the 2024 battles, the
2023 votes (all English), MT-bench (English), the hand-written sentences of
``langid_compare.py``, and the simulator's truth language of each session's first prompt.
CPU: process seconds of ``detect`` over each set's distinct detection texts; the largest set
is a month's conversations (``--lake``: their user turns joined, as cleaning does).

    .venv/bin/python benchmarks/langid_chars.py --lake benchmarks/out/lake-0 --month 2024-05
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import polars as pl

from arena_assets.clean.language import FastTextLid, detection_text

SHARED = Path(__file__).resolve().parents[2] / "shared" / "real"
SIM = Path(__file__).resolve().parent / "out" / "raw-200000"
NAMES = {
    "English": "en",
    "Chinese": "zh",
    "Russian": "ru",
    "German": "de",
    "Vietnamese": "vi",
    "Japanese": "ja",
    "Thai": "th",
    "French": "fr",
    "Spanish": "es",
    "Portuguese": "pt",
    "Czech": "cs",
    "Arabic": "ar",
    "Turkish": "tr",
    "Hindi": "hi",
    "Korean": "ko",
}


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def real_sets() -> dict[str, tuple[list[str], list[str | None]]]:
    """name -> (user texts, gold codes or None), each text as the pipeline joins user turns."""
    if not SHARED.is_dir():
        return {}
    sets: dict[str, tuple[list[str], list[str | None]]] = {}
    rows = _jsonl(SHARED / "battles/clean_battles_2024_full_conversations.jsonl")
    sets["arena battles 2024"] = (
        [" ".join(m["content"] for m in r["conversation_a"] if m["role"] == "user") for r in rows],
        [NAMES.get(r["language"]) for r in rows],
    )
    rows = _jsonl(SHARED / "battles/votes_2023_hard_english_with_prompts.jsonl")
    sets["arena votes 2023 (en)"] = (
        [" ".join(r["turns"]) for r in rows],
        [NAMES.get(r["language"]) for r in rows],
    )
    rows = _jsonl(SHARED / "mt_bench/question.jsonl")
    sets["MT-bench (en)"] = ([" ".join(r["turns"]) for r in rows], ["en"] * len(rows))
    rows = _jsonl(SHARED / "arena_hard_v0.1/question.jsonl")
    sets["arena-hard v0.1"] = ([r["prompt"] for r in rows], [None] * len(rows))
    vision = json.loads((SHARED / "vision/bench_candidate_prompts.json").read_text())
    column = vision["columns"].index("post_processed_question")
    texts = list(dict.fromkeys(str(row[column]) for row in vision["data"]))
    sets["VisionArena candidates"] = (texts, [None] * len(texts))
    return sets


def written_set() -> tuple[list[str], list[str | None]]:
    from langid_compare import WRITTEN  # the hand-written sentences, 20 languages

    pairs = [(t, iso) for iso, ts in WRITTEN.items() for t in ts]
    return [t for t, _ in pairs], [g for _, g in pairs]


def simulated_sets(sim: Path) -> dict[str, tuple[list[str], list[str | None]]]:
    truth = sim / "_truth" / "prompts"
    if not truth.is_dir():
        return {}
    prompts = pl.read_parquet(sorted(truth.glob("*.parquet"))[0], columns=["text", "language"])
    return {"simulated first prompts": (prompts["text"].to_list(), prompts["language"].to_list())}


def detect(detector: FastTextLid, texts: list[str], chars: int) -> tuple[list[str], float]:
    frame = pl.DataFrame({"t": texts}, schema={"t": pl.String})
    prepared = frame.select(detection_text(pl.col("t"), chars).fill_null("")).to_series()
    unique = prepared.unique(maintain_order=True)
    start = time.process_time()
    codes, _ = detector.detect(unique.to_list())
    cpu = time.process_time() - start
    lookup = dict(zip(unique.to_list(), codes))
    return [lookup[t] for t in prepared.to_list()], cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chars", type=int, nargs="+", default=[200, 150, 120, 100])
    parser.add_argument("--sim", type=Path, default=SIM, help="a simulated raw root with _truth")
    parser.add_argument(
        "--lake",
        type=Path,
        default=None,
        help="a lake whose conversations/<month>.parquet gives the month's user texts",
    )
    parser.add_argument("--month", default="2024-05")
    args = parser.parse_args()
    detector = FastTextLid()
    detector.detect(["warm up the model"])
    sets = {**real_sets(), "hand-written (20 languages)": written_set(), **simulated_sets(args.sim)}
    if args.lake:
        conversations = pl.read_parquet(
            args.lake / "conversations" / f"{args.month}.parquet", columns=["messages"]
        )
        texts = conversations.select(
            pl.col("messages")
            .list.eval(
                pl.element()
                .filter(pl.element().struct.field("role") == "user")
                .struct.field("content")
            )
            .list.join(" ")
        ).to_series()
        sets["simulated month user texts"] = (texts.to_list(), [None] * len(texts))
    reference = args.chars[0]
    print(
        f"{'set':30} {'texts':>7} {'labelled':>8} "
        + " ".join(f"{'acc@' + str(c):>8} {'agree@' + str(c):>9}" for c in args.chars)
        + "  fastText CPU-s per cap"
    )
    for name, (texts, gold) in sets.items():
        labelled = [i for i, g in enumerate(gold) if g]
        base, cells, cpus = None, [], []
        for chars in args.chars:
            codes, cpu = detect(detector, texts, chars)
            cpus.append(cpu)
            base = base or codes
            acc = (sum(codes[i] == gold[i] for i in labelled) / len(labelled)) if labelled else None
            agree = sum(a == b for a, b in zip(codes, base)) / len(texts)
            cells.append(f"{acc:>8.4f}" if acc is not None else f"{'-':>8}")
            cells.append(f"{agree:>9.4f}")
        print(
            f"{name:30} {len(texts):>7} {len(labelled):>8} "
            + " ".join(cells)
            + "  "
            + " ".join(f"{c:.2f}" for c in cpus),
            flush=True,
        )
    print(
        f"(agreement: same code as at {reference} chars; accuracy: share of labelled texts "
        f"whose code equals the label)"
    )


if __name__ == "__main__":
    main()
