"""The evaluators' month steps: ``judge_human_agreement`` and ``over_refusal``.

Each reads what the graph already has (battles, conversations, topic labels, the arena
board), makes its LLM calls first (cached: a rerun makes none) and writes its partitions
last, so a failure leaves the previous ones intact. Their requests' cache keys are
indexed by the battles and prompts they were asked about (``pipeline/cache_keys.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import polars as pl

from arena_assets.evaluators.agreement import AGREEMENT_SCHEMA, AgreementOptions, agreement_table
from arena_assets.evaluators.judges import VERDICT_COLUMNS, JudgeSpec, ask_judges
from arena_assets.evaluators.refusal import (
    RISK_VERSION,
    RefusalOptions,
    classify,
    no_refusal_relation,
    over_refusal_board,
    parse_risk,
    refusal_rates,
    risk_messages,
    tradeoff_png,
)
from arena_assets.evaluators.sample import FLAGS, battle_population, stratified_sample, with_texts
from arena_assets.evaluators.yardsticks import yardstick_rows
from arena_assets.llm import BatchReport, LLMRequest, LLMTask, ResponseCache, run_batch
from arena_assets.pipeline.cache_keys import battle_owners, indexed, prompt_owners
from arena_assets.storage import Lake

JUDGE_HUMAN_AGREEMENT = "judge_human_agreement"
JUDGE_HUMAN_VERDICTS = "judge_human_verdicts"
OVER_REFUSAL = "over_refusal"
OVER_REFUSAL_RATES = "over_refusal_rates"
OVER_REFUSAL_CACHE = "over_refusal/risk"  # the risk labeller's answers (a cache namespace)
RISK_MAX_TOKENS = 64  # a risk answer is a two-field JSON object
_SAMPLE_COLUMNS = (
    "battle_id",
    "model_a",
    "model_b",
    "winner",
    "language",
    "category",
    "hard",
    "dedup_key",
    "stratum",
    "weight",
    "tokens_a",
    "tokens_b",
)

CacheOf = Callable[[str], ResponseCache]


@dataclass
class AgreementMonth:
    month: str
    table: pl.DataFrame  # agreement.agreement_table + month
    verdicts: pl.DataFrame  # one row per (battle, judge), no text
    strata: dict[str, int]  # battles drawn per stratum
    population: int  # kept battles with both conversations
    reports: dict[str, dict] = field(default_factory=dict)
    yardsticks: list[dict] = field(default_factory=list)
    urls: tuple[str, str] = ("", "")


@indexed(JUDGE_HUMAN_AGREEMENT, battle_owners)  # the judges see the battle's conversations
def judge_human_agreement_month(
    lake: Lake,
    month: str,
    judges: Sequence[JudgeSpec],
    *,
    size: int,
    seed: int,
    judge_task: LLMTask | None,
    reward_task: LLMTask | None,
    cache_of: CacheOf,
    options: AgreementOptions = AgreementOptions(),
    drawn: tuple[pl.DataFrame, int] | None = None,
) -> AgreementMonth:
    """A stratified sample of the month's kept votes judged by every judge, and PPE's /
    MT-Bench's agreement metrics per judge and slice (``evaluators.agreement``).
    ``drawn``: ``agreement_sample``'s answer when the caller has it (the asset's plan drew it)."""
    sample, population = drawn or agreement_sample(lake, month, size=size, seed=seed)
    if sample.height:
        verdicts, reports = ask_judges(
            judges, sample, judge_task=judge_task, reward_task=reward_task, cache_of=cache_of
        )
        table = agreement_table(verdicts, sample, options)
    else:  # an empty month: empty, well-typed tables
        verdicts = pl.DataFrame(
            schema=VERDICT_COLUMNS | {"judge": pl.String, "judge_kind": pl.String}
        )
        reports, table = {}, pl.DataFrame(schema=AGREEMENT_SCHEMA)
    table = table.with_columns(month=pl.lit(month))
    kept = [c for c in _SAMPLE_COLUMNS if c in sample.columns]
    rows = verdicts.join(sample.select(kept), on="battle_id", how="left").with_columns(
        month=pl.lit(month)
    )
    strata = (
        dict(sample.group_by("stratum").len().sort("stratum").iter_rows()) if sample.height else {}
    )
    urls = (
        lake.write(JUDGE_HUMAN_AGREEMENT, month, table),
        lake.write(JUDGE_HUMAN_VERDICTS, month, rows),
    )
    return AgreementMonth(
        month, table, rows, strata, population, reports, yardstick_rows(table), urls
    )


def agreement_sample(lake: Lake, month: str, *, size: int, seed: int) -> tuple[pl.DataFrame, int]:
    """The battles the judges see (with their texts) and how many the month has to draw
    from: what the agreement asks, and what its plan counts (``pipeline.plan``)."""
    battles = lake.read("battles", month)
    labels = (
        lake.read("topic_labels", month, columns=["conv_id", *FLAGS])
        if lake.exists("topic_labels", month)
        else None
    )
    # drawn from ids and labels; only the sample's conversations are read (a production
    # month's messages are GBs, the judges see a few hundred battles)
    population = battle_population(
        battles, lake.read("conversations", month, columns=["conv_id"]), labels
    )
    sample = (
        stratified_sample(population, size, seed, month=month) if population.height else population
    )
    wanted = (
        pl.concat([sample.get_column("conv_id_a"), sample.get_column("conv_id_b")])
        .unique()
        .to_list()
    )
    sample = with_texts(
        sample,
        lake.read(
            "conversations",
            month,
            columns=["conv_id", "messages"],
            filters=[("conv_id", "in", wanted)],
        ),
    )
    return sample, population.height


@dataclass
class OverRefusalMonth:
    month: str
    board: pl.DataFrame  # one row per model (refusal.over_refusal_board) + month
    rates: pl.DataFrame  # one row per model and prompt class
    classes: dict[str, int]  # conversations per prompt class
    unlabelled: int  # conversations without a refusal label on their first answer
    relation: dict  # refusal.no_refusal_relation
    report: dict
    png: bytes
    urls: tuple[str, str, str] = ("", "", "")
    from_release: int = 0  # conversations whose refusal came from a release's is_refusal
    # toxic conversations by what made them toxic (refusal.TOXIC_RULE): moderation, the
    # risk labeller, or both
    toxic_sources: dict[str, int] = field(default_factory=dict)


def risk_prompts(conv: pl.DataFrame, max_prompt_chars: int) -> pl.DataFrame:
    """``dedup_key, first_prompt`` of each distinct non-empty first prompt, cut: what the
    risk labeller is asked (and what ``over_refusal``'s plan counts)."""
    return (
        conv.filter(pl.col("first_prompt").str.len_chars() > 0)
        .unique("dedup_key", keep="first")
        .sort("dedup_key")
        .select("dedup_key", pl.col("first_prompt").str.slice(0, max_prompt_chars))
    )


def risk_labels(
    task: LLMTask, prompts: pl.DataFrame, cache: ResponseCache
) -> tuple[pl.DataFrame, BatchReport]:
    """``dedup_key, sensitive, harmful, risk_status`` for each distinct first prompt (once
    per prompt, cached; null labels where the answer could not be parsed)."""
    reqs = [
        LLMRequest(k, risk_messages(t), RISK_VERSION)
        for k, t in prompts.select("dedup_key", "first_prompt").iter_rows()
    ]
    results, report = run_batch(task, reqs, cache, parse_risk)
    return pl.DataFrame(
        [
            {
                "dedup_key": r.item_id,
                "sensitive": r.value.sensitive if r.status == "ok" else None,
                "harmful": r.value.harmful if r.status == "ok" else None,
                "risk_status": r.status,
            }
            for r in results
        ],
        schema={
            "dedup_key": pl.String,
            "sensitive": pl.Boolean,
            "harmful": pl.Boolean,
            "risk_status": pl.String,
        },
    ), report


def release_refusals(lake: Lake, month: str) -> pl.DataFrame:
    """``conv_id, release_refused`` of conversations of release battles (no topic labels:
    ``pipeline.topics`` does not label them) whose release says ``is_refusal`` false: then
    neither side refused. ``is_refusal`` true is a battle-level flag that does not say which
    side refused, so those conversations stay unknown."""
    import orjson

    from arena_assets.pipeline.leaderboards import read_present

    empty = pl.DataFrame(schema={"conv_id": pl.String, "release_refused": pl.Boolean})
    if not lake.exists("battles", month):
        return empty
    rows = read_present(lake, "battles", month, ("conv_id_a", "conv_id_b", "release_tags"))
    if "release_tags" not in rows.columns:
        return empty
    rows = rows.drop_nulls("release_tags")
    clear = [orjson.loads(t).get("is_refusal") is False for t in rows["release_tags"]]
    rows = rows.filter(pl.Series(clear, dtype=pl.Boolean))
    return (
        pl.concat([rows.select(conv_id="conv_id_a"), rows.select(conv_id="conv_id_b")])
        .drop_nulls()
        .unique()
        .with_columns(release_refused=pl.lit(False))
    )


@indexed(OVER_REFUSAL, prompt_owners)  # the risk labeller reads first prompts
def over_refusal_month(
    lake: Lake,
    month: str,
    labeller: LLMTask,
    *,
    cache: ResponseCache,
    options: RefusalOptions = RefusalOptions(),
    max_prompt_chars: int = 4000,
) -> OverRefusalMonth:
    """Refusal rates per model on benign-but-sensitive, toxic and other prompts, the
    over-refusal board, its relation to the ``no_refusal`` arena board, and the trade-off plot."""
    conv = lake.read(
        "conversations",
        month,
        columns=["conv_id", "model", "dedup_key", "first_prompt", "moderation_flagged"],
    )
    labels = (
        lake.read("topic_labels", month, columns=["conv_id", "answer_refusals"])
        if lake.exists("topic_labels", month)
        else pl.DataFrame(schema={"conv_id": pl.String, "answer_refusals": pl.List(pl.Boolean)})
    )
    risk, report = risk_labels(labeller, risk_prompts(conv, max_prompt_chars), cache)
    joined = conv.join(
        labels.select("conv_id", pl.col("answer_refusals").list.first().alias("refused")),
        on="conv_id",
        how="left",
    ).join(release_refusals(lake, month), on="conv_id", how="left")
    from_release = joined.filter(
        pl.col("refused").is_null() & pl.col("release_refused").is_not_null()
    ).height
    joined = joined.with_columns(pl.coalesce("refused", "release_refused").alias("refused")).drop(
        "release_refused"
    )
    classified = classify(joined, risk.drop("risk_status"))
    rates = refusal_rates(classified, options).with_columns(month=pl.lit(month))
    board = over_refusal_board(rates, options).with_columns(month=pl.lit(month))
    arena = (
        lake.read("arena_leaderboard", month) if lake.exists("arena_leaderboard", month) else None
    )
    relation = no_refusal_relation(board, arena)
    png = tradeoff_png(board, month)
    urls = (
        lake.write(OVER_REFUSAL, month, board),
        lake.write(OVER_REFUSAL_RATES, month, rates),
        lake.write_blob(OVER_REFUSAL, f"{month}.png", png),
    )
    classes = dict(classified.group_by("prompt_class").len().sort("prompt_class").iter_rows())
    sources = classified.filter(pl.col("toxic_source").is_not_null()).group_by("toxic_source")
    toxic_sources = dict(sources.len().sort("toxic_source").iter_rows())
    return OverRefusalMonth(
        month,
        board,
        rates,
        classes,
        int(joined["refused"].null_count()),
        relation,
        report.as_metadata(),
        png,
        urls,
        from_release,
        toxic_sources,
    )
