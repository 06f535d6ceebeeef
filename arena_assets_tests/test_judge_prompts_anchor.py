"""Under Arena-Hard-Auto's protocol names the judge receives the anchor's own text, character
for character: read from an arena-hard-auto checkout laid out from the byte-exact files in
``../shared/real/arena_hard_auto/`` (v0.1's ``config/judge_config.yaml``, v2's
``utils/judge_utils.py`` and ``config/arena-hard-v2.0.yaml``), rendered by the project's
code, and compared with the same texts read and filled independently here
(``test_judge_prompts_requests`` checks the same on the wire).

The published files hold no judging script, so v0.1's follow-up turn is read from a
stand-in ``gen_judgment.py`` written here with a sentence of the test's own: what is
checked is that the script's one constant user turn is what the judge receives.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
import yaml

from arena_assets.judging.judge_prompts import PromptSetError, judge_prompts
from arena_assets.judging.protocol import OWN, OWN_V2, PROTOCOLS, V01, V2, get_protocol
from arena_assets.llm import LLMTask

FOLLOW_UP = "Test follow-up 41c7: now write the one verdict label you chose."
# inputs a careless fill would mangle: braces, placeholders of both versions, unicode
QUESTION = "Sort {answer_2} and {ANSWER_A} in Python?\n`{x}` — ünïcode ✓\\n"
ANSWER_A = "Use sorted({QUESTION}).\n\n```py\nprint({'a': 1})\n```\n"
ANSWER_B = "{question_1} A loop — {{not a placeholder}}"


def _anchor_file(real: Path, name: str) -> Path:
    return real / "arena_hard_auto" / name


def make_checkout(real: Path, tmp_path: Path) -> Path:
    """An arena-hard-auto checkout's layout, its files linked to the shared copies."""
    root = tmp_path / "arena-hard-auto"
    (root / "config").mkdir(parents=True)
    (root / "utils").mkdir()
    for src, dst in (
        ("judge_config_v0.1.yaml", "config/judge_config.yaml"),
        ("arena-hard-v2.0.yaml", "config/arena-hard-v2.0.yaml"),
        ("judge_utils.py", "utils/judge_utils.py"),
    ):
        (root / dst).symlink_to(_anchor_file(real, src))
    (root / "gen_judgment.py").write_text(
        "def judgment(conv, prompt):\n"
        '    conv.append({"role": "user", "content": prompt})\n'
        f'    conv.append({{"role": "user", "content": {FOLLOW_UP!r}}})\n'
    )
    return root


@pytest.fixture
def checkout(real_data, tmp_path) -> Path:
    return make_checkout(real_data, tmp_path)


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
