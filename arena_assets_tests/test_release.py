"""Releases: a simulated month's Chat / Battle / Bench snapshots and SFT export, read back as
their users will (polars, duckdb, `datasets.load_dataset` offline), with the privacy rules
checked (no raw table, no PII left, hashes that join with nothing outside the release), and
a hand-built conversations frame as a second, simulator-free test set."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import orjson
import polars as pl
import pytest

from arena_assets.clean.schema import CONVERSATIONS_SCHEMA
from arena_assets.contracts import PII_TYPES
from arena_assets.release import (
    BATTLE_SCHEMA,
    CHAT_SCHEMA,
    UnsafeReleaseError,
    chat_frame,
    parse_card,
    release_salt,
    write_month_release,
)
from arena_assets.simulator import WorldConfig, simulate_months
from arena_assets.storage import Lake
from arena_assets_tests.harness import materialize

MONTH = "2024-02"


@pytest.fixture(scope="module")
def month_tables(tmp_path_factory):
    """conversations, battles and raw_logs of one simulated month, through the real assets."""
    from arena_assets_tests import conftest

    root = tmp_path_factory.mktemp("release_lake")
    with pytest.MonkeyPatch.context() as mp:
        env = conftest.arena_env.__wrapped__(root, mp)  # the same variables every test uses
        simulate_months(
            env["ARENA_RAW_ROOT"], [MONTH], 200, seed=11, config=WorldConfig(pii_rate=0.25)
        )
        assert materialize(MONTH, "raw_logs,raw_rejects,conversations,battles").success
        lake = Lake(env["ARENA_LAKE_ROOT"])
        return {t: lake.read(t, MONTH) for t in ("conversations", "battles", "raw_logs")}


def _bench(conversations: pl.DataFrame) -> pl.DataFrame:
    """A bench as the bench stage will hand it over: ids, redacted prompts, labels."""
    return (
        conversations.filter(pl.col("first_prompt").str.len_chars() > 20)
        .head(25)
        .select(
            pl.col("conv_id").alias("question_id"),
            pl.col("first_prompt").alias("prompt"),
            "language",
        )
        .with_columns(
            pl.when(pl.int_range(pl.len()) % 2 == 0)
            .then(pl.lit("coding"))
            .otherwise(pl.lit("math"))
            .alias("category")
        )
    )


def _release(tables, root: Path, secret_release: str = "r1", shards: int = 100):
    return write_month_release(
        MONTH,
        str(root),
        conversations=tables["conversations"],
        battles=tables["battles"],
        bench=_bench(tables["conversations"]),
        salt=release_salt("operator-secret", secret_release),
        license="cc-by-4.0",
        rows_per_shard=shards,
    )


def _digests(folder: Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def test_release_reads_back_with_polars_duckdb_and_datasets(month_tables, tmp_path):
    summary = _release(month_tables, tmp_path / "rel")
    convs = month_tables["conversations"]
    assert summary.rows["chat"] == convs.height
    assert len(summary.files["chat"]) == -(-convs.height // 100) > 1  # really sharded
    chat_dir = Path(summary.datasets["chat"])
    assert sorted(p.name for p in (chat_dir / "data").iterdir()) == [
        f"train-{i:05d}-of-{len(summary.files['chat']):05d}.parquet"
        for i in range(len(summary.files["chat"]))
    ]

    chat = pl.read_parquet(chat_dir / "data" / "*.parquet")
    assert chat.schema == pl.Schema(CHAT_SCHEMA)
    assert sorted(chat["conversation_id"]) == sorted(convs["conv_id"])
    battle = pl.read_parquet(Path(summary.datasets["battle"]) / "data" / "*.parquet")
    assert battle.schema == pl.Schema(BATTLE_SCHEMA)
    assert battle.height == int(month_tables["battles"]["keep"].sum()) > 0

    with duckdb.connect() as con:
        for kind in ("chat", "battle"):
            glob = f"{summary.datasets[kind]}/data/*.parquet"
            assert (
                con.execute(f"select count(*) from read_parquet('{glob}')").fetchone()[0]
                == summary.rows[kind]
            ), kind
        # the bench is in Arena-Hard-Auto's own layout (question.jsonl, model_answer/, ...)
        question = f"{summary.datasets['bench']}/question.jsonl"
        assert (
            con.execute(f"select count(*) from read_json('{question}')").fetchone()[0]
            == summary.rows["bench"]
        )

    # the `datasets` library in a fresh process, offline, with every proxy pointed at a
    # closed loopback port so any attempt to reach the network fails
    script = (
        "import json, sys, datasets\n"
        "out = {}\n"
        "for kind, folder in json.loads(sys.argv[1]).items():\n"
        "    kind_of, files = ('json', '/question.jsonl') if kind == 'bench' else ('parquet', '/data/*.parquet')\n"
        "    by_files = datasets.load_dataset(kind_of, data_files=folder + files, split='train')\n"
        "    by_card = datasets.load_dataset(folder, split='train')  # the card's configs\n"
        "    out[kind] = [by_files.num_rows, by_card.num_rows, sorted(by_card.column_names)]\n"
        "row = datasets.load_dataset(json.loads(sys.argv[1])['chat'], split='train')[0]\n"
        "out['first_turn_role'] = row['conversation'][0]['role']\n"
        "print(json.dumps(out))\n"
    )
    env = {
        **os.environ,
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_OFFLINE": "1",
        "HF_HOME": str(tmp_path / "hf"),
        "HTTP_PROXY": "http://127.0.0.1:9",
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    folders = {k: summary.datasets[k] for k in ("chat", "battle", "bench")}
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(folders)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    loaded = json.loads(proc.stdout.strip().splitlines()[-1])
    for kind in folders:
        n_files, n_card, _columns = loaded[kind]
        assert n_files == n_card == summary.rows[kind], kind
    assert loaded["chat"][2] == sorted(CHAT_SCHEMA)
    assert loaded["first_turn_role"] == "user"


def test_cards_parse_with_the_right_counts(month_tables, tmp_path):
    summary = _release(month_tables, tmp_path / "rel")
    convs = month_tables["conversations"]
    header, body = parse_card((Path(summary.datasets["chat"]) / "README.md").read_text())
    assert header["license"] == "cc-by-4.0"
    assert header["size_categories"] == ["n<1K"]
    assert header["task_categories"] == ["text-generation"]
    assert header["configs"] == [
        {"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"}]}
    ]
    expected = set(convs["language"].unique()) - {"und"}
    assert set(header["language"]) == expected and len(expected) > 3
    assert f"- conversations: {convs.height:,}" in body
    assert f"- users: {convs['user_hash'].n_unique():,}" in body
    assert f"- models: {convs['model'].n_unique():,}" in body
    redacted = int(convs.select(pl.sum_horizontal(f"pii_{t}" for t in PII_TYPES) > 0).sum().item())
    assert redacted > 0 and f"- conversations with redacted PII: {redacted:,}" in body
    assert "<EMAIL>" in body and "HMAC-SHA256" in body

    battles = month_tables["battles"]
    header, body = parse_card((Path(summary.datasets["battle"]) / "README.md").read_text())
    assert f"- battles released: {int(battles['keep'].sum()):,}" in body
    for reason, n in battles.filter(~pl.col("keep"))["removed_reason"].value_counts().iter_rows():
        assert f"- {reason}: {n:,}" in body
    header, body = parse_card((Path(summary.datasets["bench"]) / "README.md").read_text())
    assert "- prompts: 25" in body and "- categories: 2" in body
    # a bench of prompts alone offers the questions alone
    assert [c["config_name"] for c in header["configs"]] == ["default"]
    header, _ = parse_card((Path(summary.datasets["sft"]) / "README.md").read_text())
    assert header["configs"][0]["data_files"][0]["path"] == "data/train.jsonl"


def test_cards_name_their_licence_and_say_only_what_is_true_of_their_keys(month_tables, tmp_path):
    """Every card names its licence in its text; the chat and battle cards say their keys
    were re-keyed, the bench and SFT cards (which hold no user identifier) say that
    instead, and none of the four claims a re-keying it did not do."""
    summary = _release(month_tables, tmp_path / "rel")
    cards = {
        kind: parse_card((Path(url) / "README.md").read_text())
        for kind, url in summary.datasets.items()
    }
    assert set(cards) == {"chat", "battle", "bench", "sft"}
    for kind, (header, body) in cards.items():
        assert header["license"] == "cc-by-4.0"
        assert "## Licence" in body and "licence `cc-by-4.0`" in body, kind
    for kind, column in (("chat", "user_id"), ("battle", "judge")):
        body = cards[kind][1]
        assert f"`{column}` is the lake's salted user hash re-keyed" in body, kind
        assert "HMAC-SHA256" in body and "No key joins two months" in body, kind
    for kind in ("bench", "sft"):
        body = cards[kind][1]
        assert "This dataset holds no user identifier" in body, kind
        assert "re-keyed" not in body and "HMAC" not in body and "user_id" not in body, kind


def test_user_hashes_join_nothing_outside_their_release(month_tables, tmp_path):
    first = _release(month_tables, tmp_path / "one", "2024-02")
    second = _release(month_tables, tmp_path / "two", "2024-03")
    read = lambda s, k: pl.read_parquet(Path(s.datasets[k]) / "data" / "*.parquet")
    internal = (
        set(month_tables["conversations"]["user_hash"])
        | set(month_tables["battles"]["voter_hash"])
        | set(month_tables["raw_logs"]["user_hash"])
    )
    one = set(read(first, "chat")["user_id"]) | set(read(first, "battle")["judge"])
    two = set(read(second, "chat")["user_id"]) | set(read(second, "battle")["judge"])
    assert len(one) > 50 and not one & internal and not two & internal and not one & two
    # inside one release a voter's id is the id of the same person's chats
    battle, chat = read(first, "battle"), read(first, "chat")
    owner = dict(zip(chat["conversation_id"], chat["user_id"]))
    sides = month_tables["battles"].filter("keep").select("battle_id", "conv_id_a")
    conv_of = dict(sides.iter_rows())
    assert all(owner[conv_of[q]] == j for q, j in battle.select("question_id", "judge").iter_rows())
    # the same release written again: the same bytes
    again = _release(month_tables, tmp_path / "again", "2024-02")
    for kind in first.datasets:
        assert _digests(Path(first.datasets[kind])) == _digests(Path(again.datasets[kind])), kind


def test_rerun_with_fewer_shards_leaves_no_stale_file(month_tables, tmp_path):
    _release(month_tables, tmp_path / "rel", shards=50)
    summary = _release(month_tables, tmp_path / "rel", shards=100_000)
    files = sorted(p.name for p in (Path(summary.datasets["chat"]) / "data").iterdir())
    assert files == ["train-00000-of-00001.parquet"]


def test_sft_export_is_openai_chat_jsonl(month_tables, tmp_path):
    summary = _release(month_tables, tmp_path / "rel")
    lines = (Path(summary.datasets["sft"]) / "data" / "train.jsonl").read_bytes().splitlines()
    assert len(lines) == summary.rows["sft"] > 100
    assert len(lines) + sum(summary.sft_skipped.values()) == summary.rows["chat"]
    assert summary.sft_skipped["has_images"] > 0  # the simulator plants image chats
    for line in lines:
        record = orjson.loads(line)
        assert list(record) == ["messages"]
        roles = [m["role"] for m in record["messages"]]
        assert roles[0] in ("system", "user") and roles[-1] == "assistant"
        assert all(set(m) == {"role", "content"} and m["content"] for m in record["messages"])


def test_unredacted_input_is_refused(month_tables, tmp_path):
    salt = release_salt("s", "r")
    with pytest.raises(UnsafeReleaseError, match="raw_logs"):
        chat_frame(month_tables["raw_logs"], salt)
    convs = month_tables["conversations"]
    leaked = convs.with_columns(
        pl.col("messages").list.eval(
            pl.struct(
                pl.element().struct.field("role"),
                pl.element().struct.field("content") + " write to jane.doe@example.org",
                pl.element().struct.field("images"),
            )
        )
    )
    with pytest.raises(UnsafeReleaseError, match="PII"):
        chat_frame(leaked, salt)
    bench = _bench(convs).with_columns(pl.lit("call +1 415 555 0134 now").alias("prompt"))
    with pytest.raises(UnsafeReleaseError, match="PII"):
        write_month_release(
            MONTH, str(tmp_path), conversations=convs, battles=None, bench=bench, salt=salt
        )
    with pytest.raises(ValueError):
        release_salt("", "r")


def _hand_conversations() -> pl.DataFrame:
    """Three conversations written by hand (not by the simulator)."""
    t = datetime(2024, 2, 3, 10, 0, tzinfo=UTC)
    msg = lambda role, content, images=(): {
        "role": role,
        "content": content,
        "images": list(images),
    }
    rows = [
        dict(
            conv_id="c-2",
            model="m-x",
            user_hash="aaaa",
            anony=True,
            turns=1,
            language="de",
            messages=[msg("user", "Wie spät ist es? Mail an <EMAIL>"), msg("assistant", "Zehn.")],
            pii_email=1,
        ),
        dict(
            conv_id="c-1",
            model="m-y",
            user_hash="bbbb",
            anony=False,
            turns=2,
            language="en",
            messages=[
                msg("user", "what is in this picture", ["a" * 64]),
                msg("assistant", "A cat."),
                msg("user", "and this?", ["b" * 64, "c" * 64]),
                msg("assistant", "A dog."),
            ],
        ),
        dict(
            conv_id="c-3",
            model="m-x",
            user_hash="aaaa",
            anony=True,
            turns=1,
            language="und",
            messages=[msg("user", "?!"), msg("assistant", "Could you say more?")],
        ),
    ]
    base = dict.fromkeys(CONVERSATIONS_SCHEMA)
    full = [
        {
            **base,
            **{f"pii_{p}": 0 for p in PII_TYPES},
            "month": MONTH,
            "tstamp": t,
            "first_tstamp": t,
            "snapshots": 1,
            **r,
        }
        for r in rows
    ]
    return pl.DataFrame(full, schema=CONVERSATIONS_SCHEMA)


def test_chat_frame_on_hand_written_conversations():
    salt = release_salt("s", "r")
    chat = chat_frame(_hand_conversations(), salt)
    assert chat["conversation_id"].to_list() == ["c-1", "c-2", "c-3"]
    assert chat["images"].to_list() == [["a" * 64, "b" * 64, "c" * 64], [], []]
    assert chat["redacted"].to_list() == [False, True, False]
    assert chat["conversation"][1].to_list() == [
        {"role": "user", "content": "Wie spät ist es? Mail an <EMAIL>"},
        {"role": "assistant", "content": "Zehn."},
    ]
    ids = chat["user_id"].to_list()
    assert ids[1] == ids[2] != ids[0] and len(ids[0]) == 20 and "aaaa" not in ids
    assert chat["anony"].to_list() == [False, True, True]


def test_real_arena_hard_bench_is_refused_until_redacted(real_data, tmp_path):
    """The published Arena-Hard-Auto v0.1 questions (500, `uid/category/cluster/prompt`) as
    a bench: a few prompts carry IP addresses, so the release refuses them as they are and
    accepts them once redacted with the cleaning's own rules."""
    from arena_assets.clean.pii import redact_expr
    from arena_assets.release import bench_frame

    questions = pl.read_ndjson(real_data / "arena_hard_v0.1" / "question.jsonl")
    with pytest.raises(UnsafeReleaseError, match=r"bench.prompt: \d+ text"):
        bench_frame(questions)
    redacted = questions.with_columns(redact_expr(pl.col("prompt")).alias("prompt"))
    bench = bench_frame(redacted)
    assert bench.height == 500 and bench.columns == ["question_id", "prompt", "category", "cluster"]
    assert bench["question_id"].is_unique().all()
    assert bench.filter(pl.col("prompt").str.contains("<IP_ADDRESS>")).height >= 1


def test_release_command(month_tables, tmp_path, monkeypatch):
    from arena_assets.cli import main

    lake = Lake(str(tmp_path / "lake"))
    for table in ("conversations", "battles"):
        lake.write(table, MONTH, month_tables[table])
    args = ["release", str(tmp_path / "lake"), "--month", MONTH, "--out", str(tmp_path / "rel")]
    monkeypatch.delenv("ARENA_RELEASE_SECRET", raising=False)
    assert main(args) == 2  # no secret, no release
    monkeypatch.setenv("ARENA_RELEASE_SECRET", "operator-secret")
    assert main(args) == 0
    chat = pl.read_parquet(tmp_path / "rel" / f"arena-chat-{MONTH}" / "data" / "*.parquet")
    assert chat.height == month_tables["conversations"].height
    assert main([*args[:2], "--month", "2030-01", *args[4:]]) == 2  # no such month


def test_chat_and_battle_share_a_key_within_a_month_and_no_key_joins_two_months(
    month_tables, tmp_path, monkeypatch
):
    """What the chat and battle cards say of their keys, checked on the files: within one
    month's release every battle `judge` is a chat `user_id` (the card gives the count),
    and the same people in two months (the lake's hashes shared by both) get keys that
    join nothing across the two releases."""
    from arena_assets.cli import main

    months = (MONTH, "2024-03")
    lake = Lake(str(tmp_path / "lake"))
    for month in months:  # the same people active in both months
        for table in ("conversations", "battles"):
            lake.write(table, month, month_tables[table])
    monkeypatch.setenv("ARENA_RELEASE_SECRET", "operator-secret")
    out, keys = tmp_path / "rel", {}
    for month in months:
        assert main(["release", str(tmp_path / "lake"), "--month", month, "--out", str(out)]) == 0
        chat = pl.read_parquet(out / f"arena-chat-{month}" / "data" / "*.parquet")
        battle = pl.read_parquet(out / f"arena-battle-{month}" / "data" / "*.parquet")
        users, judges = set(chat["user_id"]), set(battle["judge"])
        assert len(judges) > 20 and judges <= users, month
        for kind in ("chat", "battle"):
            _, body = parse_card((out / f"arena-{kind}-{month}" / "README.md").read_text())
            assert f"all the {len(judges):,} judges of {month} appear as chat users" in body
            assert "No key joins two months" in body
        keys[month] = users | judges
    lake_users = set(month_tables["conversations"]["user_hash"])
    assert len(lake_users) == len(keys[MONTH]) == len(keys["2024-03"])  # one key per person
    assert not keys[MONTH] & keys["2024-03"]
    # a release named alike for two months would share keys: the card says so
    assert (
        main(
            [
                "release",
                str(tmp_path / "lake"),
                "--month",
                "2024-03",
                "--out",
                str(tmp_path / "n"),
                "--name",
                MONTH,
            ]
        )
        == 0
    )
    chat = pl.read_parquet(tmp_path / "n" / "arena-chat-2024-03" / "data" / "*.parquet")
    assert set(chat["user_id"]) == keys[MONTH]
    _, body = parse_card((tmp_path / "n" / "arena-chat-2024-03" / "README.md").read_text())
    assert "No key joins two months" not in body and f"release name `{MONTH}`" in body


def test_release_on_s3_is_configuration_only(month_tables, tmp_path, s3_endpoint):
    """The same release written to an S3-compatible server (moto's, over HTTP on loopback)
    holds the same bytes as the local one."""
    import boto3
    import fsspec

    bucket = f"arena-{uuid.uuid4().hex[:12]}"  # moto's backend is shared within a process
    options = {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": s3_endpoint, "region_name": "us-east-1"},
    }
    boto3.client(
        "s3",
        endpoint_url=s3_endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    ).create_bucket(Bucket=bucket)
    fs = fsspec.filesystem("s3", **options)
    kwargs = dict(
        conversations=month_tables["conversations"],
        battles=month_tables["battles"],
        bench=_bench(month_tables["conversations"]),
        salt=release_salt("operator-secret", MONTH),
        rows_per_shard=100,
    )
    remote = write_month_release(
        MONTH, f"s3://{bucket}/releases", storage_options=options, **kwargs
    )
    local = write_month_release(MONTH, str(tmp_path / "rel"), **kwargs)
    for kind, url in local.datasets.items():
        local_files = _digests(Path(url))
        prefix = remote.datasets[kind].removeprefix("s3://")
        remote_files = {
            p.removeprefix(prefix + "/"): hashlib.sha256(fs.cat(p)).hexdigest()
            for p in sorted(fs.find(prefix))
        }
        assert local_files and remote_files == local_files, kind
    # a rerun replaces the folder there too: no stale shard left behind
    kwargs["rows_per_shard"] = 100_000
    again = write_month_release(MONTH, f"s3://{bucket}/releases", storage_options=options, **kwargs)
    chat = again.datasets["chat"].removeprefix("s3://")
    assert [p.rsplit("/", 1)[-1] for p in fs.find(f"{chat}/data", refresh=True)] == [
        "train-00000-of-00001.parquet"
    ]
