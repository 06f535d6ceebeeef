"""Battles: winner mapping, style, aliases, identity leaks, dedup, caps, abuse detection."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import numpy as np
import polars as pl
import pytest

from arena_assets.battles import (
    AliasRule,
    AnomalyConfig,
    BattleConfig,
    build_battles,
    style_features,
)
from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.contracts import WINNER_OF_VOTE
from arena_assets.ingest.schema import RAW_LOGS_SCHEMA

MONTH_START = datetime(2024, 5, 1, tzinfo=UTC)
MODELS = {f"model-{c}": 1000 + 40 * i for i, c in enumerate("abcdefghij")}


@dataclass
class Arena:
    """Builds raw_logs and conversations frames in the project's schemas."""

    votes: list[dict] = field(default_factory=list)
    convs: list[dict] = field(default_factory=list)
    truth: list[dict] = field(default_factory=list)

    def vote(
        self,
        voter: str,
        t: datetime,
        a: str,
        b: str,
        vote_type: str,
        *,
        anony: bool = True,
        prompt: str | None = None,
        answer_a: str = "Sure.",
        answer_b: str = "Okay.",
        abusive: bool = False,
        kind: str | None = None,
    ) -> str:
        i = len(self.votes)
        prompt = prompt if prompt is not None else f"question number {i}"
        msgs = lambda answer: [
            {"role": "user", "content": prompt, "images": []},
            {"role": "assistant", "content": answer, "images": []},
        ]
        event = f"e-{i:06d}"
        self.votes.append(
            {
                "month": "2024-05",
                "event_id": event,
                "source_file": "2024-05/x.jsonl",
                "line_no": i + 1,
                "tstamp": t,
                "type": vote_type,
                "anony": anony,
                "user_hash": voter,
                "conv_id_a": f"c-{i}-a",
                "model_a": a,
                "messages_a": msgs(answer_a),
                "conv_id_b": f"c-{i}-b",
                "model_b": b,
                "messages_b": msgs(answer_b),
                "source_format": "native",
            }
        )
        for side, model in (("a", a), ("b", b)):
            self.convs.append(
                {
                    "conv_id": f"c-{i}-{side}",
                    "model": model,
                    "tstamp": t,
                    "first_tstamp": t,
                    "user_hash": voter,
                    "anony": anony,
                    "turns": 1,
                    "first_prompt": prompt,
                    "language": "en",
                    "dedup_key": f"k:{prompt}",
                }
            )
        self.truth.append({"battle_id": event, "abusive": abusive, "abuse_kind": kind})
        return event

    def frames(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        raw = pl.DataFrame(self.votes, schema=RAW_LOGS_SCHEMA)
        conv = pl.DataFrame(self.convs).with_columns(pl.lit("2024-05").alias("month"))
        conv = conv.select(
            [
                pl.col(c).cast(t) if c in conv.columns else pl.lit(None, dtype=t).alias(c)
                for c, t in CONVERSATIONS_SCHEMA.items()
            ]
        )
        return raw, conv


def bt_vote(rng: np.random.Generator, a: str, b: str) -> str:
    p_a = 1 / (1 + 10 ** ((MODELS[b] - MODELS[a]) / 400))
    tie = 0.2 * (1 - abs(2 * p_a - 1))
    u = rng.random()
    if u < tie:
        return "tievote" if rng.random() < 0.65 else "bothbad_vote"
    return "leftvote" if rng.random() < p_a else "rightvote"


def synthetic_month(seed: int = 7, n_light: int = 700, n_heavy: int = 12) -> Arena:
    """Honest BT voters (light: 1-20 votes, heavy: 100-200 over the month), `always_for`
    boosters (re-roll until their target shows, then vote for it) and `burst` voters."""
    rng = np.random.default_rng(seed)
    arena, names = Arena(), list(MODELS)
    month_s = 30 * 86400

    def pair() -> tuple[str, str]:
        a, b = rng.choice(len(names), 2, replace=False)
        return names[a], names[b]

    def honest(voter: str, times: list[float]) -> None:
        for s in sorted(times):
            a, b = pair()
            arena.vote(voter, MONTH_START + timedelta(seconds=s), a, b, bt_vote(rng, a, b))

    for v in range(n_light):
        honest(f"light-{v}", list(rng.uniform(0, month_s, int(rng.integers(1, 21)))))
    for v in range(n_heavy):  # sessions of 3-8 votes, ~1-3 minutes apart
        times: list[float] = []
        while len(times) < int(rng.integers(100, 201)):
            start = rng.uniform(0, month_s - 3600)
            times += list(start + np.cumsum(rng.uniform(60, 180, int(rng.integers(3, 9)))))
        honest(f"heavy-{v}", times)
    for v in range(8):  # boosters, mostly of weak models, 25-60 votes spread over the month
        target = names[v % 5]
        for s in sorted(rng.uniform(0, month_s, int(rng.integers(25, 61)))):
            other = names[int(rng.choice([i for i in range(len(names)) if names[i] != target]))]
            a, b = (target, other) if rng.random() < 0.5 else (other, target)
            arena.vote(
                f"booster-{v}",
                MONTH_START + timedelta(seconds=float(s)),
                a,
                b,
                "leftvote" if a == target else "rightvote",
                abusive=True,
                kind="always_for",
            )
    for v in range(4):  # 40 random votes within ~8 minutes
        start = rng.uniform(0, month_s - 3600)
        for s in start + np.cumsum(rng.uniform(5, 15, 40)):
            a, b = pair()
            arena.vote(
                f"burst-{v}",
                MONTH_START + timedelta(seconds=float(s)),
                a,
                b,
                str(rng.choice(["leftvote", "rightvote"])),
                abusive=True,
                kind="burst",
            )
    return arena


@pytest.fixture(scope="module")
def month() -> tuple[Arena, object]:
    arena = synthetic_month()
    raw, conv = arena.frames()
    return arena, build_battles(raw, conv, BattleConfig(seed=3))


def test_every_vote_is_one_row_with_mapped_winner(month) -> None:
    arena, result = month
    raw, _ = arena.frames()
    battles = result.battles
    assert battles.height == raw.height
    assert battles["battle_id"].n_unique() == raw.height
    expected = dict(zip(raw["event_id"], raw["type"].replace_strict(WINNER_OF_VOTE)))
    assert dict(zip(battles["battle_id"], battles["winner"])) == expected
    assert set(battles["winner"]) <= {"model_a", "model_b", "tie", "tie (bothbad)"}
    assert (battles["turn"] == 1).all() and (battles["language"] == "en").all()
    removed = sum(result.removed_by_reason.values())
    assert removed == battles.height - result.metadata["kept"] == (~battles["keep"]).sum()


def test_abuse_filter_meets_detection_targets(month) -> None:
    arena, result = month
    truth = pl.DataFrame(
        arena.truth, schema={"battle_id": pl.String, "abusive": pl.Boolean, "abuse_kind": pl.String}
    )
    judged = result.battles.join(truth, on="battle_id")
    abuse_rules = pl.col("anomalous_voter") | pl.col("vote_burst") | pl.col("daily_cap")
    rates = judged.group_by("abusive").agg(abuse_rules.mean().alias("removed"))
    rate = dict(zip(rates["abusive"], rates["removed"]))
    assert rate[True] >= 0.90, rate
    assert rate[False] <= 0.01, rate
    # heavy honest voters (100+ votes) are not flagged as anomalous
    heavy = result.voters.filter(pl.col("voter_hash").str.starts_with("heavy-"))
    assert heavy.height == 12 and not heavy["anomalous"].any()
    boosters = result.voters.filter(pl.col("voter_hash").str.starts_with("booster-"))
    assert boosters["anomaly_alternative"].str.starts_with("for:").sum() >= 6


def test_deterministic(month) -> None:
    arena, result = month
    raw, conv = arena.frames()
    again = build_battles(
        raw.sample(fraction=1.0, shuffle=True, seed=1), conv, BattleConfig(seed=3)
    )
    assert again.battles.equals(result.battles)
    assert again.removed_by_reason == result.removed_by_reason


def test_crowd_table_is_accepted(month) -> None:
    arena, result = month
    raw, conv = arena.frames()
    crowd = result.kept.group_by("model_a", "model_b", "winner").agg(pl.len().alias("n"))
    with_crowd = build_battles(raw, conv, BattleConfig(seed=3), crowd=crowd)
    flagged = set(with_crowd.voters.filter("anomalous")["voter_hash"])
    assert {f"booster-{v}" for v in range(8)} <= flagged
    assert not any(v.startswith(("light-", "heavy-")) for v in flagged)


def test_style_features_skip_code_blocks() -> None:
    text = (
        "# Title\n## Part\nSome **bold** and __more__.\n"
        "```bash\n# not a header\n- not an item\n**not bold**\n```\n"
        "1. first\n2. second\n- dash\n* star\n###### deep\n#no space\n"
    )
    f = style_features(
        [{"role": "user", "content": "# user header"}, {"role": "assistant", "content": text}]
    )
    assert f["header_count"] == 3
    assert (f["ordered_list_count"], f["unordered_list_count"], f["list_count"]) == (2, 2, 4)
    assert f["bold_count"] == 2
    unclosed = style_features(
        [
            {"role": "assistant", "content": "## a\n```\n## hidden"},
            {"role": "assistant", "content": "## b"},
        ]
    )
    assert unclosed["header_count"] == 2
    assert style_features([{"role": "assistant", "content": ""}])["sum_assistant_tokens"] == 0


def test_style_matches_published_arena_hard_metadata(real_data) -> None:
    rows = []
    for path in sorted((real_data / "arena_hard_v0.1" / "model_answer").glob("*.jsonl")):
        for line in path.read_text().splitlines()[:150]:
            rec = json.loads(line)
            meta = rec["conv_metadata"]
            feats = style_features(
                [{"role": "assistant", "content": rec["choices"][0]["turns"][0]["content"]}]
            )
            rows.append(
                (
                    feats["header_count"] == sum(meta["header_count"].values()),
                    feats["list_count"] == sum(meta["list_count"].values()),
                    feats["bold_count"] == sum(meta["bold_count"].values()),
                )
            )
    agree = np.array(rows).mean(axis=0)
    assert len(rows) >= 300 and (agree >= 0.98).all(), agree


def _small(*specs: dict) -> tuple[pl.DataFrame, pl.DataFrame]:
    arena = Arena()
    for i, spec in enumerate(specs):
        spec = dict(spec)
        t = spec.pop("t", MONTH_START + timedelta(hours=i))
        arena.vote(
            spec.pop("voter", f"v{i}"),
            t,
            spec.pop("a", "model-a"),
            spec.pop("b", "model-b"),
            spec.pop("type", "leftvote"),
            **spec,
        )
    return arena.frames()


def test_identity_leak_uses_word_boundaries() -> None:
    raw, conv = _small(
        {"a": "claude-x", "answer_a": "I am Claude, made to help."},
        {"a": "claude-x", "answer_a": "Claudette is a name."},
        {"answer_b": "As MODEL-C I think..."},  # naming another model leaks too
        {"answer_a": "A plain answer."},
    )
    b = build_battles(raw, conv, BattleConfig()).battles
    assert b["identity_leak"].to_list() == [True, False, True, False]
    assert b["leaked_names_a"][0].to_list() == ["claude"]
    assert b["removed_reason"].to_list() == ["identity_leak", None, "identity_leak", None]
    custom = BattleConfig(derive_identity_names=False, identity_names={"claude-x": ["claudette"]})
    assert build_battles(raw, conv, custom).battles["identity_leak"].to_list() == [
        False,
        True,
        False,
        False,
    ]


def test_alias_depends_on_date() -> None:
    switch = MONTH_START + timedelta(days=10)  # 2024-05-11
    raw, conv = _small(
        {"a": "gpt-4-turbo", "t": switch - timedelta(days=1)},
        {"a": "gpt-4-turbo", "t": switch + timedelta(days=1)},
        {"b": "gpt-4-turbo", "t": switch + timedelta(days=2)},
        {"a": "gpt-4-turbo", "t": switch + timedelta(hours=3)},  # both windows hold this day
    )
    rules = (
        AliasRule("gpt-4-turbo", "gpt-4-turbo-2024-04-09", switch.date(), None),
        ("gpt-4-turbo", "gpt-4-1106-preview", None, "2024-05-11"),
    )
    result = build_battles(raw, conv, BattleConfig(aliases=rules))
    b = result.battles.sort("tstamp")
    new, old = "gpt-4-turbo-2024-04-09", "gpt-4-1106-preview"
    assert b["model_a"].to_list() == [old, new, new, "model-a"]
    assert b["model_b"].to_list() == ["model-b", "model-b", "model-b", new]
    assert b["model_a_raw"].to_list()[0] == "gpt-4-turbo"
    assert result.metadata["alias_applied"] == 4
    # where windows overlap, the first listed rule wins
    flipped = build_battles(raw, conv, BattleConfig(aliases=rules[::-1])).battles.sort("tstamp")
    assert flipped["model_a"].to_list() == [old, old, new, "model-a"]


def test_dedup_keeps_seeded_sample_of_popular_prompt_only() -> None:
    specs = [{"prompt": "hi", "voter": f"h{i}"} for i in range(30)]
    specs += [{"prompt": f"unique {i}", "voter": f"u{i}"} for i in range(200)]
    specs += [{"prompt": "twice", "voter": f"t{i}"} for i in range(2)]
    raw, conv = _small(*specs)
    cfg = BattleConfig(dedup_percentile=99.0, dedup_min_threshold=2, seed=11)
    result = build_battles(raw, conv, cfg)
    b = result.battles
    threshold = result.metadata["dedup_threshold"]
    assert threshold == 2
    hi = b.filter(pl.col("dedup_key") == "k:hi")
    assert hi["keep"].sum() == threshold and hi["dedup_sampled_out"].sum() == 30 - threshold
    assert not b.filter(pl.col("dedup_key") != "k:hi")["dedup_sampled_out"].any()
    assert result.removed_by_reason["dedup_sampled_out"] == 30 - threshold
    kept = lambda r: set(
        r.battles.filter(pl.col("dedup_key") == "k:hi").filter("keep")["battle_id"]
    )
    assert kept(build_battles(raw, conv, cfg)) == kept(result)
    other_seeds = {
        frozenset(
            kept(
                build_battles(
                    raw, conv, BattleConfig(dedup_percentile=99.0, dedup_min_threshold=2, seed=s)
                )
            )
        )
        for s in range(5)
    }
    assert len(other_seeds) > 1


def test_daily_cap_and_reason_order() -> None:
    day = MONTH_START + timedelta(days=3)
    specs = [{"voter": "eager", "t": day + timedelta(minutes=7 * i)} for i in range(8)]
    specs += [{"voter": "eager", "t": day + timedelta(days=1)}]
    specs += [{"voter": "shown", "anony": False}]
    raw, conv = _small(*specs)
    cfg = BattleConfig(daily_vote_cap=5, anomaly=AnomalyConfig(burst_min_votes=100))
    result = build_battles(raw, conv, cfg)
    b = result.battles.sort("tstamp")
    eager = b.filter(pl.col("voter_hash") == "eager")
    assert eager["daily_cap"].to_list() == [False] * 5 + [True] * 3 + [False]
    assert result.removed_by_reason["daily_cap"] == 3
    assert result.removed_by_reason["not_anonymous"] == 1
    assert result.flag_totals["not_anonymous"] == 1
    assert b.filter(pl.col("voter_hash") == "shown")["flag_reasons"].to_list() == [
        ["not_anonymous"]
    ]


@pytest.mark.slow
def test_simulated_month_against_truth(tmp_path) -> None:
    """Simulator -> ingest -> clean -> battles, scored on the planted abusive votes."""
    from arena_assets.clean import build_conversations
    from arena_assets.ingest import parse_month
    from arena_assets.simulator import api as sim
    from arena_assets.simulator.truth import load_truth

    month_name = "2024-03"
    sim.simulate_months(tmp_path, [month_name], 30_000, seed=1)
    registry = json.loads((tmp_path / "models.json").read_text())
    models = {m["name"] for m in registry}
    parsed = parse_month(str(tmp_path), month_name, salt="s", known_models=models)
    conv = build_conversations(parsed.raw_logs, month=month_name)
    orgs = tuple(sorted({m["organization"] for m in registry if m.get("organization")}))
    config = BattleConfig(known_models=tuple(sorted(models)), extra_identity_words=orgs)
    result = build_battles(parsed.raw_logs, conv, config)
    truth = load_truth(tmp_path)
    judged = result.battles.join(
        truth["votes"].select("event_id", "abusive"),
        left_on="battle_id",
        right_on="event_id",
        how="left",
    )
    assert judged["abusive"].null_count() == 0
    abuse_rules = pl.col("anomalous_voter") | pl.col("vote_burst") | pl.col("daily_cap")
    rate = dict(judged.group_by("abusive").agg(abuse_rules.mean()).rows())
    assert rate[True] >= 0.90 and rate[False] <= 0.01, rate
    # planted identity statements are found: a battle leaks when either side's conversation
    # carries a self-mention in the truth
    mention = truth["conversations"].filter("self_mention")["conv_id"].implode()
    planted = pl.col("conv_id_a").is_in(mention) | pl.col("conv_id_b").is_in(mention)
    leak = result.battles.select(planted.alias("planted"), pl.col("identity_leak"))
    recall = leak.filter("planted")["identity_leak"].mean()
    false_alarm = leak.filter(~pl.col("planted"))["identity_leak"].mean()
    assert recall >= 0.95 and false_alarm <= 0.01, (recall, false_alarm)


def test_empty_month_gives_empty_table_with_all_columns() -> None:
    result = build_battles(
        pl.DataFrame(schema=RAW_LOGS_SCHEMA), pl.DataFrame(schema=CONVERSATIONS_SCHEMA)
    )
    assert result.battles.height == 0
    for side in ("a", "b"):
        assert f"sum_assistant_tokens_{side}" in result.battles.columns
    assert set(result.removed_by_reason.values()) == {0}
    assert result.battles.columns[-5:] == [
        "flag_reasons",
        "removed_reason",
        "keep",
        "weight",
        "weight_reason",
    ]
    assert result.battles.schema["weight"] == pl.Float64
    assert result.battles.schema["weight_reason"] == pl.String
