"""Bad input of the kind an operator's month of hand-written logs holds: votes
whose shown names or conversation ids contradict their states, duplicate JSON keys, other
log extensions, a broken models.json, a truncated gzip, the shell's environment over .env,
and a wrong raw root. Lines are written by hand here; the simulator's extra junk kinds are
checked as well."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import orjson
import polars as pl
import pytest

from arena_assets.contracts import REJECT_REASONS
from arena_assets.ingest import (
    load_model_registry,
    parse_lines,
    parse_month,
    partial_files,
    scan_month,
)
from arena_assets.ingest.dupkeys import conflicting_key
from arena_assets.pipeline.ingest import ingest_month
from arena_assets.storage import Lake
from arena_assets_tests.test_ingest import MONTH, chat, line, vote


def reasons(*lines: bytes) -> list[str | None]:
    """Per line: the reject reason, or None when accepted."""
    part = parse_lines(list(lines), "2024-05/x.jsonl", MONTH, salt="s")
    got: list[str | None] = [None] * len(lines)
    for no, reason in part.rejects.select("line_no", "reason").iter_rows():
        got[no - 1] = reason
    assert part.raw_logs.height + part.rejects.height == len(lines)
    return got


# -- votes that contradict themselves ---------------------------------------------------
def test_shown_model_names_must_agree_with_the_states() -> None:
    assert reasons(
        line(vote(models=["model-x", "model-y"], anony=False)),  # agrees
        line(vote("v-2", models=["", None])),  # hidden names
        line(vote("v-3", models=["model-x", ""])),  # one revealed, right
        line(vote("v-4", models=["model-y", "model-x"])),  # swapped
        line(vote("v-5", models=["model-x", "gpt-9"])),  # another model
        line(vote("v-6", models=["model-x"])),  # one name
        line(vote("v-7", models=["model-x", "model-y", "model-z"])),
        line(vote("v-8", models=[7, ""])),
    ) == [
        None,
        None,
        None,
        "models_mismatch",
        "models_mismatch",
        "models_mismatch",
        "models_mismatch",
        "wrong_type",
    ]


def test_both_sides_one_conversation_is_rejected() -> None:
    event = vote()
    event["states"][1]["conv_id"] = event["states"][0]["conv_id"]
    part = parse_lines([line(event)], "2024-05/x.jsonl", MONTH, salt="s")
    assert part.rejects["reason"].to_list() == ["shared_conv_id"]
    assert "c-a" in part.rejects["detail"][0]


# -- duplicate keys -----------------------------------------------------------------------
def _dup_top(event: dict, key: str, value: object) -> bytes:
    """The event with ``key`` written a second time, first, with ``value``."""
    return b"{" + json.dumps(key).encode() + b":" + orjson.dumps(value) + b"," + line(event)[1:]


def test_duplicate_keys_with_different_values_are_rejected() -> None:
    msg_dup = line(chat("e-3")).replace(
        b'"content":"Hi there"', b'"content":"Hi there","content":"Bye"'
    )
    state_dup = line(vote("v-4")).replace(
        b'"model_name":"model-y"', b'"model_name":"model-z","model_name":"model-y"'
    )
    same_dup = _dup_top(chat("e-5"), "type", "chat")  # repeated, equal value
    spaced = json.dumps(chat("e-6")).encode()  # ", " and ": " separators
    spaced_dup = (
        json.dumps(chat("e-7"))
        .encode()
        .replace(b'"anony": false', b'"anony": true, "anony": false')
    )
    code = line(
        chat(
            "e-8",
            state={
                **chat()["state"],
                "messages": [
                    {"role": "user", "content": 'parse {"a": 1, "a": 2} please'},
                    {"role": "assistant", "content": 'key "a": last wins'},
                ],
            },
        )
    )
    extra = line({**chat("e-9"), "meta": {"client": {"v": 1, "os": "x"}, "tags": [{"k": 1}]}})
    assert reasons(
        _dup_top(chat("e-1"), "type", "leftvote"),
        _dup_top(chat("e-2"), "ip", "198.51.100.9"),
        msg_dup,
        state_dup,
        same_dup,
        spaced,
        spaced_dup,
        code,
        extra,
    ) == [
        "duplicate_key",
        "duplicate_key",
        "duplicate_key",
        "duplicate_key",
        None,
        None,
        "duplicate_key",
        None,
        None,
    ]


def test_duplicate_key_prefilter_sends_few_lines_to_the_slow_path() -> None:
    # the prefilter's verdict equals the full decoder's on random well-formed lines
    rng = random.Random(3)
    for i in range(300):
        event = vote(f"v-{i}") if rng.random() < 0.5 else chat(f"e-{i}")
        if rng.random() < 0.3:
            event["meta"] = {"n": rng.randrange(9), "nested": [{"a": 1}, {"b": [1, {"c": 2}]}]}
        data = line(event) if rng.random() < 0.5 else json.dumps(event).encode()
        assert conflicting_key(data, orjson.loads(data)) is None
    bad = b'{"a": {"x": 1, "y": {"z": 1, "z": 2}}}'
    dup = conflicting_key(bad, orjson.loads(bad))
    assert dup is not None and dup.key == "z" and dup.values == [1, 2]


# -- files ----------------------------------------------------------------------------------
def test_other_log_extensions_are_read_and_the_rest_listed(tmp_path: Path) -> None:
    folder = tmp_path / MONTH
    folder.mkdir()
    (folder / "a.ndjson").write_bytes(line(chat("a")) + b"\n")
    (folder / "b.JSONL").write_bytes(line(chat("b")) + b"\n")
    (folder / "c.NDJSON.GZ").write_bytes(gzip.compress(line(chat("c")) + b"\n"))
    (folder / "d.Parquet").write_bytes(b"")  # listed as a file to read (and unreadable)
    (folder / "notes.txt").write_bytes(b"hello")
    (folder / "events.jsonl.bak").write_bytes(line(chat("z")))
    (folder / ".partial.jsonl").write_bytes(b"")
    listing = scan_month(str(tmp_path), MONTH)
    assert [Path(f).name for f in listing.files] == [
        "a.ndjson",
        "b.JSONL",
        "c.NDJSON.GZ",
        "d.Parquet",
    ]
    assert dict(listing.skipped).keys() == {".partial.jsonl", "events.jsonl.bak", "notes.txt"}
    assert "not a log extension" in dict(listing.skipped)["notes.txt"]
    assert "notes.txt" in listing.describe() and "events.jsonl.bak" in listing.describe()
    (folder / "d.Parquet").unlink()
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None)
    assert parsed.raw_logs["event_id"].to_list() == ["a", "b", "c"]
    # the ingest step carries the listing into its stats (run log and metadata)
    stats = ingest_month(
        Lake(str(tmp_path / "lake")), str(tmp_path), MONTH, salt="s", known_models=None
    )
    assert stats.accepted == 3 and len(stats.listing.skipped) == 3


def test_broken_models_json_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "models.json").write_text('[{"name": "model-x"}, {"name": ')
    with pytest.raises(ValueError, match=r"models\.json.*not valid JSON"):
        load_model_registry(str(tmp_path))
    (tmp_path / "models.json").write_text('"model-x"')
    with pytest.raises(ValueError, match=r"models\.json"):
        load_model_registry(str(tmp_path))


def _truncated_month(tmp_path: Path, lines: int = 3000, cut: int = 700) -> tuple[bytes, int]:
    folder = tmp_path / MONTH
    folder.mkdir(parents=True, exist_ok=True)
    body = b"\n".join(line(chat(f"g{i}", ip=f"10.1.{i // 250}.{i % 250}")) for i in range(lines))
    whole = gzip.compress(body + b"\n")
    (folder / "a.jsonl").write_bytes(line(chat("first")) + b"\n")
    (folder / "b.jsonl.gz").write_bytes(whole[:-cut])
    (folder / "c.jsonl").write_bytes(line(chat("last")) + b"\n")
    # what a full decompressor can still get out of the cut stream
    decoder = gzip.zlib.decompressobj(31)
    return decoder.decompress(whole[:-cut]), lines


@pytest.mark.parametrize("workers", [1, 2])
def test_truncated_gzip_keeps_the_lines_before_the_break(tmp_path: Path, workers: int) -> None:
    salvageable, _ = _truncated_month(tmp_path)
    complete = salvageable.count(b"\n")  # complete lines in what can be decompressed
    parsed = parse_month(str(tmp_path), MONTH, salt="s", known_models=None, workers=workers)
    ids = parsed.raw_logs["event_id"].to_list()
    assert ids[0] == "first" and ids[-1] == "last"
    assert ids[1:-1] == [f"g{i}" for i in range(complete)]
    cut = parsed.rejects.filter(pl.col("reason") == "truncated_file")
    assert cut.height == 1 and parsed.rejects.height == 1
    row = cut.row(0, named=True)
    assert row["source_file"] == f"{MONTH}/b.jsonl.gz" and row["line_no"] == complete + 1
    offset = salvageable.rfind(b"\n") + 1
    assert f"byte {offset:,}" in row["detail"] and f"lines 1..{complete} " in row["detail"]
    # the incomplete line is kept scrubbed: no address of it survives
    assert "10.1." not in row["raw"]
    assert parsed.lines_read == parsed.raw_logs.height + parsed.rejects.height
    (message,) = partial_files(parsed.rejects)
    assert message.startswith(f"{MONTH}/b.jsonl.gz: last good line {complete};")


def test_truncated_gzip_fails_the_check_unless_partial_files_are_allowed(
    tmp_path: Path, arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena_assets_tests.harness import materialize

    _truncated_month(Path(arena_env["ARENA_RAW_ROOT"]))
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    checks = {e.asset_check_key.name: e for e in result.get_asset_check_evaluations()}
    assert checks["no_partial_files"].passed is False
    text = str(checks["no_partial_files"].metadata)
    assert "b.jsonl.gz" in text and "last good line" in text
    assert checks["lines_conserved"].passed
    monkeypatch.setenv("ARENA_ALLOW_PARTIAL_FILES", "true")
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    checks = {e.asset_check_key.name: e for e in result.get_asset_check_evaluations()}
    assert checks["no_partial_files"].passed is True


def test_missing_month_folder_names_the_root_read(
    tmp_path: Path, arena_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena_assets_tests.harness import failure_lines, materialize

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_RAW_ROOT", "./wrong/raw")
    listing = scan_month("./wrong/raw", MONTH)
    assert not listing.folder_exists and str(tmp_path / "wrong" / "raw") in listing.describe()
    # the run fails (a wrong root must not write an empty month), naming the
    # absolute root that was read
    result = materialize(MONTH, "raw_logs,raw_rejects", raise_on_error=False)
    (line,) = failure_lines(result)
    assert str(tmp_path / "wrong" / "raw") in line and "does not exist" in line
    assert not Lake(arena_env["ARENA_LAKE_ROOT"]).exists("raw_logs", MONTH)


# -- environment ---------------------------------------------------------------------------
def test_shell_environment_wins_over_dotenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from arena_assets.envfile import dagster_workdir, setting

    (tmp_path / ".env").write_text("ARENA_RAW_ROOT=./from-dotenv\nARENA_X_ONLY_FILE=file\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ARENA_RAW_ROOT", "/from/shell")
    monkeypatch.delenv("ARENA_X_ONLY_FILE", raising=False)
    assert setting("ARENA_RAW_ROOT", "default") == "/from/shell"
    assert setting("ARENA_X_ONLY_FILE", "default") == "file"
    assert setting("ARENA_X_NOWHERE", "default") == "default"
    # a Dagster CLI run started by the demo sees the same precedence (its .env is merged)
    with dagster_workdir(tmp_path) as (workdir, env):
        written = (workdir / ".env").read_text()
        assert "ARENA_RAW_ROOT='/from/shell'" in written
        assert "ARENA_X_ONLY_FILE='file'" in written
        assert env["ARENA_RAW_ROOT"] == "/from/shell"
    monkeypatch.delenv("ARENA_RAW_ROOT")
    with dagster_workdir(tmp_path) as (workdir, env):
        # relative paths of .env stay relative to the project, not to the run's directory
        assert env["ARENA_RAW_ROOT"] == str(tmp_path / "from-dotenv")


# -- the simulator's extra junk kinds ---------------------------------------------------------
def test_simulator_extra_junk_kinds_get_their_reasons(tmp_path: Path) -> None:
    from arena_assets.simulator import simulate_months
    from arena_assets.simulator.malformed import (
        EXTRA_MALFORMED_KINDS,
        MALFORMED_KINDS,
        JunkContext,
        make_junk,
    )

    assert set(EXTRA_MALFORMED_KINDS.values()) <= set(REJECT_REASONS)
    assert not set(EXTRA_MALFORMED_KINDS) & set(MALFORMED_KINDS)  # default planting unchanged
    simulate_months(tmp_path, ["2024-05"], 30, seed=1)
    events = [
        orjson.loads(x)
        for x in next((tmp_path / "2024-05").glob("*.jsonl")).read_bytes().splitlines()
        if x.strip().startswith(b"{")
    ]
    events = [e for e in events if isinstance(e, dict) and e.get("type") and "event_id" in e]
    names = sorted(load_model_registry(str(tmp_path)))
    counter = iter(range(10**6))
    ctx = JunkContext(
        random.Random(0),
        lambda: f"x-e-{next(counter)}",
        lambda: f"x-c-{next(counter)}",
        lambda name: next(n for n in names if n != name),
    )
    for kind, reason in EXTRA_MALFORMED_KINDS.items():
        for event in events[:5]:
            junk = make_junk(kind, event, b"", ctx)
            part = parse_lines(
                [junk], "2024-05/x.jsonl", "2024-05", salt="s", known_models=set(names)
            )
            assert part.rejects["reason"].to_list() == [reason], (kind, part.rejects["detail"])


def test_ingest_cli_names_skipped_files_and_partial_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from arena_assets.cli import main as cli_main

    _truncated_month(tmp_path)
    (tmp_path / MONTH / "readme.md").write_text("not logs")
    assert (
        cli_main(
            [
                "ingest",
                str(tmp_path),
                "--month",
                MONTH,
                "--out",
                str(tmp_path / "out"),
                "--salt",
                "s",
            ]
        )
        == 0
    )
    err = capsys.readouterr().err
    assert "readme.md (not a log extension" in err
    assert f"partial file: {MONTH}/b.jsonl.gz: last good line" in err
    assert (
        cli_main(
            [
                "ingest",
                str(tmp_path / "nowhere"),
                "--month",
                MONTH,
                "--out",
                str(tmp_path / "out2"),
                "--salt",
                "s",
            ]
        )
        == 2
    )
    assert f"{tmp_path / 'nowhere'}" in capsys.readouterr().err


def test_duplicate_key_check_agrees_with_a_full_decoder_on_real_lines(real_data: Path) -> None:
    """Public release files (real texts: code, URLs, JSON inside prompts): the prefiltered
    check gives the same verdict as a hooked json.loads on every line."""
    from arena_assets.ingest.dupkeys import pairs_hook

    checked = 0
    for path in sorted(real_data.rglob("*.jsonl"))[:12]:
        for raw in path.read_bytes().splitlines()[:400]:
            obj = orjson.loads(raw)
            if not isinstance(obj, dict):
                continue
            try:
                json.loads(raw, object_pairs_hook=pairs_hook)
                truth = None
            except ValueError as exc:
                truth = getattr(exc, "key", None)
            got = conflicting_key(raw, obj)
            assert (got.key if got else None) == truth, path.name
            checked += 1
    assert checked > 1000


def test_demo_dagster_runs_take_the_shell_value_over_dotenv(
    arena_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`arena-assets demo` starts the Dagster CLI, which loads .env over the shell; through
    envfile.dagster_workdir the shell's ARENA_RAW_ROOT wins, the .env's relative lake
    root still means the project's folder."""
    from arena_assets.cli.runs import materialize
    from arena_assets.simulator import simulate_months

    project = tmp_path / "project"
    project.mkdir()
    (project / ".env").write_text(
        "".join(
            f"{k}={v}\n"
            for k, v in {
                **arena_env,
                "ARENA_RAW_ROOT": "./dotenv-raw",
                "ARENA_LAKE_ROOT": "./lake",
            }.items()
        )
    )
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((Path(__file__).parents[1] / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.delenv("ARENA_LAKE_ROOT")
    shell_raw = tmp_path / "shell-raw"
    simulate_months(shell_raw, ["2024-02"], 20, seed=1)
    monkeypatch.setenv("ARENA_RAW_ROOT", str(shell_raw))
    monkeypatch.chdir(project)
    materialize("raw_logs,raw_rejects", "2024-02")
    lake = Lake(str(project / "lake"))
    assert lake.read("raw_logs", "2024-02").height > 0  # read from the shell's raw root
    assert not (project / "dotenv-raw").exists()
