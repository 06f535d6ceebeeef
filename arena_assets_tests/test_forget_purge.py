"""``forget --purge-raw`` works from the raw files themselves: after a completed forget
(the lake holds nothing of the user any more) it still finds the user's lines in every
month folder of the raw root, a month the lake never held and a public-release JSON list
included, blanks them file by file and reports the lines blanked per file."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import orjson
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.ingest import load_model_registry
from arena_assets.pipeline.battles import battles_month
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.privacy import journal
from arena_assets.simulator import WorldConfig, simulate_months
from arena_assets.storage import Lake

NEVER_INGESTED, INGESTED = "2024-01", "2024-02"
RELEASE_FILE = f"{INGESTED}/clean_battle_20240210.json"


def _identity_in_both_months(raw: Path) -> str:
    """The user (user id or ip as logged) with most events over both months, among those
    with events in each."""
    counts: dict[str, Counter] = {NEVER_INGESTED: Counter(), INGESTED: Counter()}
    for month, counter in counts.items():
        for path in sorted((raw / month).glob("*.jsonl")):
            for line in path.read_bytes().splitlines():
                try:
                    event = orjson.loads(line)
                except orjson.JSONDecodeError:
                    continue
                who = (event.get("user_id") or event.get("ip")) if isinstance(event, dict) else None
                if isinstance(who, str):
                    counter[who] += 1
    both = set(counts[NEVER_INGESTED]) & set(counts[INGESTED])
    total = {who: counts[NEVER_INGESTED][who] + counts[INGESTED][who] for who in both}
    return sorted(total, key=lambda who: (-total[who], who))[0]


def _release_records(raw: Path, identity: str) -> list[dict]:
    models = sorted(load_model_registry(str(raw)))[:2]
    judges = [identity, "arena_user_7", identity]
    return [
        {
            "question_id": f"rel-{i}",
            "model_a": models[0],
            "model_b": models[1],
            "winner": "tie",
            "judge": judge,
            "tstamp": 1707566400 + i,  # 2024-02-10
            "conversation_a": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "a"},
            ],
            "conversation_b": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "b"},
            ],
        }
        for i, judge in enumerate(judges)
    ]


def _lines(raw: Path) -> dict[str, list[bytes]]:
    return {
        str(p.relative_to(raw)): p.read_bytes().split(b"\n")
        for month in (NEVER_INGESTED, INGESTED)
        for p in sorted((raw / month).glob("*.jsonl"))
    }


def test_purge_after_a_completed_forget_blanks_every_month_folder(
    tmp_path: Path, arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    simulate_months(
        raw, [NEVER_INGESTED, INGESTED], 200, seed=3, config=WorldConfig(malformed_rate=0.05)
    )
    identity = _identity_in_both_months(raw)
    (raw / RELEASE_FILE).write_bytes(
        orjson.dumps(_release_records(raw, identity), option=orjson.OPT_INDENT_2)
    )
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    salt = arena_env["ARENA_USER_SALT"]
    ingest_month(lake, str(raw), INGESTED, salt=salt, known_models=load_model_registry(str(raw)))
    clean_month(lake, INGESTED, threads=1)
    battles_month(lake, INGESTED)

    # a completed forget: the lake holds nothing of the user any more
    assert cli_main(["forget", "--user", identity]) == 0
    assert cli_main(["forget", "--resume", "--recompute"]) == 0
    assert journal.unfinished(lake) == []
    before = _lines(raw)
    capsys.readouterr()

    assert cli_main(["forget", "--user", identity, "--purge-raw"]) == 0
    out = capsys.readouterr().out
    assert "removed 0 rows" in out  # the lake had nothing left: the raw files are searched anyway
    after = _lines(raw)
    blanked = {}
    for name, lines in before.items():
        assert len(after[name]) == len(lines)  # every other line keeps its number
        changed = [i for i, (a, b) in enumerate(zip(lines, after[name])) if a != b]
        assert all(after[name][i] == b"" and identity.encode() in lines[i] for i in changed)
        assert identity.encode() not in b"\n".join(after[name])
        if changed:
            blanked[name] = len(changed)
    assert {name.split("/")[0] for name in blanked} == {NEVER_INGESTED, INGESTED}
    for name, n in blanked.items():  # reported per file
        assert f"raw file {name}: {n} lines blanked" in out
    # the release's JSON list: the user's records are nulls, the others kept in place
    records = orjson.loads((raw / RELEASE_FILE).read_bytes())
    assert [r if r is None else r["judge"] for r in records] == [None, "arena_user_7", None]
    assert f"raw file {RELEASE_FILE}: 2 lines blanked" in out
    assert (
        f"searched {len(blanked) + 1 + len(_others(raw, blanked))} files in 2 month folders" in out
    )

    # a month the lake never held, ingested now: nothing of the user, nothing to forget
    ingest_month(lake, str(raw), NEVER_INGESTED, salt=salt, known_models=None)
    rejects = lake.read("raw_rejects", NEVER_INGESTED)
    assert "forgotten_user" not in set(rejects["reason"])
    assert rejects.filter(rejects["reason"] == "empty_line").height >= sum(
        n for name, n in blanked.items() if name.startswith(NEVER_INGESTED)
    )


def _others(raw: Path, blanked: dict[str, int]) -> list[str]:
    """The month folders' JSON-lines files that did not hold the user."""
    return [name for name in _lines(raw) if name not in blanked]
