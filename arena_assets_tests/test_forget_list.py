"""A forgotten user stays forgotten: the lake's forget list keeps them out of every later
ingest, through Dagster, of native logs, a public-release file and Copilot Arena's
records; their lines become forgotten_user rejects with no text, the counts still add
up, and a changed ARENA_USER_SALT stops with one line instead of letting them back in."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.ingest.forgotten import ForgetListSaltError, forget_list_path, load_forgotten
from arena_assets.pipeline.completions import completion_battles_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.privacy.forget import forget_user, user_hash_of
from arena_assets.simulator import World, WorldConfig, simulate_months
from arena_assets.simulator.completions import generate_completions
from arena_assets.storage import Lake
from arena_assets_tests.harness import failure_lines, materialize

MONTH = "2024-03"
INGEST = "raw_logs,raw_rejects,conversations,battles"
RELEASE_FILE = f"{MONTH}/clean_battle_20240315.json"


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = tmp_path_factory.mktemp("forget-list") / "raw"
    # junk lines, so that the user also has rejected lines
    simulate_months(raw, [MONTH], 300, seed=11, config=WorldConfig(malformed_rate=0.05))
    return raw


def _busiest_voter(raw: Path) -> str:
    counts: Counter = Counter()
    for path in sorted((raw / MONTH).glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and str(event.get("type", "")).endswith("vote"):
                who = event.get("user_id") or event.get("ip")
                if isinstance(who, str):
                    counts[who] += 1
    return sorted(counts, key=lambda who: (-counts[who], who))[0]


def _clean_battles(raw: Path, identity: str) -> list[dict]:
    """FastChat clean_battle records: three voted by the user (their ``judge`` is the
    identity the native logs carry), two by someone else."""
    models = [m["name"] for m in orjson.loads((raw / "models.json").read_bytes())][:2]
    out = []
    for i, judge in enumerate([identity, "arena_user_42", identity, "arena_user_43", identity]):
        out.append(
            {
                "question_id": f"cb-{i}",
                "model_a": models[0],
                "model_b": models[1],
                "winner": "model_a",
                "judge": judge,
                "anony": True,
                "tstamp": 1710500000 + i,  # 2024-03-15
                "conversation_a": [
                    {"role": "user", "content": f"my secret prompt {i}"},
                    {"role": "assistant", "content": "an answer"},
                ],
                "conversation_b": [
                    {"role": "user", "content": f"my secret prompt {i}"},
                    {"role": "assistant", "content": "another answer"},
                ],
            }
        )
    return out


def _of(lake: Lake, table: str, target: str) -> pl.DataFrame:
    frame = lake.read(table, MONTH)
    column = "voter_hash" if "voter_hash" in frame.columns else "user_hash"
    return frame.filter(pl.col(column) == target)


def _metadata(result, asset: str) -> dict:
    (event,) = [e for e in result.get_asset_materialization_events() if e.asset_key.path == [asset]]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def test_a_forgotten_user_stays_out_of_a_rematerialized_month(
    simulated: Path, arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    shutil.copytree(simulated, raw)
    identity = _busiest_voter(raw)
    (raw / RELEASE_FILE).write_bytes(orjson.dumps(_clean_battles(raw, identity)))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    target = user_hash_of(identity, arena_env["ARENA_USER_SALT"])
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])

    first = materialize(MONTH, INGEST)
    assert first.success
    logs, rejects = _of(lake, "raw_logs", target), _of(lake, "raw_rejects", target)
    assert logs.filter(pl.col("source_file") == RELEASE_FILE).height == 3  # the release's votes
    assert rejects.height > 0, "the user has no rejected line to forget"
    assert _of(lake, "conversations", target).height and _of(lake, "battles", target).height
    before = _metadata(first, "raw_logs")
    theirs = logs.height + rejects.height

    assert cli_main(["forget", "--user", identity]) == 0
    listed = Path(forget_list_path(lake))
    assert target in load_forgotten(lake, arena_env["ARENA_USER_SALT"])
    assert identity.encode() not in listed.read_bytes()  # the hash only

    # the same raw files again, through Dagster: nothing of the user comes back
    again = materialize(MONTH, INGEST)
    assert again.success and all(c.passed for c in again.get_asset_check_evaluations())
    for table in ("raw_logs", "conversations", "battles"):
        assert _of(lake, table, target).height == 0, table
    gone = _of(lake, "raw_rejects", target)
    assert gone.height == theirs and set(gone["reason"]) == {"forgotten_user"}
    assert set(gone["raw"]) == {""} and set(gone["detail"]) == {""}  # no text kept
    assert gone.filter(pl.col("source_file") == RELEASE_FILE).height == 3
    text = lake.read("raw_rejects", MONTH).filter(pl.col("user_hash") == target)
    assert not text["raw"].str.contains("secret prompt").any()
    # the counts add up, and say how many lines were the forgotten user's
    meta = _metadata(again, "raw_logs")
    assert meta["forgotten_lines"] == theirs and before["forgotten_lines"] == 0
    assert meta["lines_read"] == before["lines_read"]
    assert meta["lines_read"] == meta["dagster/row_count"] + meta["lines_rejected"]
    assert meta["dagster/row_count"] == before["dagster/row_count"] - logs.height
    others = lake.read("raw_logs", MONTH).filter(pl.col("source_file") == RELEASE_FILE)
    assert others.height == 2  # the release's other voters are still in


def test_a_forgotten_user_stays_out_of_copilot_arena_records(
    arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    generate_completions(World.build(seed=5), raw, MONTH, 400)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    truth = pl.read_parquet(raw / "_truth" / "completions" / f"{MONTH}.parquet")
    user, _ = Counter(truth["user_id"]).most_common(1)[0]
    salt = arena_env["ARENA_USER_SALT"]
    target = user_hash_of(user, salt)
    root = str(raw / "_completions")
    first = completion_battles_month(lake, root, MONTH, salt=salt)
    mine = first.battles.filter(pl.col("user_hash") == target)
    records = (
        int(mine["records"].sum()) + first.rejects.filter(pl.col("user_hash") == target).height
    )
    assert mine.height > 0 and first.forgotten_records == 0

    forget_user(lake, user_hash=target, salt=salt)
    again = materialize(MONTH, "completion_battles")
    assert again.success and all(c.passed for c in again.get_asset_check_evaluations())
    battles = lake.read("completion_battles", MONTH)
    assert target not in set(battles["user_hash"])
    gone = lake.read("completion_rejects", MONTH).filter(pl.col("user_hash") == target)
    assert gone.height == records and set(gone["reason"]) == {"forgotten_user"}
    assert set(gone["raw"]) == {""} and set(gone["detail"]) == {""}
    meta = _metadata(again, "completion_battles")
    assert meta["forgotten_records"] == records
    assert meta["records_read"] == first.records_read
    assert battles.height == first.battles.height - mine.height


def test_a_changed_salt_with_a_forget_list_fails_with_one_line(
    simulated: Path, arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    shutil.copytree(simulated, raw)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    assert materialize(MONTH, "raw_logs,raw_rejects").success
    identity = _busiest_voter(raw)
    assert cli_main(["forget", "--user", identity]) == 0
    capsys.readouterr()
    rows = lake.rows("raw_logs", MONTH)

    monkeypatch.setenv("ARENA_USER_SALT", "a-new-salt")
    # through Dagster: one line, and the month stays as it was
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    assert not result.success
    (line,) = failure_lines(result)
    assert "ARENA_USER_SALT" in line and "forget list" in line and "\n" not in line
    assert lake.rows("raw_logs", MONTH) == rows
    # the library and the commands say the same
    with pytest.raises(ForgetListSaltError, match="another ARENA_USER_SALT"):
        ingest_month(lake, str(raw), MONTH, salt="a-new-salt", known_models=None)
    with pytest.raises(ForgetListSaltError):
        completion_battles_month(lake, str(raw / "_completions"), MONTH, salt="a-new-salt")
    capsys.readouterr()  # the runs' logs
    assert cli_main(["forget", "--user", "someone-else"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the forget list") and "\n" not in err
    # with the salt they were forgotten under, ingest goes on
    monkeypatch.setenv("ARENA_USER_SALT", arena_env["ARENA_USER_SALT"])
    assert materialize(MONTH, "raw_logs,raw_rejects").success
