"""Response files in vLLM `run-batch`'s published layout, written here by hand (not by our
exporter, not by the simulated arena's Batch API): the reader takes each kind of line it
writes, and `arena-assets llm import-batch` fills the cache from such a file so that the
month's run asks only what the file did not answer, and gives online mode's rows.

vLLM's layout (``vllm/entrypoints/openai/run_batch.py``, ``BatchRequestOutput``): one line a
request, ``{"id": "vllm-<uuid>", "custom_id", "response": {"status_code", "request_id":
"vllm-batch-<uuid>", "body"}, "error"}``; ``body`` is the chat completion (or embedding list)
the server would have sent, and a failed request has no body, its status code and the
server's ``ErrorResponse`` as the error (``{object, message, type, param, code}`` in older
releases, ``{"error": {message, type, param, code}}`` in newer ones).
"""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from arena_assets.cli import main as cli
from arena_assets.llm.batch_files import read_output
from arena_assets.llm.offline import read_responses
from arena_assets.simulator import simulate_months
from arena_assets.simulator.faults import Faults
from arena_assets.simulator.shared import simulated_endpoint
from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, with_simulated_arena
from arena_assets_tests.harness import materialize

MONTH = "2024-01"
UPSTREAM = "raw_logs,raw_rejects,conversations"


def vllm_ok(custom_id: str, body: dict) -> dict:
    """A line vLLM's run-batch writes for an answered request."""
    return {
        "id": f"vllm-{uuid.uuid4().hex}",
        "custom_id": custom_id,
        "response": {
            "status_code": 200,
            "request_id": f"vllm-batch-{uuid.uuid4().hex}",
            "body": body,
        },
        "error": None,
    }


def vllm_error(custom_id: str, message: str, nested: bool) -> dict:
    """A line vLLM's run-batch writes for a request its server refused."""
    info = {"message": message, "type": "BadRequestError", "param": None, "code": 400}
    return {
        "id": f"vllm-{uuid.uuid4().hex}",
        "custom_id": custom_id,
        "response": {
            "status_code": 400,
            "request_id": f"vllm-batch-{uuid.uuid4().hex}",
            "body": None,
        },
        "error": {"error": info} if nested else {"object": "error", **info},
    }


def vllm_chat_body(content: str, model: str = "Qwen/Qwen2.5-7B-Instruct") -> dict:
    """vLLM's ChatCompletionResponse, every field it writes."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": 1718000000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "reasoning_content": None,
                    "content": content,
                    "tool_calls": [],
                },
                "logprobs": None,
                "finish_reason": "stop",
                "stop_reason": None,
            }
        ],
        "usage": {
            "prompt_tokens": 41,
            "total_tokens": 50,
            "completion_tokens": 9,
            "prompt_tokens_details": None,
        },
        "prompt_logprobs": None,
    }


def _lines(*records: object) -> bytes:
    return b"".join((r if isinstance(r, bytes) else orjson.dumps(r)) + b"\n" for r in records)


# --- the reader, on hand-written lines --------------------------------------------------


def test_the_reader_takes_every_line_vllm_writes():
    data = _lines(
        vllm_ok("a", vllm_chat_body("1. yes")),
        vllm_error("b", "maximum context length is 4096 tokens", nested=False),
        vllm_error("c", "The model `x` does not exist.", nested=True),
        # make_error_request_output: an unsupported url, the error a plain string
        {
            "id": "vllm-1",
            "custom_id": "d",
            "response": {"status_code": 400, "request_id": "vllm-batch-1", "body": None},
            "error": "URL /v1/completions was used. Supported endpoints: ...",
        },
    )
    got = list(read_output(data))
    assert [cid for cid, _, _ in got] == ["a", "b", "c", "d"]
    (_, body, error) = got[0]
    assert error is None and body["choices"][0]["message"]["content"] == "1. yes"
    assert got[1][1:] == (None, "400: maximum context length is 4096 tokens")
    assert got[2][1:] == (None, "400: The model `x` does not exist.")  # not the JSON around it
    assert got[3][1] is None and "Supported endpoints" in got[3][2]


def test_the_reader_names_what_it_cannot_take():
    data = _lines(
        b"",  # blank: no line
        b"{not json",
        b"[1, 2]",
        {"id": "x", "response": {"status_code": 200, "body": vllm_chat_body("1")}},
        {
            "custom_id": "e",
            "response": {
                "status_code": 500,
                "body": {"error": {"code": "server_error", "message": "upstream died"}},
            },
            "error": None,
        },
        {"custom_id": "f", "response": {"status_code": 200, "body": None}, "error": None},
        {
            "custom_id": "g",
            "response": {"status_code": 200, "body": orjson.dumps(vllm_chat_body("2")).decode()},
        },
        {"custom_id": "g", "response": {"status_code": 200, "body": vllm_chat_body("3")}},
    )
    responses, others = read_responses(data)
    assert set(responses) == {"e", "f", "g"}  # each custom_id once
    assert responses["e"] == (None, "HTTP 500: server_error: upstream died")
    assert responses["f"] == (None, "no response body")
    body, error = responses["g"]  # the first line wins; a body kept as JSON text is read
    assert error is None and body["choices"][0]["message"]["content"] == "2"
    kinds = sorted(kind for kind, _ in others.values())
    assert kinds == ["duplicate", "unreadable", "unreadable", "unreadable"]
    assert sum(1 for _ in read_output(data)) == 7  # every non-blank line has its outcome


# --- import-batch with a vLLM file, against a month ----------------------------------------


@pytest.fixture(scope="module")
def raw(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("raw")
    simulate_months(root, [MONTH], 250, seed=7)
    return root


def _use(monkeypatch, raw: Path, lake: Path) -> dict[str, str]:
    env = with_simulated_arena({**arena_env_values(lake), "ARENA_RAW_ROOT": str(raw)})
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def _answer_as_vllm_would(base_url: str, requests: Path, encoding_format: str | None) -> list:
    """Each request line sent to a server, one by one, as vLLM's run-batch does, and its
    answer written in vLLM's output layout."""
    out = []
    with httpx.Client(base_url=base_url, timeout=30) as http:
        for raw_line in requests.read_bytes().splitlines():
            line = orjson.loads(raw_line)
            body = line["body"] | ({"encoding_format": encoding_format} if encoding_format else {})
            reply = http.post(line["url"].removeprefix("/v1"), json=body)
            reply.raise_for_status()
            out.append(vllm_ok(line["custom_id"], reply.json()))
    return out


def test_import_of_a_vllm_output_file_fills_the_cache(monkeypatch, raw, tmp_path, capsys):
    """The labeller's month exported, answered line by line in vLLM's layout (three lines
    spoilt: an answer no parser takes, both forms of vLLM's error), imported: the month's
    run asks exactly those three and writes online mode's rows; the embeddings' vectors,
    as vLLM writes them (lists of floats), are taken whole."""
    env = _use(monkeypatch, raw, tmp_path / "online")
    ep = simulated_endpoint(env["ARENA_RAW_ROOT"], int(env["ARENA_SIM_WORLD_SEED"]))
    ep.set_faults(Faults())
    assert materialize(MONTH, f"{UPSTREAM},topic_labels").success
    online = Lake(str(tmp_path / "online" / "lake")).read("topic_labels", MONTH)

    _use(monkeypatch, raw, tmp_path / "vllm")
    assert materialize(MONTH, UPSTREAM).success
    requests, answers, report = (tmp_path / n for n in ("req.jsonl", "ans.jsonl", "rep.jsonl"))
    assert cli(["llm", "export-batch", "--task", "labeler", "--month", MONTH, "--out", str(requests)]) == 0  # fmt: skip
    out = _answer_as_vllm_would(ep.base_url, requests, None)
    spoilt = [x["custom_id"] for x in out[:3]]
    out[0]["response"]["body"]["choices"][0]["message"]["content"] = "I cannot say."
    out[1] = vllm_error(spoilt[1], "prompt too long", nested=False)
    out[2] = vllm_error(spoilt[2], "prompt too long", nested=True)
    answers.write_bytes(_lines(*out))
    capsys.readouterr()
    ep.reset_counts()
    assert cli(["llm", "import-batch", str(answers), "--task", "labeler", "--month", MONTH, "--report", str(report)]) == 0  # fmt: skip
    said = capsys.readouterr().out
    outcomes = pl.DataFrame([orjson.loads(x) for x in report.read_bytes().splitlines()])
    by_id = dict(zip(outcomes["custom_id"], outcomes["outcome"]))
    assert outcomes.height == len(out)  # every line, once
    assert [by_id[c] for c in spoilt] == ["parse_failed", "failed", "failed"]
    assert (outcomes["outcome"] == "accepted").sum() == len(out) - 3
    assert f"{len(out) - 3:,} accepted" in said
    assert ep.call_count() == 0  # an import asks nothing

    ep.reset_counts()
    assert materialize(MONTH, "topic_labels").success
    assert ep.call_count(route="chat/completions") == 3  # what the file did not answer
    assert_frame_equal(online, Lake(str(tmp_path / "vllm" / "lake")).read("topic_labels", MONTH))

    embed_requests, embed_answers = tmp_path / "emb.jsonl", tmp_path / "emb-ans.jsonl"
    assert cli(["llm", "export-batch", "--task", "embed", "--month", MONTH, "--out", str(embed_requests)]) == 0  # fmt: skip
    vectors = _answer_as_vllm_would(ep.base_url, embed_requests, "float")
    assert vectors and isinstance(vectors[0]["response"]["body"]["data"][0]["embedding"], list)
    embed_answers.write_bytes(_lines(*vectors))
    capsys.readouterr()
    assert cli(["llm", "import-batch", str(embed_answers), "--task", "embed", "--month", MONTH]) == 0  # fmt: skip
    assert f"{len(vectors):,} accepted" in capsys.readouterr().out
    assert cli(["llm", "export-batch", "--task", "embed", "--month", MONTH, "--out", str(embed_requests)]) == 0  # fmt: skip
    assert embed_requests.read_bytes().strip() == b""  # nothing pending
