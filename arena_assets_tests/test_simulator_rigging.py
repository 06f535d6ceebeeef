"""Simulator rigging: planted attacks, served events and identity fields come from their
own random streams and files; a seed's other raw logs stay byte-identical."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import polars as pl

from arena_assets.simulator import WorldConfig, load_truth, simulate_months
from arena_assets.simulator.rigging import Attack
from arena_assets.simulator.world import World

MONTH = "2024-02"


def _files(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "_truth" not in p.parts
    }


def test_attacks_and_served_events_leave_the_honest_logs_unchanged(tmp_path: Path) -> None:
    plain, rigged = tmp_path / "plain", tmp_path / "rigged"
    simulate_months(plain, [MONTH], 1500, seed=4)
    target = World.build(WorldConfig(), 4).model_names[3]
    cfg = WorldConfig(
        served_events=True,
        attacks=(
            Attack(MONTH, target, 40),
            Attack(MONTH, target, 30, accounts="linked_sybils", strategy="omnipresent"),
        ),
    )
    simulate_months(rigged, [MONTH], 1500, seed=4, config=cfg)
    a, b = _files(plain), _files(rigged)
    assert a == {k: v for k, v in b.items() if k in a}  # every honest file byte-identical
    extra = sorted(set(b) - set(a))
    assert f"{MONTH}/rig-{MONTH}-00.jsonl" in extra and f"{MONTH}/rig-{MONTH}-01.jsonl" in extra
    assert any(k.startswith(f"{MONTH}/served-") for k in extra)
    # the default world.json does not grow the new knobs
    world = json.loads((plain / "_truth" / "world.json").read_text())["config"]
    assert "attacks" not in world and "served_events" not in world

    truth = load_truth(rigged)
    accounts = pl.read_parquet(rigged / "_truth" / "rig_accounts" / f"{MONTH}.parquet")
    rig_votes = truth["votes"].filter(pl.col("abuse_kind").str.starts_with("rig_"))
    assert rig_votes.height == accounts["votes_cast"].sum() == 70
    assert accounts.filter(pl.col("attack") == 0)["votes_planned"].is_between(1, 5).all()
    # target-only votes are all for the target; omnipresent votes all against it
    won = (
        pl.when(pl.col("winner") == "model_a").then(pl.col("model_a")).otherwise(pl.col("model_b"))
    )
    kinds = (
        rig_votes.with_columns(won.alias("won"))
        .group_by("abuse_kind")
        .agg(
            (pl.col("won") == target).all().alias("all_won"),
            (pl.col("won") != target).all().alias("all_lost"),
        )
    )
    assert dict(zip(kinds["abuse_kind"], kinds["all_won"]))["rig_target_only"]
    assert dict(zip(kinds["abuse_kind"], kinds["all_lost"]))["rig_omnipresent"]
    # every battle an attacker was served without its model became a served event
    lines = [
        json.loads(x) for x in (rigged / MONTH / f"rig-{MONTH}-00.jsonl").read_text().splitlines()
    ]
    served = [e for e in lines if e["type"] == "served"]
    assert len(served) == accounts.filter(pl.col("attack") == 0)["battles_served"].sum() - 40
    assert all(target not in e["models"] or not e["anony"] for e in served)
    # linked groups share what their link says
    linked = accounts.filter(pl.col("attack") == 1)
    for group in linked.partition_by("group"):
        link = group["link"][0]
        column = {"ip": "ip", "device": "device_id"}.get(link)
        if column:
            assert group[column].n_unique() == 1
        else:
            assert (
                group["ip"].str.replace(r"\.\d+$", "").n_unique() == 1
                and group["ip"].n_unique() > 1
            )


def test_identity_fields_and_shared_networks(tmp_path: Path) -> None:
    cfg = WorldConfig(n_users=400, identity_fields=True, shared_network_share=0.2)
    simulate_months(tmp_path, [MONTH], 600, seed=2, config=cfg)
    events = [
        json.loads(x)
        for p in sorted((tmp_path / MONTH).glob("events-*"))
        for x in p.read_text().splitlines()
        if x.startswith('{"event_id"')
    ]
    typed = [e for e in events if e.get("type") in ("chat", "leftvote")]
    # every event but the few malformed ones derived from them (missing_user drops the ip)
    assert sum("device_id" in e and "ip" in e for e in typed) >= 0.98 * len(typed) > 0
    users = World.build(cfg, 2).users
    nets = pl.Series([ip.rsplit(".", 1)[0] for ip in users.ip]).value_counts()
    assert nets["count"].max() >= 10  # campus networks hold many users
    assert len(set(users.device_id)) < len(users.device_id)  # a few shared devices


def _names(event: dict) -> list[str]:
    if event["type"] == "served":
        return event["models"]
    return [s["model_name"] for s in event["states"]]


def test_careful_attackers_look_like_newcomers_and_aged_ones_are_real_users(
    tmp_path: Path,
) -> None:
    """Careful sybils keep every account's selection ratio below the published 4, cover
    votes never have the model on screen, aged accounts voted honestly the month before;
    the honest logs stay byte-identical."""
    months = ["2024-01", MONTH]
    plain, rigged = tmp_path / "plain", tmp_path / "rigged"
    simulate_months(plain, months, 1500, seed=6, config=WorldConfig(served_events=True))
    target = World.build(WorldConfig(), 6).model_names[2]
    attacks = (
        Attack(MONTH, target, 30, accounts="careful_sybils"),
        Attack(MONTH, target, 30, accounts="careful_sybils", cover=(3, 10)),
        Attack(MONTH, target, 30, accounts="aged"),
    )
    cfg = WorldConfig(served_events=True, attacks=attacks)
    simulate_months(rigged, months, 1500, seed=6, config=cfg)
    a, b = _files(plain), _files(rigged)
    assert a == {k: v for k, v in b.items() if k in a}
    accounts = pl.read_parquet(rigged / "_truth" / "rig_accounts" / f"{MONTH}.parquet")
    assert accounts.group_by("attack").agg(pl.col("votes_cast").sum()).sort("attack")[
        "votes_cast"
    ].to_list() == [30, 30, 30]
    per_user: dict[tuple[int, str], list[dict]] = {}
    for k in range(3):
        lines = (rigged / MONTH / f"rig-{MONTH}-{k:02d}.jsonl").read_text().splitlines()
        for e in map(json.loads, lines):
            if e["type"] != "chat":
                per_user.setdefault((k, e.get("user_id") or e["ip"]), []).append(e)
    assert per_user
    for (k, _), mine in per_user.items():
        anony = [e for e in mine if e["anony"]]
        voted = [e for e in anony if e["type"] != "served"]
        on_screen = [e for e in voted if target in _names(e)]
        if k == 0 and voted:  # careful: only the model's battles voted, few skipped
            assert len(on_screen) == len(voted)
            assert math.comb(len(anony), len(voted)) < 4
        if k == 1:  # cover: the rest of its votes never have the model on screen
            assert all(target not in _names(e) for e in voted if e not in on_screen)
    cover = accounts.filter(pl.col("attack") == 1)
    assert cover["cover_cast"].is_between(0, 10).all() and cover["cover_cast"].sum() > 0
    # aged accounts are users who voted honestly in the month before
    before = load_truth(plain)["votes"].filter((pl.col("month") == "2024-01") & ~pl.col("abusive"))
    aged = accounts.filter(pl.col("attack") == 2)
    assert set(aged["user_id"]) <= set(before["user_id"])
