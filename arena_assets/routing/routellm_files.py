"""RouteLLM's published evaluation files, read as its ``routellm/evals/benchmarks.py`` does.

The files are not shipped with this project. Point the reader at a checkout of
lm-sys/RouteLLM (its root, or any folder holding ``routellm/evals/…`` or ``evals/…``), or
at a bare git directory (read with ``git show HEAD:path``, e.g. a mirror fetched with
``git clone --mirror``). Per benchmark it returns one row per prompt: the prompt (first
turn for MT-Bench) and the strong and the weak model's quality on it, after RouteLLM's own
decontamination (``contaminated_prompts.jsonl``):

- ``gsm8k``: ``gsm8k/gsm8k_responses.csv``, correctness (bool) per model column;
- ``mmlu``: every ``mmlu/responses/mmlu_<domain>.csv``, correctness per model column;
- ``mt-bench``: ``mt_bench/judgements.jsonl`` (GPT-4 single grades, both turns) joined to
  ``mt_bench/question.jsonl``; a prompt's quality is its mean grade over its judgement rows.

RouteLLM's pair is gpt-4-1106-preview (strong) vs Mixtral-8x7B-Instruct (weak).
"""

from __future__ import annotations

import io
import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

STRONG = "gpt-4-1106-preview"
WEAK = "mistralai/Mixtral-8x7B-Instruct-v0.1"
BENCHMARKS = ("gsm8k", "mmlu", "mt-bench")


@dataclass(frozen=True)
class Benchmark:
    name: str
    prompts: list[str]
    strong: np.ndarray
    weak: np.ndarray


class RouteLLMFiles:
    """Reads ``routellm/evals/...`` paths from a folder or a bare git directory."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.git = (self.root / "HEAD").is_file() and (self.root / "objects").is_dir()
        self.prefix = self._find_prefix()

    def _find_prefix(self) -> str:
        for prefix in ("routellm/evals/", "evals/", ""):
            if self._exists(prefix + "gsm8k/gsm8k_responses.csv"):
                return prefix
        raise FileNotFoundError(f"no RouteLLM evals (gsm8k/gsm8k_responses.csv) under {self.root}")

    def _exists(self, rel: str) -> bool:
        if self.git:
            return (
                subprocess.run(
                    ["git", "--git-dir", str(self.root), "cat-file", "-e", f"HEAD:{rel}"],
                    capture_output=True,
                ).returncode
                == 0
            )
        return (self.root / rel).is_file()

    def read(self, rel: str) -> bytes:
        rel = self.prefix + rel
        if self.git:
            return subprocess.run(
                ["git", "--git-dir", str(self.root), "show", f"HEAD:{rel}"],
                capture_output=True,
                check=True,
            ).stdout
        return (self.root / rel).read_bytes()

    def listdir(self, rel: str) -> list[str]:
        rel = self.prefix + rel
        if self.git:
            out = subprocess.run(
                ["git", "--git-dir", str(self.root), "ls-tree", "--name-only", f"HEAD:{rel}"],
                capture_output=True,
                check=True,
                text=True,
            ).stdout
            return sorted(out.split())
        return sorted(p.name for p in (self.root / rel).iterdir())

    def _jsonl(self, rel: str) -> list[dict]:
        return [json.loads(line) for line in self.read(rel).decode().splitlines() if line.strip()]

    def _contaminated(self, bench: str) -> set[str]:
        return {r["eval_prompt"] for r in self._jsonl(f"{bench}/contaminated_prompts.jsonl")}

    def _correctness(self, frame: pl.DataFrame, bench: str) -> Benchmark:
        bad = self._contaminated(bench)
        frame = frame.filter(~pl.col("prompt").is_in(list(bad)))
        return Benchmark(
            bench,
            frame["prompt"].to_list(),
            frame[STRONG].cast(pl.Float64).to_numpy(),
            frame[WEAK].cast(pl.Float64).to_numpy(),
        )

    def gsm8k(self) -> Benchmark:
        frame = pl.read_csv(
            io.BytesIO(self.read("gsm8k/gsm8k_responses.csv")),
            columns=["prompt", WEAK, STRONG],
            infer_schema_length=0,
        )
        frame = frame.with_columns(pl.col(WEAK, STRONG) == "True")
        return self._correctness(frame, "gsm8k")

    def mmlu(self) -> Benchmark:
        parts = []
        for name in self.listdir("mmlu/responses"):
            if name.endswith(".csv"):
                f = pl.read_csv(
                    io.BytesIO(self.read(f"mmlu/responses/{name}")),
                    columns=["prompt", WEAK, STRONG],
                    infer_schema_length=0,
                )
                parts.append(f.with_columns(pl.col(WEAK, STRONG) == "True"))
        return self._correctness(pl.concat(parts), "mmlu")

    def mt_bench(self) -> Benchmark:
        bad = self._contaminated("mt_bench")
        questions = [
            q
            for q in self._jsonl("mt_bench/question.jsonl")
            if q["turns"][0] not in bad and q["turns"][1] not in bad
        ]
        scores: dict[tuple[int, str], list[float]] = {}
        for j in self._jsonl("mt_bench/judgements.jsonl"):
            scores.setdefault((j["question_id"], j["model"]), []).append(float(j["score"]))

        def quality(qid: int, model: str) -> float:
            return float(np.mean(scores[(qid, model)]))

        ids = [q["question_id"] for q in questions]
        return Benchmark(
            "mt-bench",
            [q["turns"][0] for q in questions],
            np.array([quality(i, STRONG) for i in ids]),
            np.array([quality(i, WEAK) for i in ids]),
        )

    def benchmark(self, name: str) -> Benchmark:
        return {"gsm8k": self.gsm8k, "mmlu": self.mmlu, "mt-bench": self.mt_bench}[name]()
