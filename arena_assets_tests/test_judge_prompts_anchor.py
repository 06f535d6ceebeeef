"""Under Arena-Hard-Auto's protocol names the judge receives the anchor's own text, character
for character: read from an arena-hard-auto checkout laid out from the byte-exact files in
``../shared/real/arena_hard_auto/`` (v0.1's ``config/judge_config.yaml``, v2's
``utils/judge_utils.py`` and ``config/arena-hard-v2.0.yaml``), rendered by the project's
code, and compared with the same texts read and filled independently here. The requests
are captured over HTTP by a recording endpoint, through the real ``openai`` client.

The published files hold no judging script, so v0.1's follow-up turn is read from a
stand-in ``gen_judgment.py`` written here with a sentence of the test's own: what is
checked is that the script's one constant user turn is what the judge receives.
"""

from __future__ import annotations

import ast
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import polars as pl
import pytest
import yaml

from arena_assets.judging.judge_prompts import PromptSetError, judge_prompts
from arena_assets.judging.protocol import OWN, OWN_V2, PROTOCOLS, V01, V2, get_protocol
from arena_assets.llm import LLMTask
from arena_assets.storage import Lake
from arena_assets_tests.test_bench_protocol import MONTH, bench_frame

FOLLOW_UP = "Test follow-up 41c7: now write the one verdict label you chose."
# inputs a careless fill would mangle: braces, placeholders of both versions, unicode
QUESTION = "Sort {answer_2} and {ANSWER_A} in Python?\n`{x}` — ünïcode ✓\\n"
ANSWER_A = "Use sorted({QUESTION}).\n\n```py\nprint({'a': 1})\n```\n"
ANSWER_B = "{question_1} A loop — {{not a placeholder}}"


def _anchor_file(real: Path, name: str) -> Path:
    return real / "arena_hard_auto" / name


@pytest.fixture
def checkout(real_data, tmp_path) -> Path:
    """An arena-hard-auto checkout's layout, its files linked to the shared copies."""
    root = tmp_path / "arena-hard-auto"
    (root / "config").mkdir(parents=True)
    (root / "utils").mkdir()
    for src, dst in (
        ("judge_config_v0.1.yaml", "config/judge_config.yaml"),
        ("arena-hard-v2.0.yaml", "config/arena-hard-v2.0.yaml"),
        ("judge_utils.py", "utils/judge_utils.py"),
    ):
        (root / dst).symlink_to(_anchor_file(real_data, src))
    (root / "gen_judgment.py").write_text(
        "def judgment(conv, prompt):\n"
        '    conv.append({"role": "user", "content": prompt})\n'
        f'    conv.append({{"role": "user", "content": {FOLLOW_UP!r}}})\n'
    )
    return root


# --- the anchor's texts, read here without the project's reader -------------------------


def v01_texts(real: Path) -> dict:
    cfg = yaml.safe_load(_anchor_file(real, "judge_config_v0.1.yaml").read_text())
    return {"system": cfg["system_prompt"], "templates": cfg["prompt_template"], "cfg": cfg}


def v2_texts(real: Path) -> dict:
    """JUDGE_SETTINGS by substituting each module-level string constant into the literal."""
    tree = ast.parse(_anchor_file(real, "judge_utils.py").read_text())
    consts: dict[str, object] = {}

    class Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            return ast.Constant(consts[node.id]) if node.id in consts else node

    for node in tree.body:
        if isinstance(node, ast.Assign):
            name = node.targets[0].id
            consts[name] = ast.literal_eval(Inline().visit(node.value))
    cfg = yaml.safe_load(_anchor_file(real, "arena-hard-v2.0.yaml").read_text())
    return {"settings": consts["JUDGE_SETTINGS"], "og": consts["OG_ARENA_HARD_PROMPT"], "cfg": cfg}


def fill(template: str, values: dict[str, str]) -> str:
    """One pass over the template, each placeholder replaced by its value (what
    ``str.format`` does for a template without doubled braces)."""
    assert "{{" not in template and "}}" not in template
    return re.sub(r"\{(\w+)\}", lambda m: values[m[1]], template)


# --- the rendered request -------------------------------------------------------------


def test_v01_request_is_the_anchors_text(real_data, checkout) -> None:
    want = v01_texts(real_data)
    prompts = judge_prompts(V01, checkout)
    got = prompts.messages(QUESTION, ANSWER_A, ANSWER_B, V01)
    values = {"question_1": QUESTION, "answer_1": ANSWER_A, "answer_2": ANSWER_B}
    assert got == [
        {"role": "system", "content": want["system"]},
        *({"role": "user", "content": fill(t, values)} for t in want["templates"]),
    ]
    assert prompts.follow_up == FOLLOW_UP
    assert prompts.baselines == {V01: want["cfg"]["baseline_model"]}
    assert "config/judge_config.yaml" in prompts.source and "gen_judgment.py" in prompts.source


def test_v2_requests_are_the_anchors_text_per_category(real_data, checkout) -> None:
    want = v2_texts(real_data)
    prompts = judge_prompts("arena-hard-v2.0", checkout)  # the anchor's folder name
    values = {"QUESTION": QUESTION, "ANSWER_A": ANSWER_A, "ANSWER_B": ANSWER_B}
    for category in ("hard_prompt", "creative_writing"):
        got = prompts.messages(QUESTION, ANSWER_A, ANSWER_B, category)
        assert got == [
            {"role": "system", "content": want["settings"][category]["system_prompt"]},
            {"role": "user", "content": fill(want["cfg"]["prompt_template"], values)},
        ]
    # creative writing has a system prompt of its own; hard prompts the OG one, which is
    # v0.1's system prompt too
    systems = prompts.systems
    assert systems["creative_writing"] != systems["hard_prompt"] == want["og"]
    assert want["og"] == v01_texts(real_data)["system"]
    assert prompts.follow_up == ""
    assert dict(prompts.baselines) == {
        c: want["settings"][c]["baseline"] for c in ("hard_prompt", "creative_writing")
    }


def test_every_other_setting_is_the_anchors(real_data, checkout) -> None:
    """Caps, attempts, temperature and verdict patterns of the anchor's configs are the
    protocols' own; the verdict rule read from the configs' patterns (the anchor's
    get_score, restated) gives the protocols' verdicts."""
    v01, v2 = v01_texts(real_data)["cfg"], v2_texts(real_data)["cfg"]
    assert (v01["max_tokens"], v01["number_of_judgment_attempts"]) == (
        PROTOCOLS[V01].judge_max_tokens,
        PROTOCOLS[V01].attempts,
    )
    assert (v2["max_tokens"], 1) == (PROTOCOLS[V2].judge_max_tokens, PROTOCOLS[V2].attempts)
    assert (
        v01["temperature"]
        == v2["temperature"]
        == LLMTask(model="j", base_url="http://x/v1").temperature
        == 0
    )

    def v01_score(text: str) -> str | None:
        found = {m for m in re.findall(v01["regex_pattern"], text) if m}
        return found.pop() if len(found) == 1 else None

    def v2_score(text: str) -> str | None:
        for pattern in v2["regex_patterns"]:
            found = [m for m in re.findall(pattern, text.upper()) if m]
            if found:
                return found[-1]
        return None

    texts = ["x [[A>B]] y", "[[B>>A]] then [[A=B]]", "only [b>a] here", "[[A>B]] and [[A>B]]", "no"]
    spell = {"B<A": "A>B", "A<B": "B>A"}
    for text in texts:
        assert get_protocol(V01).parse(text)[0] == v01_score(text)
        v2_label = v2_score(text)
        assert get_protocol(V2).parse(text)[0] == spell.get(v2_label, v2_label)


def test_without_a_checkout_the_anchor_protocols_fail_in_one_line(tmp_path) -> None:
    for name, own in ((V01, OWN), (V2, OWN_V2)):
        with pytest.raises(PromptSetError) as exc:
            judge_prompts(name, "")
        line = str(exc.value)
        assert "\n" not in line and "ARENA_ARENA_HARD_DIR is empty" in line
        assert f"ARENA_BENCH_PROTOCOL={own}" in line
    with pytest.raises(PromptSetError, match=r"has no config/judge_config\.yaml"):
        judge_prompts(V01, tmp_path)
    with pytest.raises(PromptSetError, match=r"is not a folder"):
        judge_prompts(V2, tmp_path / "nowhere")
    # the project's own protocols need none
    assert judge_prompts(OWN, "").systems and judge_prompts(OWN_V2, None).systems


def test_a_checkout_the_bench_cannot_fill_is_refused(real_data, checkout) -> None:
    cfg = checkout / "config" / "judge_config.yaml"
    text = cfg.read_text().replace("{answer_2}", "{answer_2}\n{ref_answer_1}")
    cfg.unlink()
    cfg.write_text(text)
    with pytest.raises(PromptSetError, match=r"asks for ref_answer_1"):
        judge_prompts(V01, checkout)
    (checkout / "gen_judgment.py").write_text("x = 1\n")
    cfg.unlink()
    cfg.symlink_to(_anchor_file(real_data, "judge_config_v0.1.yaml"))
    with pytest.raises(PromptSetError, match=r"expected one constant user turn"):
        judge_prompts(V01, checkout)


# --- the requests on the wire ---------------------------------------------------------


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


def test_judge_prompts_command_shows_what_the_judge_receives(
    real_data, checkout, capsys, monkeypatch
) -> None:
    from arena_assets.cli import main

    monkeypatch.delenv("ARENA_ARENA_HARD_DIR", raising=False)
    monkeypatch.chdir(checkout.parent)  # no .env here
    assert (
        main(["judge-prompts", "--protocol", V2, "--arena-hard-dir", str(checkout), "--json"]) == 0
    )
    shown = json.loads(capsys.readouterr().out)
    want = v2_texts(real_data)
    assert shown["sha256"] == judge_prompts(V2, checkout).sha256
    assert (
        shown["systems"]["creative_writing"]
        == want["settings"]["creative_writing"]["system_prompt"]
    )
    assert shown["templates"] == [want["cfg"]["prompt_template"]]
    # the flag's default is the setting, read when the command runs
    monkeypatch.setenv("ARENA_ARENA_HARD_DIR", str(checkout))
    assert main(["judge-prompts", "--protocol", V01]) == 0
    text = capsys.readouterr().out
    assert f"sha256: {judge_prompts(V01, checkout).sha256}" in text and FOLLOW_UP in text
    monkeypatch.setenv("ARENA_ARENA_HARD_DIR", "")
    assert main(["judge-prompts", "--protocol", V01]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ARENA_ARENA_HARD_DIR is empty" in err
