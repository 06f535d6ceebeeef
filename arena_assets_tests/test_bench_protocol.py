"""The judgments step by protocol, through the real `openai` client against the simulated
arena (which reads the project's own wording, so the protocols of v0.1's and v2's rules in
that wording): v0.1's rules continue a conversation whose reply had no label, v2's do not;
token caps are the anchor's and their hits are counted; v2 judges each question category
against its own baseline; an empty baseline setting is an error that says what to set."""

from __future__ import annotations

import polars as pl
import pytest

from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA
from arena_assets.errors import SettingError
from arena_assets.judging.protocol import (
    FOLLOW_UP,
    OWN,
    OWN_PROTOCOLS,
    OWN_V2,
    PROTOCOLS,
    get_protocol,
    parse_baselines,
)
from arena_assets.llm import LLMTask
from arena_assets.pipeline.bench import (
    bench_leaderboard_month,
    judgments_month,
    model_answers_month,
)
from arena_assets.simulator import start_endpoint
from arena_assets.simulator.endpoint import Faults
from arena_assets.storage import Lake

MONTH = "2024-03"
MODELS = ("kelp-34b-pro", "atlas-8b-preview", "xenon-70b-chat")


@pytest.fixture(scope="module")
def endpoint():
    ep = start_endpoint(seed=7)
    yield ep
    ep.stop()


def bench_frame(lake: Lake, n: int = 12) -> None:
    cats = ["creative_writing" if i % 3 == 0 else "coding" for i in range(n)]
    rows = [
        {
            "bench_version": "t",
            "bench_kind": "text",
            "prompt_id": f"q{i:02d}",
            "prompt": f"Question {i}: write a short {'poem about rivers' if c == 'creative_writing' else 'python function that sorts a list'}.",
            "language": "en",
            "category": c,
            "cluster_id": i,
            "cluster_mean_quality": 6.0,
            "quality": 7,
            "text_hash": f"h{i}",
            **dict.fromkeys(CRITERIA, True),
        }
        for i, c in enumerate(cats)
    ]
    lake.write(
        "bench_prompts",
        MONTH,
        pl.DataFrame(rows).select([pl.col(c).cast(t) for c, t in BENCH_PROMPTS.items()]),
    )


def sim_task(ep, model: str, **kw) -> LLMTask:
    return LLMTask(
        model=model, base_url=ep.base_url, api_key="sim", max_concurrency=4, max_retries=1, **kw
    )


def answers_frame(lake, ep, tmp_path, **kw):
    return model_answers_month(
        lake, MONTH, [(m, sim_task(ep, m, **kw)) for m in MODELS], cache_root=str(tmp_path / "c")
    )


def test_v01_continues_a_reply_without_label_once_and_v2_does_not(endpoint, tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    bench_frame(lake)
    answers_frame(lake, endpoint, tmp_path, max_tokens=4096)
    judge = [("sim-judge", sim_task(endpoint, "sim-judge", max_tokens=4096))]
    games = 12 * 2 * 2
    steps = {}
    for name in OWN_PROTOCOLS:
        endpoint.set_faults(Faults(rate_garbage=0.3, seed=4))  # replies without a label
        endpoint.reset_counts()
        try:
            steps[name] = judgments_month(
                lake,
                MONTH,
                judge,
                "atlas-8b-preview",
                cache_root=str(tmp_path / name),
                protocol=name,
            )
        finally:
            endpoint.set_faults(Faults())
        steps[name].calls = endpoint.call_count(route="chat/completions")
    v01, v2 = steps[OWN], steps[OWN_V2]
    continued = v01.judgments.filter(pl.col("attempts") == 2)
    assert v01.judgments.height == v2.judgments.height == games
    assert continued.height > 0 and v01.calls == games + continued.height
    assert v2.calls == games and set(v2.judgments["attempts"]) == {1}
    # the continued games mostly got their label from the follow-up (garbage 30 % again)
    assert continued["parsed"].mean() > 0.5
    assert (
        continued.filter("parsed")["judgment"].str.contains("Final verdict: [[", literal=True).all()
    )
    assert v01.judgments["parsed"].sum() > v2.judgments["parsed"].sum()
    assert v01.attempts() == {"1": games - continued.height, "2": continued.height}


def test_follow_up_is_the_same_conversation(endpoint) -> None:
    """What the judge receives on the second attempt: its system prompt, the games's user
    turn, its own reply, then the follow-up (checked on the simulated judge's answer)."""
    import openai

    from arena_assets.judging.verdicts import pairwise_messages

    client = openai.OpenAI(base_url=endpoint.base_url, api_key="sim", max_retries=0)
    msgs = pairwise_messages("Sort a list?", "Use sorted().", "Use a loop.")
    first = (
        client.chat.completions.create(model="sim-judge", messages=msgs).choices[0].message.content
    )
    label = get_protocol(OWN).parse(first)[0]
    again = client.chat.completions.create(
        model="sim-judge",
        messages=[
            *msgs,
            {"role": "assistant", "content": "I was cut off"},
            {"role": "user", "content": FOLLOW_UP},
        ],
    )
    assert again.choices[0].message.content == f"Final verdict: [[{label}]]"


def test_token_caps_are_counted(endpoint, tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    bench_frame(lake, 6)
    answers = answers_frame(lake, endpoint, tmp_path, max_tokens=8)
    assert set(answers.cap_hits().values()) == {1.0}  # every answer cut at 8 tokens
    assert answers.answers["hit_token_cap"].all()
    roomy = answers_frame(lake, endpoint, tmp_path, max_tokens=4096)
    assert set(roomy.cap_hits().values()) == {0.0}
    tight = judgments_month(
        lake,
        MONTH,
        [("sim-judge", sim_task(endpoint, "sim-judge", max_tokens=20))],
        "atlas-8b-preview",
        cache_root=str(tmp_path / "j"),
    )
    # every first reply was cut before its label, the follow-up's short answer fits
    assert tight.cap_hits() == {"sim-judge": 1.0} and set(tight.judgments["attempts"]) == {2}
    assert tight.judgments["parsed"].all()
    assert (
        PROTOCOLS["arena-hard-v0.1"].judge_max_tokens == PROTOCOLS[OWN].judge_max_tokens == 4096
        and PROTOCOLS["arena-hard-v2"].judge_max_tokens
        == PROTOCOLS[OWN_V2].judge_max_tokens
        == 16000
    )


def test_v2_judges_each_category_against_its_baseline(endpoint, tmp_path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    bench_frame(lake)
    answers_frame(lake, endpoint, tmp_path, max_tokens=4096)
    bases = parse_baselines(
        "hard_prompt=atlas-8b-preview,creative_writing=kelp-34b-pro",
        get_protocol(OWN_V2),
        list(MODELS),
    )
    step = judgments_month(
        lake,
        MONTH,
        [("sim-judge", sim_task(endpoint, "sim-judge", max_tokens=16000))],
        bases,
        cache_root=str(tmp_path / "j"),
        protocol=OWN_V2,
    )
    per = step.judgments.group_by("category").agg(pl.col("baseline").unique()).sort("category")
    assert per.rows() == [
        ("creative_writing", ["kelp-34b-pro"]),
        ("hard_prompt", ["atlas-8b-preview"]),
    ]
    board = bench_leaderboard_month(lake, MONTH, protocol=OWN_V2, rounds=20).board
    blocks = {c: set(b["model"]) for (c,), b in board.group_by("category")}
    assert blocks == {"creative_writing": set(MODELS), "hard_prompt": set(MODELS)}
    base_rows = board.filter(pl.col("model") == pl.col("baseline"))
    assert base_rows.select("category", "baseline").sort("category").rows() == [
        ("creative_writing", "kelp-34b-pro"),
        ("hard_prompt", "atlas-8b-preview"),
    ]
    assert (board["level"] == 0.9).all() and (board["protocol"] == OWN_V2).all()


def test_baseline_setting_errors_say_what_to_set() -> None:
    v01, v2 = get_protocol("arena-hard-v0.1"), get_protocol("arena-hard-v2")
    with pytest.raises(
        ValueError, match=r"ARENA_BENCH_BASELINE is empty: set it to .*candidates: \['a', 'b'\]"
    ):
        parse_baselines("", v01, ["a", "b"])
    with pytest.raises(ValueError, match="hard_prompt=M1,creative_writing=M2"):
        parse_baselines(" ", v2, ["a", "b"])
    with pytest.raises(ValueError, match="not among the candidates"):
        parse_baselines("c", v01, ["a", "b"])
    with pytest.raises(ValueError, match="not <category>=<model>"):
        parse_baselines("coding=a", v2, ["a", "b"])
    assert parse_baselines("a", v2, ["a", "b"]) == {"hard_prompt": "a", "creative_writing": "a"}
    assert parse_baselines("creative_writing=b,hard_prompt=a", v2, ["a", "b"]) == {
        "hard_prompt": "a",
        "creative_writing": "b",
    }
    with pytest.raises(ValueError, match="ARENA_BENCH_PROTOCOL='v3' is not a protocol"):
        get_protocol("v3")
    # a per-category setting names every category: none is filled in silently
    with pytest.raises(
        ValueError, match=r"no baseline for creative_writing: .*creative_writing=<model>"
    ):
        parse_baselines("hard_prompt=a", v2, ["a", "b"])


def test_judgments_record_their_protocol_and_the_board_refuses_another(endpoint, tmp_path) -> None:
    from arena_assets.release import bench_release_from_lake

    lake = Lake(str(tmp_path / "lake"))
    bench_frame(lake, 4)
    answers_frame(lake, endpoint, tmp_path, max_tokens=4096)
    judge = [("sim-judge", sim_task(endpoint, "sim-judge", max_tokens=4096))]
    judgments_month(
        lake,
        MONTH,
        judge,
        "atlas-8b-preview",
        cache_root=str(tmp_path / "j"),
        protocol=OWN,
    )
    stored = lake.read("judgments", MONTH)
    assert stored["protocol"].unique().to_list() == [OWN]
    with pytest.raises(
        ValueError,
        match=rf"judgments of 2024-03 were played by {OWN}, "
        r"ARENA_BENCH_PROTOCOL is arena-hard-v0.1: .*",
    ):  # the same rules in other words: not the anchor's numbers
        bench_leaderboard_month(lake, MONTH, protocol="arena-hard-v0.1", rounds=5)
    assert bench_leaderboard_month(lake, MONTH, protocol=OWN, rounds=5).board.height == 3
    assert bench_release_from_lake(lake, MONTH).protocol == OWN
    # a v2 month whose categories would not tell (one question category): the column does
    v2 = stored.with_columns(protocol=pl.lit(OWN_V2), category=pl.lit("hard_prompt"))
    lake.write("judgments", MONTH, v2.with_columns(category=pl.lit(None, pl.String)))
    assert bench_release_from_lake(lake, MONTH).protocol == OWN_V2
    # judged before the texts' hash was kept: the project's wording, whatever rules it names
    legacy = stored.drop("prompt_sha256").with_columns(protocol=pl.lit("arena-hard-v0.1"))
    lake.write("judgments", MONTH, legacy)
    assert bench_release_from_lake(lake, MONTH).protocol == OWN


def test_every_bench_setting_comes_from_its_variable(arena_env, monkeypatch) -> None:
    """The bench's caps, thresholds, seed and cap-hit limit are bound to ARENA_BENCH_*
    variables (floats as strings: Dagster has no float EnvVar); empty means the default."""
    from arena_assets.definitions import defs as load_defs

    values = {
        "ARENA_BENCH_JUDGE_MAX_TOKENS": "1234",
        "ARENA_BENCH_ANSWER_MAX_TOKENS": "2345",
        "ARENA_BENCH_MAX_CAP_HIT_SHARE": "0.02",
        "ARENA_BENCH_BOOTSTRAP_SEED": "5",
        "ARENA_BENCH_MIN_CLUSTER_MEAN": "2.5",
        "ARENA_BENCH_STRONG_MIN_QUALITY": "7",
        "ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN": "6.5",
        "ARENA_BENCH_PER_CLUSTER": "4",
    }
    assert set(values) <= set(arena_env)  # the tests' environment lists them
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    s = load_defs().resources["bench_settings"].process_config_and_initialize()
    assert (s.judge_max_tokens, s.answer_max_tokens, s.bootstrap_seed) == (1234, 2345, 5)
    assert s.cap_hit_limit() == 0.02
    o = s.bench_options()
    assert (o.min_cluster_mean, o.strong_min_quality, o.strong_min_cluster_mean, o.per_cluster) == (
        2.5,
        7,
        6.5,
        4,
    )
    monkeypatch.setenv("ARENA_BENCH_MAX_CAP_HIT_SHARE", "")
    monkeypatch.setenv("ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN", "")
    s = load_defs().resources["bench_settings"].process_config_and_initialize()
    assert s.cap_hit_limit() == 0.01 and s.bench_options().strong_min_cluster_mean == 6.0
    for name, bad in (
        ("ARENA_BENCH_MIN_CLUSTER_MEAN", "three"),
        ("ARENA_BENCH_PER_CLUSTER", "0"),
        ("ARENA_BENCH_MIN_QUALITY", "9"),
    ):
        with monkeypatch.context() as m:
            m.setenv(name, bad)
            with pytest.raises(SettingError, match=f"{name}='{bad}' is not allowed"):
                load_defs()  # refused when the code location loads, before any run
