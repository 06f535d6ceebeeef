"""Forgetting a user on a lake built by the real assets (two months, every
stage, the month releases).

- every table keyed by conversation or holding the user's text is covered (topic_labels'
  conversation ids, the prompts only they typed in topic_cluster_summary's examples and the
  bench), and the releases are counted and rewritten (a published one is warned about);
- ``forget --recompute`` rebuilds through the assets' own code: every table equals a clean
  Dagster rematerialization of the forgotten lake, boards and history included;
- a recompute that fails (a bad ARENA_BOOTSTRAP_ROUNDS) is finished by the next forget,
  which finds no row left but the journal's unfinished rebuild;
- the Dagster path (forget_user job, then one rematerialize_after_forget run per month
  launched by the sensors) ends in the same lake.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import orjson
import polars as pl
import pytest

from arena_assets.cli import main as cli_main
from arena_assets.privacy.forget import user_hash_of
from arena_assets.simulator import WorldConfig, simulate_months
from arena_assets.simulator.world import World
from arena_assets.storage import Lake
from arena_assets_tests.conftest import arena_env_values, with_simulated_arena
from arena_assets_tests.harness import materialize

MONTHS = ("2024-01", "2024-02")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """raw + lake + release of two months, every asset materialized in-process."""
    base = tmp_path_factory.mktemp("forget-built")
    env = with_simulated_arena(arena_env_values(base))
    config = WorldConfig(n_models=6, n_users=150, malformed_rate=0.03)
    # the in-process arena serves the models of the world the logs came from (its
    # _truth/world.json): the bench's candidates and baseline are models of this world
    names = World.build(config, seed=7).model_names
    env["ARENA_CANDIDATES"] = orjson.dumps(
        [{"name": n, "base_url": "simulated"} for n in names[:3]]
    ).decode()
    env["ARENA_BENCH_BASELINE"] = names[0]
    with pytest.MonkeyPatch.context() as mp:
        for k, v in env.items():
            mp.setenv(k, v)
        # few models and users: the boards rank every model, the user has many rows
        simulate_months(env["ARENA_RAW_ROOT"], list(MONTHS), 150, seed=7, config=config)
        for month in MONTHS:
            assert materialize(month, "*").success
    return base, env


def _copy(built, dest: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    base, env = built
    shutil.copytree(base, dest)
    moved = {k: v.replace(str(base), str(dest)) for k, v in env.items()}
    for k, v in moved.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    return moved


def _user(env: dict[str, str]) -> tuple[str, str]:
    """(identity, hash) of the voter with most conversations among those with a prompt only
    they typed that shows in a cluster summary's examples (so every kind of table holds them)."""
    lake = Lake(env["ARENA_LAKE_ROOT"])
    conv = lake.read_months("conversations", MONTHS, columns=["month", "user_hash", "first_prompt"])
    votes = lake.read_months("battles", MONTHS, columns=["voter_hash", "keep"]).filter("keep")
    examples = set(
        lake.read_months("topic_cluster_summary", MONTHS)["examples"]
        .explode(empty_as_null=True)
        .drop_nulls()
        .to_list()
    )
    typed_by = conv.group_by("month", "first_prompt").agg(pl.col("user_hash").n_unique().alias("n"))
    solo = conv.join(typed_by.filter(pl.col("n") == 1), on=["month", "first_prompt"])
    candidates = set(solo.filter(pl.col("first_prompt").is_in(list(examples)))["user_hash"])
    candidates &= set(votes["voter_hash"])
    counts = conv.filter(pl.col("user_hash").is_in(list(candidates)))["user_hash"].value_counts()
    target = counts.sort(["count", "user_hash"], descending=[True, False])["user_hash"][0]
    for path in sorted(Path(env["ARENA_RAW_ROOT"]).glob("*/*.jsonl")):
        for raw in path.read_bytes().splitlines():
            try:
                event = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            who = event.get("user_id") or event.get("ip") if isinstance(event, dict) else None
            if isinstance(who, str) and user_hash_of(who, env["ARENA_USER_SALT"]) == target:
                return who, target
    raise AssertionError("no raw identity for the chosen hash")


def _everywhere(env: dict[str, str], user_hash: str, convs: set[str], texts: set[str]) -> dict:
    """Where the user is still found: rows by hash or conversation id, prompt texts anywhere."""
    lake = Lake(env["ARENA_LAKE_ROOT"])
    found = {}
    for table in lake.assets():
        for month in lake.months(table):
            frame = lake.read(table, month)
            n = 0
            for c in ("user_hash", "voter_hash"):
                n += frame.filter(pl.col(c) == user_hash).height if c in frame.columns else 0
            for c in ("conv_id", "conv_id_a", "conv_id_b"):
                n += frame.filter(pl.col(c).is_in(list(convs))).height if c in frame.columns else 0
            for c, t in frame.schema.items():
                values = (
                    frame[c].explode(empty_as_null=True) if t == pl.List(pl.String) else frame[c]
                )
                if values.dtype == pl.String:
                    n += int(values.is_in(list(texts)).sum())
            if n:
                found[f"{table}/{month}"] = n
    return found


def _tables(env: dict[str, str]) -> dict[str, pl.DataFrame]:
    """Every lake partition and release dataset, rows in a canonical order."""
    out = {}
    lake = Lake(env["ARENA_LAKE_ROOT"])
    for table in lake.assets():
        for month in lake.months(table):
            frame = lake.read(table, month)
            out[f"{table}/{month}"] = (
                frame.sort(frame.columns, nulls_last=True)
                if all(not isinstance(t, (pl.List, pl.Struct)) for t in frame.dtypes)
                else frame
            )
    for path in sorted(Path(env["ARENA_RELEASE_ROOT"]).glob("*/data/*")):
        key = f"release/{path.parent.parent.name}/{path.name}"
        out[key] = pl.read_parquet(path) if path.suffix == ".parquet" else path.read_bytes()
    return out


def _same(a: dict, b: dict) -> list[str]:
    diff = sorted(set(a) ^ set(b))
    for key in sorted(set(a) & set(b)):
        x, y = a[key], b[key]
        equal = x == y if isinstance(x, bytes) else x.equals(y, null_equal=True)
        if not equal:
            diff.append(key)
    return diff


def _rematerialize(months=MONTHS) -> None:
    """What an operator does after removing rows by hand: every asset but ingest, month by
    month, through Dagster, then the release (which exists) once the month is rebuilt."""
    everything = (
        "conversations,battles,battle_cells,topic_labels,topic_clusters,"
        "arena_leaderboard,leaderboard_history,bench_prompts,model_answers,judgments,"
        "bench_leaderboard,judge_human_agreement,over_refusal,leaderboard_site,"
        "prompt_embeddings,p2l_model,p2l_boards,router,router_eval,router_training_data"
    )
    for month in months:
        assert materialize(month, everything).success
        assert materialize(month, "month_release").success


def test_forget_covers_every_table_and_the_releases(built, tmp_path, monkeypatch, capsys):
    from arena_assets.privacy import journal

    env = _copy(built, tmp_path / "a", monkeypatch)
    identity, target = _user(env)
    lake = Lake(env["ARENA_LAKE_ROOT"])
    conv = lake.read_months("conversations", MONTHS)
    mine = conv.filter(pl.col("user_hash") == target)
    convs = set(mine["conv_id"])
    others = set(conv.filter(pl.col("user_hash") != target)["first_prompt"])
    texts = set(mine["first_prompt"]) - others
    before = _everywhere(env, target, convs, texts)
    assert {k.split("/")[0] for k in before} >= {
        "raw_logs",
        "conversations",
        "battles",
        "topic_labels",
        "topic_cluster_summary",
    }
    monkeypatch.setenv("ARENA_RELEASE_PUBLISHED", MONTHS[0])

    assert cli_main(["forget", "--user", identity]) == 0
    out = capsys.readouterr().out
    assert _everywhere(env, target, convs, texts) == {}
    assert "topic_labels" in out and "prompt texts" in out
    # the releases: counted before, rewritten, the published one warned about
    released = [line for line in out.splitlines() if line.strip().startswith("release ")]
    assert len(released) == len({m for m in MONTHS if m in out})
    assert f"warning: the {MONTHS[0]} release was PUBLISHED" in out
    for month in MONTHS:
        chat = pl.read_parquet(Path(env["ARENA_RELEASE_ROOT"]) / f"arena-chat-{month}" / "data")
        assert not set(chat["conversation_id"]) & convs
        sft = Path(env["ARENA_RELEASE_ROOT"]) / f"arena-sft-{month}" / "data" / "train.jsonl"
        assert not any(t in sft.read_text() for t in texts if len(t) > 20)
    entry = journal.unfinished(lake)[0]
    assert entry.state == "removed" and entry.user_hash == target
    assert {"arena_leaderboard", "leaderboard_history", "topic_clusters"} <= set(entry.rebuild)
    assert "left to rebuild" in out and "raw_logs" not in entry.rebuild
    assert identity not in Path(lake.folder("_forget")).joinpath(f"{entry.id}.json").read_text()


def test_recompute_equals_a_dagster_rematerialization_and_resumes(
    built, tmp_path, monkeypatch, capsys
):
    from arena_assets.privacy import journal

    # reference: rows removed, then every asset rematerialized through Dagster
    ref = _copy(built, tmp_path / "ref", monkeypatch)
    identity, target = _user(ref)
    battles_before = Lake(ref["ARENA_LAKE_ROOT"]).read_months("battles", MONTHS)
    assert cli_main(["forget", "--user", identity]) == 0
    _rematerialize()
    expected = _tables(ref)

    # forget --recompute, first with a setting that makes the boards fail (a valid name,
    # so the code location loads, of a model that never played)
    env = _copy(built, tmp_path / "cli", monkeypatch)
    monkeypatch.setenv("ARENA_ANCHOR_MODEL", "no-such-model")
    assert cli_main(["forget", "--user", identity, "--recompute"]) == 1
    captured = capsys.readouterr()
    errors = [line for line in captured.out.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "arena_leaderboard" in errors[0]
    assert "--resume --recompute" in captured.err
    lake = Lake(env["ARENA_LAKE_ROOT"])
    (entry,) = journal.unfinished(lake)
    assert entry.pending() and entry.last_error
    # the second forget finds nothing left to remove, and finishes the rebuild
    monkeypatch.setenv("ARENA_ANCHOR_MODEL", ref["ARENA_ANCHOR_MODEL"])
    assert cli_main(["forget", "--user", identity, "--recompute"]) == 0
    out = capsys.readouterr().out
    assert f"user_hash {target}: removed 0 rows" in out and "rebuilt " in out
    assert journal.unfinished(lake) == [] and journal.load_all(lake)[0].state == "done"
    got = _tables(env)
    assert _same(got, expected) == []
    # the rebuild went beyond the user's own votes: battles re-filtered, boards refitted
    after = lake.read_months("battles", MONTHS)
    own = battles_before.filter(pl.col("voter_hash") == target).height
    assert after.height == battles_before.height - own
    board = got["arena_leaderboard/2024-02"]
    assert board.filter(pl.col("board") == "overall").height >= 4
    assert not board.equals(Lake(built[1]["ARENA_LAKE_ROOT"]).read("arena_leaderboard", "2024-02"))
    assert got["leaderboard_history/2024-02"].height > 0


@pytest.mark.slow
def test_dagster_forget_job_and_sensors_rebuild_month_by_month(built, tmp_path, monkeypatch):
    from arena_assets.definitions import defs as load_defs
    from arena_assets.defs.privacy.jobs import (
        AFFECTED_TAG,
        rebuild_next_month_sensor,
        rematerialize_after_forget_sensor,
    )
    from arena_assets.privacy import journal

    ref = _copy(built, tmp_path / "ref", monkeypatch)
    identity, target = _user(ref)
    assert cli_main(["forget", "--user", identity, "--recompute"]) == 0
    expected = _tables(ref)

    env = _copy(built, tmp_path / "dg", monkeypatch)
    defs = load_defs()
    with dg.DagsterInstance.ephemeral() as instance:
        result = defs.get_job_def("forget_user").execute_in_process(
            run_config={"ops": {"forget_user_rows": {"config": {"user": identity}}}},
            instance=instance,
        )
        assert result.success and result.output_for_node("forget_user_rows") == list(MONTHS)
        run = instance.get_run_by_id(result.run_id)
        assert run.tags[AFFECTED_TAG] == ",".join(MONTHS)
        logs = "\n".join(
            str(r.event_log_entry) for r in instance.get_records_for_run(result.run_id).records
        )
        assert identity not in logs and target in logs
        sensor, event = rematerialize_after_forget_sensor, result.get_run_success_event()
        runs = []
        while len(runs) < 10:
            with dg.build_run_status_sensor_context(
                sensor_name=sensor.name,
                dagster_instance=instance,
                dagster_run=run,
                dagster_event=event,
                resources={"storage": defs.resources["storage"]},
            ) as context:
                request = sensor(context)
            if request is None:
                break
            runs.append(request.partition_key)
            step = dg.materialize(
                assets=list(defs.assets),
                resources=defs.resources,
                instance=instance,
                selection=dg.AssetSelection.assets(*request.asset_selection),
                partition_key=request.partition_key,
                tags=request.tags,
            )
            run, event = instance.get_run_by_id(step.run_id), step.get_run_success_event()
            sensor = rebuild_next_month_sensor
    # in month order; each month's release in a run after the month's other assets
    assert runs == [m for m in MONTHS for _ in range(2)]
    assert journal.unfinished(Lake(env["ARENA_LAKE_ROOT"])) == []
    assert _same(_tables(env), expected) == []
