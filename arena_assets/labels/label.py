"""topic_labels: LMArena's category labels per conversation, asked once per distinct input.

What is asked, as LMArena's labeller asks it (``fastchat/serve/monitor/classify``): the
conversation's user turns joined by newlines and cut at ``max_prompt_chars`` (12,500) is
the input of the prompt tags (criteria, instruction following, math, creative writing);
identical inputs share one call. Image inputs also get the vision tags, each task shown
what the anchor shows its tags: the user's text alone, the text and the first image of the
first turn, or that image alone (an empty user text), as the task says. Every assistant
answer, with the user
turn before it, gets the refusal classifier (identical pairs share one call). The prompts
and output formats come from a prompt set (``labels.prompt_sets``, ``ARENA_LABEL_PROMPTS``);
replies are read by the anchor's rules (``labels.tags``).

Each row holds the labels twice: in LMArena's ``category_tag`` structure (what the anchor
would store: an unparsed reply gives the tag's default, a failed call leaves it null) and
as flat columns (null unless that label parsed: never guessed), with each group's status,
labeller, prompt version, and the prompt set's name and hash. The code label is a
heuristic (no LLM).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from functools import partial

import numpy as np
import polars as pl

from arena_assets.labels import tags as T
from arena_assets.labels.code import CODE_LABELER, CODE_VERSION, is_code
from arena_assets.labels.images import image_ref, reference_reader, resolve_images
from arena_assets.labels.prompt_sets import LabelTask, PromptSet, load_prompt_set
from arena_assets.labels.refusals import (
    answer_identity,
    answer_turns,
    refusal_rows,
    requests_of,
    turn_texts,
)
from arena_assets.labels.schema import LABEL_STATUSES, TOPIC_LABELS_SCHEMA, worst_status
from arena_assets.llm import (
    BatchReport,
    LLMEndpointError,
    LLMRequest,
    LLMResult,
    LLMTask,
    ResponseCache,
)
from arena_assets.llm.batch import ProgressFn
from arena_assets.llm.plan import pilots_sampled, recording
from arena_assets.llm.sliced import identity_in_chunks, run_sliced
from arena_assets.tokens import approx_tokens

VISION_FLAT = {f"{v}_v0.1": (f"vision_{v}", v) for v in T.VISION_TAGS} | {
    "creative_writing_vision_v0.1": ("vision_creative_writing", "creative_writing")
}


@dataclass(frozen=True)
class LabelConfig:
    max_prompt_chars: int = 12_500  # the joined user turns are cut here (LMArena's labeller)
    max_answer_chars: int = 12_500  # answers likewise, for the refusal classifier
    label_refusals: bool = True
    label_vision: bool = True
    cache_chunk_size: int = 64
    prompt_set: PromptSet = field(default_factory=load_prompt_set)
    image_root: str = ""  # where image files are (<root>/<sha256>.<ext>); "" = send the reference
    # whether the endpoint reads sha256: references (only needed without image_root);
    # None = it does when it is a simulated arena (labels.images.reference_reader)
    image_refs: bool | None = None
    # ask again (once, the task's parse_retries) when a reply has no readable tag at all: a
    # departure from LMArena's labeller, which stores such a reply as read (the tags'
    # defaults); off by default (ARENA_LABEL_REASK_UNREADABLE)
    reask_unreadable: bool = False


@dataclass
class LabelReport:
    conversations: int = 0
    distinct_prompts: int = 0  # distinct label inputs
    calls_avoided_by_dedup: int = 0  # prompt-task requests not sent because inputs repeat
    batches: dict[str, BatchReport] = field(default_factory=dict)
    unparsed: dict[str, int] = field(default_factory=dict)  # tag -> replies without an answer

    def as_metadata(self) -> dict:
        calls = sum(b.calls for b in self.batches.values())
        return {
            "conversations": self.conversations,
            "distinct_prompts": self.distinct_prompts,
            "calls_avoided_by_dedup": self.calls_avoided_by_dedup,
            "llm_calls": calls,
            "prompt_tokens": sum(b.prompt_tokens for b in self.batches.values()),
            "completion_tokens": sum(b.completion_tokens for b in self.batches.values()),
            "estimated_cost": round(sum(b.cost for b in self.batches.values()), 6),
            "unparsed_by_tag": dict(self.unparsed),
            **{f"{k}_statuses": b.statuses for k, b in self.batches.items()},
        }


def distinct_prompts(conversations: pl.DataFrame) -> pl.DataFrame:
    """dedup_key, first_prompt (its first occurrence), is_vision, n_conversations."""
    first_images = (
        pl.col("messages")
        .list.eval(
            pl.element()
            .filter(pl.element().struct.field("role") == "user")
            .struct.field("images")
            .list.len()
        )
        .list.first()
        .fill_null(0)
    )
    return (
        conversations.sort("conv_id")
        .with_columns(first_images.alias("_first_images"))
        .group_by("dedup_key", maintain_order=True)
        .agg(
            pl.col("first_prompt").fill_null("").first(),
            (pl.col("_first_images") > 0).any().alias("is_vision"),
            pl.len().cast(pl.Int32).alias("n_conversations"),
        )
    )


def label_inputs(conversations: pl.DataFrame, max_chars: int) -> pl.DataFrame:
    """Per conversation: ``label_text`` (user turns joined by newlines, cut), its length and
    tokens before the cut, the first turn's images, and ``label_key`` (hash of text + images)."""
    user = pl.element().filter(pl.element().struct.field("role") == "user")
    out = conversations.select(
        "conv_id",
        pl.col("messages")
        .list.eval(user.struct.field("content").fill_null(""))
        .list.join("\n")
        .alias("_full"),
        pl.col("messages")
        .list.eval(user.struct.field("images"))
        .list.first()
        .fill_null([])
        .alias("images"),
    ).with_columns(
        prompt_chars=pl.col("_full").str.len_chars().cast(pl.Int32),
        user_tokens=approx_tokens(pl.col("_full")).cast(pl.Int32),
        label_text=pl.col("_full").str.slice(0, max_chars),
    )
    keys = [
        hashlib.blake2b(f"{t}\x1f{','.join(i or [])}".encode(), digest_size=12).hexdigest()
        for t, i in out.select("label_text", "images").iter_rows()
    ]
    return out.drop("_full").with_columns(label_key=pl.Series(keys, dtype=pl.String))


SLICE = 50_000  # requests built and asked at once (llm.sliced), and rows made into a frame at once


def _ask(
    task: LLMTask,
    lt: LabelTask,
    prompts: PromptSet,
    cfg: LabelConfig,
    cache_root: str,
    storage_options: dict | None,
    progress: ProgressFn | None,
    identity: pl.Series,
    build,
    take,
) -> BatchReport:
    """One label task's batch through ``llm.sliced.run_sliced`` (see there)."""
    cache = ResponseCache(
        cache_root, f"labels/{prompts.name}/{lt.id}", cfg.cache_chunk_size, storage_options or {}
    )
    if (
        not cfg.reask_unreadable
    ):  # an unreadable (or empty) reply is kept as read, as the anchor keeps it
        task = replace(task, parse_retries=0)
    return run_sliced(
        task, cache, lt.parse_any, identity, build, take, progress=progress, slice_size=SLICE
    )


def _prompt_identity(first: pl.DataFrame, picked: np.ndarray, lt: LabelTask) -> pl.Series:
    """Per picked input, a hash of what its request sends: the user text (``lt.user_text``)
    and, for an image task, the first image (equal requests hash alike)."""

    def hashed(start: int, length: int) -> pl.Series:
        rows = first[picked[start : start + length]]
        sent = [lt.user_text(pl.col("label_text"))] + (
            [pl.col("images").list.first()] if lt.image else []
        )
        return rows.select(pl.struct(sent).hash(seed=0)).to_series()

    return identity_in_chunks(len(picked), hashed)


def _status(status: str | None, value, tag: str) -> str:
    """A label's status from its call's: ok only when the tag itself was read."""
    if status is None:
        return "not_applicable"
    if status == "failed":
        return "failed"
    return "ok" if status == "ok" and value[tag][1] else "parse_failed"


def _outcome(r: LLMResult, lt: LabelTask) -> tuple:
    """(status, read value, error) of a prompt task's result: an empty or unread reply
    (run_batch's parse_failed) is read like any other, giving the anchor's defaults."""
    if r.status == "failed":
        return "failed", None, r.error
    return r.status, r.value if r.status == "ok" else lt.parse(r.content or ""), None


_SHARED: dict = {}  # one string object per refusal class ("yes", "no", "maybe") for ~10^6 answers


def label_conversations(
    conversations: pl.DataFrame,
    task: LLMTask,
    *,
    month: str,
    cache_root: str,
    cfg: LabelConfig = LabelConfig(),
    storage_options: dict | None = None,
    progress: ProgressFn | None = None,
) -> tuple[pl.DataFrame, LabelReport]:
    """Rows of TOPIC_LABELS_SCHEMA, one per conversation (see module docstring).

    ``conversations`` needs conv_id, dedup_key, first_prompt and messages (the conversations
    table). Raises ``LLMEndpointError`` before any call when the endpoint cannot serve."""
    ps = cfg.prompt_set
    report = LabelReport(conversations=conversations.height)
    inputs = label_inputs(conversations, cfg.max_prompt_chars)
    first = inputs.unique("label_key", keep="first", maintain_order=True)
    report.distinct_prompts = first.height
    report.calls_avoided_by_dedup = inputs.height - first.height
    keys = first["label_key"].to_list()
    texts = first["label_text"].to_list()
    images = first["images"].to_list()
    tag_task = {tag: lt for lt in ps.tasks for tag in lt.tags}
    # per task, per label key: (status, read value, error), what the rows need of a result
    outcomes: dict[str, dict[str, tuple]] = {}

    tasks = ps.by_scope("prompt") + (ps.by_scope("image") if cfg.label_vision else [])
    # the run checks before its first call; a plan too unless that needs the endpoint (a
    # plan for a pilot, which calls it, checks)
    if recording() is None or cfg.image_refs is not None or pilots_sampled():
        _check_image_source(
            task, cfg, any(lt.image for lt in tasks) and any(len(im or []) for im in images)
        )
    # image tasks hold the reference; with an image root it becomes the image's data URL
    # as each request is sent (labels.images), a failure failing that item alone
    fetch = partial(resolve_images, image_root=cfg.image_root) if cfg.image_root.strip() else None
    for lt in tasks:
        picked = np.asarray(
            [
                i
                for i, (t, im) in enumerate(zip(texts, images))
                if (t.strip() if lt.scope == "prompt" else bool(im))
            ],
            dtype=np.int64,
        )
        identity = _prompt_identity(first, picked, lt)
        got = outcomes.setdefault(lt.id, {})

        def build(
            rows: np.ndarray, lt: LabelTask = lt, version: str = ps.version(lt)
        ) -> list[LLMRequest]:
            return [
                LLMRequest(
                    keys[i],
                    lt.messages(texts[i], image_urls=tuple(map(image_ref, images[i][:1]))),
                    version,
                    prepare=fetch if lt.image else None,
                )
                for i in picked[rows]  # noqa: B023 - called within this iteration
            ]

        def take(
            rows: np.ndarray, results: list[LLMResult], lt: LabelTask = lt, got: dict = got
        ) -> None:
            for r in results:
                got[r.item_id] = _outcome(r, lt)

        report.batches[lt.id] = _ask(
            task, lt, ps, cfg, cache_root, storage_options, progress, identity, build, take
        )
    # a production month's distinct inputs (~300,000 texts) and the last task's closures
    texts = images = got = build = take = identity = None
    refusal_tag = "refusal_v0.1" if "refusal_v0.1" in tag_task and cfg.label_refusals else None
    turns = answer_turns(conversations) if cfg.label_refusals else None
    # per answer classified: the conversation's row, task, answer index, class, status
    answered: tuple[list, ...] = ([], [], [], [], [])
    for t, lt in enumerate(ps.by_scope("answer") if cfg.label_refusals else []):

        def build(rows: np.ndarray, lt: LabelTask = lt) -> list[LLMRequest]:
            texts = turn_texts(
                conversations, turns[rows], cfg.max_prompt_chars, cfg.max_answer_chars
            )
            return requests_of(texts, lt, ps.version(lt))

        def take(rows: np.ndarray, results: list[LLMResult], t: int = t) -> None:
            if refusal_tag is None:
                return
            answered[0].extend(turns["_pos"].gather(rows).to_list())
            answered[1].extend([t] * len(rows))
            answered[2].extend(turns["n"].gather(rows).to_list())
            for r in results:
                answered[3].append(
                    _SHARED.setdefault(c := r.value[refusal_tag][0], c)
                    if r.status == "ok"
                    else None
                )
                answered[4].append(_status(r.status, r.value, refusal_tag))

        identity = answer_identity(
            conversations, turns, lt, cfg.max_prompt_chars, cfg.max_answer_chars
        )
        report.batches[lt.id] = _ask(
            task, lt, ps, cfg, cache_root, storage_options, progress, identity, build, take
        )
    turns = build = take = identity = None

    if recording() is not None:  # a plan (llm.plan.planning): the batches are all it needs
        return pl.DataFrame(schema=TOPIC_LABELS_SCHEMA), report
    rows = pl.concat(
        [
            pl.DataFrame(
                [_prompt_row(k, outcomes, tag_task, report) for k in keys[i : i + SLICE]],
                schema=_PROMPT_ROW_SCHEMA,
            )
            for i in range(0, len(keys), SLICE)
        ]
        or [pl.DataFrame(schema=_PROMPT_ROW_SCHEMA)]
    )
    outcomes = keys = None
    refusals = refusal_rows(answered, conversations.height, refusal_tag, report.unparsed)
    answered = None
    out = (
        conversations.select("conv_id", "dedup_key", "first_prompt")
        .join(
            inputs.select(
                "conv_id", "label_key", "prompt_chars", "user_tokens", "images", "label_text"
            ),
            on="conv_id",
            how="left",
            maintain_order="left",
        )
        .join(rows, on="label_key", how="left", maintain_order="left")
        .with_columns(refusals.to_struct("_r"))
        .unnest("_r")
    )
    rows = refusals = None
    out = out.with_columns(
        month=pl.lit(month),
        is_vision=pl.col("images").list.len() > 0,
        prompt_cut=pl.col("prompt_chars") > cfg.max_prompt_chars,
        code=_code_flags(out.get_column("first_prompt")),
        criteria_model=pl.lit(task.model),
        criteria_prompt_version=pl.lit(_version(ps, tag_task, "criteria_v0.1")),
        code_model=pl.lit(CODE_LABELER),
        code_prompt_version=pl.lit(CODE_VERSION),
        code_status=pl.lit("ok"),
        refusal_model=pl.lit(task.model),
        refusal_prompt_version=pl.lit(_version(ps, tag_task, "refusal_v0.1")),
        prompt_set=pl.lit(ps.name),
        prompt_set_hash=pl.lit(ps.hash),
    )
    out = out.with_columns(
        vision_status=pl.when(~pl.col("is_vision") | ~pl.lit(cfg.label_vision))
        .then(pl.lit("not_applicable"))
        .otherwise(pl.col("vision_status"))
    )
    na = pl.col("vision_status") == "not_applicable"
    out = out.with_columns(
        vision_model=pl.when(na).then(None).otherwise(pl.lit(task.model)),
        vision_prompt_version=pl.when(na)
        .then(None)
        .otherwise(pl.lit(_version(ps, tag_task, "ocr_v0.1"))),
        category_tag=_category_tag(),
        criteria_count=pl.when(pl.any_horizontal(pl.col(c).is_null() for c in T.CRITERIA))
        .then(None)
        .otherwise(pl.sum_horizontal(pl.col(c).cast(pl.Int8) for c in T.CRITERIA)),
    )
    out = out.with_columns(hard=pl.col("criteria_count") >= T.HARD_MIN_CRITERIA)
    return out.select([pl.col(c).cast(t) for c, t in TOPIC_LABELS_SCHEMA.items()]), report


def _check_image_source(task: LLMTask, cfg: LabelConfig, images_to_send: bool) -> None:
    """One line before any call when the images would go as references to an endpoint
    that cannot read them (every vision call would fail)."""
    if not images_to_send or cfg.image_root.strip():
        return
    reads_refs = cfg.image_refs if cfg.image_refs is not None else reference_reader(task)
    if not reads_refs:
        raise LLMEndpointError(
            f"ARENA_IMAGE_ROOT is empty: the vision labels would send {task.base_url} image references "
            "(sha256:<hex>), which only the simulated arena reads; set ARENA_IMAGE_ROOT to the folder or "
            "s3:// prefix holding the images as <sha256>.<ext> (nothing was called)"
        )


def _code_flags(first_prompts: pl.Series) -> pl.Series:
    """``is_code`` of each first prompt, each distinct text read once (popular prompts
    repeat; the heuristic's regexes cost ~60 µs a prompt)."""
    texts = first_prompts.fill_null("")
    distinct = texts.unique().to_list()
    flags = dict(zip(distinct, map(is_code, distinct)))
    return texts.replace_strict(flags, return_dtype=pl.Boolean)


def _version(ps: PromptSet, tag_task: dict[str, LabelTask], tag: str) -> str | None:
    return ps.version(tag_task[tag]) if tag in tag_task else None


_PROMPT_ROW_SCHEMA = {
    "label_key": pl.String,
    **dict.fromkeys(T.CRITERIA, pl.Boolean),
    "math": pl.Boolean,
    "creative_writing": pl.Boolean,
    "if_score": pl.Int8,
    "criteria_status": pl.String,
    **{flat: pl.Boolean for flat, _ in VISION_FLAT.values()},
    "vision_status": pl.String,
    "vision_error": pl.String,
    "_tags": pl.Struct(
        dict.fromkeys(T.TAG_NAMES, pl.String)
    ),  # anchor values as JSON, null = not asked
}


def _prompt_row(
    key: str,
    outcomes: dict[str, dict[str, tuple]],
    tag_task: dict[str, LabelTask],
    report: LabelReport,
) -> dict:
    import orjson

    row: dict = {"label_key": key}
    tags: dict[str, str | None] = {}
    vision, errors = [], []
    for tag, lt in tag_task.items():
        if lt.scope == "answer":
            continue
        o = outcomes.get(lt.id, {}).get(key)
        status = _status(o[0], o[1], tag) if o is not None else "not_applicable"
        if status == "parse_failed":
            report.unparsed[tag] = report.unparsed.get(tag, 0) + 1
        value = o[1][tag][0] if o is not None and o[0] != "failed" else None
        tags[tag] = orjson.dumps(value).decode() if value is not None else None
        ok = status == "ok"
        if tag == "criteria_v0.1":
            row |= {c: value[c] if ok else None for c in T.CRITERIA} | {"criteria_status": status}
        elif tag == "if_v0.1":
            row["if_score"] = value["score"] if ok else None
        elif tag in ("math_v0.1", "creative_writing_v0.1"):
            name = tag.removesuffix("_v0.1")
            row[name] = value[name] if ok else None
        elif tag in VISION_FLAT:
            flat, field = VISION_FLAT[tag]
            row[flat] = value[field] if ok else None
            vision.append(status)
            if status == "failed" and o[2] not in errors:
                errors.append(o[2])
    row["vision_status"] = worst_status(vision)
    row["vision_error"] = "; ".join(e or "call failed" for e in errors) or None
    row["_tags"] = tags
    return row


def _category_tag() -> pl.Expr:
    """The JSON values of each tag decoded into LMArena's ``category_tag`` struct."""
    fields = []
    for name, dtype in T.TAG_DTYPE.to_schema().items():
        src = (
            pl.col("_refusal_tag") if name == "refusal_v0.1" else pl.col("_tags").struct.field(name)
        )
        fields.append(src.str.json_decode(dtype).alias(name))
    return pl.struct(fields)


def parse_failure_rate(labels: pl.DataFrame) -> dict[str, float]:
    """Share of answered labels that failed to parse, per label group (for a WARN check).

    Computed over distinct label inputs for the prompt labels (a popular prompt counts once).
    """
    out = {}
    per_input = "label_key" if "label_key" in labels.columns else "dedup_key"
    for group, per in (("criteria", per_input), ("vision", per_input), ("refusal", "conv_id")):
        st = labels.unique(per).get_column(f"{group}_status")
        answered = st.is_in(["ok", "parse_failed"]).sum()
        out[group] = float((st == "parse_failed").sum() / answered) if answered else 0.0
    return out


def out_of_range(labels: pl.DataFrame) -> dict[str, int]:
    """Rows breaking a label invariant, per rule (a blocking check wants all zeros)."""
    count = pl.sum_horizontal([pl.col(c).cast(pl.Int8) for c in T.CRITERIA])
    rules = {
        "if_score_outside_0_5": ~pl.col("if_score").is_between(0, 5),
        "criteria_count_mismatch": pl.col("criteria_count") != count,
        "hard_mismatch": pl.col("hard") != (pl.col("criteria_count") >= T.HARD_MIN_CRITERIA),
        "label_without_ok_status": (pl.col("criteria_status") != "ok")
        & pl.col("criteria_count").is_not_null(),
        "unknown_status": ~pl.all_horizontal(
            [
                pl.col(f"{g}_status").is_in(LABEL_STATUSES)
                for g in ("criteria", "code", "refusal", "vision")
            ]
        ),
        "vision_on_text_prompt": ~pl.col("is_vision")
        & pl.col("vision_status").ne("not_applicable"),
    }
    row = labels.select([e.fill_null(False).sum().alias(k) for k, e in rules.items()]).row(
        0, named=True
    )
    return {k: int(v) for k, v in row.items()}
