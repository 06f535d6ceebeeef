"""The bill of a month before it runs: every LLM asset's plan (``arena-assets plan``, the
first log line of each LLM run and the ``ARENA_LLM_BUDGET_USD`` check).

Where an asset's inputs are in the lake its plan is exact: the asset's own month step runs
in planning mode (``llm.plan.planning``) over a lake that writes nothing, so the plan
counts exactly the requests the run will send, after dedup and the cache, without a copy
of any stage's request building. Where the inputs are not there yet (a month whose labels
or bench are still to come) the plan is projected from the settings (bench size,
candidates, judges) and the lengths the lake and the cache already know, and says so.
``topic_clusters`` is always partly projected: how many clusters the month has (one naming
call each) is known only after the embeddings.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import polars as pl

from arena_assets.llm import LLMTask, ResponseCache, embeddings_cache
from arena_assets.llm.client import LLMEndpointError
from arena_assets.llm.plan import (
    AssetPlan,
    BatchPlan,
    input_scale,
    one_run,
    output_estimate,
    pilots_sampled,
    planning,
    sampling_pilots,
)
from arena_assets.llm.tokens import chat_prompt_tokens, text_tokens
from arena_assets.storage import Lake


class PlanLake:
    """A lake that reads like ``lake`` and writes nothing (a month step in planning mode)."""

    def __init__(self, lake: Lake) -> None:
        self._lake = lake

    def __getattr__(self, name: str):
        return getattr(self._lake, name)

    def write(self, asset: str, month: str, frame: pl.DataFrame) -> str:
        return f"(planned) {asset}/{month}"

    def write_blob(self, asset: str, name: str, data: bytes) -> str:
        return f"(planned) {asset}/{name}"

    def write_file(self, relpath: str, data: bytes, *, what: str = "") -> str:
        return f"(planned) {relpath}"


@dataclass
class MonthSettings:
    """What the LLM assets of a month are configured with (built from the resources)."""

    cache_root: str
    storage_options: dict = field(default_factory=dict)
    labeler: LLMTask | None = None
    label_cfg: object = None  # labels.label.LabelConfig
    embedder: LLMTask | None = None  # None: the offline embedder, no call
    namer: LLMTask | None = None  # None: clusters named by keywords
    cluster_cfg: object = None  # labels.clusters.ClusterConfig
    bench_options: object = None  # bench.builder.BenchOptions
    relabel: LLMTask | None = None
    candidates: Sequence[tuple[str, LLMTask]] = ()
    judges: Sequence[tuple[str, LLMTask]] = ()
    baseline: str | dict = ""  # the baseline model, or {question category: baseline}
    protocol: object = None  # judging.protocol's BenchProtocol (None: judgments_month's default)
    judge_prompts: object = None  # judging.judge_prompts' JudgePrompts (None: the protocol's own)
    relabel_prompt_set: object = None  # labels' PromptSet of the second pass (None: the default)
    relabel_reask: bool = False
    single_grades: bool = False
    # judge_human_agreement: its judges (evaluators.judges.JudgeSpec), sample and endpoints
    agreement_judges: Sequence = ()
    agreement_size: int = 0
    agreement_seed: int = 0
    agreement_judge: LLMTask | None = None
    agreement_reward: LLMTask | None = None
    agreement_error: str = ""  # why the agreement's judges cannot be asked (its run fails the same)
    risk_labeler: LLMTask | None = None  # over_refusal's risk labeller
    refusal_max_chars: int = 4000


def _planned(asset: str, month: str, step) -> AssetPlan:
    """Run ``step()`` (a month step over a ``PlanLake``) in planning mode."""
    with planning() as batches:
        step()
    return AssetPlan(asset, month, list(batches))


def plan_topic_labels(lake: Lake, month: str, s: MonthSettings) -> AssetPlan:
    from arena_assets.pipeline.topics import topic_labels_month

    if s.labeler is None:
        return AssetPlan("topic_labels", month, note="no labeller configured")
    if not lake.exists("conversations", month):
        return AssetPlan(
            "topic_labels",
            month,
            note=f"conversations {month} not in the lake yet "
            "(ingest and clean make no LLM call: run them first)",
        )

    def step() -> None:
        topic_labels_month(
            PlanLake(lake),
            month,
            s.labeler,
            cache_root=s.cache_root,
            cfg=s.label_cfg,
            storage_options=s.storage_options,
        )

    try:
        return _planned("topic_labels", month, step)
    except LLMEndpointError as exc:  # a plan for a pilot checks the images' source, which
        if not pilots_sampled():  # needs the endpoint: the labels then go unpiloted, the
            raise  # other assets are piloted, and the run fails the same
        with sampling_pilots(0):
            plan = _planned("topic_labels", month, step)
        plan.note = f"not piloted: {exc}"
        return plan


def plan_topic_clusters(lake: Lake, month: str, s: MonthSettings) -> AssetPlan:
    """Embeddings of the distinct prompts (exact) and one naming call per cluster
    (projected: the configured k, else last month's count, else the most clusters the
    clustering can give, ``clusters.max_clusters``)."""
    from arena_assets.labels.clusters import IMAGE_ONLY, max_clusters
    from arena_assets.labels.label import distinct_prompts
    from arena_assets.labels.prompts import CLUSTER_NAME_VERSION, cluster_name_messages
    from arena_assets.llm.cache import request_key
    from arena_assets.llm.embed import EMBED_VERSION
    from arena_assets.llm.plan import plan_embeddings
    from arena_assets.pipeline.topics import prompt_conversations

    plan = AssetPlan("topic_clusters", month)
    if not lake.exists("conversations", month):
        plan.note = f"conversations {month} not in the lake yet"
        return plan
    cfg = s.cluster_cfg
    prompts = distinct_prompts(
        prompt_conversations(lake, month, ["conv_id", "dedup_key", "first_prompt"])
    )
    texts = [
        t[: cfg.max_embed_chars] if t.strip() else IMAGE_ONLY
        for t in prompts.get_column("first_prompt").fill_null("").to_list()
    ]
    if s.embedder is not None:
        cache = embeddings_cache(s.cache_root, s.storage_options)
        keys = [request_key(s.embedder.model, t, {}, EMBED_VERSION) for t in texts]
        plan.batches.append(plan_embeddings(s.embedder, keys, texts, cache, batch_size=64))
    if s.namer is not None and texts:
        earlier = [m for m in lake.months("topic_cluster_summary") if m < month]
        if cfg.n_clusters and cfg.method != "hdbscan":  # hdbscan finds its own number
            k, how = min(cfg.n_clusters, len(texts)), "the configured k"
        elif earlier:
            k, how = (
                lake.read("topic_cluster_summary", earlier[-1]).height,
                f"{earlier[-1]}'s clusters",
            )
        else:
            k, how = (
                max_clusters(cfg, len(texts)),
                "the most the clustering can give (no earlier month)",
            )
        rng = random.Random(cfg.seed)
        sample = [texts[i] for i in rng.sample(range(len(texts)), min(len(texts), 400))]
        per = sum(
            chat_prompt_tokens(cluster_name_messages(sample[j : j + cfg.name_samples]))
            for j in range(0, len(sample), cfg.name_samples)
        ) / -(-len(sample) // cfg.name_samples)
        cache = ResponseCache(
            s.cache_root, f"labels/{CLUSTER_NAME_VERSION}", storage_options=s.storage_options
        )
        out, basis = output_estimate(s.namer, cache, [CLUSTER_NAME_VERSION])
        scale, input_basis = input_scale(s.namer, cache, [CLUSTER_NAME_VERSION])
        naming = BatchPlan(
            CLUSTER_NAME_VERSION,
            s.namer.model,
            s.namer.base_url,
            items=k,
            distinct=k,
            calls=k,
            prompt_tokens=round(scale * per * k),
            completion_tokens=round(out * k),
            output_basis=f"{basis}; {k} clusters = {how}",
            exact=False,
            input_basis=input_basis,
            input_scale=scale,
        )
        naming.price(s.namer)
        plan.batches.append(naming)
    return plan


def plan_bench_prompts(lake: Lake, month: str, s: MonthSettings) -> AssetPlan:
    """Only the optional second labelling pass (``ARENA_BENCH_RELABEL_MODEL``) calls."""
    from arena_assets.bench.relabel import StrongRelabel
    from arena_assets.pipeline.bench import bench_prompts_month

    if s.relabel is None:
        return AssetPlan("bench_prompts", month, note="no second labelling pass: no call")
    missing = [a for a in ("topic_labels", "topic_clusters") if not lake.exists(a, month)]
    if missing:
        return AssetPlan(
            "bench_prompts",
            month,
            note=f"{', '.join(missing)} {month} not in the lake "
            "yet: the second pass relabels only the prompts the labels let through",
        )
    extra = {"prompt_set": s.relabel_prompt_set} if s.relabel_prompt_set is not None else {}
    relabel = StrongRelabel(
        s.relabel, s.cache_root, s.storage_options, reask_unreadable=s.relabel_reask, **extra
    )
    return _planned(
        "bench_prompts",
        month,
        lambda: bench_prompts_month(PlanLake(lake), month, s.bench_options, relabel=relabel),
    )


def _bench_size(lake: Lake, month: str, s: MonthSettings) -> tuple[int, float, str]:
    """Projected (prompts, mean prompt tokens, how) of a bench not built yet."""
    opts = s.bench_options
    size = opts.size + opts.vision_size
    if lake.exists("topic_labels", month):
        labels = lake.read("topic_labels", month, columns=["dedup_key", "criteria_count"])
        hard = labels.filter(pl.col("criteria_count") >= opts.min_quality).unique("dedup_key")
        conv = lake.read("conversations", month, columns=["dedup_key", "first_prompt"])
        texts = conv.join(hard, on="dedup_key").unique("dedup_key")["first_prompt"].to_list()
        how = f"at most the {len(texts):,} prompts meeting {opts.min_quality}+ criteria"
        size = min(size, len(texts))
    elif lake.exists("conversations", month):
        texts = lake.read("conversations", month, columns=["first_prompt"])[
            "first_prompt"
        ].to_list()
        how = "the configured bench size; prompt length of the month's first prompts"
    else:
        return size, 0.0, "the configured bench size; no conversations: prompt length unknown"
    texts = [t for t in texts if t][:5000]
    mean = sum(text_tokens(t) for t in texts) / len(texts) if texts else 0.0
    return size, mean, how


def plan_model_answers(lake: Lake, month: str, s: MonthSettings) -> AssetPlan:
    from arena_assets.pipeline.bench import ANSWER_PROMPT_VERSION, model_answers_month

    if lake.exists("bench_prompts", month):
        return _planned(
            "model_answers",
            month,
            lambda: model_answers_month(
                PlanLake(lake),
                month,
                s.candidates,
                cache_root=s.cache_root,
                storage_options=s.storage_options,
            ),
        )
    n, mean, how = _bench_size(lake, month, s)
    plan = AssetPlan(
        "model_answers", month, note=f"bench {month} not built yet: {n} prompts ({how})"
    )
    prompt = chat_prompt_tokens([{"role": "user", "content": ""}]) + mean
    plan.batches += [
        _estimated(s, task, f"answers/{name}", ANSWER_PROMPT_VERSION, n, prompt)
        for name, task in s.candidates
    ]
    return plan


def _estimated(
    s: MonthSettings,
    task,
    namespace: str,
    version: str,
    calls: int,
    prompt_per_call: float,
    billed_per_call: float = 0.0,
) -> BatchPlan:
    """A batch not built yet: ``calls`` calls of ``prompt_per_call`` input tokens as the
    plan counts them (scaled to the endpoint's billing: ``input_scale``) and
    ``billed_per_call`` more already in billed units, the output estimated from the cache's
    history of ``namespace`` (else max_tokens)."""
    cache = ResponseCache(s.cache_root, namespace, storage_options=s.storage_options)
    out, basis = output_estimate(task, cache, [version])
    scale, input_basis = input_scale(task, cache, [version])
    b = BatchPlan(
        version,
        task.model,
        task.base_url,
        items=calls,
        distinct=calls,
        calls=calls,
        prompt_tokens=round((scale * prompt_per_call + billed_per_call) * calls),
        completion_tokens=round(out * calls),
        output_basis=basis,
        exact=False,
        input_basis=input_basis,
        input_scale=scale,
    )
    return b.price(task)


def _answer_tokens(s: MonthSettings) -> float:
    """Mean answer length the candidates are expected to give (history, else max_tokens)."""
    from arena_assets.pipeline.bench import ANSWER_PROMPT_VERSION

    outs = [
        output_estimate(
            t,
            ResponseCache(s.cache_root, f"answers/{n}", storage_options=s.storage_options),
            [ANSWER_PROMPT_VERSION],
        )[0]
        for n, t in s.candidates
    ]
    return sum(outs) / len(outs) if outs else 0.0


def plan_judgments(lake: Lake, month: str, s: MonthSettings) -> AssetPlan:
    from arena_assets.judging.judge_prompts import judge_prompts
    from arena_assets.judging.protocol import OWN
    from arena_assets.judging.verdicts import SINGLE_PROMPT_VERSION, single_messages
    from arena_assets.pipeline.bench import answer_grades_month, judgments_month

    if lake.exists("model_answers", month) and lake.exists("bench_prompts", month):

        def step() -> None:
            extra = {"protocol": s.protocol} if s.protocol is not None else {}
            if s.judge_prompts is not None:
                extra["prompts"] = s.judge_prompts
            judgments_month(
                PlanLake(lake),
                month,
                s.judges,
                s.baseline,
                cache_root=s.cache_root,
                storage_options=s.storage_options,
                **extra,
            )
            if s.single_grades:
                answer_grades_month(
                    PlanLake(lake),
                    month,
                    s.judges,
                    cache_root=s.cache_root,
                    storage_options=s.storage_options,
                )

        return _planned("judgments", month, step)
    n, mean, how = _bench_size(lake, month, s)
    answer = _answer_tokens(s)
    others = max(len(s.candidates) - 1, 0)
    plan = AssetPlan(
        "judgments",
        month,
        note=f"answers {month} not there yet: {n} prompts ({how}), "
        f"{others} candidates against the baseline, answers ~{answer:.0f} tokens",
    )
    prompts = s.judge_prompts or judge_prompts(getattr(s.protocol, "name", OWN))
    first = next(iter(prompts.systems))  # the request's size: one category's system prompt
    kinds = [(prompts.version, 2 * n * others, prompts.messages("", "", "", first), 2, "judgments")]
    if s.single_grades:
        kinds.append(
            (SINGLE_PROMPT_VERSION, n * len(s.candidates), single_messages("", ""), 1, "grades")
        )
    for name, task in s.judges:
        for version, calls, template, answers, namespace in kinds:
            # the answers' lengths are billed tokens already (the candidates' usage): not scaled
            per = chat_prompt_tokens(template) + mean
            plan.batches.append(
                _estimated(
                    s,
                    task,
                    f"{namespace}/{name}",
                    version,
                    calls,
                    per,
                    billed_per_call=answers * answer,
                )
            )
    return plan


def plan_prompt_embeddings(
    lake: Lake, month: str, s: MonthSettings, inputs=None, cache: ResponseCache | None = None
) -> AssetPlan:
    """The month's distinct first prompts the embedder has not embedded yet: the texts
    ``topic_clusters`` embeds too (one cache), so whichever of the two runs first calls.
    ``inputs`` (``embeddings.embedding_inputs``) and ``cache``: the run's own, when it has them."""
    from arena_assets.llm.embed import embed_texts
    from arena_assets.pipeline.embeddings import embedding_inputs

    if s.embedder is None:
        return AssetPlan(
            "prompt_embeddings", month, note="no embedding endpoint: the offline model, no call"
        )
    if not lake.exists("conversations", month):
        return AssetPlan(
            "prompt_embeddings", month, note=f"conversations {month} not in the lake yet"
        )
    cache = embeddings_cache(s.cache_root, s.storage_options) if cache is None else cache
    texts = (inputs or embedding_inputs(lake, month)).texts
    return _planned(
        "prompt_embeddings", month, lambda: embed_texts(s.embedder, texts, cache) if texts else None
    )


def plan_judge_human_agreement(
    lake: Lake, month: str, s: MonthSettings, drawn=None, cache_of=None
) -> AssetPlan:
    """The LLM judges' two games and the reward models' two sides of every sampled battle
    not cached (the baselines call nothing). ``drawn`` (``evaluators.agreement_sample``'s
    answer) and ``cache_of`` (namespace -> cache): the run's own, when it has them."""
    from arena_assets.evaluators.judges import ask_judges
    from arena_assets.pipeline.evaluators import agreement_sample

    asset = "judge_human_agreement"
    if s.agreement_error:
        return AssetPlan(asset, month, note=s.agreement_error)
    if not any(j.kind != "baseline" for j in s.agreement_judges):
        return AssetPlan(asset, month, note="no LLM judge or reward model listed: no call")
    missing = [a for a in ("battles", "conversations") if not lake.exists(a, month)]
    if missing:
        return AssetPlan(asset, month, note=f"{', '.join(missing)} {month} not in the lake yet")

    def step() -> None:
        sample, _ = drawn or agreement_sample(
            lake, month, size=s.agreement_size, seed=s.agreement_seed
        )
        if sample.height:
            ask_judges(
                s.agreement_judges,
                sample,
                judge_task=s.agreement_judge,
                reward_task=s.agreement_reward,
                cache_of=cache_of
                or (lambda ns: ResponseCache(s.cache_root, ns, storage_options=s.storage_options)),
            )

    try:
        plan = _planned(asset, month, step)
    except ValueError as exc:  # a judge listed without its endpoint: the run says the same
        return AssetPlan(asset, month, note=str(exc))
    if drawn is None and not lake.exists("topic_labels", month):  # the strata come from the labels
        plan.note = (
            f"topic_labels {month} not in the lake yet: the sample drawn without its "
            "categories; as many battles, other ones"
        )
        for b in plan.batches:
            b.exact = False
    return plan


def plan_over_refusal(
    lake: Lake, month: str, s: MonthSettings, cache: ResponseCache | None = None
) -> AssetPlan:
    """One risk-labeller call per distinct non-empty first prompt not cached (``cache``:
    the run's own, when it has it)."""
    from arena_assets.pipeline.evaluators import OVER_REFUSAL_CACHE, risk_labels, risk_prompts

    if s.risk_labeler is None:
        return AssetPlan("over_refusal", month, note="no labeller configured")
    if not lake.exists("conversations", month):
        return AssetPlan("over_refusal", month, note=f"conversations {month} not in the lake yet")
    if cache is None:
        cache = ResponseCache(s.cache_root, OVER_REFUSAL_CACHE, storage_options=s.storage_options)
    conv = lake.read("conversations", month, columns=["dedup_key", "first_prompt"])
    return _planned(
        "over_refusal",
        month,
        lambda: risk_labels(s.risk_labeler, risk_prompts(conv, s.refusal_max_chars), cache),
    )


PLANNERS = {
    "topic_labels": plan_topic_labels,
    "topic_clusters": plan_topic_clusters,
    "prompt_embeddings": plan_prompt_embeddings,
    "bench_prompts": plan_bench_prompts,
    "model_answers": plan_model_answers,
    "judgments": plan_judgments,
    "judge_human_agreement": plan_judge_human_agreement,
    "over_refusal": plan_over_refusal,
}


def plan_run(months: Iterable[str], plan_one: Callable[[str], AssetPlan]) -> dict[str, AssetPlan]:
    """Each month's plan (``plan_one(month)``) for one run over ``months``, in the order the
    run takes them: a request an earlier month will ask is cached by the time a later
    month runs (``llm.plan.one_run``), so it is planned once, in the first month."""
    months = list(months)
    plans = {}
    with one_run() as run:
        for month in months:
            run.month = month
            plans[month] = plan_one(month)
    for plan in plans.values():
        plan.replay = lambda: plan_run(months, plan_one)
    return plans
