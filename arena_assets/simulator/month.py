"""Generate one month of raw logs (streaming, one file per day) and its truth.

Randomness for a month comes only from (world seed, month), so months can be generated
in any order, alone or in parallel, and the same inputs give byte-identical files.
Session-level choices (user, day, time, mode, language, category, turns) are drawn with
numpy up front (a few arrays of N numbers); text and events are made day by day and
written as they come, so memory stays flat whatever N is.
"""

from __future__ import annotations

import calendar
import os
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import orjson

from arena_assets.simulator.config import LANGUAGES, TEXT_CATEGORIES
from arena_assets.simulator.dayfile import DayFile
from arena_assets.simulator.malformed import MALFORMED_KINDS, JunkContext, make_junk
from arena_assets.simulator.session import SessionMaker
from arena_assets.simulator.truth import MONTHLY_SCHEMAS, TruthSink
from arena_assets.simulator.world import World, month_index

# sessions per hour of the day (UTC), a daily cycle; hour 23 is left empty so that no
# session spills into the next day (or month)
HOUR_WEIGHTS = np.array(
    [3, 2, 2, 1, 1, 1, 2, 3, 4, 5, 6, 6, 6, 6, 6, 6, 6, 6, 6, 5, 5, 4, 4, 0], float
)
BURST_WINDOW_S = 900.0


@dataclass(frozen=True)
class MonthSummary:
    month: str
    sessions: int
    conversations: int
    events: int
    votes: int
    malformed: int
    files: int
    bytes: int
    seconds: float


def month_seed(seed: int, month: str) -> np.random.SeedSequence:
    return np.random.SeedSequence([seed, month_index(month), 0xA2E4A])


def _plan(world: World, month: str, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    cfg, users = world.config, world.users
    year, mon = (int(x) for x in month.split("-"))
    n_days = calendar.monthrange(year, mon)[1]
    kinds = np.array(users.kind)
    weights = users.activity * np.where(kinds == "always_for", 5.0, 1.0) * (kinds != "burst")
    user = rng.choice(len(users), size=n, p=weights / weights.sum())
    day = rng.integers(0, n_days, size=n)
    hour = rng.choice(24, size=n, p=HOUR_WEIGHTS / HOUR_WEIGHTS.sum())
    sec = day * 86400.0 + hour * 3600.0 + rng.uniform(0.0, 3600.0, size=n)
    # burst voters: a handful of sessions packed into a quarter of an hour on one day,
    # capped at 5 % of the month so that small test months stay mostly honest
    burst_users = np.flatnonzero(kinds == "burst")
    per_burst = max(3, round(0.002 * n))
    n_active = min(len(burst_users), int(0.05 * n) // per_burst)
    forced_battle = np.zeros(n, bool)
    for j, u in enumerate(burst_users[:n_active]):
        rows = slice(j * per_burst, (j + 1) * per_burst)
        start = rng.integers(0, n_days) * 86400.0 + rng.uniform(0.0, 22 * 3600.0)
        user[rows] = u
        sec[rows] = start + np.sort(rng.uniform(0.0, BURST_WINDOW_S, size=per_burst))
        forced_battle[rows] = True
    battle = (rng.random(n) < cfg.battle_share) | forced_battle | (kinds[user] == "always_for")
    lang = np.where(rng.random(n) < users.english_mix[user], 0, users.language[user])
    vision = rng.random(n) < cfg.vision_prompt_rate
    category = rng.integers(0, len(TEXT_CATEGORIES), size=n)
    u = rng.random(n)
    turns = np.minimum(1 + (u < 0.3) + (u < 0.1), cfg.max_turns)
    turns[forced_battle] = 1
    order = np.argsort(sec, kind="stable")
    return {
        "user": user[order],
        "sec": sec[order],
        "battle": battle[order],
        "lang": lang[order],
        "vision": vision[order],
        "category": category[order],
        "turns": turns[order],
    }


def generate_month(
    world: World, out: str | os.PathLike, month: str, n_sessions: int, compress: bool = False
) -> MonthSummary:
    """Write ``<out>/<month>/events-*.jsonl[.gz]`` and ``<out>/_truth/<table>/<month>.parquet``."""
    t0 = time.perf_counter()
    out = Path(out)
    ss = month_seed(world.seed, month)
    np_rng = np.random.default_rng(ss)
    state = ss.generate_state(8, np.uint64)
    rng = random.Random(int(state[0]))
    month_dir = out / month
    month_dir.mkdir(parents=True, exist_ok=True)
    for pattern in ("events-*", "served-*", "rig-*"):  # a rerun replaces the month, never appends
        for old in month_dir.glob(pattern):
            old.unlink()
    plan = _plan(world, month, n_sessions, np_rng)
    sinks = {name: TruthSink(out, name, month) for name in MONTHLY_SCHEMAS}
    kinds = list(MALFORMED_KINDS)
    rng.shuffle(kinds)
    junk_count = 0
    day_file: list[DayFile | None] = [None]
    rel_name: list[str] = [""]
    last_line: list[bytes] = [b""]
    names = world.model_names
    totals = {"files": 0, "bytes": 0, "events": 0}
    junk_ctx: JunkContext

    def emit(event: dict) -> None:
        nonlocal junk_count
        line = orjson.dumps(event)
        fh = day_file[0]
        fh.write(line)
        last_line[0] = line
        totals["events"] += 1
        if rng.random() < world.config.malformed_rate:
            kind = kinds[junk_count % len(kinds)]
            junk_count += 1
            line_no = fh.write(make_junk(kind, event, line, junk_ctx))
            sinks["malformed"].add(
                {
                    "month": month,
                    "source_file": rel_name[0],
                    "line_no": line_no,
                    "kind": kind,
                    "expected_reason": MALFORMED_KINDS[kind],
                }
            )

    served_file: list[DayFile | None] = [None]

    def emit_served(event: dict) -> None:
        served_file[0].write(orjson.dumps(event))

    sessions = SessionMaker(
        world,
        month,
        world.seed,
        rng,
        [int(s) for s in state[1:5]],
        sinks,
        emit,
        emit_served if world.config.served_events else None,
    )

    def other_model(name: str) -> str:
        i = names.index(name)
        return names[(i + 1 + rng.randrange(len(names) - 1)) % len(names)]

    junk_ctx = JunkContext(rng, sessions.event_id, sessions.conv_id, other_model)
    year, mon = (int(x) for x in month.split("-"))
    base = datetime(year, mon, 1, tzinfo=UTC).timestamp()
    days = (plan["sec"] // 86400).astype(np.int64)
    bounds = np.searchsorted(days, np.arange(days.max(initial=0) + 2))
    for d in range(len(bounds) - 1):
        lo, hi = int(bounds[d]), int(bounds[d + 1])
        if lo == hi:
            continue
        name = f"events-{month}-{d + 1:02d}.jsonl" + (".gz" if compress else "")
        rel_name[0] = f"{month}/{name}"
        day_file[0] = DayFile(month_dir / name, compress)
        if world.config.served_events:  # the impression log: its own file per day
            served_file[0] = DayFile(month_dir / name.replace("events-", "served-"), compress)
        for i in range(lo, hi):
            sessions.run(
                int(plan["user"][i]),
                base + float(plan["sec"][i]),
                bool(plan["battle"][i]),
                LANGUAGES[int(plan["lang"][i])],
                bool(plan["vision"][i]),
                int(plan["category"][i]),
                int(plan["turns"][i]),
            )
        totals["bytes"] += day_file[0].close()
        totals["files"] += 1
        if served_file[0] is not None:
            totals["bytes"] += served_file[0].close()
            totals["files"] += 1
            served_file[0] = None
    if world.config.attacks:
        from arena_assets.simulator.rig_plant import plant_attacks  # their own random streams

        plant_attacks(world, out, month, sinks, compress)
    for sink in sinks.values():
        sink.close()
    st = sessions.stats
    return MonthSummary(
        month,
        st["sessions"],
        st["conversations"],
        totals["events"],
        st["votes"],
        junk_count,
        totals["files"],
        totals["bytes"],
        time.perf_counter() - t0,
    )
