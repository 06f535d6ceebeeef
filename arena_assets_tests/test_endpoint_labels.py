"""Labelling, embedding and counting routes of the simulated endpoint, through the real
`openai` client over HTTP, scored against the simulator's prompt truth."""

from __future__ import annotations

import json
import re
import urllib.request

import numpy as np
import openai
import polars as pl
import pytest
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score, f1_score

from arena_assets.simulator import (
    CRITERIA,
    VISION_LABELS,
    WorldConfig,
    load_truth,
    read_prompt_truth,
    simulate_months,
    start_endpoint,
)
from arena_assets.simulator.endpoint import Faults

MONTH = "2024-02"
CRITERIA_ANSWER = (*CRITERIA, "math", "creative_writing", "if_score")


def system(task: str) -> dict:
    return {
        "role": "system",
        "content": f"You label prompts.\ntask: {task}\nAnswer with one JSON object.",
    }


def ask(client: openai.OpenAI, model: str, task: str, user: str) -> dict:
    out = client.chat.completions.create(
        model=model, temperature=0, messages=[system(task), {"role": "user", "content": user}]
    )
    return json.loads(out.choices[0].message.content)


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    out = tmp_path_factory.mktemp("raw")
    simulate_months(
        out, [MONTH], 2500, seed=13, config=WorldConfig(cautious_fraction=0.3, toxic_rate=0.03)
    )
    return out


@pytest.fixture(scope="module")
def endpoint(raw):
    ep = start_endpoint(seed=13, config=WorldConfig(cautious_fraction=0.3), truth_root=raw)
    yield ep
    ep.stop()


@pytest.fixture()
def client(endpoint):
    endpoint.set_faults(Faults())
    return openai.OpenAI(base_url=endpoint.base_url, api_key="sim", timeout=10, max_retries=0)


@pytest.fixture(scope="module")
def sample(raw) -> pl.DataFrame:
    prompts = read_prompt_truth(raw, MONTH).unique("text", keep="first", maintain_order=True)
    return prompts.sample(300, seed=1)


def test_the_truth_is_read_when_the_endpoint_starts(endpoint, raw):
    """The prompt truth and the battle truth are read as the server starts, not by the
    first requests (a batch's first wave would wait on them together)."""
    assert endpoint.truth_read.wait(timeout=60)
    with endpoint.lock:
        assert endpoint._index is not None and endpoint._index_files
    assert endpoint.battles._truth is not None and endpoint.battles._files


def test_criteria_labels_follow_the_truth_with_each_labellers_noise(client, sample):
    f1 = {}
    for model in ("sim-labeler-large", "sim-labeler-small"):
        got = [
            ask(client, model, "criteria-v1", f"Label this prompt.\n<prompt>{t}</prompt>")
            for t in sample["text"]
        ]
        assert all(set(g) == set(CRITERIA_ANSWER) for g in got)
        assert all(isinstance(g["if_score"], int) and 0 <= g["if_score"] <= 5 for g in got)
        f1[model] = {
            c: f1_score(sample[c].to_list(), [g[c] for g in got])
            for c in (*CRITERIA, "math", "creative_writing")
            if sample[c].sum() >= 15
        }
        if_exact = np.mean([g["if_score"] == t for g, t in zip(got, sample["if_score"])])
        f1[model]["if_exact"] = if_exact
    large, small = f1["sim-labeler-large"], f1["sim-labeler-small"]
    assert min(large.values()) >= 0.9, large
    assert (
        max(small.values()) < 0.95
        and np.mean(list(small.values())) < np.mean(list(large.values())) - 0.05
    ), small


def test_vision_labels_and_refusals(client, raw):
    prompts = read_prompt_truth(raw, MONTH).filter("image").unique("text").head(150)
    got = [
        ask(client, "sim-labeler-large", "vision-v1", f"<prompt>{t}</prompt>")
        for t in prompts["text"]
    ]
    assert all(set(g) == set(VISION_LABELS) for g in got)
    for label in ("captioning", "ocr", "homework", "diagram"):
        assert f1_score(prompts[f"vision_{label}"].to_list(), [g[label] for g in got]) >= 0.85, (
            label
        )
    # refusal-v1 judges the answer: the logged first answers of would_refuse prompts
    truth = load_truth(raw)
    # 2,000 conversations (~30 refusals): with 400 (6) one labeler slip moved F1 by 0.08
    conv = truth["conversations"].filter(pl.col("month") == MONTH).head(2000)
    answers = _first_answers(raw, set(conv["conv_id"]))
    rows = [(answers[c], r) for c, r in zip(conv["conv_id"], conv["refused"]) if c in answers]
    assert sum(r for _, r in rows) >= 20
    said = [
        ask(
            client, "sim-labeler-large", "refusal-v1", f"<prompt>...</prompt>\n<answer>{a}</answer>"
        )["refusal"]
        for a, _ in rows
    ]
    # error rates, not F1: refusals are ~1.5 % of answers, so F1 swings with the sample
    # while a 2 % labeller's miss rate (p) and false-alarm rate (p/4) do not
    truth_said = [(r, s) for (_, r), s in zip(rows, said, strict=True)]
    missed = sum(r and not s for r, s in truth_said) / sum(r for r, _ in truth_said)
    false_alarm = sum(s and not r for r, s in truth_said) / sum(not r for r, _ in truth_said)
    # measured 2/31 and 11/1,969; the 18 % small labeller misses ~18 % and false-alarms ~4.5 %
    assert missed <= 0.15 and false_alarm <= 0.02, (missed, false_alarm)


def _first_answers(raw, wanted: set[str]) -> dict[str, str]:
    out = {}
    for path in sorted((raw / MONTH).glob("events-*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = json.loads(line)
                state = event["state"]
                msgs = state["messages"]
            except (ValueError, KeyError, TypeError):
                continue
            if state.get("conv_id") in wanted and len(msgs) >= 2 and isinstance(msgs[1], dict):
                out.setdefault(state["conv_id"], msgs[1].get("content", ""))
    return out


def test_cluster_names_and_prompts_cut_by_the_client(client, raw, sample):
    prompts = read_prompt_truth(raw, MONTH)
    topic = prompts["topic"].value_counts().sort("count", descending=True)["topic"][1]
    texts = prompts.filter(pl.col("topic") == topic)["text"].head(8).to_list()
    blocks = "\n".join(f"<prompt>{t}</prompt>" for t in texts)
    name = ask(client, "sim-labeler-large", "cluster-name-v1", f"Name the topic of:\n{blocks}")[
        "name"
    ]
    assert isinstance(name, str) and 3 <= len(name) <= 60
    # e.g. "Python function that removes duplicates" for coding/python-function-removes-...
    assert set(topic.split("/")[1].split("-")) <= set(re.findall(r"[a-z0-9+#]+", name.lower()))
    # a prompt cut to a maximum length gets the labels of the prompt it came from (when
    # no other prompt of the month starts with the same characters)
    texts = prompts["text"].unique().to_list()
    long = [
        t for t in sample["text"] if len(t) > 150 and sum(u.startswith(t[:140]) for u in texts) == 1
    ][:10]
    assert len(long) >= 5
    for text in long:
        full = ask(client, "sim-labeler-large", "criteria-v1", f"<prompt>{text}</prompt>")
        assert (
            ask(client, "sim-labeler-large", "criteria-v1", f"<prompt>{text[:140]}</prompt>")
            == full
        )


def test_embeddings_carry_the_topic(client, raw):
    prompts = read_prompt_truth(raw, MONTH).unique("text", keep="first", maintain_order=True)
    top = prompts["topic"].value_counts().sort("count", descending=True).head(20)["topic"]
    pick = prompts.filter(pl.col("topic").is_in(top.implode()) & ~pl.col("popular"))
    texts = pick["text"].to_list()
    res = client.embeddings.create(model="sim-embed-large", input=texts)
    vec = np.array([d.embedding for d in res.data])
    assert vec.shape == (len(texts), 128) and np.allclose(np.linalg.norm(vec, axis=1), 1, atol=1e-4)
    assert res.usage.prompt_tokens > 0
    labels = KMeans(n_clusters=20, n_init=4, random_state=0).fit_predict(vec)
    assert adjusted_rand_score(pick["topic"].to_list(), labels) >= 0.8
    again = client.embeddings.create(model="sim-embed-large", input=texts[:3], dimensions=64)
    assert len(again.data[0].embedding) == 64
    same = client.embeddings.create(model="sim-embed-large", input=texts[:3], dimensions=64)
    assert [d.embedding for d in same.data] == [d.embedding for d in again.data]  # deterministic
    # a text's vector is its own, whatever else the call holds (the cache keys one text)
    alone = client.embeddings.create(model="sim-embed-large", input=texts[5]).data[0].embedding
    assert np.allclose(alone, vec[5], atol=1e-6)
    # each embedder its own noise: the small one's vectors lie farther from the large one's
    small = np.array(
        [
            d.embedding
            for d in client.embeddings.create(model="sim-embed-small", input=texts[:20]).data
        ]
    )
    assert 0.4 < float(np.mean(np.sum(small * vec[:20], axis=1))) < 0.8  # measured 0.60
    # text it never generated: a hashed vector, close for near-identical texts
    a, b, c = (
        np.array(d.embedding)
        for d in client.embeddings.create(
            model="sim-embed-small",
            input=[
                "zorbl quantum pickles in the fridge",
                "zorbl quantum pickles in the fridge!",
                "tax forms for 1997",
            ],
        ).data
    )
    assert a @ b > 0.8 > a @ c
    with pytest.raises(openai.NotFoundError):
        client.embeddings.create(model="sim-labeler-large", input="x")


def test_faults_counts_and_no_truth_outside_the_answer(client, endpoint, sample):
    text = sample["text"][0]
    msg = [system("criteria-v1"), {"role": "user", "content": f"<prompt>{text}</prompt>"}]
    endpoint.set_faults(Faults(script=["empty", "truncated", "garbage"]))
    before = endpoint.call_count(route="chat/completions", model="sim-labeler-small")
    empty = client.chat.completions.create(model="sim-labeler-small", messages=msg)
    assert empty.choices[0].message.content == ""
    cut = client.chat.completions.create(model="sim-labeler-small", messages=msg)
    assert cut.choices[0].finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(cut.choices[0].message.content)
    junk = client.chat.completions.create(model="sim-labeler-small", messages=msg)
    with pytest.raises(json.JSONDecodeError):
        json.loads(junk.choices[0].message.content)
    endpoint.set_faults(Faults(script=["truncated"]))
    with pytest.raises((json.JSONDecodeError, openai.APIResponseValidationError)):
        client.embeddings.create(model="sim-embed-small", input=["a"])
    assert endpoint.call_count(route="chat/completions", model="sim-labeler-small") == before + 3
    assert endpoint.call_count(route="embeddings", status=200) >= 1
    counted = _get(endpoint, "/_calls")
    assert counted["total"] == endpoint.call_count()
    # a labeller without a task line is refused with a message naming the contract
    with pytest.raises(openai.BadRequestError, match="task"):
        client.chat.completions.create(
            model="sim-labeler-large", messages=[{"role": "user", "content": "hi"}]
        )
    # the envelope never depends on the labels: two prompts of equal length, different truth
    hard = sample.filter("hard")["text"][0]
    easy = sample.filter(pl.col("criteria_count") == 0)["text"][0]
    pad = "x" * abs(len(hard) - len(easy))
    hard, easy = (hard, easy + pad) if len(hard) > len(easy) else (hard + pad, easy)
    envelopes = []
    from arena_assets.llm.tokens import chat_prompt_tokens

    for t in (hard, easy):
        messages = [system("criteria-v1"), {"role": "user", "content": f"<prompt>{t}</prompt>"}]
        req = urllib.request.Request(
            endpoint.base_url + "/chat/completions",
            headers={"Content-Type": "application/json"},
            data=json.dumps({"model": "sim-labeler-large", "messages": messages}).encode(),
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = json.loads(resp.read())
            # usage is the request text's own token count (billed like OpenAI)
            envelopes.append(
                (
                    sorted(k for k in resp.headers if k not in ("Date", "Content-Length")),
                    body["usage"]["prompt_tokens"] - chat_prompt_tokens(messages),
                    body["system_fingerprint"],
                    sorted(body),
                )
            )
    assert envelopes[0] == envelopes[1]


def _get(endpoint, path: str) -> dict:
    with urllib.request.urlopen(endpoint.base_url.removesuffix("/v1") + path, timeout=10) as resp:
        return json.loads(resp.read())


def test_candidate_models_answer_with_their_skill_style_and_caution(client, endpoint, raw):
    world = endpoint.world
    prompts = read_prompt_truth(raw, MONTH).unique("text", keep="first", maintain_order=True)
    risky = prompts.filter(pl.col("would_refuse") & ~pl.col("image"))["text"].head(6).to_list()
    cautious = [m for m in world.models if m.cautious]
    bold = [m for m in world.models if not m.cautious]
    assert cautious and bold and risky

    def answer(model: str, text: str) -> tuple[str, float | None]:
        out = client.chat.completions.create(
            model=model, messages=[{"role": "user", "content": text}]
        )
        content = out.choices[0].message.content
        return content, endpoint.answer_quality(content)

    refused = [answer(cautious[0].name, t) for t in risky]
    assert sum(q == 0.0 for _, q in refused) >= 4  # refusal_rate 0.85
    assert all(not _is_refusal(c) for c, _ in (answer(bold[0].name, t) for t in risky))
    # quality follows the true skill on the prompt's category, and spreads more on hard prompts
    cat = "coding"
    strong = max(bold, key=lambda m: m.skill(cat))
    weak = min(bold, key=lambda m: m.skill(cat))
    hard = prompts.filter((pl.col("category") == cat) & pl.col("hard"))["text"][0]
    easy = prompts.filter((pl.col("category") == cat) & (pl.col("criteria_count") <= 3))["text"][0]
    q = {
        (m.name, k): answer(m.name, t)[1]
        for m in (strong, weak)
        for k, t in (("hard", hard), ("easy", easy))
    }
    assert (
        q[strong.name, "hard"]
        > q[strong.name, "easy"]
        > q[weak.name, "easy"]
        > q[weak.name, "hard"]
    )
    # length follows the model's verbosity
    verbose = max(bold, key=lambda m: m.verbosity)
    terse = min(bold, key=lambda m: m.verbosity)
    texts = prompts.filter(pl.col("category") == "math")["text"].head(8).to_list()
    assert sum(len(answer(verbose.name, t)[0]) for t in texts) > sum(
        len(answer(terse.name, t)[0]) for t in texts
    )
    assert endpoint.answer_quality("an answer nobody wrote") is None


def _is_refusal(text: str) -> bool:
    from arena_assets.simulator.labeling import is_refusal

    return is_refusal(text)


def test_serve_arena_cli_serves_labels_from_a_truth_root(raw, sample):
    import re
    import subprocess
    import sys

    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "arena_assets.simulator.cli",
            "serve",
            "--port",
            "0",
            "--world-seed",
            "13",
            "--truth-root",
            str(raw),
            "--embedding-dim",
            "64",
            "--rate-empty",
            "0",
            "--rate-truncated",
            "0",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        base_url = re.search(r"(http://\S+/v1)", line).group(1)
        client = openai.OpenAI(base_url=base_url, api_key="sim", timeout=10, max_retries=0)
        vec = (
            client.embeddings.create(model="sim-embed-small", input=sample["text"][0])
            .data[0]
            .embedding
        )
        assert len(vec) == 64
        text = sample.filter("hard")["text"][0]
        got = ask(client, "sim-labeler-large", "criteria-v1", f"<prompt>{text}</prompt>")
        assert sum(got[c] for c in CRITERIA) >= 5
        calls = json.loads(
            urllib.request.urlopen(base_url.removesuffix("/v1") + "/_calls", timeout=10).read()
        )
        assert calls["total"] == 2
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_labeller_error_rates_are_configurable(raw, sample):
    ep = start_endpoint(seed=13, truth_root=raw, labelers={"exact": 0.0, "coin": 0.5})
    try:
        client = openai.OpenAI(base_url=ep.base_url, api_key="sim", timeout=10, max_retries=0)
        assert {"exact", "coin"} <= {m.id for m in client.models.list()}
        rows = sample.head(60)
        exact = [ask(client, "exact", "criteria-v1", f"<prompt>{t}</prompt>") for t in rows["text"]]
        assert all(
            g == {c: r[c] for c in CRITERIA_ANSWER}
            for g, r in zip(exact, rows.iter_rows(named=True))
        )
        coin = [ask(client, "coin", "criteria-v1", f"<prompt>{t}</prompt>") for t in rows["text"]]
        wrong = np.mean(
            [g[c] != r[c] for g, r in zip(coin, rows.iter_rows(named=True)) for c in CRITERIA]
        )
        assert 0.15 < wrong < 0.45
        with pytest.raises(openai.NotFoundError):
            client.chat.completions.create(
                model="sim-labeler-large", messages=[system("criteria-v1")]
            )
    finally:
        ep.stop()


def test_a_cut_long_prompt_gets_the_same_labels_with_or_without_the_truth_index(raw):
    """A raw root on S3 gives the endpoint no truth index; prompts with pasted material are
    longer than a client's cut, so the noisy labeller must answer the cut copy as it answers
    the full prompt through the index (found by the S3 demo test)."""
    from arena_assets.simulator import PromptTruthIndex
    from arena_assets.simulator.labeling import label_answer

    index = PromptTruthIndex.from_root(raw)
    long = read_prompt_truth(raw, MONTH).filter(pl.col("text").str.len_chars() > 4000)["text"]
    assert long.len() >= 10
    for text in long.head(40):
        cut = text[:4000]
        with_index = label_answer(
            "criteria-v1", f"<prompt>{cut}</prompt>", "sim-labeler-small", 0.18, index, False
        )
        without = label_answer(
            "criteria-v1", f"<prompt>{cut}</prompt>", "sim-labeler-small", 0.18, None, False
        )
        assert with_index == without


def test_prompt_sets_in_lmarena_formats_give_the_same_labels(client, raw, sample):
    """The simulated labeller answers the label prompt sets in LMArena's output formats
    (our default's JSON; the anchor-style set's lists, <score>, <decision>,
    <classification>), each label the same as the first contract's JSON, so the simulator
    scores every label against its truth whichever set is used; vision calls carry the
    image."""
    from arena_assets.labels.prompt_sets import ANCHOR_STYLE, load_prompt_set

    default, anchor = load_prompt_set(), load_prompt_set(ANCHOR_STYLE)

    def ask_set(ps, scope, prompt, answer="", images=()):
        out = {}
        for lt in ps.by_scope(scope):
            reply = (
                client.chat.completions.create(
                    model="sim-labeler-large",
                    temperature=0,
                    messages=lt.messages(prompt, answer, images),
                )
                .choices[0]
                .message.content
            )
            for tag, (value, ok) in lt.parse(reply).items():
                assert ok, (lt.id, reply)
                out[tag] = value
        return out

    for text in sample["text"].head(40):
        old = ask(client, "sim-labeler-large", "criteria-v1", f"<prompt>{text}</prompt>")
        for ps in (default, anchor):
            tags = ask_set(ps, "prompt", text)
            assert tags["criteria_v0.1"] == {c: old[c] for c in CRITERIA}
            assert tags["if_v0.1"] == {"if": old["if_score"] >= 4, "score": old["if_score"]}
            assert tags["math_v0.1"]["math"] == old["math"]
            assert tags["creative_writing_v0.1"]["creative_writing"] == old["creative_writing"]
    # each image prompt with the image its user sent: the tags asked with the text follow
    # the text (as the first contract's JSON), homework and diagram (asked of the image
    # alone, in both sets) what the image shows
    shown = pl.read_parquet(raw / "_truth" / "images" / f"{MONTH}.parquet")
    images = (
        read_prompt_truth(raw, MONTH)
        .filter("image")
        .join(shown.select("prompt_id", "sha256"), on="prompt_id")
        .unique("text", keep="first", maintain_order=True)
        .head(15)
    )
    alone = ("homework", "diagram")
    from_image = []
    for text, sha in images.select("text", "sha256").iter_rows():
        old = ask(client, "sim-labeler-large", "vision-v1", f"<prompt>{text}</prompt>")
        both = []
        for ps in (default, anchor):
            tags = ask_set(ps, "image", text, images=(f"sha256:{sha}",))
            with_text = [v for v in VISION_LABELS if v not in (*alone, "creative_writing")]
            assert {v: tags[f"{v}_v0.1"][v] for v in with_text} == {v: old[v] for v in with_text}
            assert (
                tags["creative_writing_vision_v0.1"]["creative_writing"] == old["creative_writing"]
            )
            both.append({v: tags[f"{v}_v0.1"][v] for v in alone})
        assert both[0] == both[1]  # the same image, the same labels, in either format
        from_image.append(both[0])
    truth = images.select([f"vision_{v}" for v in alone]).rows()
    agree = sum(
        got == dict(zip(alone, want, strict=True))
        for got, want in zip(from_image, truth, strict=True)
    )
    assert agree >= 13 and any(g["homework"] or g["diagram"] for g in from_image), agree
    for answer, want in (
        ("I'm sorry, but I can't help with that request.", "yes"),
        ("Sure: here it is.", "no"),
    ):
        for ps in (default, anchor):
            assert ask_set(ps, "answer", "Do it", answer)["refusal_v0.1"] == want


def test_embed_texts_names_a_cache_holding_two_vector_sizes(endpoint, tmp_path):
    """Cached vectors of two sizes under one model (two embedders served under one name)
    cannot make one matrix: one line naming the cache folder and the sizes, no call made;
    a cached row without a vector is asked again."""
    from arena_assets.llm import LLMEndpointError, LLMTask, ResponseCache, embed_texts, request_key
    from arena_assets.llm.embed import EMBED_VERSION
    from arena_assets.llm.plan import planning

    endpoint.set_faults(Faults())
    cache = ResponseCache(str(tmp_path), "emb")
    for text, size in (("first text", 8), ("second text", 16)):
        cache.put(
            request_key("sim-embed-small", text, {}, EMBED_VERSION),
            model="sim-embed-small",
            prompt_version=EMBED_VERSION,
            embedding=np.ones(size, np.float32),
        )
    cache.flush()
    task = LLMTask(
        model="sim-embed-small", base_url=endpoint.base_url, api_key="sim", max_retries=0
    )
    before = sum(endpoint.stats.values())
    with pytest.raises(LLMEndpointError) as err:
        embed_texts(
            task, ["first text", "second text", "third text"], ResponseCache(str(tmp_path), "emb")
        )
    assert (
        "\n" not in str(err.value)
        and str(tmp_path) in str(err.value)
        and "(8, 16)" in str(err.value)
    )
    assert sum(endpoint.stats.values()) == before
    # a row without a vector under an embedding key is no answer: the text is asked again
    other = ResponseCache(str(tmp_path), "no-vector")
    other.put(
        request_key("sim-embed-small", "first text", {}, EMBED_VERSION),
        model="sim-embed-small",
        prompt_version=EMBED_VERSION,
        content="not a vector",
    )
    other.flush()
    with planning() as plans:  # the plan counts the call the run makes
        embed_texts(task, ["first text"], ResponseCache(str(tmp_path), "no-vector"))
    assert (plans[0].calls, plans[0].cached) == (1, 0)
    vectors, report = embed_texts(task, ["first text"], ResponseCache(str(tmp_path), "no-vector"))
    assert (
        report.calls == 1 and vectors.shape[0] == 1 and abs(np.linalg.norm(vectors[0]) - 1) < 1e-6
    )


def test_embed_texts_reads_the_vectors_the_sdk_reads_and_names_a_faulty_reply(
    client, endpoint, tmp_path
):
    """``embed_texts`` posts through the client and decodes base64 itself: the same
    vectors (normalised) as the SDK's ``embeddings.create``; a reply with the wrong number
    of vectors, vectors of the wrong size or a cut body is one LLMEndpointError line."""
    from arena_assets.llm import LLMEndpointError, LLMTask, ResponseCache, embed_texts

    texts = [
        "zorbl quantum pickles",
        "tax forms for 1997",
        "a poem about rain",
        "tax forms for 1997",
    ]
    sdk = np.array(
        [
            d.embedding
            for d in client.embeddings.create(model="sim-embed-small", input=texts[:3]).data
        ]
    )
    sdk = sdk / np.linalg.norm(sdk, axis=1, keepdims=True)
    task = LLMTask(
        model="sim-embed-small", base_url=endpoint.base_url, api_key="sim", max_retries=0
    )
    ours, report = embed_texts(task, texts, ResponseCache(str(tmp_path / "ok"), "emb"))
    assert (
        np.allclose(ours[:3], sdk, atol=1e-6) and (ours[3] == ours[1]).all() and report.calls == 1
    )
    # garbage: 3-dimensional vectors, told apart from the cached ones
    for n, fault in enumerate(("garbage", "empty", "truncated")):
        endpoint.set_faults(Faults(script=[fault]))
        with pytest.raises(LLMEndpointError) as err:
            embed_texts(task, [*texts, f"new text {n}"], ResponseCache(str(tmp_path / "ok"), "emb"))
        assert endpoint.base_url in str(err.value) and "\n" not in str(err.value), fault
    endpoint.set_faults(Faults())  # nothing faulty was cached: the texts are asked again, and fit
    again, report = embed_texts(
        task, [*texts, "new text 0"], ResponseCache(str(tmp_path / "ok"), "emb")
    )
    assert again.shape == (5, ours.shape[1]) and report.calls == 1 and np.allclose(again[:4], ours)
