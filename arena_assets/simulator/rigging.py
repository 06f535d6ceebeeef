"""Vote rigging, planted with its truth (issue 19), and the platform fields it needs.

Attacks follow the published papers' threat model: the attacker knows which model is on
screen (answers identify it, Huang et al. 2025; Min et al. 2025) and last month's public
board, and casts ordinary votes from accounts of its own:

* ``accounts``: ``single`` (one account casts every vote), ``sybils`` (fresh accounts,
  1-5 votes each, each from its own address in its own /24, own device: a residential
  proxy pool) or ``linked_sybils`` (the same, in groups of ``group_size`` accounts that
  share one address, one /24 network or one device id: ``link``).
* ``strategy``: ``target_only`` (votes for ``model`` whenever it is on screen in an
  anonymous battle, leaves every other battle without a vote) or ``omnipresent`` (makes
  ``model``, the one just above the target on the board, lose whenever it appears, and
  leaves the rest: the issue's definition).

Every random draw of an attack comes from its own stream (world seed, month, attack
index, attack seed), its events go to their own file ``<month>/rig-<month>-<k>.jsonl``,
and the honest day files of a seed are byte-identical with or without attacks. The
other knobs of this module are also off by default (``WorldConfig``): ``served_events``
(the impression log: a battle that ended without a vote is one ``served`` event, in
``served-<day>.jsonl`` files), ``identity_fields`` (events also carry ``device_id`` and
``ip`` next to ``user_id``) and ``shared_network_share`` (honest users on shared campus
networks, some behind one NAT address, and a few families sharing a device: the honest
look-alikes of linked accounts).
"""

from __future__ import annotations

import calendar
import hashlib
import random
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson
import polars as pl

RIG_KINDS = ("rig_target_only", "rig_omnipresent")
ACCOUNT_KINDS = ("single", "sybils", "linked_sybils")
LINKS = ("ip", "subnet", "device")
RIG_TRUTH = "rig_accounts"  # _truth/rig_accounts/<month>.parquet, written when attacks exist


@dataclass(frozen=True)
class Attack:
    """One planted attack: ``votes`` rigged votes in ``month`` about ``model``."""

    month: str
    model: str
    votes: int
    accounts: str = "sybils"  # ACCOUNT_KINDS
    strategy: str = "target_only"  # target_only | omnipresent
    group_size: int = 10  # linked_sybils: accounts per group
    link: str = "mixed"  # linked_sybils: LINKS, or "mixed" (groups take them in turn)
    votes_per_account: tuple[int, int] = (1, 5)  # sybils: uniform in this range
    seed: int = 0

    def __post_init__(self) -> None:
        if self.accounts not in ACCOUNT_KINDS:
            raise ValueError(f"accounts must be one of {ACCOUNT_KINDS}, not {self.accounts!r}")
        if self.strategy not in ("target_only", "omnipresent"):
            raise ValueError(f"strategy must be target_only or omnipresent, not {self.strategy!r}")
        if self.link not in (*LINKS, "mixed"):
            raise ValueError(f"link must be one of {LINKS} or mixed, not {self.link!r}")

    @property
    def kind(self) -> str:
        return f"rig_{self.strategy}"


def rig_outcome(kind: str, model: str, model_a: str) -> str:
    """The rigged winner: the model wins (target_only) or loses (omnipresent)."""
    favoured = (model == model_a) == (kind == "rig_target_only")
    return "model_a" if favoured else "model_b"


def served_salt(seed: int, month: str, salts: list[int]) -> int:
    digest = hashlib.blake2b(f"served|{seed}|{month}|{salts[0]}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def identity_fields(world, user: int) -> dict:
    """The identity fields of a user's events: ``ip`` or ``user_id`` as always, plus
    ``ip`` and ``device_id`` when the world logs identity fields."""
    users = world.users
    who = {"ip": users.ip[user]} if users.logs_ip[user] else {"user_id": users.user_id[user]}
    if world.config.identity_fields:
        who.setdefault("ip", users.ip[user])
        who["device_id"] = users.device_id[user]
    return who


def _device(seed: int, key: str) -> str:
    return "d-" + hashlib.blake2b(f"{seed}|{key}".encode(), digest_size=8).hexdigest()


def with_networks(users, config, seed: int):
    """Users with device ids and, for ``shared_network_share``, shared networks: that share
    of users moved into campus /24 networks of ~40 users (30 % of them behind the network's
    one NAT address), and 2 % of users sharing a device with another user."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4E37]))
    n = len(users)
    ips = list(users.ip)
    devices = [_device(seed, uid) for uid in users.user_id]
    if config.shared_network_share > 0:
        moved = rng.choice(n, size=round(config.shared_network_share * n), replace=False)
        n_nets = max(1, len(moved) // 40)
        nets = rng.integers(0, 256, size=(n_nets, 3))
        nets[:, 0] = rng.integers(11, 224, size=n_nets)
        where = rng.integers(0, n_nets, size=len(moved))
        behind_nat = rng.random(len(moved)) < 0.3
        last = rng.integers(2, 255, size=len(moved))
        for u, k, nat, d in zip(moved.tolist(), where.tolist(), behind_nat.tolist(), last.tolist()):
            a, b, c = nets[k].tolist()
            ips[u] = f"{a}.{b}.{c}.{1 if nat else d}"
        pairs = rng.choice(n, size=2 * int(0.01 * n), replace=False).reshape(-1, 2)
        for u, v in pairs.tolist():
            devices[v] = devices[u]
    return replace(users, ip=ips, device_id=tuple(devices))


def _public_ip(rng: random.Random, net: tuple[int, int, int] | None = None) -> str:
    a, b, c = net or (rng.randrange(11, 224), rng.randrange(256), rng.randrange(256))
    return f"{a}.{b}.{c}.{rng.randrange(2, 255)}"


def attack_accounts(attack: Attack, rng: random.Random, seed: int) -> list[dict]:
    """The attack's accounts: user id, address, device, group, link and vote budget."""
    if attack.accounts == "single":
        budgets = [attack.votes]
    else:
        lo, hi = attack.votes_per_account
        budgets = []
        while sum(budgets) < attack.votes:
            budgets.append(min(rng.randint(lo, hi), attack.votes - sum(budgets)))
    accounts = []
    shared: dict[int, dict] = {}
    for i, budget in enumerate(budgets):
        uid = f"u-{rng.getrandbits(48):012x}"
        row = {
            "user_id": uid,
            "ip": _public_ip(rng),
            "device_id": _device(seed, uid),
            "group": -1,
            "link": "",
            "votes_planned": budget,
        }
        if attack.accounts == "linked_sybils":
            group = i // attack.group_size
            link = attack.link if attack.link != "mixed" else LINKS[group % len(LINKS)]
            if group not in shared:
                net = (rng.randrange(11, 224), rng.randrange(256), rng.randrange(256))
                shared[group] = {
                    "ip": _public_ip(rng, net),
                    "net": net,
                    "device_id": _device(seed, f"group-{group}-{uid}"),
                }
            g = shared[group]
            row.update(group=group, link=link)
            if link == "ip":
                row["ip"] = g["ip"]
            elif link == "subnet":
                row["ip"] = _public_ip(rng, g["net"])
            else:
                row["device_id"] = g["device_id"]
        accounts.append(row)
    return accounts


def _with_accounts(world, accounts: list[dict], attack: Attack):
    """The world with the attack's accounts appended to its users (fresh indexes)."""
    users = world.users
    k = len(accounts)
    target = world.model_names.index(attack.model)
    devices = users.device_id or tuple(_device(world.seed, u) for u in users.user_id)
    return replace(
        world,
        users=replace(
            users,
            user_id=list(users.user_id) + [a["user_id"] for a in accounts],
            ip=list(users.ip) + [a["ip"] for a in accounts],
            logs_ip=np.concatenate([users.logs_ip, np.zeros(k, bool)]),  # accounts log user_id
            language=np.concatenate([users.language, np.zeros(k, users.language.dtype)]),
            english_mix=np.concatenate([users.english_mix, np.ones(k)]),
            activity=np.concatenate([users.activity, np.ones(k)]),
            vote_propensity=np.concatenate([users.vote_propensity, np.ones(k)]),
            tie_propensity=np.concatenate([users.tie_propensity, np.ones(k)]),
            kind=list(users.kind) + [attack.kind] * k,
            target=np.concatenate([users.target, np.full(k, target)]),
            burst_side=list(users.burst_side) + [None] * k,
            device_id=tuple(devices) + tuple(a["device_id"] for a in accounts),
        ),
    )


def plant_attacks(world, out: Path, month: str, sinks: dict, compress: bool) -> int:
    """Write every attack of ``month`` (``world.config.attacks``); returns the rigged votes
    cast. Each account serves itself battles 80-120 s apart from a random start until its
    votes are cast (about 15 battles a vote when its model is in 2 of 30 slots, 17 with
    the non-anonymous ones it cannot use); one whose votes do not fit into the month at
    that pace (a single account of thousands) goes faster."""
    from arena_assets.simulator.month import DayFile
    from arena_assets.simulator.session import SessionMaker
    from arena_assets.simulator.world import month_index

    attacks = [(k, a) for k, a in enumerate(world.config.attacks) if a.month == month]
    if not attacks:
        return 0
    year, mon = (int(x) for x in month.split("-"))
    base = datetime(year, mon, 1, tzinfo=UTC).timestamp()
    month_s = calendar.monthrange(year, mon)[1] * 86400.0
    rows, cast_total = [], 0
    for k, attack in attacks:
        ss = np.random.SeedSequence([world.seed, month_index(month), 0x416B, k, attack.seed])
        state = ss.generate_state(8, np.uint64)
        rng = random.Random(int(state[0]))
        accounts = attack_accounts(attack, rng, world.seed)
        rigged = _with_accounts(world, accounts, attack)
        file = DayFile(
            out / month / f"rig-{month}-{k:02d}.jsonl{'.gz' if compress else ''}", compress
        )
        write = lambda event: file.write(orjson.dumps(event))  # noqa: B023, E731
        maker = SessionMaker(
            rigged,
            month,
            world.seed,
            rng,
            [int(s) for s in state[1:5]],
            sinks,
            write,
            write if world.config.served_events else None,
        )
        first = len(world.users)
        # battles one rigged vote takes: its model in 2 of the pool's slots, anonymous only
        per_vote = len(world.available(month)) / 2.0 / max(world.config.anony_share, 1e-9)
        for i, account in enumerate(accounts):
            t = rng.uniform(0.0, month_s - 86400.0) if attack.accounts != "single" else 0.0
            # a battle every ~100 s is a person's pace; an account whose votes do not fit
            # into the month at that pace goes as fast as it must (a script), 20 % spare
            pace = min(
                1.0, (month_s - 3600.0) / (1.2 * 100.0 * per_vote * account["votes_planned"])
            )
            cast, sessions = 0, 0
            while (
                cast < account["votes_planned"]
                and t < month_s - 3600.0
                and sessions < 500 * account["votes_planned"]
            ):
                before = maker.stats["votes"]
                maker.run(first + i, base + t, True, "en", False, rng.randrange(6), 1)
                cast += maker.stats["votes"] - before
                sessions += 1
                t += (rng.uniform(20.0, 60.0) + 60.0) * pace
            rows.append(
                {
                    **{
                        f"attack_{f}": v
                        for f, v in asdict(attack).items()
                        if f in ("month", "model", "votes", "accounts", "strategy")
                    },
                    "attack": k,
                    **account,
                    "votes_cast": cast,
                    "battles_served": sessions,
                }
            )
            cast_total += cast
        file.close()
    path = out / "_truth" / RIG_TRUTH / f"{month}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(rows).write_parquet(path)
    return cast_total


def simulate_attacks(out: str | Path, month: str, seed: int, config) -> int:
    """Only the attacks of ``config`` for ``month`` (their ``rig-*`` files and truth) under
    ``out``: the same files `simulate_months` would add to that month, without writing its
    honest traffic again (a benchmark plants many attacks on one honest month)."""
    from arena_assets.simulator.api import write_registry
    from arena_assets.simulator.truth import MONTHLY_SCHEMAS, TruthSink
    from arena_assets.simulator.world import World

    out = Path(out)
    world = World.build(config, seed)
    write_registry(out, world)
    (out / month).mkdir(parents=True, exist_ok=True)
    sinks = {name: TruthSink(out, name, month) for name in MONTHLY_SCHEMAS}
    cast = plant_attacks(world, out, month, sinks, compress=False)
    for sink in sinks.values():
        sink.close()
    return cast
