"""The right to be forgotten, end to end at library and CLI level: a simulated month goes
through the pipeline's month steps, one simulated user is forgotten, no table keeps a row
with their hash, and the leaderboard recomputed afterwards uses fewer battles."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.ingest import load_model_registry
from arena_assets.pipeline.battles import battles_month
from arena_assets.pipeline.clean import clean_month
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.pipeline.leaderboards import arena_leaderboard_month
from arena_assets.privacy import journal
from arena_assets.privacy.forget import USER_COLUMNS, forget_user, user_hash_of, user_tables
from arena_assets.ranking.boards import board_options
from arena_assets.simulator import WorldConfig, simulate_months
from arena_assets.storage import Lake

MONTH = "2024-03"
SALT = "forget-salt"
BOARD = {"bootstrap_rounds": 0, "min_battles": 1, "min_category_battles": 10_000}


def _board(lake: Lake):
    options = dict(BOARD)
    min_category = options.pop("min_category_battles")
    return arena_leaderboard_month(
        lake, MONTH, board_options(**options), min_category_battles=min_category
    )


def _pipeline(raw: Path, lake: Lake) -> None:
    ingest_month(lake, str(raw), MONTH, salt=SALT, known_models=load_model_registry(str(raw)))
    clean_month(lake, MONTH, threads=1)
    battles_month(lake, MONTH)
    _board(lake)


def _busiest_voter(raw: Path, lake: Lake | None = None) -> str:
    """The raw identity (ip or user_id) of the user with most vote lines; with ``lake``,
    among users who also have a rejected line there (so every table is exercised)."""
    counts: dict[str, int] = {}
    for path in sorted((raw / MONTH).glob("*.jsonl")):
        for line in path.read_bytes().splitlines():
            try:
                event = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(event, dict) and str(event.get("type", "")).endswith("vote"):
                who = event.get("user_id") or event.get("ip")
                if isinstance(who, str):
                    counts[who] = counts.get(who, 0) + 1
    if lake is not None:
        rejected = set(lake.read("raw_rejects", MONTH)["user_hash"].drop_nulls().to_list())
        counts = {who: n for who, n in counts.items() if user_hash_of(who, SALT) in rejected}
    return max(sorted(counts), key=counts.__getitem__)


def _rows_of(lake: Lake, user_hash: str) -> dict[str, int]:
    out = {}
    for table, months in user_tables(lake).items():
        for month, cols in months.items():
            frame = lake.read(table, month, columns=cols)
            out[f"{table}/{month}"] = frame.filter(
                pl.any_horizontal([pl.col(c) == user_hash for c in cols]).fill_null(False)
            ).height
    return out


@pytest.fixture(scope="module")
def month(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("forget")
    raw = base / "raw"
    # a high junk rate so that the user also has rejected lines
    simulate_months(raw, [MONTH], 400, seed=4, config=WorldConfig(malformed_rate=0.05))
    return raw, base


def test_forget_removes_every_row_and_leaderboard_recomputes(
    month: tuple[Path, Path], tmp_path: Path
) -> None:
    raw, _ = month
    lake = Lake(str(tmp_path / "lake"))
    _pipeline(raw, lake)
    identity = _busiest_voter(raw, lake)
    target = user_hash_of(identity, SALT)
    before = _rows_of(lake, target)
    # every table that holds user rows is found from the schemas, including the rejects
    assert {k.split("/")[0] for k in before} >= {
        "raw_logs",
        "raw_rejects",
        "conversations",
        "battles",
    }
    assert before["battles/" + MONTH] > 0 and before["raw_logs/" + MONTH] > 0
    assert before["raw_rejects/" + MONTH] > 0, "the busiest voter has no rejected line"
    battles_before = lake.read("battles", MONTH).height
    info_before = _board(lake).info

    dry = forget_user(lake, user_hash=target, dry_run=True)
    assert dry.total_removed == sum(before.values()) and _rows_of(lake, target) == before
    assert journal.load_all(lake) == []  # a dry run records nothing

    report = forget_user(lake, user_hash=target, raw_root=str(raw), salt=SALT, identity=identity)
    # counts removed match what was there, per table and month (the user-keyed tables; the
    # aggregates are rebuilt, not edited)
    removed = {f"{t}/{m}": n for t, ms in report.removed.items() for m, n in ms.items() if n}
    assert removed == {k: n for k, n in before.items() if n}
    assert report.affected_months == [MONTH]
    assert all(n == 0 for n in _rows_of(lake, target).values())
    assert lake.read("battles", MONTH).height == battles_before - before["battles/" + MONTH]
    # other users are untouched
    assert lake.read("raw_logs", MONTH).height > 0
    # the raw files still hold the user (reported, not purged by default)
    assert report.raw and sum(len(h.line_nos) for h in report.raw) >= before["raw_logs/" + MONTH]
    assert not any(h.purged for h in report.raw)

    # the leaderboard recomputed from the forgotten battles uses fewer of them
    info_after = _board(lake).info
    assert info_after["battles_used"] < info_before["battles_used"]
    # re-cleaning and re-building battles from the forgotten raw_logs keeps them out
    clean_month(lake, MONTH, threads=1)
    battles_month(lake, MONTH)
    assert all(n == 0 for n in _rows_of(lake, target).values())


def test_cli_forget_by_identity_purges_raw_lines(
    month: tuple[Path, Path],
    tmp_path: Path,
    arena_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src, _ = month
    raw = Path(arena_env["ARENA_RAW_ROOT"])
    raw.mkdir()
    (raw / "models.json").write_bytes((src / "models.json").read_bytes())
    (raw / MONTH).mkdir()
    for path in (src / MONTH).glob("*.jsonl"):
        (raw / MONTH / path.name).write_bytes(path.read_bytes())
    lake = Lake(arena_env["ARENA_LAKE_ROOT"])
    _pipeline(raw, lake)
    identity = _busiest_voter(raw)
    target = user_hash_of(identity, SALT)
    lines_before = {p.name: p.read_bytes().count(b"\n") for p in (raw / MONTH).glob("*.jsonl")}
    monkeypatch.delenv("ARENA_USER_SALT", raising=False)

    assert (
        cli_main(
            [
                "forget",
                "--user",
                identity,
                "--dry-run",
                "--lake",
                str(lake.root),
                "--raw-root",
                str(raw),
                "--salt",
                SALT,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"user_hash {target}: would remove" in out and "battles" in out
    assert _rows_of(lake, target)["battles/" + MONTH] > 0  # a dry run changes nothing

    assert (
        cli_main(
            [
                "forget",
                "--user",
                identity,
                "--purge-raw",
                "--recompute",
                "--lake",
                str(lake.root),
                "--raw-root",
                str(raw),
                "--salt",
                SALT,
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert f"user_hash {target}: removed" in out and "blanked" in out
    assert f"rebuilt {MONTH}: " in out and "arena_leaderboard" in out
    assert all(n == 0 for n in _rows_of(lake, target).values())
    # the raw copy no longer names the user; every other line keeps its number
    for path in (raw / MONTH).glob("*.jsonl"):
        data = path.read_bytes()
        assert identity.encode() not in data
        assert data.count(b"\n") == lines_before[path.name]
    # so even a re-ingest of the month brings nothing of the user back
    _pipeline(raw, lake)
    assert all(n == 0 for n in _rows_of(lake, target).values())


def test_tables_with_a_user_column_are_found_by_schema(tmp_path: Path) -> None:
    lake = Lake(str(tmp_path / "lake"))
    lake.write(
        "future_labels",
        "2024-01",
        pl.DataFrame({"voter_hash": ["h1", "h2", "h1"], "label": ["a", "b", "c"]}),
    )
    lake.write("future_labels", "2024-02", pl.DataFrame({"label": ["no user column"]}))
    lake.write("leaderboard_like", "2024-01", pl.DataFrame({"model": ["m"], "rating": [1.0]}))
    assert user_tables(lake) == {"future_labels": {"2024-01": ["voter_hash"]}}
    report = forget_user(lake, user_hash="h1")
    assert report.removed == {"future_labels": {"2024-01": 2, "2024-02": 0}}
    assert lake.read("future_labels", "2024-01")["label"].to_list() == ["b"]
    assert set(USER_COLUMNS) == {"user_hash", "voter_hash"}


def test_rebuild_plan_follows_every_edited_table_through_the_graph() -> None:
    """The plan comes from the code location's graph: raw_logs' months reach later battles
    and every later board; a table edited apart from raw_logs (Copilot Arena's
    completion_battles, read from its own records) brings its board along but is not itself
    rebuilt (that would read the user back from the records)."""
    from arena_assets.definitions import defs
    from arena_assets.defs.privacy.rebuild import rebuild_plan

    graph = defs().resolve_asset_graph()
    everywhere = lambda asset: {"2024-01", "2024-02", "2024-03"}
    plan = rebuild_plan(graph, ["2024-02"], everywhere)
    assert plan["conversations"] == ["2024-02"]
    assert plan["battles"] == ["2024-02", "2024-03"]  # the later month's anomaly crowd
    assert plan["arena_leaderboard"] == ["2024-02", "2024-03"]
    assert plan["leaderboard_site"] == ["2024-02", "2024-03"]
    assert not {
        "raw_logs",
        "raw_rejects",
        "completion_battles",
        "copilot_leaderboard",
        "copilot_user_boards",
    } & set(plan)
    both = rebuild_plan(
        graph,
        ["2024-02"],
        everywhere,
        {
            "conversations": ["2024-02"],
            "completion_battles": ["2024-01"],
            "topic_cluster_summary": ["2024-02"],
        },
    )  # not an asset: ignored
    assert both["copilot_leaderboard"] == ["2024-01", "2024-02", "2024-03"]
    assert both["copilot_user_boards"] == ["2024-01", "2024-02", "2024-03"]
    assert "completion_battles" not in both
    assert both["leaderboard_site"] == ["2024-01", "2024-02", "2024-03"]  # shows the Copilot board
    assert {
        k: v
        for k, v in both.items()
        if k not in ("copilot_leaderboard", "copilot_user_boards", "leaderboard_site")
    } == {k: v for k, v in plan.items() if k != "leaderboard_site"}
    only = lambda asset: {"2024-01", "2024-02"} if asset == "copilot_leaderboard" else set()
    assert rebuild_plan(graph, [], only, {"completion_battles": ["2024-01"]}) == {
        "copilot_leaderboard": ["2024-01", "2024-02"]
    }
