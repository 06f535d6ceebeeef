"""Vote rigging, planted with its truth, and the platform fields it needs.

Attacks follow the published papers' threat model: the attacker knows which model is on
screen (answers identify it, Huang et al. 2025; Min et al. 2025) and last month's public
board, and casts ordinary votes from accounts of its own:

* ``accounts``: ``single`` (one account casts every vote), ``sybils`` (fresh accounts,
  1-5 votes each, each from its own address in its own /24, own device: a residential
  proxy pool), ``linked_sybils`` (the same, in groups of ``group_size`` accounts that
  share one address, one /24 network or one device id: ``link``), ``careful_sybils``
  (fresh, unlinked accounts that come at the hours honest users come, and give up an
  account before its served-but-not-voted record could look selective: an account keeps
  going only while a vote in its next battle would leave its selection ratio
  C(n, k)/C(n_m, k) below ``max_selection_ratio``, the threshold the documentation
  publishes; most accounts never see the model and cast nothing) or ``aged``
  (compromised accounts: honest users who voted the month before, now voting for the
  model whenever it shows, at honest hours; their owners' own sessions go on).
* ``cover``: votes per account (uniform in the range) on anonymous battles *without* the
  model, cast as an honest user would (the attacker reads the answers), so the account's
  votes are not all on one model; (0, 0) = none.
* ``strategy``: ``target_only`` (votes for ``model`` whenever it is on screen in an
  anonymous battle, leaves every other battle without a vote) or ``omnipresent`` (makes
  ``model``, the one just above the target on the board, lose whenever it appears, and
  leaves the rest).

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

import hashlib
import random
from dataclasses import dataclass, replace

import numpy as np

RIG_KINDS = ("rig_target_only", "rig_omnipresent")
ACCOUNT_KINDS = ("single", "sybils", "linked_sybils", "careful_sybils", "aged")
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
    cover: tuple[int, int] = (0, 0)  # honest-looking votes per account without the model
    max_selection_ratio: float = 4.0  # careful_sybils: kept below this per account

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


def device_id(seed: int, key: str) -> str:
    return "d-" + hashlib.blake2b(f"{seed}|{key}".encode(), digest_size=8).hexdigest()


def with_networks(users, config, seed: int):
    """Users with device ids and, for ``shared_network_share``, shared networks: that share
    of users moved into campus /24 networks of ~40 users (30 % of them behind the network's
    one NAT address), and 2 % of users sharing a device with another user."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4E37]))
    n = len(users)
    ips = list(users.ip)
    devices = [device_id(seed, uid) for uid in users.user_id]
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


def public_ip(rng: random.Random, net: tuple[int, int, int] | None = None) -> str:
    a, b, c = net or (rng.randrange(11, 224), rng.randrange(256), rng.randrange(256))
    return f"{a}.{b}.{c}.{rng.randrange(2, 255)}"


def with_accounts(world, accounts: list[dict], attack: Attack):
    """The world with the attack's accounts appended to its users (fresh indexes)."""
    users = world.users
    k = len(accounts)
    target = world.model_names.index(attack.model)
    devices = users.device_id or tuple(device_id(world.seed, u) for u in users.user_id)
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
