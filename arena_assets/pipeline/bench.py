"""The bench steps of a month: ``bench_prompts`` -> ``model_answers`` -> ``judgments`` ->
``bench_leaderboard`` (Arena-Hard-Auto's line of work, refreshed monthly).

Each step reads its inputs from the lake, makes every LLM call first (cached: a rerun
makes none, and a new month only asks about its own bench) and writes the month's
partition last, so a failure leaves the previous partition intact.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

import polars as pl

from arena_assets.bench.builder import Bench, BenchOptions, Relabel, build_benches
from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA
from arena_assets.judging.answers import CandidateModel, answer_features, split_reasoning
from arena_assets.judging.summary import bias_report, single_summary
from arena_assets.judging.verdicts import (
    JUDGMENT_SCHEMA, PROMPT_VERSION, SINGLE_PROMPT_VERSION, SINGLE_SCHEMA, pairwise_messages,
    parse_rating, parse_verdict, plan_games, single_messages,
)
from arena_assets.llm import BatchReport, LLMRequest, LLMTask, ResponseCache, run_batch
from arena_assets.storage import Lake

BENCH_PROMPTS_ASSET = "bench_prompts"
MODEL_ANSWERS = "model_answers"
JUDGMENTS = "judgments"
ANSWER_GRADES = "answer_grades"
BENCH_LEADERBOARD = "bench_leaderboard"
ANSWER_PROMPT_VERSION = "answer-v1"
_VISION_CATS = ("captioning", "ocr", "entity_recognition", "humor", "homework", "diagram")


def labelled_prompts(lake: Lake, month: str) -> pl.DataFrame:
    """One row per distinct first prompt of ``month``: BenchBuilder's input, joined from
    ``topic_labels`` (criteria, category flags), ``topic_clusters`` and ``conversations``."""
    labels = lake.read("topic_labels", month).unique("dedup_key", keep="first", maintain_order=True)
    clusters = lake.read("topic_clusters", month, columns=["dedup_key", "cluster_id"])
    conv = (lake.read("conversations", month, columns=["dedup_key", "first_prompt", "language"])
            .unique("dedup_key", keep="first", maintain_order=True))
    vision = [c for c in _VISION_CATS if f"vision_{c}" in labels.columns]
    category = pl.when(pl.col("code")).then(pl.lit("coding")).when(pl.col("math")).then(pl.lit("math"))
    for c in vision:
        category = category.when(pl.col(f"vision_{c}").fill_null(False)).then(pl.lit(c))
    category = category.when(pl.col("creative_writing")).then(pl.lit("creative_writing")).otherwise(pl.lit("other"))
    return (
        labels.join(clusters, on="dedup_key", how="inner").join(conv, on="dedup_key", how="inner")
        .select(prompt_id="dedup_key", prompt="first_prompt", language="language",
                category=category, cluster_id=pl.col("cluster_id").cast(pl.Int64),
                has_image="is_vision", *CRITERIA)
        .sort("prompt_id")
    )


@dataclass
class BenchPromptsMonth:
    month: str
    prompts: pl.DataFrame  # text and vision benches together (``bench_kind``)
    benches: dict[str, Bench]
    url: str


def bench_prompts_month(lake: Lake, month: str, options: BenchOptions = BenchOptions(),
                        relabel: Relabel | None = None) -> BenchPromptsMonth:
    """The month's text and vision benches, decontaminated against every earlier bench;
    ``relabel`` (e.g. ``bench.relabel.StrongRelabel``) is the optional second labelling
    pass over the prompts the cheap labels let through."""
    earlier_months = [m for m in lake.months(BENCH_PROMPTS_ASSET) if m < month]
    earlier = (pl.concat([lake.read(BENCH_PROMPTS_ASSET, m, columns=["prompt"]) for m in earlier_months])
               ["prompt"].to_list() if earlier_months else [])
    benches = build_benches(labelled_prompts(lake, month), options, month=month, earlier=earlier,
                            relabel=relabel)
    prompts = pl.concat([b.prompts for b in benches.values()]) if benches else pl.DataFrame(schema=BENCH_PROMPTS)
    return BenchPromptsMonth(month, prompts, benches, lake.write(BENCH_PROMPTS_ASSET, month, prompts))


def candidate_task(c: CandidateModel, api_key: str | None = None, base: LLMTask | None = None) -> LLMTask:
    """The LLM task of a candidate; ``params`` may set temperature/max_tokens and extras.
    The key is ``api_key``, else the variable ``c.api_key_env`` names, read now (run time)."""
    if api_key is None:
        api_key = os.environ.get(c.api_key_env, "") if c.api_key_env else ""
    params = dict(c.params)
    # settings of the call, not fields of the request (prices: the plan's and the metadata's cost)
    known = {k: params.pop(k) for k in ("temperature", "max_tokens", "max_concurrency", "timeout",
                                        "price_input_per_1m", "price_output_per_1m") if k in params}
    defaults = {"max_concurrency": base.max_concurrency, "timeout": base.timeout,
                "max_retries": base.max_retries} if base else {}
    return LLMTask(model=c.served_model, base_url=c.base_url, api_key=api_key or "sk-no-key",
                   **(defaults | {"max_tokens": 1024} | known), extra_params=params)


def _text(value: str) -> str:
    if not value or not value.strip():
        raise ValueError("empty answer")
    return value


@dataclass
class ModelAnswersMonth:
    month: str
    answers: pl.DataFrame
    reports: dict[str, BatchReport] = field(default_factory=dict)
    url: str = ""

    @property
    def failed(self) -> int:
        return int((self.answers["status"] != "ok").sum())


def model_answers_month(lake: Lake, month: str, candidates: Sequence[tuple[str, LLMTask]], *,
                        cache_root: str, storage_options: dict | None = None) -> ModelAnswersMonth:
    """Every candidate answers every bench prompt (one row per prompt x candidate, with its
    status); reasoning kept apart, tokens and style features per answer."""
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt", "bench_kind"])
    rows, reports = [], {}
    for name, task in candidates:
        cache = ResponseCache(cache_root, f"answers/{name}", storage_options=storage_options or {})
        reqs = [LLMRequest(pid, [{"role": "user", "content": text}], ANSWER_PROMPT_VERSION)
                for pid, text in zip(bench["prompt_id"], bench["prompt"])]
        results, reports[name] = run_batch(task, reqs, cache, _text)
        cache.flush()
        for r, kind in zip(results, bench["bench_kind"]):
            answer, reasoning = split_reasoning(r.content, r.reasoning) if r.status == "ok" else ("", "")
            rows.append({"question_id": r.item_id, "bench_kind": kind, "model": name, "answer": answer,
                         "reasoning": reasoning, "status": r.status, "error": r.error})
    answers = answer_features(pl.DataFrame(rows, schema={
        "question_id": pl.String, "bench_kind": pl.String, "model": pl.String, "answer": pl.String,
        "reasoning": pl.String, "status": pl.String, "error": pl.String}))
    return ModelAnswersMonth(month, answers, reports, lake.write(MODEL_ANSWERS, month, answers))


@dataclass
class JudgmentsMonth:
    month: str
    judgments: pl.DataFrame
    reports: dict[str, BatchReport]
    bias: dict[str, dict]  # per judge: bias_report
    url: str = ""


def _verdict(text: str) -> str:
    v = parse_verdict(text)
    if v is None:
        raise ValueError("no [[verdict]] label in the judge's answer")
    return v


def judgments_month(lake: Lake, month: str, judges: Sequence[tuple[str, LLMTask]], baseline: str, *,
                    cache_root: str, storage_options: dict | None = None) -> JudgmentsMonth:
    """Two games per (prompt, candidate, judge) against ``baseline``, positions swapped.
    The task's ``parse_retries`` re-asks once after an unparseable verdict; what stays
    unparsed is kept (``parsed`` false, ``status`` parse_failed); a call that failed after
    the client's retries is recorded as ``failed``. Prompts where the baseline or the
    candidate has no answer are recorded as ``no_answer``."""
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt"])
    answers = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer", "status"])
    if bench.height == 0:  # an empty bench (a tiny month): an empty, well-typed table
        frame = pl.DataFrame(schema=JUDGMENT_SCHEMA | {"status": pl.String})
        return JudgmentsMonth(month, frame, {}, {}, lake.write(JUDGMENTS, month, frame))
    if baseline not in set(answers["model"]):
        raise ValueError(f"baseline {baseline!r} has no answers this month; candidates: "
                         f"{sorted(set(answers['model']))}")
    text = dict(zip(bench["prompt_id"], bench["prompt"]))
    ok = {(q, m): a for q, m, a, s in answers.iter_rows() if s == "ok"}
    models = sorted(set(answers["model"]) - {baseline})
    rows, reports, bias = [], {}, {}
    for name, task in judges:
        games = plan_games(bench["prompt_id"].to_list(), models, baseline, [name]).to_dicts()
        playable = [g for g in games if (g["question_id"], g["model_a"]) in ok and (g["question_id"], g["model_b"]) in ok]
        cache = ResponseCache(cache_root, f"judgments/{name}", storage_options=storage_options or {})
        reqs = [LLMRequest(f"{g['question_id']}|{g['model']}|{g['game']}", pairwise_messages(
            text[g["question_id"]], ok[g["question_id"], g["model_a"]], ok[g["question_id"], g["model_b"]]),
            PROMPT_VERSION) for g in playable]
        results, reports[name] = run_batch(task, reqs, cache, _verdict)
        cache.flush()
        done = {r.item_id: r for r in results}
        for g in games:
            r = done.get(f"{g['question_id']}|{g['model']}|{g['game']}")
            status = r.status if r else "no_answer"
            rows.append(g | {"judgment": r.content if r else None,
                             "verdict": r.value if r and r.status == "ok" else None,
                             "parsed": bool(r and r.status == "ok"), "status": status})
    frame = pl.DataFrame(rows, schema=JUDGMENT_SCHEMA | {"status": pl.String})
    feats = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer_tokens"])
    lengths = feats.rename({"answer_tokens": "tokens"})
    for (name,), part in frame.group_by("judge", maintain_order=True):
        bias[name] = bias_report(part.filter(pl.col("status") != "no_answer"), lengths)
    return JudgmentsMonth(month, frame, reports, bias, lake.write(JUDGMENTS, month, frame))


def duplicate_games(judgments: pl.DataFrame) -> int:
    """Rows repeating a (question, model, judge, game): must be 0."""
    return judgments.height - judgments.unique(["question_id", "model", "judge", "game"]).height


def _rating(text: str) -> float:
    grade = parse_rating(text)
    if grade < 0:
        raise ValueError("no Rating: [[x]] in the judge's answer")
    return grade


@dataclass
class AnswerGradesMonth:
    month: str
    grades: pl.DataFrame  # SINGLE_SCHEMA + status; score -1 where no grade was read
    summary: pl.DataFrame  # judging.summary.single_summary per judge
    reports: dict[str, BatchReport]
    url: str = ""


def answer_grades_month(lake: Lake, month: str, judges: Sequence[tuple[str, LLMTask]], *,
                        cache_root: str, storage_options: dict | None = None) -> AnswerGradesMonth:
    """Single-answer grading, MT-Bench style: each judge grades every ok answer alone
    (``Rating: [[x]]``, 1-10; one re-ask when unparsed, then -1 and ``parse_failed``);
    failed calls are rows with status ``failed`` and score -1."""
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt"])
    answers = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer", "status"])
    text = dict(zip(bench["prompt_id"], bench["prompt"]))
    ok = [(q, m, a) for q, m, a, st in answers.iter_rows() if st == "ok" and q in text]
    rows, reports = [], {}
    for name, task in judges:
        cache = ResponseCache(cache_root, f"grades/{name}", storage_options=storage_options or {})
        reqs = [LLMRequest(f"{q}|{m}", single_messages(text[q], a), SINGLE_PROMPT_VERSION) for q, m, a in ok]
        results, reports[name] = run_batch(task, reqs, cache, _rating)
        cache.flush()
        for (q, m, _), r in zip(ok, results):
            rows.append({"question_id": q, "model": m, "judge": name, "turn": 1, "judgment": r.content,
                         "score": r.value if r.status == "ok" else -1.0, "status": r.status})
    grades = pl.DataFrame(rows, schema=SINGLE_SCHEMA | {"status": pl.String})
    summary = (pl.concat([single_summary(part).with_columns(judge=pl.lit(j))
                          for (j,), part in grades.group_by("judge", maintain_order=True)])
               if grades.height else pl.DataFrame(schema={"model": pl.String, "score": pl.Float64}))
    return AnswerGradesMonth(month, grades, summary, reports, lake.write(ANSWER_GRADES, month, grades))


@dataclass
class BenchLeaderboardMonth:
    month: str
    board: pl.DataFrame
    vs_human: dict | None  # judging.metrics.bench_vs_human, None without a human board
    markdown: str
    png: bytes
    urls: tuple[str, str]


def bench_leaderboard_month(lake: Lake, month: str, *, weight: int = 3, rounds: int = 100,
                            level: float = 0.95, seed: int = 0, style_control: bool = True,
                            single_grades: bool = False) -> BenchLeaderboardMonth:
    """Win rate against the baseline (bootstrap interval at ``level``), Bradley-Terry and
    style-controlled ratings on the judges' battles (every judge's games pooled: an
    ensemble), mean answer tokens, and with ``single_grades`` each model's mean
    single-answer grade (``single_score``, judges pooled); compared with the same month's human
    ``arena_leaderboard`` (overall board) when the lake has it."""
    from arena_assets.judging.metrics import bench_leaderboard, bench_vs_human, score_table

    judged = lake.read(JUDGMENTS, month).filter(pl.col("status") != "no_answer")
    feats = lake.read(MODEL_ANSWERS, month).filter(pl.col("status") == "ok")
    if not judged["parsed"].any():  # nothing judged (an empty bench): an empty board
        board = pl.DataFrame(schema={"model": pl.String, "win_rate": pl.Float64, "lower": pl.Float64,
                                     "upper": pl.Float64, "month": pl.String})
        urls = (lake.write(BENCH_LEADERBOARD, month, board), "")
        return BenchLeaderboardMonth(month, board, None, board_markdown(board), b"", urls)
    board = bench_leaderboard(judged, feats, weight=weight, rounds=rounds, level=level, seed=seed,
                              style_control=style_control).with_columns(month=pl.lit(month))
    if single_grades and lake.exists(ANSWER_GRADES, month):
        grades = single_summary(lake.read(ANSWER_GRADES, month)).select("model", single_score="score")
        board = board.join(grades, on="model", how="left")
    vs_human = None
    if lake.exists("arena_leaderboard", month):
        human = lake.read("arena_leaderboard", month).filter(pl.col("board") == "overall")
        bench = board.select("model", rating="bt_rating", lower="bt_lower", upper="bt_upper").drop_nulls()
        try:
            vs_human = bench_vs_human(score_table(bench, "bench"), score_table(human, "arena"))
        except ValueError as exc:  # fewer than two shared models: said, not guessed
            vs_human = {"error": str(exc)}
    md = board_markdown(board)
    png = board_png(board, month)
    urls = (lake.write(BENCH_LEADERBOARD, month, board), lake.write_blob(BENCH_LEADERBOARD, f"{month}.png", png))
    return BenchLeaderboardMonth(month, board, vs_human, md, png, urls)


def board_markdown(board: pl.DataFrame) -> str:
    cols = [c for c in ("model", "win_rate", "lower", "upper", "bt_rating", "style_rating", "single_score",
                        "avg_tokens") if c in board.columns]
    head = "| " + " | ".join(cols) + " |\n|" + "---|" * len(cols) + "\n"
    fmt = {"win_rate": "{:.3f}", "lower": "{:.3f}", "upper": "{:.3f}", "bt_rating": "{:.0f}",
           "style_rating": "{:.0f}", "single_score": "{:.2f}", "avg_tokens": "{:.0f}"}
    lines = ["| " + " | ".join("" if r[c] is None else fmt.get(c, "{}").format(r[c]) for c in cols) + " |"
             for r in board.select(cols).iter_rows(named=True)]
    return head + "\n".join(lines)


def board_png(board: pl.DataFrame, month: str) -> bytes:
    """Win rate against the baseline with its interval, one bar per model."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    b = board.sort("win_rate")
    fig, ax = plt.subplots(figsize=(6, 0.4 * b.height + 1.2))
    wr = b["win_rate"].to_numpy()
    err = [wr - b["lower"].to_numpy(), b["upper"].to_numpy() - wr]
    ax.barh(b["model"].to_list(), wr, xerr=err, color="#4c72b0", capsize=3)
    ax.set_xlim(0, 1)
    level = b["level"][0] if "level" in b.columns else 0.95
    ax.set_xlabel(f"win rate vs baseline ({level:.0%} bootstrap interval)")
    ax.set_title(f"bench leaderboard {month}")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
