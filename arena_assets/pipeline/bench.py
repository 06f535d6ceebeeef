"""The bench steps of a month: ``bench_prompts`` -> ``model_answers`` -> ``judgments`` ->
``bench_leaderboard`` (Arena-Hard-Auto's line of work, refreshed monthly).

Each step reads its inputs from the lake, makes every LLM call first (cached: a rerun
makes none, and a new month only asks about its own bench) and writes the month's
partition last, so a failure leaves the previous partition intact. The requests' cache
keys are indexed by the prompts they were asked about (``pipeline/cache_keys.py``), so a
forgotten user's answers can be deleted from the cache.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial

import polars as pl

from arena_assets.bench.builder import Bench, BenchOptions, Relabel, build_benches
from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA
from arena_assets.judging.answers import CandidateModel, answer_features, split_reasoning
from arena_assets.judging.judge_prompts import JudgePrompts, judge_prompts, keep_prompts
from arena_assets.judging.protocol import (
    OWN,
    BenchProtocol,
    ProtocolMismatchError,
    get_protocol,
    judgments_protocol,
)
from arena_assets.judging.summary import bias_report, single_summary
from arena_assets.judging.verdicts import (
    JUDGMENT_SCHEMA,
    SINGLE_PROMPT_VERSION,
    SINGLE_SCHEMA,
    parse_rating,
    plan_games,
    single_messages,
)
from arena_assets.llm import (
    BatchReport,
    LLMRequest,
    LLMResult,
    LLMTask,
    ResponseCache,
    concurrently,
    run_batch,
)
from arena_assets.pipeline.cache_keys import indexed, prompt_owners
from arena_assets.storage import Lake

BENCH_PROMPTS_ASSET = "bench_prompts"
MODEL_ANSWERS = "model_answers"
JUDGMENTS = "judgments"
ANSWER_GRADES = "answer_grades"
BENCH_LEADERBOARD = "bench_leaderboard"
ANSWER_PROMPT_VERSION = "answer-v1"
_VISION_CATS = ("captioning", "ocr", "entity_recognition", "humor", "homework", "diagram")


def labelled_prompts(lake: Lake, month: str, max_prompt_chars: int = 12_500) -> pl.DataFrame:
    """One row per distinct first prompt of ``month``: BenchBuilder's input, joined from
    ``topic_labels`` (criteria, category flags), ``topic_clusters`` and ``conversations``;
    ``prompt`` is the first prompt (what the candidates answer), ``label_text`` what the
    labels were asked on: the labelled conversation's user turns joined, cut at
    ``max_prompt_chars`` (the strong pass reads it too)."""
    from arena_assets.labels.label import label_inputs

    labels = lake.read("topic_labels", month).unique("dedup_key", keep="first", maintain_order=True)
    clusters = lake.read("topic_clusters", month, columns=["dedup_key", "cluster_id"])
    conv = lake.read(
        "conversations", month, columns=["dedup_key", "first_prompt", "language"]
    ).unique("dedup_key", keep="first", maintain_order=True)
    # the label input of the very conversation whose labels are used
    labelled = lake.read("conversations", month, columns=["conv_id", "messages"]).filter(
        pl.col("conv_id").is_in(labels["conv_id"].to_list())
    )
    texts = label_inputs(labelled, max_prompt_chars).select("conv_id", "label_text")
    labels = labels.join(texts, on="conv_id", how="left")
    vision = [c for c in _VISION_CATS if f"vision_{c}" in labels.columns]
    category = (
        pl.when(pl.col("code")).then(pl.lit("coding")).when(pl.col("math")).then(pl.lit("math"))
    )
    for c in vision:
        category = category.when(pl.col(f"vision_{c}").fill_null(False)).then(pl.lit(c))
    category = (
        category.when(pl.col("creative_writing"))
        .then(pl.lit("creative_writing"))
        .otherwise(pl.lit("other"))
    )
    return (
        labels.join(clusters, on="dedup_key", how="inner")
        .join(conv, on="dedup_key", how="inner")
        .select(
            *CRITERIA,
            prompt_id="dedup_key",
            prompt="first_prompt",
            language="language",
            category=category,
            cluster_id=pl.col("cluster_id").cast(pl.Int64),
            has_image="is_vision",
            label_text=pl.coalesce("label_text", "first_prompt"),
        )
        .sort("prompt_id")
    )


@dataclass
class BenchPromptsMonth:
    month: str
    prompts: pl.DataFrame  # text and vision benches together (``bench_kind``)
    benches: dict[str, Bench]
    url: str


@indexed("bench_prompts", prompt_owners)  # the second labelling pass asks about prompts
def bench_prompts_month(
    lake: Lake, month: str, options: BenchOptions = BenchOptions(), relabel: Relabel | None = None
) -> BenchPromptsMonth:
    """The month's text and vision benches, decontaminated against every earlier bench;
    ``relabel`` (e.g. ``bench.relabel.StrongRelabel``) is the optional second labelling
    pass over the prompts the cheap labels let through."""
    earlier_months = [m for m in lake.months(BENCH_PROMPTS_ASSET) if m < month]
    earlier = (
        pl.concat([lake.read(BENCH_PROMPTS_ASSET, m, columns=["prompt"]) for m in earlier_months])[
            "prompt"
        ].to_list()
        if earlier_months
        else []
    )
    benches = build_benches(
        labelled_prompts(lake, month), options, month=month, earlier=earlier, relabel=relabel
    )
    prompts = (
        pl.concat([b.prompts for b in benches.values()])
        if benches
        else pl.DataFrame(schema=BENCH_PROMPTS)
    )
    return BenchPromptsMonth(
        month, prompts, benches, lake.write(BENCH_PROMPTS_ASSET, month, prompts)
    )


def candidate_task(
    c: CandidateModel,
    api_key: str | None = None,
    base: LLMTask | None = None,
    max_tokens: int = 4096,
) -> LLMTask:
    """The LLM task of a candidate; ``params`` may set temperature/max_tokens and extras
    (``max_tokens`` otherwise: the protocol's answer cap, 4,096 in Arena-Hard v0.1).
    The key is ``api_key``, else the variable ``c.api_key_env`` names, read now (run time)."""
    if api_key is None:
        api_key = os.environ.get(c.api_key_env, "") if c.api_key_env else ""
    params = dict(c.params)
    # settings of the call, not fields of the request (prices: the plan's and the metadata's cost)
    known = {
        k: params.pop(k)
        for k in (
            "temperature",
            "max_tokens",
            "max_concurrency",
            "timeout",
            "price_input_per_1m",
            "price_output_per_1m",
        )
        if k in params
    }
    defaults = (
        {
            "max_concurrency": base.max_concurrency,
            "timeout": base.timeout,
            "max_retries": base.max_retries,
        }
        if base
        else {}
    )
    return LLMTask(
        model=c.served_model,
        base_url=c.base_url,
        api_key=api_key or "sk-no-key",
        **(defaults | {"max_tokens": max_tokens} | known),
        extra_params=params,
    )


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

    def cap_hits(self) -> dict[str, float]:
        """Per model, the share of its ok answers that used the whole token cap (cut)."""
        ok = self.answers.filter(pl.col("status") == "ok")
        return {
            m: round(float(v), 4)
            for m, v in ok.group_by("model")
            .agg(pl.col("hit_token_cap").mean())
            .sort("model")
            .iter_rows()
        }


@indexed("model_answers", prompt_owners)
def model_answers_month(
    lake: Lake,
    month: str,
    candidates: Sequence[tuple[str, LLMTask]],
    *,
    cache_root: str,
    storage_options: dict | None = None,
) -> ModelAnswersMonth:
    """Every candidate answers every bench prompt (one row per prompt x candidate, with its
    status); reasoning kept apart, tokens and style features per answer."""
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt", "bench_kind"])
    reqs = [
        LLMRequest(pid, [{"role": "user", "content": text}], ANSWER_PROMPT_VERSION)
        for pid, text in zip(bench["prompt_id"], bench["prompt"])
    ]

    def ask_candidate(name: str, task: LLMTask) -> tuple[list[LLMResult], BatchReport]:
        cache = ResponseCache(cache_root, f"answers/{name}", storage_options=storage_options or {})
        try:
            return run_batch(task, reqs, cache, _text)
        finally:
            cache.flush()

    # every candidate at once: one endpoint's calls share its concurrency (llm.concurrently)
    answered = concurrently([partial(ask_candidate, name, task) for name, task in candidates])
    rows, reports = [], {}
    for (name, task), (results, reports[name]) in zip(candidates, answered):
        for r, kind in zip(results, bench["bench_kind"]):
            answer, reasoning = (
                split_reasoning(r.content, r.reasoning) if r.status == "ok" else ("", "")
            )
            rows.append(
                {
                    "question_id": r.item_id,
                    "bench_kind": kind,
                    "model": name,
                    "answer": answer,
                    "reasoning": reasoning,
                    "status": r.status,
                    "error": r.error,
                    "hit_token_cap": hit_cap(r, task),
                }
            )
    answers = answer_features(
        pl.DataFrame(
            rows,
            schema={
                "question_id": pl.String,
                "bench_kind": pl.String,
                "model": pl.String,
                "answer": pl.String,
                "reasoning": pl.String,
                "status": pl.String,
                "error": pl.String,
                "hit_token_cap": pl.Boolean,
            },
        )
    )
    return ModelAnswersMonth(month, answers, reports, lake.write(MODEL_ANSWERS, month, answers))


def hit_cap(result: LLMResult, task: LLMTask) -> bool:
    """The call used its whole ``max_tokens`` (the endpoint's usage; what finish_reason
    "length" means): its text was cut."""
    return bool(
        result.status != "failed"
        and task.max_tokens
        and result.completion_tokens >= task.max_tokens
    )


@dataclass
class JudgmentsMonth:
    month: str
    judgments: pl.DataFrame
    reports: dict[str, BatchReport]
    bias: dict[str, dict]  # per judge: bias_report
    url: str = ""
    protocol: str = OWN
    prompts: JudgePrompts | None = None  # the texts the judge received

    def cap_hits(self) -> dict[str, float]:
        """Per judge, the share of judged games whose judge reply used the whole token cap."""
        played = self.judgments.filter(pl.col("status").is_in(["ok", "parse_failed"]))
        return {
            j: round(float(v), 4)
            for j, v in played.group_by("judge")
            .agg(pl.col("hit_token_cap").mean())
            .sort("judge")
            .iter_rows()
        }

    def attempts(self) -> dict[str, int]:
        """Games by the number of judge calls they took (2 = the continued conversation)."""
        played = self.judgments.filter(pl.col("attempts") > 0)
        return {
            str(k): int(v)
            for k, v in played.group_by("attempts").len().sort("attempts").iter_rows()
        }


# ``protocol``: the protocol each game was played by (its caps, verdict rule, re-ask and
# text); the board and the release read it instead of the current setting.
# ``prompt_sha256``: the hash of the judge's texts (``judging.judge_prompts``)
JUDGMENTS_TABLE = JUDGMENT_SCHEMA | {
    "status": pl.String,
    "attempts": pl.Int8,
    "hit_token_cap": pl.Boolean,
    "protocol": pl.String,
    "prompt_sha256": pl.String,
}


def _judge_games(
    task: LLMTask,
    messages: dict[str, list[dict]],
    proto: BenchProtocol,
    cache: ResponseCache,
    prompts: JudgePrompts,
) -> tuple[dict[str, dict], BatchReport]:
    """Every game's judge call; the games without a label (v0.1) continue the same
    conversation once more: the judge's reply, then the prompt set's follow-up turn.
    -> {game id: {judgment, verdict, status, attempts, hit_token_cap}}."""
    task = replace(task, parse_retries=0)  # a re-ask is the continued conversation, not a resend
    ids = list(messages)
    first, report = run_batch(
        task, [LLMRequest(i, messages[i], prompts.version) for i in ids], cache, proto.parse
    )
    out = {}
    again = []
    for r in first:
        label, retry = r.value if r.status == "ok" else (None, r.status == "parse_failed")
        out[r.item_id] = {
            "judgment": r.content,
            "verdict": label,
            "attempts": 1,
            "hit_token_cap": hit_cap(r, task),
            "status": "ok" if label else ("failed" if r.status == "failed" else "parse_failed"),
        }
        if label is None and retry and proto.attempts > 1 and r.status != "failed":
            again.append(
                LLMRequest(
                    r.item_id,
                    [
                        *messages[r.item_id],
                        {"role": "assistant", "content": r.content or ""},
                        {"role": "user", "content": prompts.follow_up},
                    ],
                    f"{prompts.version}+follow-up",
                )
            )
    if again:
        second, more = run_batch(task, again, cache, proto.parse)
        for name in (
            "items",
            "unique_requests",
            "cache_hits",
            "calls",
            "prompt_tokens",
            "completion_tokens",
            "cost",
        ):
            setattr(report, name, getattr(report, name) + getattr(more, name))
        report.statuses = {
            k: report.statuses.get(k, 0) + more.statuses.get(k, 0) for k in report.statuses
        }
        report.elapsed_s = (
            more.started_at + more.elapsed_s - report.started_at
        )  # the follow-ups included
        for r in second:
            game = out[r.item_id]
            # the anchor parses the whole judgment so far, both replies joined
            text = "\n".join(t for t in (game["judgment"], r.content) if t)
            label = proto.parse(text)[0] if r.status != "failed" else None
            game.update(
                judgment=text,
                verdict=label,
                attempts=2,
                hit_token_cap=game["hit_token_cap"] or hit_cap(r, task),
                status="ok" if label else ("failed" if r.status == "failed" else "parse_failed"),
            )
    return out, report


@indexed("judgments", prompt_owners)
def judgments_month(
    lake: Lake,
    month: str,
    judges: Sequence[tuple[str, LLMTask]],
    baseline: str | Mapping[str, str],
    *,
    cache_root: str,
    storage_options: dict | None = None,
    protocol: str | BenchProtocol = OWN,
    prompts: JudgePrompts | None = None,
) -> JudgmentsMonth:
    """Two games per (prompt, candidate, judge) against the baseline, positions swapped,
    by ``protocol`` (``judging.protocol``): its verdict rule, its follow-up (v0.1's rules:
    a game without a label continues the conversation once), and under v2's rules a
    baseline per question category (``baseline`` a {category: model} mapping; one name
    serves every category). ``prompts``: the texts the judge receives
    (``judging.judge_prompts``; default: the protocol's own wording, an error for an
    Arena-Hard-Auto protocol, whose texts come from a checkout). What stays unparsed is
    kept (``parsed`` false, ``status`` parse_failed); a call that failed after the
    client's retries is recorded as ``failed``; prompts where the baseline or the candidate
    has no answer as ``no_answer``. The judges' tasks carry their own ``max_tokens`` (the
    protocol's cap, set by the asset)."""
    proto = get_protocol(protocol)
    prompts = prompts or judge_prompts(proto.name)
    if prompts.protocol != proto.name:
        raise ValueError(f"the prompt set is {prompts.protocol}'s, the protocol {proto.name}")
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt", "category"])
    answers = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer", "status"])
    if bench.height == 0:  # an empty bench (a tiny month): an empty, well-typed table
        frame = pl.DataFrame(schema=JUDGMENTS_TABLE)
        url = lake.write(JUDGMENTS, month, frame)
        keep_prompts(lake, JUDGMENTS, month, prompts)
        return JudgmentsMonth(month, frame, {}, {}, url, proto.name, prompts)
    categories = [proto.question_category(c) for c in bench["category"]]
    bases = (
        dict.fromkeys(set(categories), baseline) if isinstance(baseline, str) else dict(baseline)
    )
    have = set(answers["model"])
    missing = sorted({bases[c] for c in set(categories)} - have)
    if missing:
        raise ValueError(
            f"baseline {', '.join(map(repr, missing))} has no answers this month; "
            f"candidates: {sorted(have)}"
        )
    text = dict(zip(bench["prompt_id"], bench["prompt"]))
    ok = {(q, m): a for q, m, a, s in answers.iter_rows() if s == "ok"}
    models = sorted(have)
    rows, reports, bias = [], {}, {}

    def play(name: str, task: LLMTask, games: list[dict]) -> tuple[dict[str, dict], BatchReport]:
        playable = {
            f"{g['question_id']}|{g['model']}|{g['game']}": g
            for g in games
            if (g["question_id"], g["model_a"]) in ok and (g["question_id"], g["model_b"]) in ok
        }
        messages = {
            i: prompts.messages(
                text[g["question_id"]],
                ok[g["question_id"], g["model_a"]],
                ok[g["question_id"], g["model_b"]],
                g["category"],
            )
            for i, g in playable.items()
        }
        cache = ResponseCache(
            cache_root, f"judgments/{name}", storage_options=storage_options or {}
        )
        try:
            return _judge_games(task, messages, proto, cache, prompts)
        finally:
            cache.flush()

    schedule = {
        name: plan_games(bench["prompt_id"].to_list(), models, bases, [name], categories).to_dicts()
        for name, _ in judges
    }
    # every judge at once (llm.concurrently: one endpoint's calls share its concurrency)
    played = concurrently([partial(play, name, task, schedule[name]) for name, task in judges])
    for (name, _), (done, reports[name]) in zip(judges, played):
        games = schedule[name]
        for g in games:
            r = done.get(f"{g['question_id']}|{g['model']}|{g['game']}")
            rows.append(
                g
                | (
                    r
                    or {
                        "judgment": None,
                        "verdict": None,
                        "status": "no_answer",
                        "attempts": 0,
                        "hit_token_cap": False,
                    }
                )
                | {
                    "parsed": bool(r and r["verdict"]),
                    "protocol": proto.name,
                    "prompt_sha256": prompts.sha256,
                }
            )
    frame = pl.DataFrame(rows, schema=JUDGMENTS_TABLE)
    feats = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer_tokens"])
    lengths = feats.rename({"answer_tokens": "tokens"})
    for (name,), part in frame.group_by("judge", maintain_order=True):
        bias[name] = bias_report(part.filter(pl.col("status") != "no_answer"), lengths)
    url = lake.write(JUDGMENTS, month, frame)
    keep_prompts(lake, JUDGMENTS, month, prompts)
    return JudgmentsMonth(month, frame, reports, bias, url, proto.name, prompts)


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


@indexed("answer_grades", prompt_owners)
def answer_grades_month(
    lake: Lake,
    month: str,
    judges: Sequence[tuple[str, LLMTask]],
    *,
    cache_root: str,
    storage_options: dict | None = None,
) -> AnswerGradesMonth:
    """Single-answer grading, MT-Bench style: each judge grades every ok answer alone
    (``Rating: [[x]]``, 1-10; one re-ask when unparsed, then -1 and ``parse_failed``);
    failed calls are rows with status ``failed`` and score -1."""
    bench = lake.read(BENCH_PROMPTS_ASSET, month, columns=["prompt_id", "prompt"])
    answers = lake.read(MODEL_ANSWERS, month, columns=["question_id", "model", "answer", "status"])
    text = dict(zip(bench["prompt_id"], bench["prompt"]))
    ok = [(q, m, a) for q, m, a, st in answers.iter_rows() if st == "ok" and q in text]
    reqs = [
        LLMRequest(f"{q}|{m}", single_messages(text[q], a), SINGLE_PROMPT_VERSION) for q, m, a in ok
    ]

    def grade(name: str, task: LLMTask) -> tuple[list[LLMResult], BatchReport]:
        cache = ResponseCache(cache_root, f"grades/{name}", storage_options=storage_options or {})
        try:
            return run_batch(task, reqs, cache, _rating)
        finally:
            cache.flush()

    rows, reports = [], {}
    graded = concurrently(
        [partial(grade, name, task) for name, task in judges]
    )  # every judge at once
    for (name, _), (results, reports[name]) in zip(judges, graded):
        for (q, m, _), r in zip(ok, results):
            rows.append(
                {
                    "question_id": q,
                    "model": m,
                    "judge": name,
                    "turn": 1,
                    "judgment": r.content,
                    "score": r.value if r.status == "ok" else -1.0,
                    "status": r.status,
                }
            )
    grades = pl.DataFrame(rows, schema=SINGLE_SCHEMA | {"status": pl.String})
    summary = (
        pl.concat(
            [
                single_summary(part).with_columns(judge=pl.lit(j))
                for (j,), part in grades.group_by("judge", maintain_order=True)
            ]
        )
        if grades.height
        else pl.DataFrame(schema={"model": pl.String, "score": pl.Float64})
    )
    return AnswerGradesMonth(
        month, grades, summary, reports, lake.write(ANSWER_GRADES, month, grades)
    )


@dataclass
class BenchLeaderboardMonth:
    month: str
    board: pl.DataFrame
    vs_human: dict | None  # judging.metrics.bench_vs_human, None without a human board
    markdown: str
    png: bytes
    urls: tuple[str, str]
    # judging.metrics.bench_leaderboard's meta: models without a win rate, style control per category
    meta: dict = field(default_factory=dict)


def bench_leaderboard_month(
    lake: Lake,
    month: str,
    *,
    protocol: str | BenchProtocol = OWN,
    weight: int | None = None,
    rounds: int | None = None,
    seed: int = 42,
    style_control: bool = True,
    single_grades: bool = False,
) -> BenchLeaderboardMonth:
    """Arena-Hard-Auto's board of the month by ``protocol``: per question category, each
    candidate's score against that category's baseline with the protocol's interval, the
    style-controlled win rate and interval, and beside them our Bradley-Terry and
    style-controlled ratings of the same battles (every judge's games pooled), mean answer
    tokens, and with ``single_grades`` each model's mean single-answer grade
    (``single_score``, judges pooled); the main category (v0.1's only one, v2's
    ``hard_prompt``) compared with the same month's human ``arena_leaderboard`` (overall
    board) when the lake has it."""
    from arena_assets.judging.board_report import board_markdown, board_png
    from arena_assets.judging.metrics import bench_leaderboard, bench_vs_human, score_table

    proto = get_protocol(protocol)
    judged = lake.read(JUDGMENTS, month).filter(pl.col("status") != "no_answer")
    played = judgments_protocol(judged)
    if played is not None and played != proto.name:  # scores by one version of games of another
        raise ProtocolMismatchError(
            f"judgments of {month} were played by {played}, ARENA_BENCH_PROTOCOL is {proto.name}: "
            f"rematerialize judgments for {month}, or set ARENA_BENCH_PROTOCOL={played}"
        )
    if "category" not in judged.columns:  # a partition written before categories were kept
        judged = judged.with_columns(category=pl.lit(proto.question_category(None)))
    feats = lake.read(MODEL_ANSWERS, month).filter(pl.col("status") == "ok")
    if not judged["parsed"].any():  # nothing judged (an empty bench): an empty board
        board = pl.DataFrame(
            schema={
                "protocol": pl.String,
                "category": pl.String,
                "model": pl.String,
                "win_rate": pl.Float64,
                "lower": pl.Float64,
                "upper": pl.Float64,
                "month": pl.String,
            }
        )
        urls = (lake.write(BENCH_LEADERBOARD, month, board), "")
        return BenchLeaderboardMonth(month, board, None, board_markdown(board), b"", urls)
    meta: dict = {}
    board = bench_leaderboard(
        judged,
        feats,
        protocol=proto,
        weight=weight,
        rounds=rounds,
        seed=seed,
        style_control=style_control,
        meta=meta,
    ).with_columns(month=pl.lit(month))
    if single_grades and lake.exists(ANSWER_GRADES, month):
        grades = single_summary(lake.read(ANSWER_GRADES, month)).select(
            "model", single_score="score"
        )
        board = board.join(grades, on="model", how="left")
    vs_human = None
    if lake.exists("arena_leaderboard", month):
        human = lake.read("arena_leaderboard", month).filter(pl.col("board") == "overall")
        main = board.filter(pl.col("category") == proto.question_category(None))
        bench = main.select(
            "model", rating="bt_rating", lower="bt_lower", upper="bt_upper"
        ).drop_nulls()
        try:
            vs_human = bench_vs_human(score_table(bench, "bench"), score_table(human, "arena"))
        except ValueError as exc:  # fewer than two shared models: said, not guessed
            vs_human = {"error": str(exc)}
    md = board_markdown(board)
    png = board_png(board, month)
    urls = (
        lake.write(BENCH_LEADERBOARD, month, board),
        lake.write_blob(BENCH_LEADERBOARD, f"{month}.png", png),
    )
    return BenchLeaderboardMonth(month, board, vs_human, md, png, urls, meta)
