"""The requests a judge receives on the wire under Arena-Hard-Auto's protocol names, captured
by a recording OpenAI-compatible endpoint through the real ``openai`` client: equal,
character for character, to the anchor's texts (read and filled in
``test_judge_prompts_anchor``), v0.1's follow-up in the same conversation, v2's system
prompt and baseline per question category; the export writes the same request."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest

from arena_assets.judging.judge_prompts import judge_prompts
from arena_assets.judging.protocol import V01, V2
from arena_assets.llm import LLMTask
from arena_assets.storage import Lake
from arena_assets_tests.test_bench_protocol import MONTH, bench_frame
from arena_assets_tests.test_judge_prompts_anchor import (
    ANSWER_A,
    ANSWER_B,
    FOLLOW_UP,
    fill,
    make_checkout,
    v01_texts,
    v2_texts,
)


@pytest.fixture
def checkout(real_data, tmp_path) -> Path:
    return make_checkout(real_data, tmp_path)


class Recorder(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint that records each request's messages; a first turn
    whose answers' hash is odd gets a reply without a label (so v0.1 continues it)."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.requests: list[list[dict]] = []
        self.lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: Recorder

    def log_message(self, *args) -> None:
        pass

    def _send(self, body: dict) -> None:
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:  # the client's model listing
        self._send({"object": "list", "data": [{"id": "judge-x", "object": "model"}]})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        msgs = body["messages"]
        with self.server.lock:
            self.server.requests.append(msgs)
        if len(msgs) > 2 and msgs[-2]["role"] == "assistant":
            content = "Then: [[B>A]]"
        elif sum(map(ord, msgs[-1]["content"])) % 2:
            content = "Let me think about both answers"
        else:
            content = "My final verdict is [[A>B]]"
        self._send(
            {
                "id": "r",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        )


@pytest.fixture
def recorder():
    srv = Recorder()
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield srv
    srv.shutdown()
    srv.server_close()


def _answers(lake: Lake, models: list[str], n: int) -> None:
    from arena_assets.judging.answers import answer_features

    rows = [
        {
            "question_id": f"q{i:02d}",
            "bench_kind": "text",
            "model": m,
            "answer": f"{ANSWER_A if j % 2 else ANSWER_B} ({m}, {i})",
            "reasoning": "",
            "status": "ok",
            "error": None,
            "hit_token_cap": False,
        }
        for i in range(n)
        for j, m in enumerate(models)
    ]
    lake.write("model_answers", MONTH, answer_features(pl.DataFrame(rows)))


def _judge(recorder: Recorder, tmp_path: Path, protocol: str, checkout: Path, models: list[str]):
    from arena_assets.defs.bench.resources import BenchSettings
    from arena_assets.pipeline.bench import judgments_month

    settings = BenchSettings(
        protocol=protocol,
        arena_hard_dir=str(checkout),
        candidates=json.dumps([{"name": m, "base_url": "http://x/v1"} for m in models]),
    )
    lake = Lake(str(tmp_path / "lake"))
    bench_frame(lake, 6)  # question 0 and 3 creative writing, the others coding
    _answers(lake, models, 6)
    task = LLMTask(model="judge-x", base_url=recorder.base_url, api_key="k", max_retries=0)
    step = judgments_month(
        lake,
        MONTH,
        [("judge-x", task)],
        settings.baselines(),  # empty ARENA_BENCH_BASELINE: the anchor's own
        cache_root=str(tmp_path / "cache"),
        protocol=settings.bench_protocol(),
        prompts=settings.judge_prompts(),
    )
    return lake, step, dict(zip(*lake.read("bench_prompts", MONTH).select("prompt_id", "prompt")))


def test_v01_judge_receives_the_anchors_text_and_follow_up(real_data, checkout, recorder, tmp_path):
    from arena_assets.judging.layout import write_layout
    from arena_assets.release import bench_release_from_lake

    want = v01_texts(real_data)
    base = want["cfg"]["baseline_model"]
    lake, step, question = _judge(recorder, tmp_path, V01, checkout, [base, "cand-x"])
    answers = {
        (q, m): a
        for q, m, a in lake.read("model_answers", MONTH)
        .select("question_id", "model", "answer")
        .iter_rows()
    }
    expected = {}
    for g in step.judgments.iter_rows(named=True):
        values = {
            "question_1": question[g["question_id"]],
            "answer_1": answers[g["question_id"], g["model_a"]],
            "answer_2": answers[g["question_id"], g["model_b"]],
        }
        first = [
            {"role": "system", "content": want["system"]},
            *({"role": "user", "content": fill(t, values)} for t in want["templates"]),
        ]
        expected[json.dumps(first)] = g
    firsts = [r for r in recorder.requests if r[-1]["role"] == "user" and len(r) == 2]
    seconds = [r for r in recorder.requests if len(r) > 2]
    assert sorted(json.dumps(r) for r in firsts) == sorted(expected)  # every game, once
    assert seconds and all(
        json.dumps(r[:2]) in expected
        and r[2] == {"role": "assistant", "content": "Let me think about both answers"}
        and r[3] == {"role": "user", "content": FOLLOW_UP}
        and len(r) == 4
        for r in seconds
    )
    assert step.judgments.filter(pl.col("attempts") == 2).height == len(seconds)
    assert step.judgments["parsed"].all() and (step.judgments["baseline"] == base).all()
    # the rows name the texts' hash; the metadata's description names their source
    sha = judge_prompts(V01, checkout).sha256
    assert step.judgments["prompt_sha256"].unique().to_list() == [sha]
    assert step.prompts.describe()["source"].startswith(str(checkout / "config"))
    # an export writes each game's request as the judge received it
    release = bench_release_from_lake(lake, MONTH)
    assert release.protocol == V01 and release.judge_prompts.sha256 == sha
    out = tmp_path / "export"
    write_layout(
        str(out),
        release.prompts,
        release.answers,
        release.judgments,
        protocol=V01,
        judge_prompts=release.judge_prompts,
    )
    games = [
        g
        for line in (out / "model_judgment" / "judge-x" / "cand-x.jsonl").read_text().splitlines()
        for g in json.loads(line)["games"]
    ]
    assert {g["user_prompt"] for g in games} == {json.loads(k)[1]["content"] for k in expected}
    with pytest.raises(ValueError, match="were judged with prompt set"):
        write_layout(
            str(tmp_path / "wrong"),
            release.prompts,
            release.answers,
            release.judgments,
            protocol=V01,
        )  # the project's wording: refused


def test_v2_judge_receives_each_categorys_text_and_baseline(
    real_data, checkout, recorder, tmp_path
):
    want = v2_texts(real_data)
    bases = {c: want["settings"][c]["baseline"] for c in ("hard_prompt", "creative_writing")}
    models = sorted({*bases.values(), "cand-x"})
    lake, step, question = _judge(recorder, tmp_path, V2, checkout, models)
    answers = {
        (q, m): a
        for q, m, a in lake.read("model_answers", MONTH)
        .select("question_id", "model", "answer")
        .iter_rows()
    }
    expected = []
    for g in step.judgments.iter_rows(named=True):
        assert g["baseline"] == bases[g["category"]]
        values = {
            "QUESTION": question[g["question_id"]],
            "ANSWER_A": answers[g["question_id"], g["model_a"]],
            "ANSWER_B": answers[g["question_id"], g["model_b"]],
        }
        expected.append(
            [
                {"role": "system", "content": want["settings"][g["category"]]["system_prompt"]},
                {"role": "user", "content": fill(want["cfg"]["prompt_template"], values)},
            ]
        )
    assert sorted(map(json.dumps, recorder.requests)) == sorted(map(json.dumps, expected))
    assert set(step.judgments["category"]) == {"hard_prompt", "creative_writing"}
    assert set(step.judgments["attempts"]) == {1}  # v2 asks once: the unlabelled stay unparsed
    assert not step.judgments["parsed"].all()
