"""The evaluators' metrics against independent implementations of the anchors' formulas
(PPE's accuracy with ties left out, Cohen's kappa, FastChat's compute_agreement.py with and
without ties), written here from their documented math, plus the sampling, the two-game
rule, row-wise Pearson and Wilson intervals; and the baselines on the real battles."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from arena_assets.evaluators.agreement import (
    AgreementOptions,
    board_metrics,
    cluster_bootstrap,
    cohen_kappa,
    mtbench_agreement,
    row_wise_pearson,
    slice_metrics,
)
from arena_assets.evaluators.judges import baseline_verdicts, combine, parse_judges
from arena_assets.evaluators.refusal import (
    TOXIC_RULE,
    classify,
    over_refusal_board,
    refusal_rates,
    wilson,
)
from arena_assets.evaluators.sample import allocate, judged_battles, stratified_sample, tag_labels
from arena_assets.evaluators.transcripts import REPLY_BREAK, TURN_BREAK, first_answer, side_text

RNG = np.random.default_rng(3)


# ---- independent implementations of the anchors' formulas -----------------------------
def ppe_accuracy_reference(human: list[str], judge: list[str]) -> float:
    """PPE's documented accuracy: over the human-decided pairs, the share where the judge
    selected the human-preferred response (a judge tie selects neither: not a match)."""
    pairs = [(h, j) for h, j in zip(human, judge) if h in ("model_a", "model_b")]
    return sum(j == h for h, j in pairs) / len(pairs)


def fastchat_two_game_reference(g1: str | None, g2: str | None) -> str | None:
    """FastChat llm_judge: game 1 is judged with model_1 as A, game 2 with the order
    swapped and its winner mapped back (common.play_a_match_pair); the judgment's winner is
    g1 when g1 == g2, else "inconsistent" (load_pairwise_model_judgments), which
    show_result.py counts as a tie; an unparsed game's winner is "error"."""

    def winner(verdict: str | None, swapped: bool) -> str:
        if verdict is None:
            return "error"
        if "=" in verdict:
            return "tie"
        first = verdict.startswith("A")  # [[A]]: the answer shown first
        return "model_1" if first != swapped else "model_2"

    w1, w2 = winner(g1, False), winner(g2, True)
    if w1 == w2 == "error":
        return None
    w = w1 if w1 == w2 else "inconsistent"
    return {"model_1": "model_a", "model_2": "model_b"}.get(w, "tie")


def fastchat_agreement_reference(
    human: list[str], judge: list[str], ban: list[str]
) -> tuple[int, int]:
    """FastChat's get_mt_bench_agreement for one judge vote per key: ties ("tie" in the
    vote) are equal to each other, banned vote classes are skipped."""

    def convert(v: str) -> str:
        return "tie" if "tie" in v else v

    agree = total = 0
    for h, j in zip(human, judge):
        if convert(j) in ban or convert(h) in ban:
            continue
        total += 1
        agree += ("tie" in h and "tie" in j) or h == j
    return agree, total


def kappa_reference(x: list[str], y: list[str]) -> float:
    labels = sorted(set(x) | set(y))
    n = len(x)
    po = sum(a == b for a, b in zip(x, y)) / n
    pe = sum((x.count(lab) / n) * (y.count(lab) / n) for lab in labels)
    return (po - pe) / (1 - pe)


# ---- helpers --------------------------------------------------------------------------
WINNERS = ["model_a", "model_b", "tie", "tie (bothbad)"]
SIDE = {"model_a": "a", "model_b": "b", "tie": "tie", "tie (bothbad)": "tie"}


def verdict_frame(n: int = 400) -> pl.DataFrame:
    human = RNG.choice(WINNERS, n, p=[0.4, 0.35, 0.15, 0.1])
    pick = np.where(
        RNG.random(n) < 0.65,
        [SIDE[h] if SIDE[h] != "tie" else "a" for h in human],
        RNG.choice(["a", "b", "tie"], n),
    )
    return pl.DataFrame(
        {
            "battle_id": [f"b{i}" for i in range(n)],
            "winner": human,
            "pick": pick,
            "dedup_key": [f"p{i // 3}" for i in range(n)],
            "tokens_a": RNG.integers(10, 500, n),
            "tokens_b": RNG.integers(10, 500, n),
            "game1": [None] * n,
            "game2": [None] * n,
            "model_a": RNG.choice(["m1", "m2", "m3", "m4", "m5"], n),
            "model_b": ["m0"] * n,
        },
        schema_overrides={"game1": pl.String, "game2": pl.String},
    )


def test_ppe_accuracy_and_mtbench_agreement_match_the_references() -> None:
    frame = verdict_frame()
    m = slice_metrics(frame, AgreementOptions(rounds=50))
    picks = {"a": "model_a", "b": "model_b", "tie": "tie"}
    judge = [picks[p] for p in frame["pick"]]
    human = frame["winner"].to_list()
    assert m["accuracy"] == pytest.approx(ppe_accuracy_reference(human, judge))
    decided = [(h, j) for h, j in zip(human, judge) if h in ("model_a", "model_b")]
    assert m["accuracy_tie_half"] == pytest.approx(
        sum(1.0 if j == h else 0.5 if j == "tie" else 0.0 for h, j in decided) / len(decided)
    )
    assert m["decisive_votes"] == sum(h in ("model_a", "model_b") for h in human)
    agree, total = fastchat_agreement_reference(human, judge, ban=[])
    assert m["agreement_with_ties"] == pytest.approx(agree / total)
    agree, total = fastchat_agreement_reference(human, judge, ban=["tie"])
    assert (
        m["agreement_without_ties"] == pytest.approx(agree / total)
        and m["pairs_without_ties"] == total
    )
    assert m["accuracy_lower"] < m["accuracy"] < m["accuracy_upper"]


def test_mtbench_agreement_follows_fastchats_two_game_rule() -> None:
    """A two-game LLM judge: PPE's accuracy uses the strength rule (judges.combine), the
    MT-Bench agreement FastChat's (both orders agree, else a tie), checked against the
    reference above; the two rules differ on these battles, so the test can tell them apart."""
    labels = ["A>>B", "A>B", "A=B", "B>A", "B>>A"]
    n = 600
    g1 = [None if RNG.random() < 0.05 else str(RNG.choice(labels)) for _ in range(n)]
    g2 = [None if RNG.random() < 0.05 else str(RNG.choice(labels)) for _ in range(n)]
    pick = [combine(a, b)[0] for a, b in zip(g1, g2)]
    human = RNG.choice(WINNERS, n, p=[0.4, 0.35, 0.15, 0.1]).tolist()
    frame = pl.DataFrame(
        {
            "battle_id": [f"b{i}" for i in range(n)],
            "winner": human,
            "pick": pick,
            "game1": g1,
            "game2": g2,
            "dedup_key": [f"p{i}" for i in range(n)],
            "tokens_a": [1] * n,
            "tokens_b": [2] * n,
        },
        schema_overrides={"game1": pl.String, "game2": pl.String, "pick": pl.String},
    )
    m = slice_metrics(frame, AgreementOptions(rounds=10))
    kept = [i for i in range(n) if pick[i] is not None]
    two_game = [fastchat_two_game_reference(g1[i], g2[i]) for i in kept]
    assert None not in two_game  # a verdict exactly where the strength rule has one
    hum = [human[i] for i in kept]
    for ban, key in (([], "agreement_with_ties"), (["tie"], "agreement_without_ties")):
        agree, total = fastchat_agreement_reference(hum, two_game, ban=ban)
        assert m[key] == pytest.approx(agree / total), key
    strength = [{"a": "model_a", "b": "model_b"}.get(pick[i], "tie") for i in kept]
    assert fastchat_agreement_reference(hum, strength, ban=[]) != fastchat_agreement_reference(
        hum, two_game, ban=[]
    )
    assert m["accuracy"] == pytest.approx(ppe_accuracy_reference(hum, strength))


def test_kappa_matches_the_reference_and_sklearn() -> None:
    from sklearn.metrics import cohen_kappa_score

    for _ in range(5):
        x = RNG.choice(["a", "b", "tie"], 300).tolist()
        y = [v if RNG.random() < 0.6 else str(RNG.choice(["a", "b", "tie"])) for v in x]
        assert cohen_kappa(x, y) == pytest.approx(kappa_reference(x, y))
        assert cohen_kappa(x, y) == pytest.approx(cohen_kappa_score(x, y))
    only_ties = mtbench_agreement(["a", "tie"], ["tie", "tie"])
    assert only_ties["agreement_with_ties"] == 0.5 and only_ties["pairs_without_ties"] == 0
    assert math.isnan(only_ties["agreement_without_ties"])


def test_two_games_combine_by_strength_and_flag_flips() -> None:
    assert combine("A>B", "B>A") == ("a", False)  # game 2 showed b as A: both say a
    assert combine("A>B", "A>B") == ("tie", True)  # position bias: each picks A
    assert combine("A>>B", "A>B") == ("a", True)  # a strong win outweighs a weak loss
    assert combine("A=B", "A=B") == ("tie", False)
    assert combine("A=B", "B>A") == ("a", True)  # tie vs win counts as a flip
    assert combine(None, "A>>B") == ("b", None)  # one game unparsed: the other alone
    assert combine(None, None) == (None, None)


def test_cluster_bootstrap_draws_whole_clusters() -> None:
    values = np.array([1.0, 1.0, 1.0, 0.0])
    lo, hi = cluster_bootstrap(
        values, np.array(["x", "x", "x", "y"]), rounds=400, level=0.95, seed=1
    )
    # two clusters: every draw's mean is 1, 0 or 3/4 (x once, y once), never 1/2 or 1/4
    assert (lo, hi) == (0.0, 1.0)
    assert cluster_bootstrap(
        values, np.array(["x", "x", "x", "y"]), rounds=400, level=0.95, seed=1
    ) == (lo, hi)
    one = cluster_bootstrap(
        np.array([0.2, 0.8]), np.array(["c", "c"]), rounds=50, level=0.9, seed=0
    )
    assert one == pytest.approx((0.5, 0.5))


def test_row_wise_pearson_by_hand() -> None:
    # m0 meets m1..m3; human scores 1, 0, 1 and the judge 1, 0, 0 against them
    frame = pl.DataFrame(
        {
            "model_a": ["m0", "m0", "m0"],
            "model_b": ["m1", "m2", "m3"],
            "human": ["a", "b", "a"],
            "pick": ["a", "b", "b"],
        }
    )
    value, rows = row_wise_pearson(frame)
    assert rows == 1  # only m0 has 3 opponents
    assert value == pytest.approx(np.corrcoef([1, 0, 1], [1, 0, 0])[0, 1])


def test_judges_of_the_same_battles_share_one_human_board() -> None:
    """The human board of the battles a judge answered is fitted once for every judge that
    answered the same battles, and gives the figures a fit of its own gives."""
    rng = np.random.default_rng(5)
    models = ["m0", "m1", "m2", "m3", "m4"]
    pairs = [tuple(rng.choice(models, 2, replace=False)) for _ in range(300)]
    strength = {m: i for i, m in enumerate(models)}
    human = ["a" if strength[a] + rng.normal(0, 1.5) > strength[b] else "b" for a, b in pairs]
    base = pl.DataFrame(
        {
            "battle_id": [f"b{i}" for i in range(300)],
            "model_a": [a for a, _ in pairs],
            "model_b": [b for _, b in pairs],
            "human": human,
        }
    )
    picks = {
        "echo": human,
        "contrary": ["b" if h == "a" else "a" for h in human],
        "shy": [None if i % 3 == 0 else h for i, h in enumerate(human)],
    }  # answered two thirds
    options = AgreementOptions(board_rounds=30)
    shared: dict = {}
    together = {
        j: board_metrics(base.with_columns(pick=pl.Series(p)), options, shared)
        for j, p in picks.items()
    }
    alone = {
        j: board_metrics(base.with_columns(pick=pl.Series(p)), options) for j, p in picks.items()
    }
    assert len(shared) == 2  # the whole sample, and the shy judge's two thirds
    assert together == alone
    assert together["echo"]["separability_human"] == together["contrary"]["separability_human"]
    assert (
        together["echo"]["spearman"] == pytest.approx(1.0) and together["contrary"]["spearman"] < 0
    )


def test_wilson_interval_reference_values() -> None:
    # Wilson (1927) by its formula, z = 1.959964
    z = 1.959963984540054
    for k, n in ((0, 10), (3, 10), (10, 10), (45, 300)):
        p = k / n
        c = (p + z * z / (2 * n)) / (1 + z * z / n)
        h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        lo, hi = wilson(k, n)
        assert lo == pytest.approx(max(0.0, c - h), abs=1e-12) and hi == pytest.approx(
            min(1.0, c + h), abs=1e-12
        )
        assert lo <= p <= hi
    assert all(math.isnan(v) for v in wilson(0, 0))


def test_allocation_and_sample_are_proportional_and_order_free() -> None:
    sizes = {"a|en": 500, "b|en": 300, "c|zh": 150, "d|ru": 50}
    drawn = allocate(sizes, 100)
    assert sum(drawn.values()) == 100 and drawn == {"a|en": 50, "b|en": 30, "c|zh": 15, "d|ru": 5}
    assert allocate({"x": 2, "y": 1000}, 10)["x"] >= 1  # every stratum at least once
    assert allocate(sizes, 10_000) == sizes
    frame = pl.DataFrame(
        {
            "battle_id": [f"b{i:04d}" for i in range(1000)],
            "category": RNG.choice(["coding", "math", "other"], 1000),
            "language": RNG.choice(["en", "zh"], 1000),
        }
    )
    one = stratified_sample(frame, 120, seed=5, month="2024-01")
    two = stratified_sample(
        frame.sample(fraction=1.0, shuffle=True, seed=2), 120, seed=5, month="2024-01"
    )
    assert one.height == 120 and one["battle_id"].to_list() == two["battle_id"].to_list()
    other = stratified_sample(frame, 120, seed=6, month="2024-01")
    assert one["battle_id"].to_list() != other["battle_id"].to_list()
    # each stratum's weight re-weights it to its share of the month
    assert one.group_by("stratum").agg(pl.col("weight").sum()).select(
        pl.col("weight").sum()
    ).item() == pytest.approx(1000, rel=0.05)


def test_transcripts_show_every_turn_and_the_first_answer_is_recoverable() -> None:
    msgs = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
        {"role": "assistant", "content": "A2"},
    ]
    question, answer = side_text(msgs)
    assert question == "Q1" and answer == f"A1{TURN_BREAK}Q2{REPLY_BREAK}A2"
    assert first_answer(answer) == "A1"


def test_judged_battles_category_from_labels_or_release_tags() -> None:
    from arena_assets.labels.tags import CRITERIA

    # LMArena's v0.1 tags: 6 of the 7 criteria make a hard prompt
    tag = json.dumps(
        {
            "criteria_v0.1": dict.fromkeys(CRITERIA[:6], True) | {CRITERIA[6]: False},
            "math_v0.1": {"math": True},
        }
    )
    battles = pl.DataFrame(
        {
            "battle_id": ["b1", "b2", "b3"],
            "month": ["2024-07"] * 3,
            "model_a": ["x"] * 3,
            "model_b": ["y"] * 3,
            "winner": ["model_a", "tie", "model_b"],
            "language": ["en"] * 3,
            "turn": [1, 1, 1],
            "conv_id_a": ["c1a", "c2a", "c3a"],
            "conv_id_b": ["c1b", "c2b", "c3b"],
            "dedup_key": ["k1", "k2", "k3"],
            "keep": [True, True, False],
            "category_tag": [None, tag, None],
            "release_tags": [None, None, None],
            **{
                f"{f}_{s}": [1, 2, 3]
                for f in ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
                for s in "ab"
            },
        }
    )
    msgs = [
        {"role": "user", "content": "hi", "images": []},
        {"role": "assistant", "content": "yo", "images": []},
    ]
    conv = pl.DataFrame(
        {"conv_id": ["c1a", "c1b", "c2a", "c2b", "c3a", "c3b"], "messages": [msgs] * 6}
    )
    labels = pl.DataFrame(
        {
            "conv_id": ["c1a"],
            "code": [True],
            "math": [False],
            "creative_writing": [False],
            "hard": [False],
            "is_vision": [False],
        }
    )
    out = judged_battles(battles, conv, labels)
    assert out["battle_id"].to_list() == ["b1", "b2"]  # b3 was removed by the battle filter
    assert out["category"].to_list() == ["coding", "math"] and out["hard"].to_list() == [
        False,
        True,
    ]
    assert tag_labels(None, json.dumps({"is_code": True}))["code"] is True


def test_sample_drawn_without_texts_is_the_sample_of_the_judged_battles() -> None:
    """The month step draws its sample from ids and labels alone and reads only the sampled
    conversations: the same rows, columns and texts as drawing from every judged battle."""
    from arena_assets.evaluators.sample import FLAGS, battle_population, with_texts

    rng = np.random.default_rng(4)
    n = 600
    battles = pl.DataFrame(
        {
            "battle_id": [f"b{i:04d}" for i in rng.permutation(n)],
            "month": ["2024-07"] * n,
            "model_a": ["x"] * n,
            "model_b": ["y"] * n,
            "winner": rng.choice(["model_a", "model_b", "tie"], n),
            "language": rng.choice(["en", "de", "ja"], n),
            "turn": [1] * n,
            "conv_id_a": [f"c{i}" for i in rng.integers(0, 400, n)],
            "conv_id_b": [f"c{i}" for i in rng.integers(0, 400, n)],
            "dedup_key": [("k1", "k2", None)[i] for i in rng.integers(0, 3, n)],
            "keep": rng.random(n) < 0.9,
            **{
                f"{f}_{s}": rng.integers(0, 9, n)
                for f in ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
                for s in "ab"
            },
        }
    )
    conv = pl.DataFrame(
        {
            "conv_id": [f"c{i}" for i in range(0, 400, 2)],
            "messages": [
                [
                    {"role": "user", "content": f"q{i}"},
                    {"role": "assistant", "content": f"a{i}" if i % 3 else None},
                ]
                for i in range(0, 400, 2)
            ],
        }
    )
    labels = pl.DataFrame(
        {
            "conv_id": [f"c{i}" for i in range(0, 400, 4)],
            **{f: rng.random(100) < 0.3 for f in FLAGS},
        }
    )
    everything = stratified_sample(
        judged_battles(battles, conv, labels), 50, seed=9, month="2024-07"
    )
    drawn = stratified_sample(
        battle_population(battles, conv.select("conv_id"), labels), 50, seed=9, month="2024-07"
    )
    wanted = set(drawn["conv_id_a"]) | set(drawn["conv_id_b"])
    assert len(wanted) < conv.height / 2 and everything.height == 50
    out = with_texts(drawn, conv.filter(pl.col("conv_id").is_in(list(wanted))))
    assert out.equals(everything)
    for (a, b), question, answer_a, answer_b in zip(
        drawn.select("conv_id_a", "conv_id_b").iter_rows(),
        out["question"],
        out["answer_a"],
        out["answer_b"],
    ):
        i, j = int(a[1:]), int(b[1:])
        assert (question, answer_a, answer_b) == (
            f"q{i}",
            f"a{i}" if i % 3 else "",
            f"a{j}" if j % 3 else "",
        )
    assert set(everything["category"]) >= {"unlabelled", "coding"}


def test_battle_category_rules_and_when_release_tags_stand_in() -> None:
    """Every combination of the four flags (true / false / unknown) gets the category of
    the module's rule, written out here: the first of coding, math, creative writing,
    vision that holds, else other, unlabelled when all four are unknown. A release's tag
    stands in only when every flag is unknown and the tag is not empty."""
    import itertools

    from arena_assets.evaluators.sample import FLAGS, battle_population
    from arena_assets.labels.tags import CRITERIA

    combos = list(itertools.product((True, False, None), repeat=4))
    n = len(combos) + 3
    tag = json.dumps({"criteria_v0.1": dict.fromkeys(CRITERIA, True), "math_v0.1": {"math": True}})
    battles = pl.DataFrame(
        {
            "battle_id": [f"b{i:03d}" for i in range(n)],
            "month": ["2024-07"] * n,
            "model_a": ["x"] * n,
            "model_b": ["y"] * n,
            "winner": ["tie"] * n,
            "language": ["en"] * n,
            "turn": [1] * n,
            "conv_id_a": [f"a{i}" for i in range(n)],
            "conv_id_b": [f"b{i}" for i in range(n)],
            "dedup_key": ["k"] * n,
            "keep": [True] * n,
            "category_tag": [tag] * len(combos) + [tag, "", tag],
            "release_tags": [None] * n,
            **{
                f"{f}_{s}": [1] * n
                for f in ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
                for s in "ab"
            },
        }
    )
    labels = pl.DataFrame(
        [
            {
                "conv_id": f"a{i}",
                "code": c,
                "math": m,
                "creative_writing": w,
                "hard": None,
                "is_vision": v,
            }
            for i, (c, m, w, v) in enumerate(combos)
        ]
        + [{"conv_id": f"a{len(combos)}", "hard": False}],
        schema={"conv_id": pl.String} | dict.fromkeys(FLAGS, pl.Boolean),
    )
    out = battle_population(
        battles, pl.DataFrame({"conv_id": [f"{s}{i}" for s in "ab" for i in range(n)]}), labels
    )
    names = ("coding", "math", "creative_writing", "vision")
    for (c, m, w, v), got in zip(combos, out["category"]):
        if (c, m, w, v) == (None, None, None, None):
            want = "math"  # every flag unknown: the release's tag (math) stands in
        else:
            want = next((name for flag, name in zip((c, m, w, v), names) if flag), "other")
        assert got == want, (c, m, w, v)
    # labels with only "hard" known: the tag does not stand in; an empty tag: unlabelled;
    # no labels at all: the tag (math, hard)
    assert out["category"].to_list()[-3:] == ["unlabelled", "unlabelled", "math"]
    assert out["hard"].to_list()[-3:] == [False, None, True]
    # one battle id twice (a re-ingested vote): each row keeps its own flags
    writing = combos.index((None, None, True, None))
    twice = battles[[writing, len(combos) + 2]].with_columns(battle_id=pl.lit("same"))
    again = battle_population(
        twice, pl.DataFrame({"conv_id": [f"{s}{i}" for s in "ab" for i in range(n)]}), labels
    )
    assert sorted(again["category"].to_list()) == ["creative_writing", "math"] and again.height == 2


def test_judge_list_errors_are_one_line() -> None:
    assert [s.kind for s in parse_judges("gpt-4o, reward:rm-8b ,longer,markdown")] == [
        "llm",
        "reward",
        "baseline",
        "baseline",
    ]
    for bad, says in (("", "no judges"), ("a,a", "twice"), ("reward:", "name the reward model")):
        with pytest.raises(ValueError, match=says):
            parse_judges(bad)


def test_over_refusal_classes_rates_and_board() -> None:
    conv = pl.DataFrame(
        {
            "conv_id": [f"c{i}" for i in range(8)],
            "model": ["careful"] * 4 + ["bold"] * 4,
            "dedup_key": ["s1", "s2", "t1", "o1"] * 2,
            "moderation_flagged": [None, None, True, False] * 2,
            "refused": [True, True, True, False, False, False, False, None],
        }
    )
    risk = pl.DataFrame(
        {
            "dedup_key": ["s1", "s2", "t1", "o1"],
            "sensitive": [True, True, True, False],
            "harmful": [False, None, True, False],
        }
    )
    classes = classify(conv, risk)
    assert classes["prompt_class"].to_list()[:4] == [
        "benign_sensitive",
        "unknown",
        "toxic",
        "other",
    ]
    rates = refusal_rates(classes)
    careful = rates.filter(pl.col("model") == "careful").sort("prompt_class")
    assert careful.select("prompt_class", "conversations", "refusals").rows() == [
        ("benign_sensitive", 1, 1),
        ("other", 1, 0),
        ("toxic", 1, 1),
    ]
    board = over_refusal_board(rates)
    assert board["model"].to_list() == ["careful", "bold"]
    assert board["over_refuser"].to_list() == [None, None]  # too few conversations to say


def _toxic_rule_reference(flagged, sensitive, harmful) -> tuple[str, str | None]:
    """The documented rule, written out: toxic when moderation flags it or the labeller
    calls it harmful (either suffices); unknown when the risk label is unread and
    moderation did not flag it; then sensitive or not."""
    if flagged is True or harmful is True:
        source = "+".join(s for s, on in (("moderation", flagged), ("labeller", harmful)) if on)
        return "toxic", source
    if sensitive is None or harmful is None:
        return "unknown", None
    return ("benign_sensitive" if sensitive else "other"), None


def test_a_prompt_the_labeller_calls_harmful_is_toxic_even_when_moderation_passes_it() -> None:
    """Every combination of moderation flag (true, false, no endpoint) and risk label
    (sensitive, harmful, unread) against the rule written out above; in particular a
    harmful prompt moderation did not flag is toxic, not benign-but-sensitive."""
    flags = [True, False, None]
    risks = [(True, True), (True, False), (False, True), (False, False), (None, None)]
    combos = [(f, sv, hm) for f in flags for sv, hm in risks]
    conv = pl.DataFrame(
        {
            "conv_id": [f"c{i}" for i in range(len(combos))],
            "model": ["m"] * len(combos),
            "dedup_key": [f"k{i}" for i in range(len(combos))],
            "moderation_flagged": [f for f, _, _ in combos],
        },
        schema_overrides={"moderation_flagged": pl.Boolean},
    )
    risk = pl.DataFrame(
        {
            "dedup_key": [f"k{i}" for i in range(len(combos))],
            "sensitive": [sv for _, sv, _ in combos],
            "harmful": [hm for _, _, hm in combos],
        },
        schema={"dedup_key": pl.String, "sensitive": pl.Boolean, "harmful": pl.Boolean},
    )
    got = classify(conv, risk).select("prompt_class", "toxic_source").rows()
    assert got == [_toxic_rule_reference(*c) for c in combos]
    # the case the rule is for: sensitive and harmful, moderation ran and passed it
    assert got[combos.index((False, True, True))] == ("toxic", "labeller")
    assert TOXIC_RULE.startswith("toxic = the moderation endpoint flagged the prompt OR")


def test_baselines_on_real_battles_match_a_hand_count(real_data: Path) -> None:
    """``longer`` on the 100 real 2024 battles: our pick from the battles' token columns
    against a count done here from the file's own num_tokens."""
    rows = [
        json.loads(line)
        for line in (real_data / "battles" / "clean_battles_2024_full_conversations.jsonl")
        .read_text()
        .splitlines()
        if line.strip()
    ]
    tok = {
        s: [
            sum(m.get("num_tokens", 0) for m in r[f"conversation_{s}"] if m["role"] == "assistant")
            for r in rows
        ]
        for s in "ab"
    }
    sample = pl.DataFrame(
        {
            "battle_id": [r["question_id"] for r in rows],
            "tokens_a": tok["a"],
            "tokens_b": tok["b"],
            "markdown_a": [0] * len(rows),
            "markdown_b": [0] * len(rows),
        }
    )
    picks = baseline_verdicts(sample, "longer")["pick"].to_list()
    decisive = [
        (r["winner"], ta, tb)
        for r, ta, tb in zip(rows, tok["a"], tok["b"])
        if r["winner"] in ("model_a", "model_b")
    ]
    # PPE's accuracy: the longer side won (equal lengths: the baseline ties, selects neither)
    expected = sum(ta != tb and (ta > tb) == (w == "model_a") for w, ta, tb in decisive) / len(
        decisive
    )
    frame = sample.with_columns(
        winner=pl.Series([r["winner"] for r in rows]),
        pick=pl.Series(picks),
        dedup_key=pl.col("battle_id"),
        game1=pl.lit(None, pl.String),
        game2=pl.lit(None, pl.String),
    )
    got = slice_metrics(frame, AgreementOptions(rounds=20))
    assert got["accuracy"] == pytest.approx(expected)
    assert 0.3 < got["accuracy"] < 0.8 and got["decisive_votes"] == len(decisive)


def test_release_is_refusal_fills_missing_refusal_labels(tmp_path: Path) -> None:
    """Release battles get no topic labels; is_refusal false says neither side refused,
    true does not say which side did (unknown), absent says nothing."""
    from arena_assets.pipeline.evaluators import release_refusals
    from arena_assets.storage import Lake

    lake = Lake(str(tmp_path / "lake"))
    lake.write(
        "battles",
        "2024-07",
        pl.DataFrame(
            {
                "battle_id": ["b1", "b2", "b3"],
                "conv_id_a": ["c1a", "c2a", "c3a"],
                "conv_id_b": ["c1b", "c2b", "c3b"],
                "release_tags": [
                    json.dumps({"is_refusal": False}),
                    json.dumps({"is_refusal": True}),
                    None,
                ],
            }
        ),
    )
    got = release_refusals(lake, "2024-07").sort("conv_id")
    assert got.rows() == [("c1a", False), ("c1b", False)]
    assert release_refusals(lake, "2024-08").height == 0  # no battles that month


def test_reward_model_is_sent_the_real_multi_turn_conversation(tmp_path: Path) -> None:
    """Each side of a two-turn battle reaches the reward endpoint (a stand-in vLLM /pooling
    server on loopback that records what it is sent) as its chat messages, turn by turn,
    not one flattened user/assistant pair."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from arena_assets.evaluators.judges import reward_verdicts
    from arena_assets.llm import LLMTask, ResponseCache

    seen: list[dict] = []

    class Pooling(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(body)
            reply = json.dumps(
                {"data": [{"index": 0, "data": [float(len(body["messages"][-1]["content"]))]}]}
            )
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(reply.encode())

    server = ThreadingHTTPServer(("127.0.0.1", 0), Pooling)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:

        def side(last: str) -> list[dict]:
            return [
                {"role": "user", "content": "Plan a trip", "images": []},
                {"role": "assistant", "content": "Where to?", "images": []},
                {"role": "user", "content": "Lisbon, 3 days", "images": []},
                {"role": "assistant", "content": last, "images": []},
            ]

        battles = pl.DataFrame(
            {
                "battle_id": ["b1"],
                "month": ["2024-07"],
                "model_a": ["x"],
                "model_b": ["y"],
                "winner": ["model_b"],
                "language": ["en"],
                "turn": [2],
                "conv_id_a": ["ca"],
                "conv_id_b": ["cb"],
                "dedup_key": ["k"],
                "keep": [True],
                **{
                    f"{f}_{s}": [5]
                    for f in ("sum_assistant_tokens", "header_count", "list_count", "bold_count")
                    for s in "ab"
                },
            }
        )
        conv = pl.DataFrame(
            {
                "conv_id": ["ca", "cb"],
                "messages": [side("Day 1: Alfama."), side("Day 1: Alfama. Day 2: Belem.")],
            }
        )
        sample = judged_battles(battles, conv)
        task = LLMTask(
            model="rm", base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=0
        )
        verdicts, report = reward_verdicts(
            task, sample, ResponseCache(str(tmp_path / "cache"), "reward")
        )
    finally:
        server.shutdown()
    assert report.calls == 2 and verdicts["pick"].to_list() == ["b"]  # the longer last answer
    sent = sorted((b["messages"] for b in seen), key=lambda m: len(m[-1]["content"]))
    assert [m["role"] for m in sent[0]] == ["user", "assistant", "user", "assistant"]
    assert [m["content"] for m in sent[1]] == [
        "Plan a trip",
        "Where to?",
        "Lisbon, 3 days",
        "Day 1: Alfama. Day 2: Belem.",
    ]
    assert all(TURN_BREAK not in m["content"] for msgs in sent for m in msgs)
