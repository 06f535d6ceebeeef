"""`dedup_key` gives the same key as its first, plainer formulation for every input.

The reference below is the formulation the keys were defined with (kept here, not in the
package): NFKC, lowercase, ``\\s+`` -> " ", one ``^...|...$`` edge-punctuation pattern,
blake2b of every row. The package's faster version must agree on hand-written edge cases,
on a simulated month's first prompts and on real arena prompts.
"""

from __future__ import annotations

import hashlib
import json
import random
import unicodedata
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.clean.conversations import NFKC_STABLE_RANGES, dedup_key, dedup_keys, nfkc
from arena_assets.simulator import simulate_months


def reference_keys(prompts: list[str | None], images: list[list[str] | None]) -> list[str]:
    frame = pl.DataFrame(
        {"prompt": prompts, "images": images},
        schema={"prompt": pl.String, "images": pl.List(pl.String)},
    )
    text = (
        pl.col("prompt")
        .fill_null("")
        .str.normalize("NFKC")
        .str.to_lowercase()
        .str.replace_all(r"\s+", " ")
        .str.replace_all(r"^[\p{P}\p{S}\s]+|[\p{P}\p{S}\s]+$", "")
    )
    keyed = frame.select(
        pl.when(text == "")
        .then(pl.lit("images:") + pl.col("images").list.join(",").fill_null(""))
        .otherwise(text)
    ).to_series()
    return [hashlib.blake2b(t.encode(), digest_size=8).hexdigest() for t in keyed]


def package_keys(prompts: list[str | None], images: list[list[str] | None]) -> list[str]:
    frame = pl.DataFrame(
        {"prompt": prompts, "images": images},
        schema={"prompt": pl.String, "images": pl.List(pl.String)},
    )
    by_expr = frame.select(dedup_key(pl.col("prompt"), pl.col("images"))).to_series().to_list()
    by_series = dedup_keys(frame["prompt"], frame["images"]).to_list()
    assert by_expr == by_series
    return by_expr


EDGE_CASES: list[tuple[str | None, list[str] | None]] = [
    (None, None),
    (None, []),
    (None, ["img-a"]),
    (None, ["img-a", "img-b"]),
    (None, [None]),
    ("", None),
    ("", ["img-a"]),
    (" ", ["img-a"]),
    ("?!", ["img-b"]),
    ("...", None),
    ("!!!???", []),
    ("   \t\n ", ["img-c", "img-d"]),
    ("🙂", None),
    ("🙂🙂 ✨", ["img-e"]),
    ("-- ~~ ** ##", None),
    ("«»„“", None),
    ("$ € £ ¥ ₿", None),
    ("hello", None),
    ("Hello", ["img-a"]),
    ("  HELLO  ", None),
    ("hello!", None),
    ("¡hola!", None),
    ("¿Qué tal?", None),
    ("hello\u00a0world", None),
    ("hello\u2003world", None),
    ("hello\u3000world", None),
    ("hello\u200bworld", None),
    ("hello\u2028world", None),
    ("hello\u0085world", None),
    ("hello \t\r\n world", None),
    ("a\x0bb\x0cc", None),
    ("a  b", None),
    (" a b ", None),
    ("\ta b", None),
    ("a \tb", None),
    ("a\t b", None),
    ("ﬁle ﬂow", None),
    ("Ｆｕｌｌｗｉｄｔｈ　ＴＥＸＴ！", None),
    ("①②③ ⅷ ㍿", None),
    ("x² + y³ = z½", None),
    ("ｶﾀｶﾅ ﾊﾝｶｸ", None),
    ("e\u0301 vs é", None),
    ("Å vs Å", None),
    ("ΣΊΣΥΦΟΣ", None),
    ("İstanbul ı I", None),
    ("Straße STRASSE", None),
    ("ǅ ǈ ǋ", None),
    ("Привет, мир!", None),
    ("你好，世界！", None),
    ("こんにちは。", None),
    ("안녕하세요!", None),
    ("مرحبا بالعالم؟", None),
    ("שלום עולם!", None),
    ("नमस्ते दुनिया।", None),
    ("สวัสดีชาวโลก", None),
    ("mixed 中文 и русский + English!!", None),
    ("🙂 smile 🙂", None),
    ("👩‍👩‍👧 family", None),
    ("🇫🇷 flag", None),
    ("\u200d\u200d", ["img-f"]),
    ("<EMAIL> please", None),
    ("```code```", None),
    ("a\u0300\u0301\u0302", None),
    ("\U0001d400\U0001d401 math bold", None),
    ("\ufeffbom start", None),
    ("trailing\ufeff", None),
]


def test_dedup_key_matches_reference_on_hand_written_edge_cases() -> None:
    prompts, images = zip(*EDGE_CASES, strict=True)
    assert package_keys(list(prompts), list(images)) == reference_keys(list(prompts), list(images))
    keys = package_keys(list(prompts), list(images))
    # what the cases mean: images decide when nothing textual is left, never otherwise
    by_case = dict(zip(range(len(keys)), keys))
    assert by_case[0] == by_case[1] == by_case[5] == by_case[9]  # nothing at all
    assert by_case[2] == by_case[6] == by_case[7] != by_case[8]  # images only
    assert by_case[17] == by_case[18] == by_case[19] == by_case[20]  # hello variants


def test_dedup_key_of_no_rows() -> None:
    assert package_keys([], []) == []


@pytest.fixture(scope="module")
def simulated_first_prompts(tmp_path_factory: pytest.TempPathFactory) -> tuple[list, list]:
    out = tmp_path_factory.mktemp("sim")
    simulate_months(out, ["2024-05"], 1_500, seed=5)
    prompts, images = [], []
    for path in sorted((out / "2024-05").glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # the simulator's planted junk lines
            if not isinstance(event, dict):
                continue
            states = [event.get("state"), *(event.get("states") or [])]
            for state in filter(None, states):
                if not isinstance(state, dict) or not isinstance(state.get("messages"), list):
                    continue
                users = [
                    m for m in state["messages"] if isinstance(m, dict) and m.get("role") == "user"
                ]
                if users and isinstance(users[0].get("content"), str):
                    prompts.append(users[0]["content"])
                    images.append(users[0].get("images"))
    return prompts, images


def test_dedup_key_matches_reference_on_a_simulated_month(simulated_first_prompts) -> None:
    prompts, images = simulated_first_prompts
    assert len(prompts) > 1_000 and any(images)
    assert package_keys(prompts, images) == reference_keys(prompts, images)


def test_dedup_key_matches_reference_on_real_prompts(real_data: Path) -> None:
    prompts: list[str | None] = []
    for line in (
        (real_data / "battles/clean_battles_2024_full_conversations.jsonl").read_text().splitlines()
    ):
        prompts += [m["content"] for m in json.loads(line)["conversation_a"] if m["role"] == "user"]
    for line in (real_data / "arena_hard_v0.1/question.jsonl").read_text().splitlines():
        prompts.append(json.loads(line)["prompt"])
    vision = json.loads((real_data / "vision/bench_candidate_prompts.json").read_text())
    prompts += [row[vision["columns"].index("post_processed_question")] for row in vision["data"]]
    images = [None] * len(prompts)
    assert len(prompts) > 600
    assert package_keys(prompts, images) == reference_keys(prompts, images)


def test_nfkc_stable_ranges_hold_only_characters_nfkc_leaves_alone() -> None:
    """The quick-check conditions, per code point: assigned, its own NFKC form (Python's and
    polars' normaliser), combining class 0, never the second of a canonical composition."""
    seconds = {0x1161 + i for i in range(21)} | {0x11A8 + i for i in range(27)}  # Hangul V, T
    for cp in range(0x110000):
        decomposition = unicodedata.decomposition(chr(cp)).split()
        if len(decomposition) == 2 and not decomposition[0].startswith("<"):
            seconds.add(int(decomposition[1], 16))
    chars = [chr(cp) for a, b in NFKC_STABLE_RANGES for cp in range(a, b + 1)]
    assert len(chars) > 30_000
    by_polars = pl.Series(chars).str.normalize("NFKC").to_list()
    bad = [
        hex(ord(c))
        for c, p in zip(chars, by_polars)
        if unicodedata.category(c) == "Cn"
        or unicodedata.combining(c)
        or ord(c) in seconds
        or unicodedata.normalize("NFKC", c) != c
        or p != c
    ]
    assert bad == []
    # and whole texts of them: random strings, NFKC by polars, unchanged
    rng = random.Random(11)
    texts = ["".join(rng.choice(chars) for _ in range(rng.randint(1, 40))) for _ in range(3_000)]
    series = pl.Series(texts)
    assert series.str.normalize("NFKC").to_list() == texts
    assert nfkc(series).to_list() == texts


def test_nfkc_skips_only_texts_that_are_already_nfkc() -> None:
    texts = [
        "plain ascii",
        "Привет, мир",
        "你好世界",
        "ｆｕｌｌ",
        "ﬁ",
        "e\u0301",
        "가\u11a8",
        "x²",
        "…",
        "\u00a0",
        "日本語、テスト。",
        "ＡＢＣ（全角）",
        "Ω Ω",
        None,
    ]
    expected = [None if t is None else unicodedata.normalize("NFKC", t) for t in texts]
    assert nfkc(pl.Series(texts, dtype=pl.String)).to_list() == expected
