"""The bench stage's settings: BenchBuilder, the candidate models, the judges, the board.

The judge is an LLM task like the labeler (``ARENA_JUDGE_*``, base URL ``simulated`` = the
in-process simulated arena); ``ARENA_BENCH_JUDGES`` lists one or more judge models on that
endpoint (an ensemble). Candidates are a JSON/YAML list in ``ARENA_CANDIDATES``; a
candidate whose ``base_url`` is ``simulated`` is answered by the same simulated arena.
"""

from __future__ import annotations

import dataclasses

import dagster as dg

from arena_assets.bench.builder import BenchOptions
from arena_assets.bench.schema import CRITERIA
from arena_assets.defs.llm_resources import LLMTaskResource, llm_task_resource
from arena_assets.judging.answers import parse_candidates
from arena_assets.judging.judge_prompts import JudgePrompts, judge_prompts
from arena_assets.judging.protocol import OWN, BenchProtocol, get_protocol, parse_baselines
from arena_assets.llm import LLMTask
from arena_assets.llm.endpoints import SIMULATED
from arena_assets.pipeline.bench import candidate_task


def _number(value: str, name: str, default: float) -> float:
    """A fractional setting from its string; empty = ``default``; one line when it is not a number."""
    try:
        return float(value) if str(value).strip() else default
    except ValueError:
        raise ValueError(f"{name} must be a number, got {value!r}") from None


class BenchSettings(dg.ConfigurableResource):
    """BenchBuilder sizes and thresholds, candidates, baseline, judges, board settings."""

    # the judging protocol (judging.protocol): Arena-Hard-Auto's rules, caps and arithmetic
    # by version, and the judge's text: arena-hard-v0.1 / arena-hard-v2 send the anchor's
    # own, read from the checkout at arena_hard_dir; arena-assets-pairwise[-v2] our wording
    protocol: str = OWN
    arena_hard_dir: str = ""
    size: int = 500
    vision_size: int = 100
    # BenchBuilder's passes (the anchor's thresholds): the cheap labels keep prompts meeting
    # >= min_quality criteria in clusters whose mean is >= min_cluster_mean; the strong
    # labeler (relabel_model) keeps >= strong_min_quality in clusters re-scored >= strong_min_cluster_mean
    # fractional settings are strings (Dagster's EnvVar has no float form; empty = default)
    min_quality: int = 5
    min_cluster_mean: str = "3"
    strong_min_quality: int = 6
    strong_min_cluster_mean: str = "6"
    per_cluster: int = 2
    seed: int = 0
    bootstrap_seed: int = 42  # the anchor's v0.1 seed: its resamples are drawn the same way
    # token caps; 0 = the protocol's (judge 4,096 / 16,000; answers 4,096 / 16,000)
    judge_max_tokens: int = 0
    answer_max_tokens: int = 0
    # a WARN check fires when more than this share of answers or judgments used the whole cap
    max_cap_hit_share: str = "0.01"
    # JSON/YAML list of {name, base_url (or "simulated"), api_key_env, model, params}
    candidates: str = ""
    baseline: str = ""
    judges: str = "sim-judge"  # comma-separated judge models on the ARENA_JUDGE endpoint
    strong_weight: int = 3
    bootstrap_rounds: int = 100
    style_control: bool = True
    # optional second labelling pass: this strong labeler model, on the labeler endpoint
    # (ARENA_LABELER_*), re-labels the prompts the cheap labels let through; "" = one pass
    relabel_model: str = ""
    # MT-Bench style single-answer grades (Rating: [[x]]) by every judge, beside the pairwise games
    single_grades: str = "false"

    def grades_on(self) -> bool:
        return self.single_grades.strip().lower() in ("1", "true", "yes", "on")

    def bench_protocol(self) -> BenchProtocol:
        return get_protocol(self.protocol)

    def judge_prompts(self) -> JudgePrompts:
        """The texts the judge receives (read from the checkout for an Arena-Hard-Auto
        protocol; one line naming ARENA_ARENA_HARD_DIR when it is needed and empty)."""
        return judge_prompts(self.protocol, self.arena_hard_dir)

    def cap_hit_limit(self) -> float:
        return _number(self.max_cap_hit_share, "ARENA_BENCH_MAX_CAP_HIT_SHARE", 0.01)

    def bench_options(self) -> BenchOptions:
        criteria = len(CRITERIA)
        for name, value, least, most in (
            ("ARENA_BENCH_SIZE", self.size, 1, None),
            ("ARENA_BENCH_VISION_SIZE", self.vision_size, 0, None),
            ("ARENA_BENCH_PER_CLUSTER", self.per_cluster, 1, None),
            ("ARENA_BENCH_MIN_QUALITY", self.min_quality, 0, criteria),
            ("ARENA_BENCH_STRONG_MIN_QUALITY", self.strong_min_quality, 0, criteria),
        ):
            if value < least or (
                most is not None and value > most
            ):  # the setting named, not the field
                bound = f">= {least}" if most is None else f"in {least}..{most}"
                raise ValueError(f"{name} must be {bound}, got {value}")
        return BenchOptions(
            size=self.size,
            vision_size=self.vision_size,
            min_quality=self.min_quality,
            min_cluster_mean=_number(self.min_cluster_mean, "ARENA_BENCH_MIN_CLUSTER_MEAN", 3.0),
            strong_min_quality=self.strong_min_quality,
            strong_min_cluster_mean=_number(
                self.strong_min_cluster_mean, "ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN", 6.0
            ),
            per_cluster=self.per_cluster,
            seed=self.seed,
        )

    def relabel_task(self, labeler: LLMTaskResource) -> LLMTask | None:
        """The strong labeler's task for the second pass, None when it is off."""
        model = self.relabel_model.strip()
        return dataclasses.replace(labeler.task(), model=model) if model else None

    def candidate_tasks(self, judge: LLMTaskResource) -> list[tuple[str, LLMTask]]:
        """(name, task) per configured candidate; keys come from the variables they name,
        read at run time (``pipeline.bench.candidate_task``)."""
        cands = parse_candidates(self.candidates)
        if not cands:
            raise ValueError("no candidate models: set ARENA_CANDIDATES (see .env.example)")
        out = []
        for c in cands:
            if c.base_url.strip() == SIMULATED:  # the judge resource knows the simulated world
                c = dataclasses.replace(c, base_url=judge.resolved_base_url())
            out.append(
                (
                    c.name,
                    dataclasses.replace(
                        candidate_task(
                            c,
                            max_tokens=self.answer_max_tokens
                            or self.bench_protocol().answer_max_tokens,
                        ),
                        **judge.batch_waits(),  # the shared batch settings
                    ),
                )
            )
        return out

    def baselines(self) -> dict[str, str]:
        """{question category: baseline model}. An empty ARENA_BENCH_BASELINE takes the
        anchor's own baselines under an Arena-Hard-Auto protocol (v0.1's baseline_model,
        v2's per category), which must be candidates; under our own protocols it is an error
        that says what to set (it never falls back to a candidate silently)."""
        names = [c.name for c in parse_candidates(self.candidates)]
        text = self.baseline
        if not text.strip() and self.bench_protocol().anchor_text:
            anchor = self.judge_prompts().baselines
            text = ",".join(f"{c}={m}" for c, m in anchor.items())
            if len(set(anchor.values())) == 1:
                text = next(iter(anchor.values()))
        return parse_baselines(text, self.bench_protocol(), names)

    def judge_tasks(self, judge: LLMTaskResource) -> list[tuple[str, LLMTask]]:
        names = [j.strip() for j in self.judges.split(",") if j.strip()] or [judge.model]
        cap = self.judge_max_tokens or self.bench_protocol().judge_max_tokens
        base = judge.task(max_tokens=cap)
        return [(n, dataclasses.replace(base, model=n)) for n in names]


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "judge": llm_task_resource("JUDGE"),
            "bench_settings": BenchSettings(
                protocol=dg.EnvVar("ARENA_BENCH_PROTOCOL"),
                arena_hard_dir=dg.EnvVar("ARENA_ARENA_HARD_DIR"),
                size=dg.EnvVar.int("ARENA_BENCH_SIZE"),
                vision_size=dg.EnvVar.int("ARENA_BENCH_VISION_SIZE"),
                min_quality=dg.EnvVar.int("ARENA_BENCH_MIN_QUALITY"),
                min_cluster_mean=dg.EnvVar("ARENA_BENCH_MIN_CLUSTER_MEAN"),
                strong_min_quality=dg.EnvVar.int("ARENA_BENCH_STRONG_MIN_QUALITY"),
                strong_min_cluster_mean=dg.EnvVar("ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN"),
                per_cluster=dg.EnvVar.int("ARENA_BENCH_PER_CLUSTER"),
                judge_max_tokens=dg.EnvVar.int("ARENA_BENCH_JUDGE_MAX_TOKENS"),
                answer_max_tokens=dg.EnvVar.int("ARENA_BENCH_ANSWER_MAX_TOKENS"),
                max_cap_hit_share=dg.EnvVar("ARENA_BENCH_MAX_CAP_HIT_SHARE"),
                bootstrap_seed=dg.EnvVar.int("ARENA_BENCH_BOOTSTRAP_SEED"),
                candidates=dg.EnvVar("ARENA_CANDIDATES"),
                baseline=dg.EnvVar("ARENA_BENCH_BASELINE"),
                judges=dg.EnvVar("ARENA_BENCH_JUDGES"),
                strong_weight=dg.EnvVar.int("ARENA_BENCH_STRONG_WEIGHT"),
                bootstrap_rounds=dg.EnvVar.int("ARENA_BENCH_BOOTSTRAP_ROUNDS"),
                relabel_model=dg.EnvVar("ARENA_BENCH_RELABEL_MODEL"),
                single_grades=dg.EnvVar("ARENA_BENCH_SINGLE_GRADES"),
            ),
        }
    )
