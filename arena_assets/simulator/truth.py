"""The hidden truth under ``<out>/_truth/``: schemas, a batched Parquet sink, a reader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from arena_assets.simulator.config import CATEGORIES, LANGUAGES
from arena_assets.simulator.topics import CRITERIA, VISION_LABELS
from arena_assets.simulator.world import World

TRUTH_DIR = "_truth"
_S, _F, _B, _I32, _I64 = pa.string(), pa.float64(), pa.bool_(), pa.int32(), pa.int64()

# World-level tables: one file each, identical for every run with the same world seed.
MODELS_SCHEMA = pa.schema(
    [("name", _S), ("organization", _S), ("theta", _F)]
    + [(f"skill_{c}", _F) for c in CATEGORIES]
    + [
        ("verbosity", _F),
        ("markdown", _F),
        ("vision", _B),
        ("release_month", _S),
        ("aliases", pa.list_(_S)),
        ("popularity", _F),
        ("cautious", _B),
    ]
)
VOTERS_SCHEMA = pa.schema(
    [
        ("user_id", _S),
        ("ip", _S),
        ("logs_ip", _B),
        ("kind", _S),
        ("target_model", _S),
        ("burst_side", _S),
        ("language", _S),
        ("activity", _F),
    ]
)

# Monthly tables: ``_truth/<table>/<YYYY-MM>.parquet``.
MONTHLY_SCHEMAS: dict[str, pa.Schema] = {
    "conversations": pa.schema(
        [
            ("conv_id", _S),
            ("month", _S),
            ("session_id", _S),
            ("mode", _S),
            ("side", _S),
            ("user_id", _S),
            ("model", _S),
            ("language", _S),
            ("categories", pa.list_(_S)),
            ("prompt_id", _S),
            ("turns", _I32),
            ("n_images", _I32),
            ("has_pii", _B),
            ("toxic", _B),
            ("self_mention", _B),
            ("mentioned_model", _S),
            ("anony", _B),
            ("first_tstamp", _F),
            ("last_tstamp", _F),
            ("answer_chars", _I64),
            ("answer_markdown", _I64),
            ("refused", _B),
        ]
    ),
    "prompts": pa.schema(
        [
            ("prompt_id", _S),
            ("month", _S),
            ("text", _S),
            ("language", _S),
            ("categories", pa.list_(_S)),
            ("duplicate_of", _S),
            ("near_duplicate_of", _S),
            ("popular", _B),
            ("toxic_category", _S),
            ("has_pii", _B),
            # labels of the prompt (topics.prompt_labels): what topic_labels should find
            ("topic", _S),
            ("category", _S),
        ]
        + [(c, _B) for c in CRITERIA]
        + [
            ("criteria_count", _I32),
            ("hard", _B),
            ("math", _B),
            ("creative_writing", _B),
            ("if_score", _I32),
            ("would_refuse", _B),
            ("code", _B),
            ("image", _B),
        ]
        + [(f"vision_{v}", _B) for v in VISION_LABELS]
    ),
    "votes": pa.schema(
        [
            ("event_id", _S),
            ("month", _S),
            ("tstamp", _F),
            ("conv_id_a", _S),
            ("conv_id_b", _S),
            ("model_a", _S),
            ("model_b", _S),
            ("winner", _S),
            ("user_id", _S),
            ("abusive", _B),
            ("abuse_kind", _S),
            ("anony", _B),
            ("category", _S),
            ("p_a", _F),
            ("len_a", _I64),
            ("len_b", _I64),
            ("md_a", _I64),
            ("md_b", _I64),
            ("criteria_count", _I32),
            ("refused_a", _B),
            ("refused_b", _B),
        ]
    ),
    # which battle an answer belongs to: sha256 of each side's first assistant answer
    # (stripped), so a judge or reward model served by the endpoint can find the battle
    # from the text it is shown (simulator/battle_judge.py); no randomness involved
    "battle_answers": pa.schema(
        [
            ("event_id", _S),
            ("month", _S),
            ("answer_sha_a", _S),
            ("answer_sha_b", _S),
        ]
    ),
    # what each uploaded image shows: the vision labels of the prompt it came with (a
    # shared meme, never a homework page nor a diagram, has a row per use, all alike on
    # those two), so a labeller shown the image alone can be answered from it
    "images": pa.schema(
        [("sha256", _S), ("month", _S), ("prompt_id", _S)]
        + [(f"vision_{v}", _B) for v in VISION_LABELS]
    ),
    "pii": pa.schema(
        [
            ("conv_id", _S),
            ("month", _S),
            ("message_index", _I32),
            ("pii_type", _S),
            ("text", _S),
        ]
    ),
    "malformed": pa.schema(
        [
            ("month", _S),
            ("source_file", _S),
            ("line_no", _I64),
            ("kind", _S),
            ("expected_reason", _S),
        ]
    ),
}

README = """# Hidden truth of the simulated arena

Written by `arena_assets.simulator`; never read by the pipeline, only by tests and reports.

- `world.json`: seed and WorldConfig of the world.
- `models.parquet`: one row per model: theta (Elo-scale base skill), `skill_<category>` =
  theta + category offset (the strength votes use), verbosity, markdown habit, vision,
  organization, release_month, aliases (self-names planted in identity leaks), popularity,
  cautious (refuses most prompts with would_refuse; see votes.py).
- `prompt_skills.parquet` (only when `prompt_skill_spread` > 0): one row per (model,
  topic, language): the Elo offset added to the model's category skill on such prompts
  (`prompt_skill.py`; `prompt_skill.true_strengths` gives each prompt's strengths).
- `voters.parquet`: every user: user_id, ip, logs_ip (events carry ip, else user_id),
  kind (honest | always_for | burst), target_model (always_for), burst_side, language.
- `conversations/<month>.parquet`: one row per conv_id (a battle gives two, side a / b,
  same session_id and prompt_id): model, language, categories, turns, n_images, has_pii,
  toxic, self_mention / mentioned_model (identity leak; mentioned_model may be another
  model), answer_chars / answer_markdown (sum over assistant turns), refused (the model
  answered the first turn with a refusal).
- `prompts/<month>.parquet`: the first user prompt of each session: text, language,
  categories, duplicate_of (exact repeat of that prompt_id), near_duplicate_of (small
  edit of it), popular (greeting-like prompts; duplicate_of = first one of the month),
  toxic_category (planted marker), has_pii; and the prompt's labels: fine `topic`
  (`<category>/<slug>`, stable across languages), `category`, the 7 hard-prompt criteria
  (specificity, domain_knowledge, complexity, problem_solving, creativity,
  technical_accuracy, real_world), criteria_count, hard (>= 6 criteria), math,
  creative_writing, if_score (0-5), would_refuse (a cautious model refuses), code, image,
  and vision_<label> for image prompts (null for text prompts). The labels follow from the
  parts the prompt is composed of (`topics.py`); duplicates carry their source's labels.
  `simulator.read_prompt_truth(root, month)` reads this table.
- `votes/<month>.parquet`: every valid vote event: winner (model_a / model_b / tie /
  tie (bothbad)), user_id, abusive, abuse_kind, category, p_a = P(a beats b) before ties
  including planted style, position bias, prompt difficulty and refusals, len/md features
  of both sides, criteria_count of the prompt, refused_a / refused_b.
- `battle_answers/<month>.parquet`: every vote event with the sha256 of each side's first
  assistant answer (stripped), so the endpoint's judges and reward models can find the
  battle an answer they are shown belongs to.
- `images/<month>.parquet`: every image a user sent: sha256 (its reference), prompt_id
  and the prompt's vision_<label> values, what the image shows. A shared meme (one of a
  few images many users send) is never a homework page or a diagram: a prompt that asks
  about one comes with its own upload.
- `pii/<month>.parquet`: every planted PII item: conv_id, message_index (0-based index in
  the state's messages), pii_type, text (occurs verbatim in that message).
- `malformed/<month>.parquet`: every junk line: source_file (relative to the raw root),
  line_no (1-based), kind, expected_reason (a key of schema.REJECT_REASONS).
"""


class TruthSink:
    """Collects rows of one monthly table and appends them to Parquet in batches."""

    def __init__(self, out: Path, table: str, month: str, batch_rows: int = 20_000) -> None:
        self.schema = MONTHLY_SCHEMAS[table]
        self.path = out / TRUTH_DIR / table / f"{month}.parquet"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.rows: list[dict] = []
        self.batch_rows = batch_rows
        self.writer = pq.ParquetWriter(self.tmp, self.schema, compression="zstd")

    def add(self, row: dict) -> None:
        self.rows.append(row)
        if len(self.rows) >= self.batch_rows:
            self.flush()

    def flush(self) -> None:
        if self.rows:
            self.writer.write_table(pa.Table.from_pylist(self.rows, schema=self.schema))
            self.rows = []

    def close(self) -> None:
        self.flush()
        self.writer.close()
        os.replace(self.tmp, self.path)


def write_world_truth(out: Path, world: World) -> None:
    """models.parquet, voters.parquet, world.json and README.md (world-level, idempotent)."""
    base = out / TRUTH_DIR
    base.mkdir(parents=True, exist_ok=True)
    models = [
        {
            "name": m.name,
            "organization": m.organization,
            "theta": m.theta,
            **{f"skill_{c}": m.skill(c) for c in CATEGORIES},
            "verbosity": m.verbosity,
            "markdown": m.markdown,
            "vision": m.vision,
            "release_month": m.release_month,
            "aliases": list(m.aliases),
            "popularity": m.popularity,
            "cautious": m.cautious,
        }
        for m in world.models
    ]
    pq.write_table(pa.Table.from_pylist(models, schema=MODELS_SCHEMA), base / "models.parquet")
    u = world.users
    voters = [
        {
            "user_id": u.user_id[i],
            "ip": u.ip[i],
            "logs_ip": bool(u.logs_ip[i]),
            "kind": u.kind[i],
            "target_model": world.models[u.target[i]].name if u.target[i] >= 0 else None,
            "burst_side": u.burst_side[i],
            "language": LANGUAGES[u.language[i]],
            "activity": float(u.activity[i]),
        }
        for i in range(len(u))
    ]
    pq.write_table(pa.Table.from_pylist(voters, schema=VOTERS_SCHEMA), base / "voters.parquet")
    (base / "world.json").write_text(
        json.dumps({"seed": world.seed, "config": world.config.to_dict()}, indent=2, sort_keys=True)
    )
    (base / "README.md").write_text(README)
    from arena_assets.simulator.prompt_skill import PromptSkills

    skills = PromptSkills.of(world)
    if skills.active:  # off by default: the truth folder stays as it was
        skills.table(world.model_names).write_parquet(base / "prompt_skills.parquet")


def load_truth(out: str | os.PathLike) -> dict[str, pl.DataFrame]:
    """All truth tables of ``out`` as polars frames (monthly tables concatenated, by month)."""
    base = Path(out) / TRUTH_DIR
    tables = {
        "models": pl.read_parquet(base / "models.parquet"),
        "voters": pl.read_parquet(base / "voters.parquet"),
    }
    for name, schema in MONTHLY_SCHEMAS.items():
        files = sorted((base / name).glob("*.parquet"))
        if files:
            tables[name] = pl.concat([pl.read_parquet(f) for f in files], how="vertical")
        else:
            tables[name] = pl.from_arrow(schema.empty_table())
    return tables


def write_registry(out: str | os.PathLike, world: World) -> None:
    """``<out>/models.json``: what the platform publishes about its models (no truth)."""
    path = Path(out) / "models.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(world.registry(), indent=1) + "\n")
