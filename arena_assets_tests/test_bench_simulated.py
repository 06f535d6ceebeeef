"""The bench stage end to end on the simulator: labels -> BenchBuilder bench -> candidate
answers -> judge games -> bench leaderboard, against the simulated truth and the month's
human arena leaderboard; judge biases, the two-game protocol, faults, cached reruns."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from scipy.stats import spearmanr

from arena_assets.bench.builder import BenchOptions
from arena_assets.judging.summary import bias_report
from arena_assets.labels import ClusterConfig
from arena_assets.llm import LLMTask, ResponseCache, embed_texts
from arena_assets.pipeline.battles import battles_month
from arena_assets.pipeline.bench import (
    bench_leaderboard_month,
    bench_prompts_month,
    duplicate_games,
    judgments_month,
    model_answers_month,
)
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.pipeline.leaderboards import arena_leaderboard_month
from arena_assets.pipeline.topics import topic_clusters_month, topic_labels_month
from arena_assets.ranking.boards import board_options
from arena_assets.simulator import simulate_months, start_endpoint
from arena_assets.simulator.config import TEXT_CATEGORIES
from arena_assets.simulator.endpoint import Faults
from arena_assets.simulator.judge import judge_replicas
from arena_assets.storage import Lake

MONTH = "2024-02"
SEED = 21
LENGTH_STREAMS = 5  # noise streams the length-bias measurement is repeated on
SEPARABILITY_DRAWS = 5  # bench draws of each kind in the separability comparison


def _task(ep, model: str, **kw) -> LLMTask:
    return LLMTask(model=model, base_url=ep.base_url, api_key="sim", max_concurrency=8, **kw)


def _true_skill(world, name: str) -> float:
    return float(np.mean([world.model(name).skill(c) for c in TEXT_CATEGORIES]))


@pytest.fixture(scope="module")
def arena(tmp_path_factory):
    root = tmp_path_factory.mktemp("bench")
    simulate_months(root / "raw", [MONTH], 2500, seed=SEED)
    lake = Lake(str(root / "lake"))
    ingest_month(lake, str(root / "raw"), MONTH, salt="t", known_models=None)
    clean_month(lake, MONTH, threads=1)
    battles_month(lake, MONTH)
    arena_leaderboard_month(
        lake, MONTH, board_options(bootstrap_rounds=30, min_battles=20), min_category_battles=10_000
    )
    ep = start_endpoint(seed=SEED, truth_root=root / "raw")
    cache = str(root / "cache")
    topic_labels_month(lake, MONTH, _task(ep, "sim-labeler-large"), cache_root=cache)
    etask = _task(ep, "sim-embed-large")
    ecache = ResponseCache(cache, "embeddings")
    topic_clusters_month(
        lake, MONTH, lambda t: embed_texts(etask, t, ecache)[0], cfg=ClusterConfig()
    )
    human = lake.read("arena_leaderboard", MONTH).filter(pl.col("board") == "overall")
    # five candidates from the best-measured models of the human board, spread over their
    # skill range (a bench of far-apart models is trivially ordered: every game one-sided)
    busiest = human.sort("battles", descending=True)["model"].head(9).to_list()
    ranked = sorted(busiest, key=lambda m: _true_skill(ep.world, m))
    names = [ranked[2 * i] for i in range(5)]
    yield root, lake, ep, names
    ep.stop()


BENCH = BenchOptions(size=80, vision_size=0, min_quality=5, min_cluster_mean=2.0, seed=1)


def _run(lake, ep, names, cache, judges=("sim-judge",), baseline=None):
    bench_prompts_month(lake, MONTH, BENCH)
    answers = model_answers_month(
        lake, MONTH, [(n, _task(ep, n, max_tokens=1024)) for n in names], cache_root=cache
    )
    judged = judgments_month(
        lake,
        MONTH,
        [(j, _task(ep, j, max_tokens=512)) for j in judges],
        baseline or names[len(names) // 2],
        cache_root=cache,
    )
    return answers, judged


@pytest.mark.slow
def test_bench_leaderboard_follows_truth_and_humans_and_reruns_free(arena, capsys):
    root, lake, ep, names = arena
    cache = str(root / "cache")
    answers, judged = _run(lake, ep, names, cache)
    assert answers.failed == 0 and duplicate_games(judged.judgments) == 0
    n_prompts = lake.read("bench_prompts", MONTH).height
    assert judged.judgments.height == n_prompts * (len(names) - 1) * 2
    board = bench_leaderboard_month(lake, MONTH, rounds=50).board
    assert board.filter(~pl.col("win_rate").is_between(0, 1)).height == 0
    truth = [_true_skill(ep.world, m) for m in board["model"]]
    rho_truth = spearmanr(board["bt_rating"], truth).statistic
    step = bench_leaderboard_month(lake, MONTH, rounds=50)
    with capsys.disabled():
        print(
            f"\nbench {n_prompts} prompts x {len(names)} models: Spearman vs truth {rho_truth:.3f}; "
            f"vs arena: {step.vs_human}"
        )
    assert rho_truth >= 0.9
    assert step.vs_human["spearman"] >= 0.85
    # a rerun of answers and judgments is answered from the cache: zero calls
    before = ep.call_count()
    _run(lake, ep, names, cache)
    assert ep.call_count() == before


@pytest.mark.slow
def test_position_and_length_bias_show_and_the_protocol_handles_them(arena, capsys):
    root, lake, ep, names = arena
    cache = str(root / "cache")
    replicas = judge_replicas(
        {j: ep.judges[j] for j in ("sim-judge", "sim-judge-verbose")}, range(1, LENGTH_STREAMS)
    )
    ep.judges.update(replicas)
    _run(
        lake,
        ep,
        names,
        cache,
        judges=("sim-judge", "sim-judge-biased", "sim-judge-verbose", *replicas),
    )
    judged = lake.read("judgments", MONTH)
    feats = lake.read("model_answers", MONTH)
    lengths = feats.select("question_id", "model", tokens="answer_tokens")
    fair = bias_report(judged.filter(pl.col("judge") == "sim-judge"), lengths)
    biased = bias_report(judged.filter(pl.col("judge") == "sim-judge-biased"), lengths)
    with capsys.disabled():
        print(f"\nbias report fair: {fair}\nbiased: {biased}")
    assert biased["a_win_share"] > fair["a_win_share"] + 0.1
    assert biased["flip_rate"] > fair["flip_rate"]
    assert biased["length_correlation"] > fair["length_correlation"]
    # two games with swapped positions cancel the position bias: the biased judge's win
    # rates agree with the fair judge's within their intervals (length bias aside, which
    # style control addresses below)
    from arena_assets.judging.metrics import bench_leaderboard

    fair_b = bench_leaderboard(judged.filter(pl.col("judge") == "sim-judge"), feats, rounds=50)
    bias_b = bench_leaderboard(
        judged.filter(pl.col("judge") == "sim-judge-biased"), feats, rounds=50
    )
    both = fair_b.join(bias_b, on="model", suffix="_biased")
    rho = spearmanr(both["bt_rating"], both["bt_rating_biased"]).statistic
    assert rho >= 0.8
    # the length bias alone moves verbose models up; style control (length and markdown as
    # covariates) takes most of that shift away. The verbose judge is the fair judge plus
    # the bias (one noise stream), so verbose - fair is the bias's own effect; measured on
    # several noise streams (<judge>@k) and the medians compared, since one draw of a
    # 5-model board is too coarse to tell a 20-Elo effect from the style fit's own noise
    streams = ["", *(f"@{k}" for k in range(1, LENGTH_STREAMS))]
    mean_tokens = feats.group_by("model").agg(pl.col("answer_tokens").mean())
    raw, styled, slopes = [], [], []
    for s in streams:
        fair_s = bench_leaderboard(
            judged.filter(pl.col("judge") == f"sim-judge{s}"), feats, rounds=0
        )
        long_s = bench_leaderboard(
            judged.filter(pl.col("judge") == f"sim-judge-verbose{s}"), feats, rounds=0
        )
        both = fair_s.join(long_s, on="model", suffix="_biased").join(mean_tokens, on="model")
        shift = {
            c: (both[f"{c}_biased"] - both[c]).to_numpy() for c in ("bt_rating", "style_rating")
        }
        raw.append(float(np.std(shift["bt_rating"])))
        styled.append(float(np.std(shift["style_rating"])))
        # Elo gained per 100 more answer tokens on average than the other models
        slopes.append(
            [
                float(np.polyfit(both["answer_tokens"].to_numpy() / 100, shift[c], 1)[0])
                for c in ("bt_rating", "style_rating")
            ]
        )
    med = {"raw": float(np.median(raw)), "styled": float(np.median(styled))}
    slope = np.median(np.array(slopes), axis=0)
    with capsys.disabled():
        print(
            f"verbose - fair rating spread over {len(streams)} noise streams: raw {np.round(raw, 1)}, "
            f"style-controlled {np.round(styled, 1)}; medians {med['raw']:.1f} -> {med['styled']:.1f}; "
            f"Elo per 100 tokens: raw {slope[0]:.1f}, styled {slope[1]:.1f}"
        )
    assert slope[0] > 10  # the bias shows: longer answers gain rating
    assert med["styled"] < 0.75 * med["raw"]
    assert abs(slope[1]) < 0.5 * slope[0]


@pytest.mark.slow
def test_faults_every_game_judged_or_failed(arena):
    root, lake, ep, names = arena
    cache = str(root / "cache-faults")
    if not lake.exists("bench_prompts", MONTH):  # run alone (or first on its xdist worker)
        bench_prompts_month(lake, MONTH, BENCH)
    ep.set_faults(
        Faults(
            rate_500=0.1, rate_429=0.05, rate_garbage=0.1, rate_empty=0.05, seed=3, retry_after=0.01
        )
    )
    try:
        tasks = [(n, _task(ep, n, max_tokens=1024, max_retries=1)) for n in names]
        model_answers_month(lake, MONTH, tasks, cache_root=cache)
        judged = judgments_month(
            lake,
            MONTH,
            [("sim-judge", _task(ep, "sim-judge", max_retries=1))],
            names[0],
            cache_root=cache,
        ).judgments
    finally:
        ep.set_faults(Faults())
    assert duplicate_games(judged) == 0
    n_prompts = lake.read("bench_prompts", MONTH).height
    assert judged.height == n_prompts * (len(names) - 1) * 2
    assert set(judged["status"]) <= {"ok", "parse_failed", "failed", "no_answer"}
    assert judged.filter(pl.col("parsed") != (pl.col("status") == "ok")).height == 0
    assert (judged["status"] != "ok").sum() > 0  # the faults did reach the games


def test_candidate_task_maps_params():
    from arena_assets.judging.answers import parse_candidates
    from arena_assets.pipeline.bench import candidate_task

    (c,) = parse_candidates(
        '[{"name": "m", "base_url": "http://x/v1", "params": {"temperature": 0.7, "top_p": 0.9}}]'
    )
    t = candidate_task(c, "")
    assert (t.temperature, t.extra_params, t.api_key) == (0.7, {"top_p": 0.9}, "sk-no-key")
    assert dataclasses.replace(t, model="n").model == "n"


@pytest.mark.slow
def test_benchbuilder_bench_separates_models_better_than_a_random_one(arena, capsys):
    """Arena-Hard-Auto's finding through the month steps: the same models and judge on
    BenchBuilder benches and on random draws of the month's prompts of the same size.

    Ten candidates (45 pairs, several of them close) so that neither kind of bench reaches
    the ceiling: with five far-apart candidates both separated 9 of 10 pairs in the median
    (one pair decided each draw). Each kind is drawn with SEPARABILITY_DRAWS seeds and the
    medians are compared, since one draw moves by a few pairs."""
    from arena_assets.bench.builder import build_benches
    from arena_assets.bench.decontam import text_hash
    from arena_assets.bench.schema import BENCH_PROMPTS, CRITERIA
    from arena_assets.judging.metrics import score_table, separability
    from arena_assets.pipeline.bench import labelled_prompts

    root, lake, ep, _ = arena
    cache, size = str(root / "cache"), 60
    human = lake.read("arena_leaderboard", MONTH).filter(pl.col("board") == "overall")
    names = human.sort("battles", descending=True)["model"].head(10).to_list()
    lab = labelled_prompts(lake, MONTH).filter(~pl.col("has_image"))
    quality = pl.sum_horizontal(pl.col(c).cast(pl.Int64) for c in CRITERIA)
    separated, mean_quality = {"benchbuilder": [], "random": []}, {"benchbuilder": [], "random": []}
    for seed in range(1, SEPARABILITY_DRAWS + 1):
        built = build_benches(
            lab,
            BenchOptions(size=size, vision_size=0, min_quality=5, min_cluster_mean=2.0, seed=seed),
            month="2099-01",
        )["text"].prompts
        drawn = (
            lab.sample(size, seed=seed)
            .with_columns(
                quality=quality,
                bench_version=pl.lit("random"),
                bench_kind=pl.lit("text"),
                cluster_mean_quality=pl.lit(None, pl.Float64),
                text_hash=pl.col("prompt").map_elements(text_hash, return_dtype=pl.String),
            )
            .select([pl.col(c).cast(t) for c, t in BENCH_PROMPTS.items()])
        )
        assert built.height == drawn.height == size
        for kind, month, prompts in (
            ("benchbuilder", f"2099-{seed:02d}", built),
            ("random", f"2098-{seed:02d}", drawn),
        ):
            lake.write("bench_prompts", month, prompts)
            model_answers_month(
                lake, month, [(n, _task(ep, n, max_tokens=1024)) for n in names], cache_root=cache
            )
            judgments_month(
                lake,
                month,
                [("sim-judge", _task(ep, "sim-judge", max_tokens=512))],
                names[len(names) // 2],
                cache_root=cache,
            )
            board = bench_leaderboard_month(
                lake, month, rounds=200, seed=3, style_control=False
            ).board
            table = score_table(
                board.select("model", rating="bt_rating", lower="bt_lower", upper="bt_upper")
            )
            separated[kind].append(separability(table)["separated_pairs"])
            mean_quality[kind].append(float(prompts["quality"].mean()))
    med = {k: float(np.median(v)) for k, v in separated.items()}
    with capsys.disabled():
        print(
            f"\nseparated pairs of 45 on {size} prompts, {SEPARABILITY_DRAWS} draws: "
            f"BenchBuilder {separated['benchbuilder']} (median {med['benchbuilder']:.0f}), "
            f"random {separated['random']} (median {med['random']:.0f}); mean quality "
            f"{np.mean(mean_quality['benchbuilder']):.2f} vs {np.mean(mean_quality['random']):.2f}"
        )
    assert med["benchbuilder"] > med["random"]


@pytest.mark.slow
def test_single_answer_grades_follow_truth_and_rerun_free(arena, capsys):
    """MT-Bench style grading of every answer: each model's mean grade orders the models as
    their true skills do; the board carries it as single_score; a rerun makes no call."""
    from arena_assets.pipeline.bench import answer_grades_month

    root, lake, ep, names = arena
    cache = str(root / "cache")
    _run(lake, ep, names, cache)
    judge = [("sim-judge", _task(ep, "sim-judge", max_tokens=512))]
    graded = answer_grades_month(lake, MONTH, judge, cache_root=cache)
    ok_answers = lake.read("model_answers", MONTH).filter(pl.col("status") == "ok").height
    assert graded.grades.height == ok_answers
    assert set(graded.grades["status"]) == {"ok"} and graded.grades["score"].is_between(1, 10).all()
    score = dict(graded.summary.select("model", "score").iter_rows())
    rho = spearmanr([score[m] for m in names], [_true_skill(ep.world, m) for m in names]).statistic
    board = bench_leaderboard_month(lake, MONTH, rounds=0, single_grades=True).board
    with capsys.disabled():
        print(
            f"\nsingle-answer grades {dict(sorted(score.items()))}; Spearman with truth {rho:.2f}"
        )
    assert rho >= 0.9
    assert dict(board.select("model", "single_score").iter_rows()) == pytest.approx(score)
    before = ep.call_count()
    answer_grades_month(lake, MONTH, judge, cache_root=cache)
    assert ep.call_count() == before


@pytest.mark.slow
def test_second_labelling_pass_keeps_truly_hard_prompts(arena, capsys):
    """Two passes: the cheap labeler's labels pick the candidates, the strong labeler
    re-labels only those; the bench then holds more prompts that truly meet the quality
    bar (simulated truth) than the cheap pass alone, for a fraction of the calls."""
    import shutil

    from arena_assets.bench.relabel import StrongRelabel
    from arena_assets.labels import LabelConfig
    from arena_assets.simulator.prompt_truth import read_prompt_truth

    root, _lake, ep, _ = arena
    cheap = Lake(str(root / "lake-cheap"))
    for table in ("conversations", "topic_clusters"):
        shutil.copytree(root / "lake" / table, root / "lake-cheap" / table, dirs_exist_ok=True)
    cache = str(root / "cache-two-pass")
    topic_labels_month(
        cheap,
        MONTH,
        _task(ep, "sim-labeler-small"),
        cache_root=cache,
        cfg=LabelConfig(label_refusals=False, label_vision=False),
    )
    truth = dict(
        read_prompt_truth(root / "raw", MONTH)
        .unique("text")
        .select("text", "criteria_count")
        .iter_rows()
    )
    options = BenchOptions(size=80, vision_size=0, min_quality=6, min_cluster_mean=2.0, seed=1)

    def truly_hard(bench) -> float:
        return float(
            np.mean([truth.get(t, 0) >= options.min_quality for t in bench.prompts["prompt"]])
        )

    one = bench_prompts_month(cheap, MONTH, options).benches["text"]
    relabel = StrongRelabel(_task(ep, "sim-labeler-large"), cache)
    before = ep.call_count(model="sim-labeler-large")
    two = bench_prompts_month(cheap, MONTH, options, relabel=relabel).benches["text"]
    calls = ep.call_count(model="sim-labeler-large") - before
    meta = relabel.as_metadata()
    with capsys.disabled():
        print(
            f"\nbench prompts truly meeting >= {options.min_quality} criteria: one pass "
            f"{truly_hard(one):.2f} ({one.prompts.height} prompts), two passes {truly_hard(two):.2f} "
            f"({two.prompts.height}); strong labeler calls {calls} for {two.stats['prompts_in']} prompts; "
            f"dropped after relabel {two.stats['dropped']['below_quality_after_relabel']}"
        )
    assert calls == meta["calls"] == meta["items"] < two.stats["prompts_in"] / 3
    assert two.stats["dropped"]["below_quality_after_relabel"] > 0
    assert truly_hard(two) > truly_hard(one)
    rerun = StrongRelabel(_task(ep, "sim-labeler-large"), cache)
    bench_prompts_month(cheap, MONTH, options, relabel=rerun)
    assert ep.call_count(model="sim-labeler-large") - before == calls  # cached: zero new calls
    assert rerun.as_metadata()["cache_hits"] == meta["items"]
