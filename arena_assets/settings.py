"""Every ``ARENA_*`` setting the code location reads, in one registry.

A setting is a name, a kind (what its string means), the default that `.env.example`
writes, its meaning, the section it belongs to and, where the code bounds it, the values
allowed. The registry is the one source of `.env.example` (:func:`env_example`, written by
``python -m arena_assets.settings --env-example > .env.example``), of the documentation's
configuration reference (:func:`reference_markdown`, rendered by ``docs/hooks.py``) and of
the tests' settings (``arena_assets_tests/conftest.py``). A test scans the code for every
name it can read and fails on one that is not registered here.

The code still reads each setting where it always did (``dg.EnvVar`` in the resources,
``envfile.setting`` in the commands); this module only describes them. :func:`check`
says in one line why a value is not one its kind allows.

Per-task LLM settings (``ARENA_<TASK>_BASE_URL``, ``_API_KEY``, ``_MODEL``,
``_MAX_CONCURRENCY``, ``_PRICE_INPUT_PER_1M``, ``_PRICE_OUTPUT_PER_1M``, and for a task with a
Batch-API form ``_MODE``, ``_PRICE_INPUT_PER_1M_BATCH``, ``_PRICE_OUTPUT_PER_1M_BATCH``) come
from one template per suffix and one line per task (``_LLM_TASKS``), as
``defs.llm_resources.llm_task_resource(prefix)`` binds them.

Base layer: the standard library only (no Dagster, no other ``arena_assets`` module).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import textwrap
from collections.abc import Iterable, Mapping

# kind -> what a value of that kind is (the documentation's "type" column explains them)
KINDS = {
    "str": "text",
    "secret": "a secret (text to keep out of logs and repositories)",
    "int": "a whole number",
    "float": "a number",
    "bool": "true or false (also 1/0, yes/no, on/off; empty = false)",
    "month": "a month, YYYY-MM",
    "size": "a memory size such as 2GB, 512MB or 1.5GiB",
    "path": "a local file or folder",
    "url_or_path": "a local folder or file, or an fsspec URL such as s3://bucket/prefix",
    "url": "a URL (scheme://...)",
    "endpoint": "`simulated` or the http(s) base URL of an OpenAI-compatible API",
    "json": "a JSON object",
    "yaml": "a JSON or YAML document",
    "csv_list": "comma-separated values",
}

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off")
_MONTH = re.compile(r"\d{4}-(0[1-9]|1[0-2])")
_SIZE = re.compile(
    r"\d+(\.\d+)?\s*(b|bytes?|[kmgt]i?b?|(kilo|mega|giga|tera|kibi|mebi|gibi|tebi)bytes?)",
    re.IGNORECASE,
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://\S+")
_HTTP = re.compile(r"https?://\S+")


@dataclasses.dataclass(frozen=True)
class Setting:
    """One ``ARENA_*`` environment variable.

    ``default`` is the value `.env.example` gives it (a string, as the environment does);
    ``empty_ok`` whether an empty value is one the code accepts (by default: where the
    default is empty, and for every ``bool``, whose empty value means false); ``item`` the
    kind of each item of a ``csv_list`` (``float`` or ``month``), when the code parses them.
    """

    name: str
    kind: str
    default: str
    help: str
    group: str
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    secret: bool = False
    item: str = ""
    empty_ok: bool | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"ARENA_[A-Z0-9_]+", self.name):
            raise ValueError(f"{self.name!r} is not an ARENA_* name")
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: unknown kind {self.kind!r} (one of {sorted(KINDS)})")
        if self.group not in _GROUP_NAMES:
            raise ValueError(f"{self.name}: unknown group {self.group!r}")
        if self.kind == "secret":
            object.__setattr__(self, "secret", True)
        if self.empty_ok is None:
            object.__setattr__(self, "empty_ok", self.default == "" or self.kind == "bool")

    @property
    def allowed(self) -> str:
        """What a value may be, in words (the documentation's "allowed values")."""
        if self.choices:
            text = "one of " + ", ".join(self.choices)
        elif self.kind in ("int", "float"):
            text = KINDS[self.kind] + _bounds(self.minimum, self.maximum)
        elif self.kind == "csv_list" and self.item == "float":
            text = "numbers" + _bounds(self.minimum, self.maximum) + ", comma-separated"
        elif self.kind == "csv_list" and self.item == "month":
            text = "months (YYYY-MM), comma-separated, or * for all"
        else:
            text = KINDS[self.kind]
        if self.empty_ok and self.kind != "bool":
            text += "; may be empty"
        return text


def _bounds(lo: float | None, hi: float | None) -> str:
    def num(x: float) -> str:
        return f"{x:g}"

    if lo is not None and hi is not None:
        return f" in {num(lo)}..{num(hi)}"
    if lo is not None:
        return f" >= {num(lo)}"
    if hi is not None:
        return f" <= {num(hi)}"
    return ""


# (section, what it holds): the order of `.env.example` and of the reference page
GROUPS = (
    ("Partitions", "the months the code location knows"),
    ("Storage", "where the raw logs, the lake and the DuckDB catalog live"),
    ("Ingest", "how a month's raw files are read"),
    ("Privacy", "user hashes, what raw text is kept, what a forget must reach"),
    ("Cleaning", "the optional moderation endpoint of `conversations`"),
    ("Battles", "the battle filter"),
    ("Leaderboards", "the arena boards (Bradley-Terry on the Elo scale)"),
    (
        "LLM endpoints",
        "an OpenAI-compatible endpoint per LLM task, the cache, the budget",
    ),
    ("Simulated arena", "the arena behind `simulated` base URLs"),
    ("Topics/labels", "topic_labels and topic_clusters"),
    ("Bench", "which prompts make the month's bench (BenchBuilder)"),
    ("Judging", "candidate answers, the LLM judges and the bench leaderboard"),
    ("Evaluators", "judge_human_agreement and over_refusal"),
    ("Completions", "Copilot Arena's completion_battles and copilot_leaderboard"),
    ("Routing", "prompt embeddings, the monthly P2L model, P2L boards and the router"),
    ("Site", "the public leaderboard site (`arena-assets site`)"),
    ("Release", "the public monthly snapshots (Hugging Face dataset layout)"),
    ("Deployment", "options of a deployment beyond one machine"),
    ("Diagnostics", "what a failure shows"),
)
_GROUP_NAMES = frozenset(g for g, _ in GROUPS)


# --- the per-task LLM settings: one template per suffix, one line per task ----------------


@dataclasses.dataclass(frozen=True)
class _Task:
    """An LLM task bound by ``llm_task_resource(prefix)``: its default model, what its
    calls are for, and extra sentences for some suffixes' help."""

    prefix: str
    label: str  # "the {label} endpoint"
    model: str
    purpose: str
    notes: tuple[tuple[str, str], ...] = ()  # (suffix, sentence appended to its help)
    empty_base_url: bool = False  # an empty base URL is a configuration of its own
    # its requests have a Batch-API form (chat completions, embeddings): the BATCH_SUFFIXES
    # settings; the reward model's Pooling API has none at OpenAI or in vLLM's run-batch
    batch: bool = True


# fmt: off
_LLM_TASKS = (
    _Task("LABELER", "labeller", "sim-labeler-large", "topic labels, cluster names, the bench's optional second labelling pass and over_refusal's risk labels"),
    _Task("EMBED", "embedding", "sim-embed-large", "the prompt embeddings of topic_clusters and prompt_embeddings", (("BASE_URL", "Empty = the offline wordllama model (no calls)."),), empty_base_url=True),
    _Task("JUDGE", "judge", "sim-judge", "the bench's LLM judges (ARENA_BENCH_JUDGES) and the LLM judges of judge_human_agreement", (("MODEL", "The judge when ARENA_BENCH_JUDGES is empty."),)),
    _Task("REWARD", "reward", "sim-reward", "the reward:<model> judges of judge_human_agreement", (("BASE_URL", "A vLLM server started with a reward model (`vllm serve MODEL`, pooling runner) answers POST <server>/pooling: give its /v1 root; `simulated` serves sim-reward and sim-reward-verbose."),), batch=False),
)
# fmt: on
LLM_TASK_PREFIXES = tuple(t.prefix for t in _LLM_TASKS)

# suffix -> (kind, default or None for the task's model, help template, Setting options)
LLM_TASK_SUFFIXES = {
    "BASE_URL": (
        "endpoint",
        "simulated",
        "OpenAI-compatible base URL for {purpose}: `simulated` = the simulated arena at "
        "ARENA_SIM_BASE_URL (no key, no network); OpenAI https://api.openai.com/v1 (with a key), vLLM http://HOST:8000/v1, "
        "Ollama http://HOST:11434/v1.",
        {},
    ),
    "API_KEY": (
        "secret",
        "",
        "API key of the ARENA_{prefix}_BASE_URL endpoint; empty = a placeholder key "
        "(enough for `simulated`, vLLM and Ollama).",
        {},
    ),
    "MODEL": (
        "str",
        None,
        "Model the ARENA_{prefix}_BASE_URL endpoint is asked for.",
        {},
    ),
    "MAX_CONCURRENCY": (
        "int",
        "8",
        "Calls to the {label} endpoint in flight at once.",
        {"minimum": 1},
    ),
    "PRICE_INPUT_PER_1M": (
        "float",
        "",
        "US dollars per 1M prompt tokens of the {label} model (empty = 0): the estimated cost "
        "in the materialization metadata, in `arena-assets plan` and against "
        "ARENA_LLM_BUDGET_USD.",
        {"minimum": 0},
    ),
    "PRICE_OUTPUT_PER_1M": (
        "float",
        "",
        "US dollars per 1M completion tokens of the {label} model (empty = 0), as the input price.",
        {"minimum": 0},
    ),
    "MODE": (
        "str",
        "online",
        "How the {label} requests the cache does not answer are sent: `online`, one call "
        "each; `batch`, as Batch-API jobs (/v1/files, /v1/batches: half price at OpenAI, "
        "answered within 24 hours), waited for in the run, resumed by a rerun, their "
        "failures asked again.",
        {"choices": ("online", "batch")},
    ),
    "PRICE_INPUT_PER_1M_BATCH": (
        "float",
        "",
        "US dollars per 1M prompt tokens of the {label} model in batch mode; empty = half "
        "ARENA_{prefix}_PRICE_INPUT_PER_1M where ARENA_{prefix}_BASE_URL is OpenAI's "
        "(api.openai.com), else the same price. `arena-assets plan` shows both modes.",
        {"minimum": 0},
    ),
    "PRICE_OUTPUT_PER_1M_BATCH": (
        "float",
        "",
        "US dollars per 1M completion tokens of the {label} model in batch mode, as the input "
        "price.",
        {"minimum": 0},
    ),
}
# the suffixes of a task with a Batch-API form only (``_Task.batch``)
BATCH_SUFFIXES = ("MODE", "PRICE_INPUT_PER_1M_BATCH", "PRICE_OUTPUT_PER_1M_BATCH")


def _task_settings(task: _Task) -> list[Setting]:
    notes = dict(task.notes)
    out = []
    for suffix, (kind, default, template, options) in LLM_TASK_SUFFIXES.items():
        if suffix in BATCH_SUFFIXES and not task.batch:
            continue
        text = template.format(prefix=task.prefix, label=task.label, purpose=task.purpose)
        if suffix in notes:
            text += " " + notes[suffix]
        extra = dict(options)
        if suffix == "BASE_URL" and task.empty_base_url:
            extra["empty_ok"] = True
        out.append(
            Setting(
                f"ARENA_{task.prefix}_{suffix}",
                kind,
                task.model if default is None else default,
                text,
                "LLM endpoints",
                **extra,
            )
        )
    return out


# --- the registry ------------------------------------------------------------------------------


def _s(name: str, kind: str, default: str, group: str, help: str, **options) -> Setting:
    return Setting(name, kind, default, help, group, **options)


_BEFORE_TASKS = (
    # Partitions
    _s(
        "ARENA_PARTITIONS_START",
        "month",
        "2024-01",
        "Partitions",
        "First monthly partition (YYYY-MM); empty = 2024-01. Read when the code location "
        "is imported.",
        empty_ok=True,
    ),
    _s(
        "ARENA_PARTITIONS_END",
        "month",
        "2024-03",
        "Partitions",
        "Last monthly partition (YYYY-MM, inclusive): where the data ends (the demo's last "
        "month). Empty = up to the month that just ended. Months without raw files are "
        "skipped by the raw-root sensor and the schedule either way; this bound keeps "
        '"All" in the UI to real months.',
        empty_ok=True,
    ),
    # Storage
    _s(
        "ARENA_RAW_ROOT",
        "url_or_path",
        "./data/raw",
        "Storage",
        "Raw platform logs, one folder per month (YYYY-MM/); a local folder or s3://bucket/prefix.",
    ),
    _s(
        "ARENA_LAKE_ROOT",
        "url_or_path",
        "./data/lake",
        "Storage",
        "The lake: one Parquet file per asset and month; a local folder or s3://bucket/prefix.",
    ),
    _s(
        "ARENA_CATALOG",
        "path",
        "./data/arena.duckdb",
        "Storage",
        "DuckDB catalog file with one view per asset over the lake.",
    ),
    _s(
        "ARENA_PROJECT_DIR",
        "path",
        "",
        "Storage",
        "The project folder the DuckDB catalog's views are relative to (open the catalog "
        "from there); empty = the working directory when ARENA_LAKE_ROOT is relative "
        "(./data/lake), else absolute paths. A copied checkout then reads its own lake.",
    ),
    _s(
        "ARENA_DUCKDB_MEMORY_LIMIT",
        "size",
        "2GB",
        "Storage",
        "Memory cap of DuckDB's out-of-core steps (latest snapshot per conversation, ...); "
        "it spills to a temporary folder beyond it.",
    ),
    _s(
        "ARENA_S3_ENDPOINT_URL",
        "url",
        "",
        "Storage",
        "Endpoint of S3-compatible storage (MinIO, moto, ...); empty = AWS.",
    ),
    _s(
        "ARENA_S3_ACCESS_KEY_ID",
        "str",
        "",
        "Storage",
        "S3 access key id; empty = s3fs's default chain (AWS_* variables, instance role), "
        "so these settings never shadow credentials set elsewhere.",
        secret=True,
    ),
    _s(
        "ARENA_S3_SECRET_ACCESS_KEY",
        "secret",
        "",
        "Storage",
        "S3 secret access key (with ARENA_S3_ACCESS_KEY_ID).",
    ),
    _s("ARENA_S3_REGION", "str", "", "Storage", "S3 region; empty = the default of s3fs."),
    _s(
        "ARENA_ALLOW_EMPTY_MONTH",
        "bool",
        "false",
        "Storage",
        "true = an empty result may replace a month that has rows (a month emptied on "
        "purpose); false = such a write fails with one line and the lake keeps the month (a "
        "wrong ARENA_RAW_ROOT or an input that vanished must never empty a month).",
    ),
    # Ingest
    _s(
        "ARENA_INGEST_WORKERS",
        "int",
        "1",
        "Ingest",
        "Processes that parse a month's raw files in parallel (1 = inside the run's process).",
        minimum=1,
    ),
    _s(
        "ARENA_ALLOW_PARTIAL_FILES",
        "bool",
        "false",
        "Ingest",
        "true = accept a month whose gzip files broke mid-stream (complete lines kept, the "
        "rest a truncated_file reject); false = the blocking no_partial_files check fails "
        "the run.",
    ),
    _s(
        "ARENA_ALLOW_SHRINK",
        "bool",
        "false",
        "Ingest",
        "true = a new build of a month may replace a bigger one in the lake (an intended "
        "shrink); false = such a run fails with one line before writing, and the month stays "
        "as it was. A build is smaller when a raw file the month was built from is gone or "
        "cut short, or when it has more than ARENA_SHRINK_MAX_FRACTION fewer accepted lines. "
        "The run tag arena/allow_shrink=true allows it for one run. Guards raw_logs and "
        "completion_battles alike.",
    ),
    _s(
        "ARENA_SHRINK_MAX_FRACTION",
        "float",
        "0.2",
        "Ingest",
        "The share of a month's accepted lines a new build may lose before the shrink guard "
        "refuses it (0 = not one line; 1 = any number, files gone still refused).",
        minimum=0,
        maximum=1,
    ),
    # Privacy
    _s(
        "ARENA_USER_SALT",
        "secret",
        "demo-salt-change-me",
        "Privacy",
        "Salt of the hash that replaces user addresses and ids at ingest. Change it for a "
        "real deployment and keep it secret: with the salt, a known address can be matched "
        "to its hash.",
    ),
    _s(
        "ARENA_RAW_LOGS_RETENTION_MONTHS",
        "int",
        "0",
        "Privacy",
        "raw_logs keeps message text as typed (to re-clean when redaction improves) and never "
        "goes into a release: months older than this many are deleted after each ingest "
        "(0 = keep all).",
        minimum=0,
    ),
    _s(
        "ARENA_RELEASE_PUBLISHED",
        "csv_list",
        "",
        "Privacy",
        "Months whose release was published (pushed to a hub or sent out), comma-separated, "
        "* = all: `forget` rewrites their local release folder too, and warns that the "
        "published copy still holds the user until it is replaced.",
        item="month",
    ),
    # Cleaning
    _s(
        "ARENA_MODERATION_BASE_URL",
        "url",
        "",
        "Cleaning",
        "OpenAI-compatible moderation endpoint; empty = the moderation columns stay null.",
    ),
    _s(
        "ARENA_MODERATION_API_KEY",
        "secret",
        "",
        "Cleaning",
        "API key of the moderation endpoint; empty = a placeholder key.",
    ),
    _s(
        "ARENA_MODERATION_MODEL",
        "str",
        "omni-moderation-latest",
        "Cleaning",
        "Moderation model the endpoint is asked for.",
    ),
    # Battles
    _s(
        "ARENA_ALIAS_TABLE",
        "url_or_path",
        "",
        "Battles",
        "CSV file (alias,canonical,valid_from,valid_to; dates may be empty) mapping the names "
        "a model was served under to one name; local or s3://. Empty = none.",
    ),
    _s(
        "ARENA_IDENTITY_NAMES",
        "url_or_path",
        "",
        "Battles",
        "JSON file {model: [names it may call itself]} for the identity-leak filter; local or "
        "s3://. Empty = derived from the model names.",
    ),
    _s(
        "ARENA_DAILY_VOTE_CAP",
        "int",
        "50",
        "Battles",
        "Votes of one voter beyond this many in a UTC day are removed.",
        minimum=1,
    ),
    _s(
        "ARENA_ANOMALY_ALPHA",
        "float",
        "0.001",
        "Battles",
        "Anomalous-voter test: an honest voter is flagged with probability at most this.",
        minimum=0,
        maximum=1,
    ),
    _s(
        "ARENA_FRESH_VOTE_WEIGHT",
        "float",
        "0.25",
        "Battles",
        "Weight on the boards of a vote by an account without history (no vote in an "
        "earlier month of the lake); 1 turns the age weight off.",
        minimum=0,
        maximum=1,
    ),
    _s(
        "ARENA_COHORT_ALPHA",
        "float",
        "0.01",
        "Battles",
        "Cohort tests (fresh or concentrated voters of a model against the established "
        "ones): chance per month that any honest cohort is down-weighted.",
        minimum=0,
        maximum=1,
    ),
    _s(
        "ARENA_COHORT_MIN_REFERENCE",
        "int",
        "20",
        "Battles",
        "Cohort tests: votes per opponent pair behind the expectation (this month's "
        "established votes and the earlier months'), averaged over the cohort's votes, "
        "below which the cohort is not judged (listed as thin in the battles' metadata); "
        "a thinner reference mistakes a strong model's honest newcomers for a deviation.",
        minimum=0,
    ),
    # Leaderboards
    _s(
        "ARENA_BOOTSTRAP_ROUNDS",
        "int",
        "200",
        "Leaderboards",
        "Bootstrap rounds of the arena boards' confidence intervals (and of the Copilot board's).",
        minimum=0,
    ),
    _s(
        "ARENA_MIN_BATTLES",
        "int",
        "50",
        "Leaderboards",
        "Battles a model needs to be on a board (real traffic: 300; this is the demo's "
        "small-month value).",
        minimum=0,
    ),
    _s(
        "ARENA_MIN_CATEGORY_BATTLES",
        "int",
        "500",
        "Leaderboards",
        "Battles in a category for its board to be published (real traffic: 1000; this is "
        "the demo's small-month value).",
        minimum=0,
    ),
    _s(
        "ARENA_ANCHOR_MODEL",
        "str",
        "",
        "Leaderboards",
        "Model pinned to a rating of 1000; empty = the mean rating is 1000.",
    ),
)

_AFTER_TASKS = (
    # LLM endpoints (after the tasks)
    _s(
        "ARENA_LLM_CACHE_ROOT",
        "url_or_path",
        "",
        "LLM endpoints",
        "Where LLM answers are cached (a rerun makes no calls); empty = "
        "<ARENA_LAKE_ROOT>/_llm_cache.",
    ),
    _s(
        "ARENA_LLM_BUDGET_USD",
        "float",
        "",
        "LLM endpoints",
        "US dollars each LLM asset may spend per month. A run whose plan (`arena-assets plan "
        "--month M`) is over it is refused before any call; while a run calls, each call "
        "holds its worst case, so the spending stays under it as far as the endpoint bills "
        "as the plan counts. Empty = no limit.",
        minimum=0,
    ),
    _s(
        "ARENA_LLM_BATCH_POLL_SECONDS",
        "float",
        "30",
        "LLM endpoints",
        "Seconds between two looks at a Batch-API job in flight (a task in batch mode); each "
        "change of its counts is a line of the run's log.",
        minimum=0,
    ),
    _s(
        "ARENA_LLM_BATCH_MAX_WAIT_SECONDS",
        "float",
        "",
        "LLM endpoints",
        "The most a run waits for its Batch-API jobs; past it the run fails naming them, they "
        "stay recorded with the cache, and the next run of the month collects them instead of "
        "submitting them again. Empty = until they end (OpenAI: within 24 hours).",
        minimum=0,
    ),
    # Simulated arena
    _s(
        "ARENA_SIM_WORLD_SEED",
        "int",
        "7",
        "Simulated arena",
        "World seed of the simulated arena behind `simulated` base URLs: the seed the raw "
        "logs were simulated with (the demo uses 7). `make ui` starts the arena on this "
        "world; logs and metadata name it.",
        minimum=0,
    ),
    _s(
        "ARENA_SIM_LATENCY",
        "float",
        "",
        "Simulated arena",
        "Seconds each call to the arena that `make demo` and `make ui` start waits; empty = none.",
        minimum=0,
    ),
    _s(
        "ARENA_SIM_BASE_URL",
        "url",
        "",
        "Simulated arena",
        "URL of the simulated arena that `simulated` base URLs mean (`arena-sim serve "
        "--truth-root RAW_ROOT` prints it). Empty: `make demo` and `make ui` start one and "
        "set it for their runs; a run started otherwise with a task set to `simulated` fails "
        "with one line. Data and metadata say `simulated`, not the port.",
    ),
    # Topics/labels
    _s(
        "ARENA_LABEL_MAX_PROMPT_CHARS",
        "int",
        "12500",
        "Topics/labels",
        "Prompts are cut to this many characters before labelling.",
        minimum=1,
    ),
    _s(
        "ARENA_LABEL_MAX_PARSE_FAILURE_RATE",
        "float",
        "0.05",
        "Topics/labels",
        "The WARN check flags a month whose parse-failure rate (per label group) exceeds "
        "this; empty = 0.05.",
        minimum=0,
        maximum=1,
        empty_ok=True,
    ),
    _s(
        "ARENA_LABEL_MAX_MISSING_RATE",
        "float",
        "0.05",
        "Topics/labels",
        "The blocking check fails a month where more than this share of conversations (per "
        "label group) has a label call that failed or an answer that did not parse; neither "
        "is cached, so rerunning the month asks them again. Empty = 0.05.",
        minimum=0,
        maximum=1,
        empty_ok=True,
    ),
    _s(
        "ARENA_LABEL_PROMPTS",
        "path",
        "",
        "Topics/labels",
        "Label prompt set: a YAML file of prompts and output formats "
        "(arena_assets/labels/prompt_sets.py documents the shape; "
        "labels/prompt_set_files/anchor_style.yaml asks each LMArena tag separately in its "
        "own format); empty = the project's default set. Its name and hash are recorded with "
        "every label.",
    ),
    _s(
        "ARENA_IMAGE_ROOT",
        "url_or_path",
        "",
        "Topics/labels",
        "Where image files are (<root>/<sha256>.<ext>, a folder or s3://): vision labels then "
        "send the image itself (a data URL); empty = its stored reference (enough for the "
        "simulated arena).",
    ),
    _s(
        "ARENA_LABEL_REASK_UNREADABLE",
        "bool",
        "false",
        "Topics/labels",
        "true: a label reply with no readable tag is asked once more. LMArena's labeller does "
        "not ask again (it stores the tag's default), so this departs from it; off by "
        "default.",
    ),
    # Bench
    _s("ARENA_BENCH_SIZE", "int", "40", "Bench", "Prompts in the month's bench.", minimum=1),
    _s(
        "ARENA_BENCH_VISION_SIZE",
        "int",
        "0",
        "Bench",
        "Image prompts in the month's vision bench (0 = none).",
        minimum=0,
    ),
    _s(
        "ARENA_BENCH_MIN_QUALITY",
        "int",
        "5",
        "Bench",
        "BenchBuilder's first pass keeps prompts meeting at least this many of the 7 quality "
        "criteria (the anchor's 5).",
        minimum=0,
        maximum=7,
    ),
    _s(
        "ARENA_BENCH_MIN_CLUSTER_MEAN",
        "float",
        "3",
        "Bench",
        "BenchBuilder's first pass keeps them only in topic clusters whose mean quality is at "
        "least this (the anchor's 3); empty = 3.",
        minimum=0,
        maximum=7,
        empty_ok=True,
    ),
    _s(
        "ARENA_BENCH_STRONG_MIN_QUALITY",
        "int",
        "6",
        "Bench",
        "The strong pass (with ARENA_BENCH_RELABEL_MODEL) keeps prompts meeting at least "
        "this many criteria (the anchor's 6).",
        minimum=0,
        maximum=7,
    ),
    _s(
        "ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN",
        "float",
        "6",
        "Bench",
        "The strong pass keeps them only in clusters re-scored at least this (the anchor's 6); "
        "empty = 6.",
        minimum=0,
        maximum=7,
        empty_ok=True,
    ),
    _s(
        "ARENA_BENCH_PER_CLUSTER",
        "int",
        "2",
        "Bench",
        "Prompts drawn per topic cluster (the anchor's 2: 500 prompts from 250 clusters). A "
        "month with few clusters fills a bench only with more a cluster, at the cost of its "
        "diversity.",
        minimum=1,
    ),
    _s(
        "ARENA_BENCH_RELABEL_MODEL",
        "str",
        "",
        "Bench",
        "Optional second labelling pass for bench_prompts: this strong labeller model (on the "
        "ARENA_LABELER endpoint) re-labels only the prompts the cheap labels let through; "
        "empty = one pass. Its calls show in bench_prompts' metadata (relabel_calls).",
    ),
    # Judging
    _s(
        "ARENA_BENCH_PROTOCOL",
        "str",
        "arena-assets-pairwise",
        "Judging",
        "The judging protocol: Arena-Hard-Auto's rules by version (token caps, judge 4,096 / "
        "16,000; verdict rule, re-ask, dropping of unparsed games, bootstrap interval, 95 % / "
        "90 %; style control; v2's per-category baselines) and the judge's text. "
        "arena-hard-v0.1 and arena-hard-v2 send Arena-Hard-Auto's own prompts, read from "
        "ARENA_ARENA_HARD_DIR (required for them): the numbers comparable with the anchor's. "
        "arena-assets-pairwise (v0.1's rules) and arena-assets-pairwise-v2 (v2's rules) send "
        "the project's own wording and need no checkout; the simulated judge reads only "
        "these. arena-hard-v2.0 is read as arena-hard-v2.",
        choices=(
            "arena-assets-pairwise",
            "arena-assets-pairwise-v2",
            "arena-hard-v0.1",
            "arena-hard-v2",
            "arena-hard-v2.0",
        ),
    ),
    _s(
        "ARENA_ARENA_HARD_DIR",
        "path",
        "",
        "Judging",
        "Your arena-hard-auto checkout, read (never imported or run) when ARENA_BENCH_PROTOCOL "
        "is arena-hard-v0.1 (config/judge_config.yaml and gen_judgment.py of a v0.1-era "
        "commit such as 0489bf3) or arena-hard-v2 (utils/judge_utils.py and "
        "config/arena-hard-v2.0.yaml): the judge receives their text byte for byte, and an "
        "empty ARENA_BENCH_BASELINE takes their baselines. Empty = no checkout: those two "
        "protocols then fail in one line naming this setting.",
    ),
    _s(
        "ARENA_BENCH_JUDGES",
        "csv_list",
        "sim-judge",
        "Judging",
        "Judge models on the ARENA_JUDGE endpoint, comma-separated (several = an ensemble); "
        "the simulator also serves sim-judge-biased (planted position and length bias) and "
        "sim-judge-verbose (length bias alone). Empty = ARENA_JUDGE_MODEL alone.",
        empty_ok=True,
    ),
    _s(
        "ARENA_CANDIDATES",
        "yaml",
        '[{"name": "kelp-34b-pro", "base_url": "simulated"}, '
        '{"name": "xenon-70b-chat", "base_url": "simulated"}, '
        '{"name": "atlas-8b-preview", "base_url": "simulated"}, '
        '{"name": "zircon-large-instruct", "base_url": "simulated"}]',
        "Judging",
        'Candidate models: a JSON/YAML list of {name, base_url ("simulated" or a URL), '
        "api_key_env (the NAME of the variable holding the key), model, params}.",
    ),
    _s(
        "ARENA_BENCH_BASELINE",
        "str",
        "atlas-8b-preview",
        "Judging",
        "The candidate every other is judged against (required). With arena-hard-v2, one name "
        "serves every question category, or per category: hard_prompt=M1,creative_writing=M2.",
    ),
    _s(
        "ARENA_BENCH_JUDGE_MAX_TOKENS",
        "int",
        "0",
        "Judging",
        "Token cap of the judge's replies; 0 = the protocol's (4,096 / 16,000).",
        minimum=0,
    ),
    _s(
        "ARENA_BENCH_ANSWER_MAX_TOKENS",
        "int",
        "0",
        "Judging",
        "Token cap of the candidates' answers; 0 = the protocol's (4,096 / 16,000).",
        minimum=0,
    ),
    _s(
        "ARENA_BENCH_MAX_CAP_HIT_SHARE",
        "float",
        "0.01",
        "Judging",
        "The WARN checks fire when more than this share of the answers or judge replies used "
        "the whole token cap; empty = 0.01.",
        minimum=0,
        maximum=1,
        empty_ok=True,
    ),
    _s(
        "ARENA_BENCH_SINGLE_GRADES",
        "bool",
        "false",
        "Judging",
        "MT-Bench style single-answer grades (Rating: [[x]]) by every judge, written to the "
        "answer_grades table and shown as single_score on the bench leaderboard (one more "
        "call per answer).",
    ),
    _s(
        "ARENA_BENCH_BOOTSTRAP_SEED",
        "int",
        "42",
        "Judging",
        "Seed of the bench board's bootstrap (42: the anchor's v0.1 seed, its resamples drawn "
        "alike).",
        minimum=0,
    ),
    _s(
        "ARENA_BENCH_STRONG_WEIGHT",
        "int",
        "3",
        "Judging",
        "Weight of a strong verdict (A>>B) against a plain one (A>B) on the bench board (the "
        "anchor's 3).",
        minimum=1,
    ),
    _s(
        "ARENA_BENCH_BOOTSTRAP_ROUNDS",
        "int",
        "100",
        "Judging",
        "Bootstrap rounds of the bench board's intervals.",
        minimum=0,
    ),
    # Evaluators
    _s(
        "ARENA_AGREEMENT_JUDGES",
        "csv_list",
        "sim-judge,reward:sim-reward,longer,markdown",
        "Evaluators",
        "Judges compared with the month's human votes, comma-separated: LLM judge models (on "
        "the ARENA_JUDGE endpoint; asked with the bench's pairwise prompt in both orders), "
        "reward:<model> (on the ARENA_REWARD endpoint), and the baselines longer and "
        "markdown.",
    ),
    _s(
        "ARENA_AGREEMENT_SAMPLE_SIZE",
        "int",
        "200",
        "Evaluators",
        "Battles judged each month: a sample stratified by category and language.",
        minimum=1,
    ),
    _s(
        "ARENA_AGREEMENT_SEED",
        "int",
        "0",
        "Evaluators",
        "Seed of the sample and of the bootstraps.",
        minimum=0,
    ),
    _s(
        "ARENA_AGREEMENT_BOOTSTRAP_ROUNDS",
        "int",
        "200",
        "Evaluators",
        "Bootstrap rounds of the accuracy intervals.",
        minimum=0,
    ),
    _s(
        "ARENA_AGREEMENT_BOARD_ROUNDS",
        "int",
        "100",
        "Evaluators",
        "Bootstrap rounds of the boards the judges' verdicts imply.",
        minimum=0,
    ),
    _s(
        "ARENA_EVALUATORS_CI_LEVEL",
        "float",
        "0.95",
        "Evaluators",
        "Level of the evaluators' intervals; empty = 0.95.",
        minimum=0.5,
        maximum=0.999,
        empty_ok=True,
    ),
    _s(
        "ARENA_AGREEMENT_MIN_SLICE_BATTLES",
        "int",
        "30",
        "Evaluators",
        "Slices (a category, a language) with fewer battles are not reported on their own.",
        minimum=0,
    ),
    _s(
        "ARENA_REFUSAL_THRESHOLD",
        "float",
        "0.2",
        "Evaluators",
        "over_refusal: a model over-refuses when the lower bound of its refusal rate on "
        "benign-sensitive prompts is above this; empty = 0.2.",
        minimum=0,
        maximum=1,
        empty_ok=True,
    ),
    _s(
        "ARENA_REFUSAL_MIN_CONVERSATIONS",
        "int",
        "5",
        "Evaluators",
        "Conversations a model needs in the class to be judged by over_refusal.",
        minimum=0,
    ),
    _s(
        "ARENA_REFUSAL_MAX_PROMPT_CHARS",
        "int",
        "4000",
        "Evaluators",
        "Prompts are cut to this many characters for over_refusal's risk labeller.",
        minimum=1,
    ),
    _s(
        "ARENA_ORBENCH_DIR",
        "path",
        "",
        "Evaluators",
        "Your checkout of OR-Bench (github.com/justincui03/or-bench): `arena-assets or-bench` "
        "reads OR-Bench's check prompt from its response_checker/check_response.py (parsed as "
        "data, never run) and judges every answer with it too; empty = OR-Bench's 3-class "
        "judge is not run (`--orbench-dir` overrides).",
    ),
    # Completions
    _s(
        "ARENA_COMPLETIONS_ROOT",
        "url_or_path",
        "",
        "Completions",
        "Copilot Arena's records (server log JSON lines / Parquet, or its release CSV), one "
        "sub-folder per month (YYYY-MM/); empty = <ARENA_RAW_ROOT>/_completions (where "
        "`arena-sim simulate --completions N` writes them).",
    ),
    _s(
        "ARENA_COPILOT_MIN_BATTLES",
        "int",
        "20",
        "Completions",
        "Accepted completions a model needs to be ranked on the Copilot board.",
        minimum=0,
    ),
    _s(
        "ARENA_COPILOT_MIN_FILE_TYPE_BATTLES",
        "int",
        "300",
        "Completions",
        "Accepted pairs a language board needs to be published.",
        minimum=0,
    ),
    _s(
        "ARENA_COPILOT_CI_LEVEL",
        "float",
        "0.95",
        "Completions",
        "Interval level of the Copilot board's bootstrap; empty = 0.95.",
        minimum=0.5,
        maximum=0.999,
        empty_ok=True,
    ),
    _s(
        "ARENA_COPILOT_SEED",
        "int",
        "0",
        "Completions",
        "Seed of the Copilot board's bootstrap.",
        minimum=0,
    ),
    _s(
        "ARENA_COPILOT_INCLUDE_UNACCEPTED",
        "bool",
        "false",
        "Completions",
        "true = unaccepted pairs enter the fit as ties (Copilot Arena's board: false).",
    ),
    _s(
        "ARENA_COPILOT_FIT",
        "str",
        "copilot-arena",
        "Completions",
        "The Copilot board's fit. copilot-arena: Copilot Arena's own (server/src/scores.py), "
        "an L2-penalised logistic regression (sklearn's C=1) whose ratings are the numbers "
        "its code gives for the same pairs, pulled towards 1000 by the penalty. bt: the "
        "unpenalised Bradley-Terry fit of the arena boards. Per-user boards "
        "(copilot_user_boards) are always Copilot Arena's.",
        choices=("copilot-arena", "bt"),
    ),
    # Routing
    _s(
        "ARENA_P2L_LOSS",
        "str",
        "bt",
        "Routing",
        "Outcome model of the P2L fit: bt (Bradley-Terry, ties as half wins like the boards) "
        "or grk (grounded Rao-Kupper: win, loss, tie, both bad); empty = bt.",
        choices=("bt", "grk"),
        empty_ok=True,
    ),
    _s(
        "ARENA_P2L_RANK",
        "int",
        "8",
        "Routing",
        "Rank of W (the prompt-dependent part of every model's coefficient).",
        minimum=1,
    ),
    _s(
        "ARENA_P2L_REPLAY_MONTHS",
        "int",
        "6",
        "Routing",
        "Earlier months replayed into each monthly refit.",
        minimum=0,
    ),
    _s(
        "ARENA_P2L_MAX_BATTLES",
        "int",
        "1000000",
        "Routing",
        "Cap on training battles (the replay is sampled, seeded, to stay under it).",
        minimum=1,
    ),
    _s(
        "ARENA_P2L_MIN_MODEL_BATTLES",
        "int",
        "100",
        "Routing",
        "A model with fewer training battles keeps only its marginal rating (its row of W = 0).",
        minimum=0,
    ),
    _s(
        "ARENA_P2L_BOOTSTRAP_ROUNDS",
        "int",
        "100",
        "Routing",
        "Bootstrap rounds of the P2L boards.",
        minimum=0,
    ),
    _s(
        "ARENA_ROUTER_PRICES",
        "json",
        "",
        "Routing",
        'Price per call of each model, a JSON object {"model": price} in any unit; empty = '
        "the router routes by quality only (argmax).",
    ),
    _s(
        "ARENA_ROUTER_BUDGETS",
        "csv_list",
        "",
        "Routing",
        "Budgets in the unit of ARENA_ROUTER_PRICES, comma-separated; empty = the quartiles "
        "of the prices.",
        item="float",
    ),
    # Site
    _s(
        "ARENA_SITE_ROOT",
        "url_or_path",
        "./data/site",
        "Site",
        "Where each month's pages go (a folder, or s3://bucket/prefix served by any static host).",
    ),
    _s(
        "ARENA_SITE_NAME",
        "str",
        "Arena leaderboard",
        "Site",
        "The site's name in every page's header.",
    ),
    _s(
        "ARENA_SITE_PUBLIC_URL",
        "url",
        "",
        "Site",
        "The base URL the site is served at (https://leaderboard.example.org): links to its "
        "pages in Dagster metadata point there. Empty = the root itself (file:// for a "
        "folder).",
    ),
    _s(
        "ARENA_SITE_SERVE_PORT",
        "int",
        "3001",
        "Site",
        "With ARENA_SITE_PUBLIC_URL empty and a local ARENA_SITE_ROOT, `arena-assets ui` "
        "(`make ui`) and `arena-assets demo` serve the site root on http://127.0.0.1:PORT "
        "and set ARENA_SITE_PUBLIC_URL to it for their runs, so the links in Dagster metadata "
        "open from the UI (a fixed port: links recorded by the demo work whenever the UI "
        "runs); 0 = serve nothing (links are file:// paths).",
        minimum=0,
        maximum=65535,
    ),
    _s(
        "ARENA_SITE_DEPRECATE_AFTER_MONTHS",
        "int",
        "2",
        "Site",
        "A model with no vote in this many months up to a page's month is deprecated (hidden "
        'by default); 0 = only what models.json marks "deprecated": true.',
        minimum=0,
    ),
    _s(
        "ARENA_SITE_PLOT_TOP",
        "int",
        "30",
        "Site",
        "Models in the interval and win-rate figures.",
        minimum=0,
    ),
    _s(
        "ARENA_SITE_HEATMAP_TOP",
        "int",
        "20",
        "Site",
        "Models in the win-fraction and battle-count heatmaps.",
        minimum=0,
    ),
    # Release
    _s(
        "ARENA_RELEASE_ROOT",
        "url_or_path",
        "./data/release",
        "Release",
        "Where the release assets write each month's public snapshot (Hugging Face dataset "
        "layout).",
    ),
    _s(
        "ARENA_RELEASE_SECRET",
        "secret",
        "demo-release-secret-change-me",
        "Release",
        "The secret each release's salt is derived from (HMAC of the release name); user "
        "hashes in a release are re-keyed with it. Keep it secret and different from "
        "ARENA_USER_SALT.",
    ),
    _s(
        "ARENA_RELEASE_LICENSE",
        "str",
        "cc-by-4.0",
        "Release",
        "The licence named in each release's dataset card.",
    ),
    # Deployment
    _s(
        "ARENA_CELERY_BROKER_URL",
        "url",
        "",
        "Deployment",
        "Broker of arena_assets.celery_location's Celery executor (deploy/README.md); it may "
        "hold a password.",
        secret=True,
    ),
    _s(
        "ARENA_CELERY_BACKEND_URL",
        "url",
        "",
        "Deployment",
        "Result backend of arena_assets.celery_location's Celery executor; it may hold a password.",
        secret=True,
    ),
    # Diagnostics
    _s(
        "ARENA_DEBUG",
        "bool",
        "false",
        "Diagnostics",
        "true = a step or command that fails on a known error (a lake file, an endpoint, a "
        "setting: one line naming what to fix) also shows the traceback behind that line, "
        "in the failure's description and on the terminal; false = the line alone.",
    ),
)


def _ordered(settings: Iterable[Setting]) -> tuple[Setting, ...]:
    """Grouped in the order of ``GROUPS``, registration order within a group."""
    rank = {g: i for i, (g, _) in enumerate(GROUPS)}
    return tuple(sorted(settings, key=lambda s: rank[s.group]))  # sorted() is stable


SETTINGS: tuple[Setting, ...] = _ordered(
    [*_BEFORE_TASKS, *(s for t in _LLM_TASKS for s in _task_settings(t)), *_AFTER_TASKS]
)
_BY_NAME = {s.name: s for s in SETTINGS}
if len(_BY_NAME) != len(SETTINGS):  # pragma: no cover - a registry error
    raise ValueError("a setting is registered twice")


def get(name: str) -> Setting:
    """The setting called ``name``; a KeyError naming it when it is not registered."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(
            f"{name} is not a registered setting (arena_assets/settings.py lists every "
            "ARENA_* variable the code reads)"
        ) from None


def defaults() -> dict[str, str]:
    """{name: default} of every setting, in display order (what `.env.example` sets)."""
    return {s.name: s.default for s in SETTINGS}


def check(name: str, value: str) -> str | None:
    """None when ``value`` is one ``name`` allows, else one line naming the variable, the
    value and what is allowed. Leading and trailing blanks are ignored, as the code does."""
    s = get(name)
    text = str(value).strip()
    if not text:
        return None if s.empty_ok else f"{name} is empty: expected {s.allowed}"
    if _valid(s, text):
        return None
    return f"{name}={value!r} is not allowed: expected {s.allowed}"


def partition_problems(start: str, end: str) -> list[str]:
    """The partition range's lines: each bound a month, the last not before the first (an
    empty first month is the default, as ``defs/partitions.py`` reads it)."""
    start_name, end_name = "ARENA_PARTITIONS_START", "ARENA_PARTITIONS_END"
    out = [p for name, v in ((start_name, start), (end_name, end)) if (p := check(name, v))]
    first, last = start.strip() or get(start_name).default, end.strip()
    if not out and last and last < first:
        out.append(f"{end_name}={last} is before {start_name}={first}")
    return out


def problems(environ: Mapping[str, str]) -> list[str]:
    """One line per registered setting in ``environ`` whose value is not allowed (display
    order), then the partition range's own rule; [] when every value can work. Names that
    are not registered are not judged here (the registry test finds those in the code)."""
    bounds = ("ARENA_PARTITIONS_START", "ARENA_PARTITIONS_END")
    out = partition_problems(*(environ.get(name, "") for name in bounds))
    out += [
        line
        for s in SETTINGS
        if s.name in environ and s.name not in bounds and (line := check(s.name, environ[s.name]))
    ]
    return out


def _in_range(s: Setting, number: float) -> bool:
    return (s.minimum is None or number >= s.minimum) and (s.maximum is None or number <= s.maximum)


def _number(text: str, kind: str) -> float | None:
    try:
        number = int(text) if kind == "int" else float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _valid(s: Setting, text: str) -> bool:
    if s.choices:
        return text in s.choices
    kind = s.kind
    if kind in ("int", "float"):
        number = _number(text, kind)
        return number is not None and _in_range(s, number)
    if kind == "bool":
        return text.lower() in _TRUE + _FALSE
    if kind == "month":
        return bool(_MONTH.fullmatch(text))
    if kind == "size":
        return bool(_SIZE.fullmatch(text))
    if kind == "url":
        return bool(_URL.fullmatch(text))
    if kind == "endpoint":
        return text == "simulated" or bool(_HTTP.fullmatch(text))
    if kind == "json":
        try:
            return isinstance(json.loads(text), dict)
        except ValueError:
            return False
    if kind == "csv_list" and s.item:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if s.item == "month":
            return all(p == "*" or _MONTH.fullmatch(p) for p in parts)
        numbers = [_number(p, "float") for p in parts]
        return all(n is not None and _in_range(s, n) for n in numbers)
    return True  # str, secret, path, url_or_path, yaml, csv_list: any text


# --- renderings: .env.example and the documentation's reference page ---------------------------

ENV_EXAMPLE_HEADER = """\
# Every variable the code location reads. `make` writes .env from this file, each value as
# NAME=${NAME:-value}: a variable exported in the shell wins, for arena-assets and for the
# Dagster CLI (which loads .env from the working directory) alike; see arena_assets/envfile.py.
"""
_WIDTH = 92
_NEEDS_QUOTES = re.compile(r"""['"{}$#\\`]|^\s|\s$""")


def _env_value(value: str) -> str:
    """The value as `.env` writes it: quoted where python-dotenv would misread it (single
    quotes, which keep the text as it is, unless it holds one)."""
    if not _NEEDS_QUOTES.search(value):
        return value
    if "'" not in value:
        return f"'{value}'"
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _comment(text: str) -> list[str]:
    return textwrap.wrap(
        text,
        _WIDTH,
        initial_indent="# ",
        subsequent_indent="# ",
        break_long_words=False,
        break_on_hyphens=False,
    )


def env_example() -> str:
    """`.env.example`: the opening paragraph, then per group a header, and per setting its
    help as comment lines and ``NAME=default``."""
    lines = ENV_EXAMPLE_HEADER.splitlines()
    for group, about in GROUPS:
        members = [s for s in SETTINGS if s.group == group]
        if not members:
            continue
        lines += ["", f"# --- {group}: {about} ---"]
        for s in members:
            lines += _comment(s.help)
            lines.append(f"{s.name}={_env_value(s.default)}")
    return "\n".join(lines) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _code(text: str) -> str:
    return f"`{text}`" if text else "*(empty)*"


def reference_markdown() -> str:
    """The documentation's configuration reference: a section per group, a table each."""
    out = [
        "# Configuration",
        "",
        "Every `ARENA_*` variable the code location reads, generated from "
        "`arena_assets/settings.py` (the same registry writes `.env.example`). A variable "
        "exported in the shell wins; `.env` gives the value otherwise (`make` writes it "
        "from `.env.example`); see `arena_assets/envfile.py`.",
        "",
        "The settings of each LLM task (`"
        + "`, `".join(LLM_TASK_PREFIXES)
        + "`) follow one pattern: `ARENA_<TASK>_"
        + "`, `_".join(LLM_TASK_SUFFIXES)
        + "` (the last three, "
        + ", ".join(f"`_{x}`" for x in BATCH_SUFFIXES)
        + ", for the tasks with a Batch-API form: every one but `REWARD`).",
        "",
        "Types: "
        + "; ".join(f"**{k}**: {_cell(v)}" for k, v in KINDS.items())
        + ". Secrets are marked *(secret)*: keep them out of repositories and config maps.",
    ]
    for group, about in GROUPS:
        members = [s for s in SETTINGS if s.group == group]
        if not members:
            continue
        out += [
            "",
            f"## {group}",
            "",
            about[0].upper() + about[1:] + ".",
            "",
            "| Name | Type | Default | Meaning | Allowed values |",
            "| --- | --- | --- | --- | --- |",
        ]
        for s in members:
            kind = s.kind + (" *(secret)*" if s.secret and s.kind != "secret" else "")
            out.append(
                f"| `{s.name}` | {kind} | {_cell(_code(s.default))} | {_cell(s.help)} "
                f"| {_cell(s.allowed)} |"
            )
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m arena_assets.settings", description="The ARENA_* settings registry."
    )
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--env-example", action="store_true", help="print .env.example")
    what.add_argument("--reference", action="store_true", help="print the reference page")
    args = parser.parse_args(argv)
    print(env_example() if args.env_example else reference_markdown(), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
