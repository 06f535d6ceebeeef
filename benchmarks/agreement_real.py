"""Baselines against real human votes: "longer wins" and "more markdown wins" on the real
2024 arena battles of ../shared/real (FastChat clean_battle layout, 100 battles), through
the project's own path (ingest adapter -> conversations -> battles -> the agreement
metrics), overall and on the `hard` slice (battles whose category_tag meets 6 or more of
the 7 hard-prompt criteria), printed beside PPE's published "longer wins" accuracy (59.81 %),
a figure of PPE's hard-prompt subset: the `hard` row is the one to read beside it.

    .venv/bin/python benchmarks/agreement_real.py [--real ../shared/real]

Every battle of the file is judged (the sample is the whole file); the file spans three
months, each ingested as its own partition, the battles pooled.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import orjson
import polars as pl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from arena_assets.battles.build import build_battles  # noqa: E402
from arena_assets.evaluators.agreement import AgreementOptions, agreement_table  # noqa: E402
from arena_assets.evaluators.judges import baseline_verdicts  # noqa: E402
from arena_assets.evaluators.sample import judged_battles  # noqa: E402
from arena_assets.evaluators.yardsticks import AGREEMENT_YARDSTICKS  # noqa: E402
from arena_assets.pipeline.clean import clean_month  # noqa: E402
from arena_assets.pipeline.ingest import ingest_month  # noqa: E402
from arena_assets.storage import Lake  # noqa: E402

FILE = "battles/clean_battles_2024_full_conversations.jsonl"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--real", type=Path, default=ROOT.parent / "shared" / "real")
    args = ap.parse_args()
    src = args.real / FILE
    if not src.exists():
        print(f"no {src}: give --real")
        return 2
    records = [orjson.loads(line) for line in src.read_bytes().splitlines() if line.strip()]
    by_month = Counter(datetime.fromtimestamp(r["tstamp"], UTC).strftime("%Y-%m") for r in records)
    tmp = Path(tempfile.mkdtemp(prefix="agreement-real-"))
    try:
        lake = Lake(str(tmp / "lake"))
        frames = []
        for month in sorted(by_month):
            folder = tmp / "raw" / month
            folder.mkdir(parents=True)
            (folder / src.name).write_bytes(src.read_bytes())
            ingest_month(lake, str(tmp / "raw"), month, salt="bench", known_models=None)
            clean_month(lake, month)
            battles = build_battles(
                lake.read("raw_logs", month), lake.read("conversations", month)
            ).battles
            # every vote of the release counts here: its filters were applied by LMArena
            battles = battles.with_columns(keep=pl.lit(True))
            frames.append(
                judged_battles(
                    battles, lake.read("conversations", month, columns=["conv_id", "messages"])
                )
            )
        sample = pl.concat(frames)
        verdicts = pl.concat(
            [
                baseline_verdicts(sample, k).with_columns(
                    judge=pl.lit(k), judge_kind=pl.lit("baseline")
                )
                for k in ("longer", "markdown")
            ]
        )
        table = agreement_table(
            verdicts, sample, AgreementOptions(rounds=1000, min_slice_battles=1)
        ).filter(pl.col("slice").is_in(["overall", "hard"]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"{sample.height} real battles ({dict(sorted(by_month.items()))}), "
        f"{sample.filter(pl.col('winner').is_in(['model_a', 'model_b'])).height} decided by the voter"
    )
    for row in table.iter_rows(named=True):
        print(
            f"{row['judge']:>9} {row['slice']:>7} ({row['decisive_votes']} decided): "
            f"PPE accuracy {row['accuracy']:.3f} [{row['accuracy_lower']:.3f}, "
            f"{row['accuracy_upper']:.3f}], agreement w/o ties {row['agreement_without_ties']:.3f}, "
            f"kappa {row['kappa']:.3f}"
        )
    print(
        "published:",
        "; ".join(
            f"{y['source']} {y['judge']} {y['value']:.4f} ({y['slice']})"
            for y in AGREEMENT_YARDSTICKS
        ),
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
