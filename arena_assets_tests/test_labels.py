"""Topic labels and clusters: code heuristic, strict parsers, labelling over HTTP, clustering."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from arena_assets.clean.conversations import dedup_key
from arena_assets.contracts import MESSAGE_TYPE
from arena_assets.labels import (
    ClusterConfig,
    LabelConfig,
    build_topic_clusters,
    distinct_prompts,
    is_code,
    label_conversations,
)
from arena_assets.labels.label import out_of_range, parse_failure_rate
from arena_assets.labels.prompts import (
    CRITERIA,
    parse_cluster_name,
    parse_criteria,
    parse_refusal,
    parse_vision,
)
from arena_assets.labels.schema import (
    TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA,
    TOPIC_CLUSTER_SUMMARY_SCHEMA,
    TOPIC_LABELS_SCHEMA,
)
from arena_assets.llm import LLMTask
from arena_assets_tests.labelling_server import LabellingServer, expected_answer
from arena_assets_tests.topic_set import TOPICS

CODE_CASES = [  # (text, is code) written by hand, not drawn from the simulator
    ("```python\nprint('hi')\n```\nwhy does this fail?", True),
    (
        "Traceback (most recent call last):\n  File \"app.py\", line 3, in <module>\nKeyError: 'x'",
        True,
    ),
    (
        'Exception in thread "main" java.lang.NullPointerException\n    at com.acme.App.main(App.java:14)',
        True,
    ),
    ("def add(a, b):\n    return a + b\nimport math", True),
    ("SELECT name, count(*) FROM users GROUP BY name;\nINSERT INTO logs VALUES (1);", True),
    ("Write a Python function that reverses a linked list.", True),
    ("How do I fix this JavaScript error: undefined is not a function?", True),
    ("Write a SQL query to find the top 5 customers by revenue.", True),
    ("Implement quicksort in Rust.", True),
    ("Help me debug my C++ program, it crashes with a segmentation fault.", True),
    ("What's a regex to match email addresses?", True),
    ("const x = 5;\nconsole.log(x);", True),
    ("thread 'main' panicked at 'index out of bounds', src/main.rs:4:5", True),
    ("Convert this bash script to PowerShell: for f in *.txt; do echo $f; done", True),
    ("How do I create a React component with hooks for a counter?", True),
    ("Write a poem about the ocean.", False),
    ("What is the capital of France?", False),
    ("The python in the zoo swallowed a rabbit whole, is that normal?", False),
    ("I drink java coffee every morning, any good brands?", False),
    ("Explain the causes of the French Revolution.", False),
    ("Give me a recipe for banana bread.", False),
    ("How do I improve my resume for a marketing job?", False),
    ("Translate 'good morning' into Japanese.", False),
    ("What are the rules of chess castling?", False),
    ("Summarize the plot of Hamlet in three sentences.", False),
    ("My ruby ring lost its shine, how do I clean it?", False),
    ("What is 17 times 23?", False),
    ("Plan a trip to Rome for four days.", False),
    ("写一个python函数计算斐波那契数列", True),
    ("Escribe una función en JavaScript que invierta una cadena.", True),
    ("Напиши программу на C++ для сортировки массива.", True),
    ("data <- read.csv('x.csv')\nfit <- lm(y ~ x, data)", True),
    ("How do I list hidden files? I tried ls -a but nothing shows.", True),
    ("Quel est le meilleur fromage français ?", False),
    ("东京有什么好玩的地方？", False),
    ("Let r be the radius of a circle; what function gives its area?", False),
]


def test_code_heuristic_on_hand_written_cases():
    wrong = [t for t, want in CODE_CASES if is_code(t) != want]
    assert not wrong, wrong
    assert not is_code(None) and not is_code("")


def test_code_heuristic_on_real_arena_prompts(real_data):
    """LMArena's own is_code tags on 100 real battles (their labeler, not ours)."""
    import json

    rows = [
        json.loads(line)
        for line in (real_data / "battles" / "clean_battles_2024_full_conversations.jsonl")
        .read_text()
        .splitlines()
    ]
    got = [is_code(r["conversation_a"][0]["content"]) for r in rows]
    want = [r["is_code"] for r in rows]
    tp = sum(g and w for g, w in zip(got, want))
    precision, recall = tp / max(1, sum(got)), tp / max(1, sum(want))
    print(
        f"code heuristic vs LMArena is_code on 100 real prompts: precision {precision:.2f} recall {recall:.2f}"
    )
    assert precision >= 0.9 and recall >= 0.6


@pytest.mark.parametrize(
    "content",
    [
        '{"specificity": true}',  # missing keys
        '{"specificity": "true", "domain_knowledge": true, "complexity": true, "problem_solving": true, "creativity": true, "technical_accuracy": true, "real_world": true, "math": false, "creative_writing": false, "if_score": 2}',
        '{"specificity": true, "domain_knowledge": true, "complexity": true, "problem_solving": true, "creativity": true, "technical_accuracy": true, "real_world": true, "math": false, "creative_writing": false, "if_score": 6}',
        '{"specificity": true, "domain_knowledge": true, "complexity": true, "problem_solving": true, "creativity": true, "technical_accuracy": true, "real_world": true, "math": false, "creative_writing": false, "if_score": 2, "extra": 1}',
        '{"specificity": true, "domain_knowledge": true, "complexity": tr',  # truncated
        "Sure! The prompt is specific and needs domain knowledge.",
        'Here you go: {"refusal": true}',
    ],
)
def test_parsers_reject_anything_but_the_exact_object(content):
    with pytest.raises(ValueError):
        parse_criteria(content)
    if "refusal" in content:
        with pytest.raises(ValueError):
            parse_refusal(content)


def test_parsers_accept_the_exact_object():
    ok = dict.fromkeys(CRITERIA, True) | {"math": False, "creative_writing": True, "if_score": 3}
    import json

    assert parse_criteria("```json\n" + json.dumps(ok) + "\n```").if_score == 3
    assert parse_refusal('{"refusal": false}').refusal is False
    assert (
        parse_vision(json.dumps(dict.fromkeys(expected_answer("vision-v1", "x"), False))).ocr
        is False
    )
    assert parse_cluster_name('{"name": "Cooking at home"}').name == "Cooking at home"
    with pytest.raises(ValueError):
        parse_cluster_name('{"name": "   "}')


def conversations_frame(rows: list[tuple[str, str, list[str], list[str]]]) -> pl.DataFrame:
    """(conv_id, first prompt, images, answers) -> the columns topic labelling reads."""
    msgs = []
    for _, prompt, images, answers in rows:
        m = [{"role": "user", "content": prompt, "images": images}]
        for i, a in enumerate(answers):
            if i:
                m.append({"role": "user", "content": f"and then? ({i})", "images": []})
            m.append({"role": "assistant", "content": a, "images": []})
        msgs.append(m)
    df = pl.DataFrame(
        {
            "conv_id": [r[0] for r in rows],
            "first_prompt": [r[1] for r in rows],
            "messages": msgs,
            "_img": [r[2] for r in rows],
        },
        schema_overrides={"messages": pl.List(MESSAGE_TYPE), "_img": pl.List(pl.String)},
    )
    return df.with_columns(
        dedup_key(pl.col("first_prompt"), pl.col("_img")).alias("dedup_key")
    ).drop("_img")


ROWS = [
    ("c1", "Write a Python function to sort a list", [], ["def f(x): return sorted(x)"]),
    ("c2", "write a python function to sort a list!", [], ["Sorry, I cannot help with that."]),
    ("c3", "Describe this picture", ["img1"], ["A cat on a sofa."]),
    ("c4", "Tell me a joke", [], ["Why did the chicken...", "I can't continue that."]),
    ("c5", "x" * 300, [], ["ok"]),
    ("c6", "Tell me a joke", [], []),
    ("c7", "", ["img2"], ["A bridge at night."]),  # image only: nothing to grade
]


def test_label_conversations_once_per_prompt(tmp_path):
    """LMArena's labeller input: every user turn joined by newlines, cut; identical inputs
    share one call. Flat labels and LMArena's category_tag agree."""
    conv = conversations_frame(ROWS)
    with LabellingServer() as srv:
        task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        # this test server reads the image references itself, as the simulated arena does
        cfg = LabelConfig(max_prompt_chars=100, cache_chunk_size=4, image_refs=True)
        out, report = label_conversations(
            conv, task, month="2024-01", cache_root=str(tmp_path), cfg=cfg
        )
        assert out.schema == pl.Schema(TOPIC_LABELS_SCHEMA)
        assert out["conv_id"].to_list() == [r[0] for r in ROWS]
        by = {r["conv_id"]: r for r in out.iter_rows(named=True)}
        # inputs: c4 ("Tell me a joke" + its second turn) differs from c6; c1 and c2 differ
        # in case: 7 distinct, 6 with text (prompt tags), 2 with an image (three vision
        # calls each: text alone, text and image, image alone), 7 answers
        assert report.distinct_prompts == 7 and srv.calls == 6 + 2 * 3 + 7
        inputs = {"c4": "Tell me a joke\nand then? (1)", "c5": "x" * 100}
        assert by["c7"]["criteria_status"] == "not_applicable" and by["c7"]["vision_status"] == "ok"
        assert by["c7"]["hard"] is None and by["c7"]["refusal"] is False
        for cid, prompt, *_ in ROWS[:6]:
            want = expected_answer("criteria-v1", inputs.get(cid, prompt))
            assert {c: by[cid][c] for c in want} == want, cid
            assert by[cid]["criteria_count"] == sum(want[c] for c in CRITERIA)
            assert by[cid]["hard"] == (by[cid]["criteria_count"] >= 6)
            assert by[cid]["code"] == is_code(prompt)
            tag = by[cid]["category_tag"]
            assert tag["criteria_v0.1"] == {c: want[c] for c in CRITERIA}
            assert tag["if_v0.1"] == {"if": want["if_score"] >= 4, "score": want["if_score"]}
            assert tag["math_v0.1"] == {"math": want["math"]}
        assert (
            by["c4"]["prompt_chars"] == len(inputs["c4"])
            and by["c4"]["label_key"] != by["c6"]["label_key"]
        )
        assert (
            by["c5"]["prompt_cut"]
            and by["c5"]["prompt_chars"] == 300
            and not by["c1"]["prompt_cut"]
        )
        assert by["c3"]["vision_status"] == "ok" and by["c1"]["vision_status"] == "not_applicable"
        # homework and diagram from the image alone (its reference), the rest from the text
        from_text = expected_answer("vision-v1", "Describe this picture")
        from_image = expected_answer("vision-v1", "sha256:img1")
        assert {c: by["c3"][f"vision_{c}"] for c in from_text} == from_text | {
            c: from_image[c] for c in ("homework", "diagram")
        }
        assert by["c3"]["category_tag"]["ocr_v0.1"] == {"ocr": by["c3"]["vision_ocr"]}
        assert (
            by["c1"]["vision_captioning"] is None and by["c1"]["category_tag"]["ocr_v0.1"] is None
        )
        assert by["c2"]["answer_refusal_classes"] == ["yes"] and by["c2"]["refusal"]
        assert by["c4"]["answer_refusals"] == [False, True] and by["c4"]["refusal"]
        assert by["c4"]["category_tag"]["refusal_v0.1"] == {
            "refusal": True,
            "score": "['no', 'yes']",
        }
        assert by["c1"]["refusal"] is False and by["c6"]["refusal_status"] == "not_applicable"
        assert by["c1"]["criteria_model"] == "labeler-strong"
        set_name, set_hash = cfg.prompt_set.name, cfg.prompt_set.hash
        assert by["c1"]["criteria_prompt_version"] == f"{set_name}@{set_hash}/prompt-tags"
        assert (out["prompt_set"] == set_name).all() and (out["prompt_set_hash"] == set_hash).all()
        again, _report2 = label_conversations(
            conv, task, month="2024-01", cache_root=str(tmp_path), cfg=cfg
        )
        assert srv.calls == 19 and again.equals(out)
    assert set(out_of_range(out).values()) == {0}
    assert parse_failure_rate(out) == {"criteria": 0.0, "vision": 0.0, "refusal": 0.0}
    broken = out.with_columns(
        pl.lit(7, dtype=pl.Int8).alias("if_score"), pl.lit(True).alias("hard")
    )
    assert (
        out_of_range(broken)["if_score_outside_0_5"] == 7
        and out_of_range(broken)["hard_mismatch"] > 0
    )


def test_label_faults_recorded_never_guessed(tmp_path):
    """Unparsed replies: flat labels null (never guessed), category_tag the anchor's default
    (no criterion met), counted; failed calls: both null."""
    rows = [
        (f"c{i}", f"Question number {i} about gardening", [], [f"answer {i}"]) for i in range(60)
    ]
    conv = conversations_frame(rows)
    with LabellingServer(fault_rate=0.3, seed=5) as srv:
        task = LLMTask(
            model="labeler-cheap",
            base_url=srv.base_url,
            api_key="test-key",
            max_retries=1,
            parse_retries=0,
            max_concurrency=6,
        )
        out, report = label_conversations(conv, task, month="2024-01", cache_root=str(tmp_path))
    assert out.height == 60 and out["conv_id"].n_unique() == 60
    statuses = out["criteria_status"].value_counts()
    assert set(statuses["criteria_status"]) <= {"ok", "parse_failed", "failed"}
    assert (out["criteria_status"] != "ok").sum() > 0  # the faults did show
    bad = out.filter(pl.col("criteria_status") != "ok")
    assert (
        bad.select([pl.col(c).is_null().all() for c in (*CRITERIA, "if_score", "hard")]).row(0)
        == (True,) * 9
    )
    unparsed = out.filter(pl.col("criteria_status") == "parse_failed")
    assert unparsed.height == report.unparsed["criteria_v0.1"] > 0
    assert all(
        t["criteria_v0.1"] == dict.fromkeys(CRITERIA, False) for t in unparsed["category_tag"]
    )
    assert all(
        t is None or t["criteria_v0.1"] is None
        for t in out.filter(pl.col("criteria_status") == "failed")["category_tag"]
    )
    good = out.filter(pl.col("criteria_status") == "ok")
    assert good["hard"].null_count() == 0
    rate = parse_failure_rate(out)["criteria"]
    assert 0 < rate < 0.5 and set(out_of_range(out).values()) == {0}


def _topic_frame():
    texts, truth = [], []
    for topic, prompts in TOPICS.items():
        texts += prompts
        truth += [topic] * len(prompts)
    frame = pl.DataFrame(
        {
            "dedup_key": [f"k{i}" for i in range(len(texts))],
            "first_prompt": texts,
            "n_conversations": [1] * len(texts),
        },
        schema_overrides={"n_conversations": pl.Int32},
    )
    return frame, truth


def test_offline_clusters_recover_hand_made_topics():
    from sklearn.metrics import adjusted_rand_score

    from arena_assets.labels import OfflineEmbedder

    frame, truth = _topic_frame()
    emb = OfflineEmbedder()
    for method in ("kmeans", "hdbscan"):
        other, _, _ = build_topic_clusters(
            frame,
            None,
            emb,
            month="2024-01",
            cfg=ClusterConfig(method=method, n_clusters=len(TOPICS), min_cluster_size=4),
        )
        print(
            f"offline {method} ARI: {adjusted_rand_score(truth, other['cluster_id'].to_list()):.3f}"
        )
    cfg = ClusterConfig(n_clusters=len(TOPICS), seed=0)  # agglomerative
    assign, summary, _ = build_topic_clusters(frame, None, emb, month="2024-01", cfg=cfg)
    assert assign.schema == pl.Schema(TOPIC_CLUSTER_ASSIGNMENTS_SCHEMA)
    assert summary.schema == pl.Schema(TOPIC_CLUSTER_SUMMARY_SCHEMA)
    ari = adjusted_rand_score(truth, assign["cluster_id"].to_list())
    print(
        f"offline wordllama + agglomerative(k={len(TOPICS)}) ARI on the hand-made topic set: {ari:.3f}"
    )
    assert ari >= 0.5
    assert summary["size"].sum() == frame.height and summary["name_source"].unique().to_list() == [
        "c-tf-idf"
    ]
    again, _, _ = build_topic_clusters(frame, None, emb, month="2024-01", cfg=cfg)
    assert again.equals(assign)  # seeded
    auto, _, _ = build_topic_clusters(
        frame, None, emb, month="2024-01", cfg=ClusterConfig(k_max=20)
    )
    print(
        "auto k:",
        auto["cluster_id"].n_unique(),
        "ARI",
        adjusted_rand_score(truth, auto["cluster_id"].to_list()),
    )


def test_clusters_via_endpoint_embeddings_and_llm_names(tmp_path):
    from arena_assets.llm import ResponseCache, embed_texts

    frame, _ = _topic_frame()
    conv = conversations_frame(
        [(f"c{i}", t, [], ["fine"]) for i, t in enumerate(frame["first_prompt"])]
    )
    with LabellingServer(dim=8) as srv:
        task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        labels, _ = label_conversations(conv, task, month="2024-01", cache_root=str(tmp_path))
        prompts = distinct_prompts(conv)
        embedder = lambda texts: embed_texts(task, texts, ResponseCache(str(tmp_path), "emb"))[0]
        cfg = ClusterConfig(method="hdbscan", min_cluster_size=3)
        assign, summary, naming = build_topic_clusters(
            prompts,
            labels,
            embedder,
            month="2024-01",
            cfg=cfg,
            namer=task,
            cache_root=str(tmp_path),
        )
    assert assign.height == prompts.height and assign["cluster_id"].null_count() == 0
    assert naming.statuses["ok"] == summary.height
    assert all(s.startswith("llm:labeler-strong:cluster-name-v1") for s in summary["name_source"])
    assert all(n.startswith("topic ") for n in summary["cluster_name"])
    assert summary["mean_criteria"].null_count() == 0
    assert np.isclose(summary["size"].sum(), prompts.height)
    from arena_assets.labels.plots import topic_clusters_png

    png = topic_clusters_png(summary, "topic clusters 2024-01")
    assert png.startswith(b"\x89PNG") and len(png) > 2000


def test_label_topics_cli(tmp_path, capsys, monkeypatch):
    from arena_assets.cli import main

    conv = conversations_frame(ROWS).with_columns(pl.lit("2024-02").alias("month"))
    conv.write_parquet(tmp_path / "conv.parquet")
    with LabellingServer() as srv:
        common = [
            "label-topics",
            str(tmp_path / "conv.parquet"),
            "--base-url",
            srv.base_url,
            "--image-refs",
            "--cache",
            str(tmp_path / "cache"),
            "--out",
            str(tmp_path / "labels.parquet"),
        ]
        assert main(common + ["--model", "labeler-strong", "--api-key-env", "NO_SUCH_VAR"]) == 2
        assert "refused the API key" in capsys.readouterr().err
        monkeypatch.setenv("LABEL_KEY", "test-key")
        assert (
            main(
                common
                + [
                    "--model",
                    "labeler-strong",
                    "--api-key-env",
                    "LABEL_KEY",
                    "--clusters-out",
                    str(tmp_path / "clusters.parquet"),
                    "--embed-model",
                    "labeler-strong",
                    "--n-clusters",
                    "2",
                ]
            )
            == 0
        )
    labels = pl.read_parquet(tmp_path / "labels.parquet")
    assert labels.height == len(ROWS) and labels["month"].unique().to_list() == ["2024-02"]
    assert pl.read_parquet(tmp_path / "clusters_summary.parquet")["size"].sum() == 5


@pytest.mark.parametrize(
    "method,max_direct",
    [
        ("agglomerative", 6000),
        ("agglomerative", 300),
        ("hdbscan", 6000),
        ("hdbscan", 300),
        ("kmeans", 6000),
    ],
)
def test_clusters_recover_topics_carried_by_embeddings(method, max_direct):
    """Vectors = topic centroid + noise (what endpoint embeddings carry); k is not given."""
    from sklearn.metrics import adjusted_rand_score

    from arena_assets.labels.clusters import cluster_embeddings

    rng = np.random.default_rng(1)
    centroids = rng.normal(size=(20, 32))
    centroids /= np.linalg.norm(centroids, axis=1, keepdims=True)
    truth = rng.integers(0, 20, size=1200)
    x = centroids[truth] + rng.normal(scale=0.08, size=(1200, 32))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    # k-means is given k (its silhouette search costs a fit per k); the others find it
    cfg = ClusterConfig(
        method=method,
        max_direct_points=max_direct,
        min_cluster_size=10,
        seed=3,
        k_max=40,
        n_clusters=20 if method == "kmeans" else None,
    )
    ids, outlier = cluster_embeddings(x, cfg)
    assert ids.min() == 0 and len(ids) == 1200 and ids.dtype == np.int32
    assert np.bincount(ids)[0] == np.bincount(ids).max()  # ids ordered by size
    assert adjusted_rand_score(truth, ids) >= 0.9
    again, _ = cluster_embeddings(x, cfg)
    assert (again == ids).all()
    if method != "hdbscan":
        assert not outlier.any()


def test_offline_embedder_needs_no_network(monkeypatch):
    import socket

    from arena_assets.labels import OfflineEmbedder

    def refuse(*args, **kwargs):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    x = OfflineEmbedder(dim=64)(["a short prompt", "another prompt"])
    assert x.shape == (2, 64) and np.allclose((x**2).sum(axis=1), 1, atol=1e-5)


def test_month_steps_leave_the_previous_partition_on_endpoint_errors(tmp_path):
    from arena_assets.llm import LLMEndpointError
    from arena_assets.pipeline.topics import topic_clusters_month, topic_labels_month
    from arena_assets.storage import Lake

    lake = Lake(str(tmp_path / "lake"))
    conv = conversations_frame(ROWS).with_columns(pl.lit("2024-03").alias("month"))
    lake.write("conversations", "2024-03", conv)
    with LabellingServer() as srv:
        task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        cfg = LabelConfig(image_refs=True)  # the test server reads image references
        step = topic_labels_month(
            lake, "2024-03", task, cache_root=str(tmp_path / "cache"), cfg=cfg
        )
        labels = step.labels
        assert set(step.out_of_range.values()) == {0} and step.parse_failure_rate["criteria"] == 0
        before = (tmp_path / "lake" / "topic_labels" / "2024-03.parquet").read_bytes()
        for bad in (
            LLMTask(model="nope", base_url=srv.base_url, api_key="test-key"),
            LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="wrong"),
        ):
            with pytest.raises(LLMEndpointError):
                topic_labels_month(
                    lake, "2024-03", bad, cache_root=str(tmp_path / "cache2"), cfg=cfg
                )
        assert (tmp_path / "lake" / "topic_labels" / "2024-03.parquet").read_bytes() == before
        emb = lambda texts: np.eye(len(texts), 8, dtype=np.float32)
        assign = topic_clusters_month(
            lake, "2024-03", emb, cfg=ClusterConfig(n_clusters=2)
        ).assignments
    assert (
        lake.read("topic_clusters", "2024-03").height
        == assign.height
        == labels["dedup_key"].n_unique()
    )
    assert lake.read("topic_cluster_summary", "2024-03")["size"].sum() == assign.height


def test_refusal_classifies_every_answer_of_a_long_conversation(tmp_path):
    """LMArena's refusal classifier reads every (query, answer) pair of a conversation, so
    a refusal in the tenth answer makes the conversation refused: no cap on answers."""
    answers = [f"Here is part {i}." for i in range(11)] + ["Sorry, I cannot help with that."]
    conv = conversations_frame([("long", "Tell me a long story in parts", [], answers)])
    with LabellingServer() as srv:
        task = LLMTask(model="labeler-strong", base_url=srv.base_url, api_key="test-key")
        out, report = label_conversations(conv, task, month="2024-01", cache_root=str(tmp_path))
    row = out.row(0, named=True)
    assert row["answer_refusal_classes"] == ["no"] * 11 + ["yes"]
    assert row["refusal"] is True and row["category_tag"]["refusal_v0.1"]["refusal"] is True
    assert report.batches["refusal"].items == 12


def test_refusal_requests_pair_each_answer_with_the_user_turn_before_it():
    """Each answer goes with the last user turn before it ("" when none), its index counted
    per conversation; null contents read as "", null or empty message lists give nothing.
    Checked against a plain walk over the messages written here."""
    import polars as pl

    from arena_assets.labels.label import LabelConfig
    from arena_assets.labels.refusals import answer_turns, requests_of, turn_texts

    schema = {
        "conv_id": pl.String,
        "messages": pl.List(pl.Struct({"role": pl.String, "content": pl.String})),
    }
    conv = pl.DataFrame(
        {
            "conv_id": ["a", "b", "c", "d"],
            "messages": [
                [
                    {"role": "assistant", "content": "unprompted"},
                    {"role": "user", "content": None},
                    {"role": "assistant", "content": None},
                    {"role": "system", "content": "s"},
                    {"role": "user", "content": "second " * 3000},
                    {"role": "assistant", "content": "x" * 20_000},
                ],
                None,
                [],
                [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            ],
        },
        schema=schema,
    )
    cfg = LabelConfig()
    lt = cfg.prompt_set.by_scope("answer")[0]
    expected = []
    for conv_id, messages in conv.iter_rows():
        user, n = "", 0
        for m in messages or []:
            if m["role"] == "user":
                user = m["content"] or ""
            elif m["role"] == "assistant":
                expected.append(
                    (
                        f"{conv_id}\x1f{n}",
                        lt.messages(
                            user[: cfg.max_prompt_chars],
                            (m["content"] or "")[: cfg.max_answer_chars],
                        ),
                    )
                )
                n += 1
    turns = answer_turns(conv)
    texts = turn_texts(conv, turns, cfg.max_prompt_chars, cfg.max_answer_chars)
    got = [(r.item_id, r.messages) for r in requests_of(texts, lt, cfg.prompt_set.version(lt))]
    assert got == expected and [g[0] for g in got] == ["a\x1f0", "a\x1f1", "a\x1f2", "d\x1f0"]
    # a slice's rows come in any order, a conversation's answers apart (llm.sliced)
    for rows in ([3, 1], [2, 3, 0], [1]):
        part = turn_texts(conv, turns[rows], cfg.max_prompt_chars, cfg.max_answer_chars)
        assert part.equals(texts[rows])


def test_refusal_rows_per_conversation_from_answers_in_any_order():
    """Each conversation's row from its answers' classes put back in task then answer
    order; conversations with the same classes get the same row, one without answers "not
    applicable"; unparsed answers are counted once each. Expected rows written here."""
    import json

    from arena_assets.labels.refusals import refusal_rows

    # (conversation row, task, answer index, class, status)
    answers = [
        (1, 0, 1, "yes", "ok"),
        (1, 0, 0, "no", "ok"),
        (2, 0, 0, None, "parse_failed"),
        (2, 0, 1, "no", "ok"),
        (3, 0, 0, "no", "ok"),
        (3, 0, 1, "yes", "ok"),
        (4, 0, 0, None, "failed"),
        (5, 1, 0, "maybe", "ok"),
        (5, 0, 0, "no", "ok"),
        (6, 0, 0, "no", "ok"),
        (6, 0, 1, "yes", "ok"),
        (7, 0, 0, None, "parse_failed"),
    ]
    answered = tuple(list(col) for col in zip(*answers[::-1]))
    unparsed = {"refusal_v0.1": 2}
    rows = refusal_rows(answered, 9, "refusal_v0.1", unparsed).to_dicts()
    assert unparsed == {"refusal_v0.1": 4} and len(rows) == 9
    assert (
        rows[0]
        == rows[8]
        == {
            "answer_refusal_classes": [],
            "answer_refusals": [],
            "refusal": None,
            "refusal_status": "not_applicable",
            "_refusal_tag": None,
        }
    )
    assert rows[1] == {
        "answer_refusal_classes": ["no", "yes"],
        "answer_refusals": [False, True],
        "refusal": True,
        "refusal_status": "ok",
        "_refusal_tag": json.dumps(
            {"refusal": True, "score": "['no', 'yes']"}, separators=(",", ":")
        ),
    }
    assert rows[6] == rows[1] and rows[3]["answer_refusal_classes"] == ["no", "yes"]
    assert rows[2]["refusal"] is None and rows[2]["refusal_status"] == "parse_failed"
    assert json.loads(rows[2]["_refusal_tag"]) == {"refusal": False, "score": "[None, 'no']"}
    assert rows[4]["refusal_status"] == "failed" and rows[4]["_refusal_tag"] is None
    assert (
        rows[7]["refusal_status"] == "parse_failed"
        and rows[7]["_refusal_tag"] == '{"refusal":false,"score":"[None]"}'
    )
    assert rows[5]["answer_refusal_classes"] == ["no", "maybe"] and rows[5]["refusal"] is False
    untagged = refusal_rows(answered, 9, None, unparsed)
    assert untagged.get_column("refusal_status").to_list() == ["not_applicable"] * 9
    assert unparsed == {"refusal_v0.1": 4}
    nothing: dict[str, int] = {}  # no answer classified: no count recorded for the tag
    assert (
        refusal_rows(([], [], [], [], []), 2, "refusal_v0.1", nothing).height == 2 and nothing == {}
    )


@pytest.mark.parametrize("method", ["agglomerative", "kmeans", "hdbscan"])
def test_max_clusters_bounds_what_the_clustering_gives(method):
    """A month of many tiny topics pushes k to its limit: the clustering never gives more
    clusters than ``max_clusters`` (a first month's plan of naming calls), and k's search
    on ``k_sample`` prompts keeps it far under the size cap ``k_cap``."""
    from arena_assets.labels.clusters import cluster_embeddings, k_cap, max_clusters

    rng = np.random.default_rng(5)
    centroids = rng.normal(size=(600, 24))
    x = np.repeat(centroids, 5, axis=0) + rng.normal(scale=0.01, size=(3000, 24))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    cfg = ClusterConfig(method=method, k_sample=300, min_cluster_size=5, seed=0)
    ids, _ = cluster_embeddings(x, cfg)
    bound = max_clusters(cfg, len(x))
    assert len(set(ids.tolist())) <= bound
    if method != "hdbscan":  # the silhouette search takes all it may: the bound is reached
        assert bound == 100 < k_cap(cfg, len(x)) == 375 and len(set(ids.tolist())) >= 90
    else:
        assert bound == 600
    assert max_clusters(cfg, 1) == 1 and max_clusters(cfg, 0) == 0
    assert max_clusters(ClusterConfig(n_clusters=40), 3000) == 40
    if method == "hdbscan":  # hdbscan finds its own number: a configured k does not bound it
        given = ClusterConfig(method=method, k_sample=300, min_cluster_size=5, seed=0, n_clusters=3)
        assert (
            len(set(cluster_embeddings(x, given)[0].tolist())) > 3
            and max_clusters(given, len(x)) == 600
        )
