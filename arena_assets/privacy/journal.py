"""The forget journal: a forget is not done until what depends on the user is rebuilt.

One JSON file per forget under ``<lake>/_forget/<id>.json`` (written atomically, next to
the data it is about, so a copied or moved lake carries its unfinished forgets). States:

- ``removing``: the user's rows are being removed (the months it found are recorded
  first, so a crash here is resumed by running forget again);
- ``removed``: the rows are gone from the lake (and the releases were rewritten); the
  dependent partitions (``rebuild``: asset -> months) are not all rebuilt yet;
- ``done``: every planned partition was rebuilt by the assets' own code.

A later ``forget`` (for anyone, even one that finds no row) or the Dagster ``forget_user``
job picks up every journal that is not ``done`` and finishes its rebuild, so a recompute
that failed (a bad setting, a killed run) is never silently dropped. The journal holds the
salted user hash, the months and the asset names: nothing that was removed.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import orjson

from arena_assets import inflight
from arena_assets.storage import Lake

FOLDER = "_forget"


@dataclass
class ForgetEntry:
    id: str
    user_hash: str
    created_at: float
    state: str = "removing"  # removing | removed | done
    months: list[str] = field(default_factory=list)  # months where the user had rows
    changed: dict[str, list[str]] = field(default_factory=dict)  # table -> months edited
    releases: list[str] = field(default_factory=list)  # release folders rewritten
    rebuild: dict[str, list[str]] = field(default_factory=dict)  # asset -> months planned
    rebuilt: dict[str, list[str]] = field(default_factory=dict)  # asset -> months done
    last_error: str = ""

    def pending(self) -> dict[str, list[str]]:
        """asset -> months planned and not rebuilt yet."""
        out = {a: sorted(set(ms) - set(self.rebuilt.get(a, []))) for a, ms in self.rebuild.items()}
        return {a: ms for a, ms in out.items() if ms}

    def mark_rebuilt(self, asset: str, month: str) -> None:
        done = self.rebuilt.setdefault(asset, [])
        if month not in done:
            done.append(month)
            done.sort()
        if self.state == "removed" and not self.pending():
            self.state = "done"


def new_entry(user_hash: str) -> ForgetEntry:
    now = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now))
    return ForgetEntry(f"{stamp}-{user_hash[:12]}", user_hash, now)


def _folder(lake: Lake) -> str:
    return lake.folder(FOLDER)


def save(lake: Lake, entry: ForgetEntry) -> None:
    folder = _folder(lake)
    lake.fs.makedirs(f"{folder}/_tmp", exist_ok=True)
    tmp = f"{folder}/_tmp/{inflight.temp_name(entry.id)}"
    with lake.fs.open(tmp, "wb") as fh:
        fh.write(orjson.dumps(asdict(entry), option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    lake.fs.mv(tmp, f"{folder}/{entry.id}.json")


def load_all(lake: Lake) -> list[ForgetEntry]:
    folder = _folder(lake)
    out = []
    for path in sorted(lake.fs.glob(f"{folder}/*.json")):
        with lake.fs.open(path, "rb") as fh:
            out.append(ForgetEntry(**orjson.loads(fh.read())))
    return out


def unfinished(lake: Lake) -> list[ForgetEntry]:
    """Every forget that is not done, oldest first."""
    return [e for e in load_all(lake) if e.state != "done"]


def for_user(lake: Lake, user_hash: str) -> ForgetEntry | None:
    """The unfinished entry of this user, to resume, if any."""
    return next((e for e in unfinished(lake) if e.user_hash == user_hash), None)
