"""The evaluators stage's settings: which judges are compared with the human votes, how
many battles they see, and the over-refusal verdict.

LLM judges run on the judge endpoint (``ARENA_JUDGE_*``, shared with the bench); reward
models on their own (``ARENA_REWARD_*``, a vLLM server started with a reward model serves
``/pooling``; ``simulated`` = the in-process simulated arena's ``sim-reward`` models); the
risk labeller of ``over_refusal`` is the topic labeller (``ARENA_LABELER_*``).
"""

from __future__ import annotations

import dagster as dg

from arena_assets.completions.settings import fraction
from arena_assets.defs.completions.resources import env_fields
from arena_assets.defs.llm_resources import LLMTaskResource, llm_task_resource
from arena_assets.evaluators.agreement import AgreementOptions
from arena_assets.evaluators.judges import JudgeSpec, parse_judges
from arena_assets.evaluators.refusal import RefusalOptions
from arena_assets.llm import LLMTask

# field -> (variable, kind): fractions as strings (empty = the default), as elsewhere
ENV = {
    "agreement_judges": ("ARENA_AGREEMENT_JUDGES", str),
    "agreement_sample_size": ("ARENA_AGREEMENT_SAMPLE_SIZE", int),
    "seed": ("ARENA_AGREEMENT_SEED", int),
    "bootstrap_rounds": ("ARENA_AGREEMENT_BOOTSTRAP_ROUNDS", int),
    "ci_level": ("ARENA_EVALUATORS_CI_LEVEL", str),
    "min_slice_battles": ("ARENA_AGREEMENT_MIN_SLICE_BATTLES", int),
    "board_bootstrap_rounds": ("ARENA_AGREEMENT_BOARD_ROUNDS", int),
    "refusal_threshold": ("ARENA_REFUSAL_THRESHOLD", str),
    "refusal_min_conversations": ("ARENA_REFUSAL_MIN_CONVERSATIONS", int),
    "max_prompt_chars": ("ARENA_REFUSAL_MAX_PROMPT_CHARS", int),
}


class EvaluatorSettings(dg.ConfigurableResource):
    """Judges, sample size and bootstrap of judge_human_agreement; over_refusal's verdict."""

    # comma-separated: LLM judge models (judge endpoint), reward:<model> (reward endpoint),
    # and the baselines longer / markdown
    agreement_judges: str = "sim-judge,reward:sim-reward,longer,markdown"
    agreement_sample_size: int = 300
    seed: int = 0
    bootstrap_rounds: int = 200
    ci_level: str = "0.95"
    min_slice_battles: int = 30
    board_bootstrap_rounds: int = 100
    refusal_threshold: str = "0.2"
    refusal_min_conversations: int = 5
    max_prompt_chars: int = 4000

    def level(self) -> float:
        return fraction(self.ci_level, "ARENA_EVALUATORS_CI_LEVEL", 0.95, 0.5, 0.999)

    def judges(self) -> list[JudgeSpec]:
        return parse_judges(self.agreement_judges)

    def agreement_options(self) -> AgreementOptions:
        return AgreementOptions(
            rounds=self.bootstrap_rounds,
            level=self.level(),
            seed=self.seed,
            min_slice_battles=self.min_slice_battles,
            board_rounds=self.board_bootstrap_rounds,
        )

    def refusal_options(self) -> RefusalOptions:
        return RefusalOptions(
            level=self.level(),
            threshold=fraction(self.refusal_threshold, "ARENA_REFUSAL_THRESHOLD", 0.2),
            min_conversations=self.refusal_min_conversations,
        )

    def tasks(
        self, judge: LLMTaskResource, reward: LLMTaskResource
    ) -> tuple[LLMTask | None, LLMTask | None]:
        """The judge and reward tasks the listed judges need (None where none is listed)."""
        kinds = {s.kind for s in self.judges()}
        judge_task = judge.task(max_tokens=512) if "llm" in kinds else None
        reward_task = reward.task() if "reward" in kinds else None
        return judge_task, reward_task


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "reward_model": llm_task_resource("REWARD", batch=False),
            "evaluator_settings": EvaluatorSettings(**env_fields(ENV)),
        }
    )
