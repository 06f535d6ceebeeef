"""Careful attackers: accounts that look like honest users one at a time.

* ``careful_sybils``: fresh accounts, each with its own address, /24 and device, that come
  at the hours honest users come (visits of 1-5 battles on random days, a battle about
  every 100 s) and vote for the model whenever it is on screen in an anonymous battle.
  Without cover an account leaves the others unvoted, but only as long as its
  served-but-not-voted record stays below the published selection threshold: it keeps
  going only while a vote in its next battle would leave C(n, k)/C(n_m, k) under
  ``max_selection_ratio`` (n anonymous battles served, k voted, all with the model). Most
  accounts never meet the model and cast nothing; the attack opens new ones until its
  votes are cast.
* with ``cover``: each account also casts that many honest-looking votes (the attacker
  reads the answers and votes as a person would) on anonymous battles without the model,
  so its votes are not all on one model; it needs no threshold then and goes on until
  both its rigged votes and its cover are cast.
* ``aged``: honest users who voted in the month before (the previous month's votes truth)
  are taken over and vote for the model whenever it shows, skipping the rest, at honest
  hours; their owners' own sessions go on in the honest files.

Every draw comes from the attack's own stream (``rig_plant.plant_attacks``).
"""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import polars as pl

from arena_assets.simulator.rigging import Attack, device_id, public_ip, with_accounts

ACCOUNT_BATCH = 2000  # fresh accounts added to the attack's world at a time
HOURS = [3, 2, 2, 1, 1, 1, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 4, 4, 0]  # month.py


def _visit_start(rng: random.Random, days: int) -> float:
    """A visit's start in seconds from the month's start, at the hours honest users come."""
    hour = rng.choices(range(24), weights=HOURS)[0]
    return rng.randrange(days) * 86400.0 + hour * 3600.0 + rng.uniform(0.0, 3000.0)


def _visits(rng: random.Random, days: int, count: int) -> list[float]:
    return sorted(_visit_start(rng, days) for _ in range(count))


def voters_before(truth_root: Path, month: str) -> list[str]:
    """Honest users (``user_id``) who voted in the month before ``month``: what an attacker
    who buys or takes over aged accounts gets."""
    from arena_assets.simulator.world import month_index, month_name

    path = truth_root / "_truth" / "votes" / f"{month_name(month_index(month) - 1)}.parquet"
    if not path.exists():
        raise FileNotFoundError(
            f"aged accounts need the previous month's votes truth: {path} (simulate the "
            "months in order, or give simulate_attacks the honest world's truth_root)"
        )
    votes = pl.read_parquet(path, columns=["user_id", "abusive"])
    return sorted(set(votes.filter(~pl.col("abusive"))["user_id"].to_list()))


def _fresh(rng: random.Random, seed: int, n: int) -> list[dict]:
    out = []
    for _ in range(n):
        uid = f"u-{rng.getrandbits(48):012x}"
        out.append({"user_id": uid, "ip": public_ip(rng), "device_id": device_id(seed, uid)})
    return out


def _grow(world, accounts: list[dict], attack: Attack):
    return with_accounts(
        world,
        [a | {"group": -1, "link": "", "votes_planned": 0} for a in accounts],
        attack,
    )


def _taken_over(world, user_ids: list[str], attack: Attack):
    """The world with ``user_ids`` turned into the attack's voters (a copy: the honest
    world the months are made from is left as it is)."""
    users = world.users
    where = {u: i for i, u in enumerate(users.user_id)}
    idx = [where[u] for u in user_ids if u in where]
    kind = list(users.kind)
    target = users.target.copy()
    for i in idx:
        kind[i] = attack.kind
        target[i] = world.model_names.index(attack.model)
    return replace(world, users=replace(users, kind=kind, target=target)), idx


def plant_careful(
    world, attack: Attack, rng: random.Random, maker, month: str, base: float, truth_root: Path
) -> tuple[list[dict], int]:
    """Run the attack's accounts through ``maker`` (its SessionMaker, on the attack's
    stream); returns one truth row per account and the rigged votes cast."""
    import calendar

    days = calendar.monthrange(*(int(x) for x in month.split("-")))[1]
    lo, hi = attack.votes_per_account
    careful = attack.accounts == "careful_sybils" and attack.cover == (0, 0)
    if attack.accounts == "aged":
        pool = voters_before(truth_root, month)
        rng.shuffle(pool)
        maker.world, order = _taken_over(world, pool, attack)
        who = maker.world.users
    else:
        order, who = [], world.users
    rows, cast_total, nxt = [], 0, 0
    while cast_total < attack.votes:
        if attack.accounts == "aged":
            if nxt >= len(order):
                break  # every aged account is taken
            idx = order[nxt]
        else:
            if nxt >= len(order):  # open a batch of fresh accounts
                more = _fresh(rng, world.seed, ACCOUNT_BATCH)
                first = len(maker.world.users)
                maker.world = _grow(maker.world, more, attack)
                order += list(range(first, first + len(more)))
                who = maker.world.users
            idx = order[nxt]
        nxt += 1
        budget = min(rng.randint(lo, hi), attack.votes - cast_total)
        cover = rng.randint(*attack.cover) if attack.cover != (0, 0) else 0
        maker.cover[idx] = cover
        maker.rig_left[idx] = budget
        visits = _visits(rng, days, 1 + (budget * 17 + cover) // 3)
        n = k = served = 0
        v, t, left = 0, visits[0], rng.randint(1, 5)
        while (k < budget or maker.cover.get(idx, 0) > 0) and served < 500 * max(budget, 1):
            if careful and math.comb(n + 1, k + 1) >= attack.max_selection_ratio:
                break  # one more battle without the model and the account would look selective
            maker.run(idx, base + t, True, "en", False, rng.randrange(6), 1)
            served += 1
            k += maker.last == "rig"
            n += maker.last in ("rig", "cover") or (maker.last == "served" and maker.last_anony)
            left -= 1
            if left > 0:
                t += rng.uniform(80.0, 120.0)
            else:
                v += 1
                t = visits[v] if v < len(visits) else t + rng.uniform(3600.0, 7200.0)
                left = rng.randint(1, 5)
            if t >= days * 86400.0 - 600.0:
                break
        rows.append(
            {
                "user_id": who.user_id[idx],
                # what names the account in its events (ingest hashes it): its user id, or
                # its address for an aged account that signs in without one
                "voter_key": who.ip[idx] if who.logs_ip[idx] else who.user_id[idx],
                "ip": who.ip[idx],
                "device_id": who.device_id[idx] if who.device_id else "",
                "group": -1,
                "link": "",
                "votes_planned": budget,
                "votes_cast": k,
                "cover_cast": cover - maker.cover.get(idx, 0),
                "battles_served": served,
            }
        )
        cast_total += k
    return rows, cast_total
