"""Simulated Copilot Arena: pairs of code completions shown in an editor, one accepted or none.

Written beside the chat logs in the records Copilot Arena's server persists (its
``server/app.py``; ``completions/records.py`` reads them), under
``<out>/_completions/<YYYY-MM>/`` (the underscore keeps the chat ingest away), with the
hidden truth in ``<out>/_truth/completions/<YYYY-MM>.parquet`` and
``<out>/_truth/completion_models.parquet``: per pair, the two ``/add_completion`` bodies
the extension uploads (each completion with ``completionId``, ``pairCompletionId``,
``pairIndex``, ``userId``, ``timestamp``, ``model``, ``latency``, lengths, ``privacy``,
``fileType``, ``version`` and the code), and when the user accepts one, the
``/add_completion_outcome`` body (``pairId, userId, acceptedIndex, completionItems,
fileType, privacy, version, username, repoUrl`` and the server's ``timestamp`` of the
choice). As on the server, a user whose privacy setting is not ``Research`` has every
sensitive key (the code, the prompt) dropped before the record is stored.

Every draw comes from its own stream, ``SeedSequence([seed, month, 0xC0DE])`` (models'
latencies: ``[seed, 0xC0DE]``), so adding completions changes no chat log, truth table or
endpoint answer of a seed.

The world's models complete code with their true ``coding`` skill. Each model has a median
latency (log-normal around 0.8 s); a call takes ``median · exp(N(0, 0.35))`` seconds. A
pair shows two available models in random order (top = index 0), both at once when the
slower has answered (Copilot Arena's interface): the user waits ``wait = max(latencies)``.
Whether the user accepts one of them depends on that wait,

    P(accept) = σ(logit(accept_rate) + wait_effect · (wait − latency_median)),

and which one on skill and position only,

    P(top) = σ((s_top − s_bottom)·ln10/400 + position_bias
               + latency_effect·(lat_top − lat_bottom)/(lat_top + lat_bottom))

with ``latency_effect`` 0 by default: since both completions appear together, the faster
side has no head start (a non-zero value plants the effect the exploratory
``latency_controlled`` board is built to remove, for testing that mechanism).
``position_bias`` > 0: Tab is easier than Shift-Tab. Users' privacy setting
(Research / Debug / Private) decides, as on Copilot Arena's server, whether the code text
is stored; a share of prefixes carries a planted secret (an API key) the cleaning must
redact; a few records are malformed, each with the reject reason it must get.
"""

from __future__ import annotations

import calendar
import datetime as dt
import math
import os
import random
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.parquet as pq

from arena_assets.simulator.truth import TRUTH_DIR
from arena_assets.simulator.world import World, month_index

COMPLETIONS_DIR = "_completions"
FILE_TYPES = ("python", "typescript", "javascript", "java", "go", "rust", "cpp", "html")
FILE_SHARE = (0.38, 0.16, 0.14, 0.09, 0.07, 0.06, 0.06, 0.04)
PRIVACY = ("Research", "Debug", "Private")
PRIVACY_SHARE = (0.6, 0.3, 0.1)
_IDENT = ("value", "items", "result", "config", "count", "data", "index", "total", "name", "path")
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_CALLS = ("len", "sorted", "sum", "max", "min", "print", "parse", "load", "fetch", "update")
JUNK_KINDS = {
    "invalid_json": "invalid_json",
    "missing_pair_id": "missing_pair_id",
    "same_model": "same_model_battle",
    "bad_accepted_index": "bad_accepted_index",
    "no_items": "bad_items",
    "create_pair_response": "missing_accepted_index",
}
# Copilot Arena's PrivacySensitiveKeys (server/src/privacy.py): dropped from every stored
# record, nested ones included, unless the user's setting is Research
SERVER_SENSITIVE = (
    "prompt",
    "prefix",
    "full_prefix",
    "suffix",
    "full_suffix",
    "raw_response",
    "raw_completion",
    "response",
    "completion",
    "code_to_edit",
    "user_input",
)
EXTENSION_VERSION, BACKEND_VERSION = "0.2.2", "sim-1.4"


@dataclass(frozen=True)
class CompletionConfig:
    accept_rate: float = 0.45  # P(accept one) at a wait of latency_median
    wait_effect: float = -0.8  # logit of P(accept one) per second of wait
    position_bias: float = 0.6  # logit bonus of the top completion
    latency_effect: float = 0.0  # logit per unit of normalised latency difference (see above)
    latency_median: float = 0.8  # seconds, the models' typical median
    latency_spread: float = 0.45  # sd of log median latency across models
    call_spread: float = 0.35  # sd of log latency of one call
    secret_rate: float = 0.03
    junk_rate: float = 0.004


def model_latency(world: World, config: CompletionConfig = CompletionConfig()) -> dict[str, float]:
    """Median latency (seconds) of every model, fixed by the world seed."""
    rng = np.random.default_rng(np.random.SeedSequence([world.seed, 0xC0DE]))
    medians = config.latency_median * np.exp(
        rng.normal(0.0, config.latency_spread, len(world.models))
    )
    return {m.name: round(float(x), 4) for m, x in zip(world.models, medians, strict=True)}


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"    {rng.choice(_IDENT)} = {rng.choice(_CALLS)}({rng.choice(_IDENT)})"
        for _ in range(lines)
    )


def _secret(rng: random.Random) -> str:
    return "sk-proj-" + "".join(rng.choices(_ALPHABET, k=40))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def _logit(p: float) -> float:
    return math.log(p / (1 - p)) if 0 < p < 1 else math.copysign(50.0, p - 0.5)


def _uuid(rng: random.Random) -> str:
    h = f"{rng.getrandbits(128):032x}"
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"


def stored(record: dict, privacy: str) -> dict:
    """A record as Copilot Arena's server stores it (``FirebaseClient.upload_data``)."""
    if privacy == "Research":
        return record

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in SERVER_SENSITIVE}
        return [clean(v) for v in value] if isinstance(value, list) else value

    return clean(record)


def pair_records(
    *,
    user: str,
    ts: int,
    models: tuple[str, str],
    latencies: list[float],
    prefix: str,
    suffix: str,
    texts: list[str],
    privacy: str,
    file_type: str,
    ids: tuple[str, str],
) -> list[dict]:
    """The two ``/add_completion`` bodies of one pair shown (as stored)."""
    out = []
    for idx in (0, 1):
        item = {
            "completionId": ids[idx],
            "userId": user,
            "timestamp": ts,
            "prompt": prefix + "<FILL>" + suffix,
            "prefix": prefix,
            "suffix": suffix,
            "full_prefix": prefix,
            "full_suffix": suffix,
            "prefix_length": len(prefix),
            "suffix_length": len(suffix),
            "completion_length": len(texts[idx]),
            "latency": round(latencies[idx], 4),
            "completion": texts[idx],
            "raw_completion": texts[idx],
            "model": models[idx],
            "pairCompletionId": ids[1 - idx],
            "pairIndex": idx,
            "privacy": privacy,
            "version": EXTENSION_VERSION,
            "fileType": file_type,
            "versionBackend": BACKEND_VERSION,
        }
        out.append(stored(item, privacy))
    return out


def outcome_record(
    completions: list[dict],
    *,
    pair_id: str,
    user: str,
    accepted: int,
    privacy: str,
    file_type: str,
    username: str,
    repo_url: str | None,
    ts: int,
) -> dict:
    """The ``/add_completion_outcome`` body of an accepted pair (as stored)."""
    items = [
        {k: v for k, v in c.items() if k not in ("fileType", "versionBackend")}
        | {"privacy": privacy, "fileType": file_type, "username": username}
        for c in completions
    ]
    record = {
        "pairId": pair_id,
        "userId": user,
        "completionItems": items,
        "acceptedIndex": accepted,
        "version": EXTENSION_VERSION,
        "privacy": privacy,
        "fileType": file_type,
        "versionBackend": BACKEND_VERSION,
        "timestamp": ts,
    }
    if repo_url is not None:
        record["repoUrl"] = repo_url
    return stored(record, privacy)


def generate_completions(
    world: World,
    out: str | os.PathLike,
    month: str,
    n_pairs: int,
    config: CompletionConfig = CompletionConfig(),
) -> dict:
    """Write one month of completion pairs; returns counts (pairs, accepted, records, junk)."""
    out = Path(out)
    rng = np.random.default_rng(np.random.SeedSequence([world.seed, month_index(month), 0xC0DE]))
    folder = out / COMPLETIONS_DIR / month
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("completions-*"):
        old.unlink()
    medians = model_latency(world, config)
    pool = world.available(month)
    honest = [i for i, k in enumerate(world.users.kind) if k == "honest"]
    year, mon = (int(p) for p in month.split("-"))
    start = dt.datetime(year, mon, 1, tzinfo=dt.UTC).timestamp()
    span = calendar.monthrange(year, mon)[1] * 86400 - 3600
    times = np.sort(start + rng.uniform(0, span, n_pairs))
    # every per-pair number drawn up front (vectorised), the text from a seeded stdlib stream
    first = rng.integers(len(pool), size=n_pairs)
    second = rng.integers(len(pool) - 1, size=n_pairs)
    second += second >= first  # two different models, each order equally likely
    pairs = np.asarray(pool)[np.column_stack([first, second])]
    users = rng.integers(len(honest), size=n_pairs)
    call_noise = np.exp(rng.normal(0.0, config.call_spread, size=(n_pairs, 2)))
    ftypes = rng.choice(len(FILE_TYPES), size=n_pairs, p=FILE_SHARE)
    privacies = rng.choice(len(PRIVACY), size=n_pairs, p=PRIVACY_SHARE)
    u_accept, u_top, u_secret, u_junk = rng.random((4, n_pairs))
    delays = rng.integers(1, 30, size=n_pairs)  # seconds from showing to choosing
    text_rng = random.Random(int(rng.integers(1 << 62)))
    base = _logit(config.accept_rate)
    truth, junk, lines = [], [], []
    for k in range(n_pairs):
        user = world.users.user_id[honest[int(users[k])]]
        top, bottom = (world.models[int(i)] for i in pairs[k])
        lat = [
            medians[m.name] * float(x) for m, x in zip((top, bottom), call_noise[k], strict=True)
        ]
        wait = max(lat)
        ftype, privacy = FILE_TYPES[int(ftypes[k])], PRIVACY[int(privacies[k])]
        gap = (top.skill("coding") - bottom.skill("coding")) * math.log(10) / 400
        p_top = _sigmoid(
            gap
            + config.position_bias
            + config.latency_effect * (lat[0] - lat[1]) / (lat[0] + lat[1])
        )
        p_accept = _sigmoid(base + config.wait_effect * (wait - config.latency_median))
        accepted = (0 if u_top[k] < p_top else 1) if u_accept[k] < p_accept else None
        secret = bool(u_secret[k] < config.secret_rate)
        prefix = f"def step_{k}(items):\n" + _code(text_rng, text_rng.randint(2, 11))
        if secret:
            prefix = f'API_KEY = "{_secret(text_rng)}"\n' + prefix
        suffix = "\n    return result\n"
        texts = [_code(text_rng, text_rng.randint(1, 3)).lstrip() for _ in range(2)]
        ts = int(times[k])
        ids = (_uuid(text_rng), _uuid(text_rng))
        pair_id = _uuid(text_rng)
        shown = pair_records(
            user=user,
            ts=ts,
            models=(top.name, bottom.name),
            latencies=lat,
            prefix=prefix,
            suffix=suffix,
            texts=texts,
            privacy=privacy,
            file_type=ftype,
            ids=ids,
        )
        lines += shown
        # the extension's username ("" when unset) and, for a Research user, the repository
        username = f"dev-{user[-6:]}" if k % 3 == 0 else ""
        repo = (
            f"https://github.com/{username or 'someone'}/project-{k % 7}"
            if privacy == "Research"
            else None
        )
        if accepted is not None:
            lines.append(
                outcome_record(
                    shown,
                    pair_id=pair_id,
                    user=user,
                    accepted=accepted,
                    privacy=privacy,
                    file_type=ftype,
                    username=username,
                    repo_url=repo,
                    ts=ts + int(delays[k]),
                )
            )
        truth.append(
            {
                "pair_id": ids[0],
                "month": month,
                "user_id": user,
                "model_top": top.name,
                "model_bottom": bottom.name,
                "latency_top": lat[0],
                "latency_bottom": lat[1],
                "wait": wait,
                "p_accept": p_accept,
                "p_top": p_top,
                "accepted_index": accepted,
                "file_type": ftype,
                "privacy": privacy,
                "planted_secret": bool(secret),
            }
        )
        if u_junk[k] < config.junk_rate:
            kind = text_rng.choice(list(JUNK_KINDS))
            lines.append(_junk(kind, shown, user, top.name, text_rng))
            junk.append(
                {
                    "month": month,
                    "kind": kind,
                    "expected_reason": JUNK_KINDS[kind],
                    "line_index": len(lines),
                }
            )
    with open(folder / f"completions-{month}.jsonl", "wb") as fh:
        for line in lines:
            fh.write((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n")
    base = out / TRUTH_DIR
    (base / "completions").mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(truth, schema=_TRUTH_SCHEMA), base / "completions" / f"{month}.parquet"
    )
    (base / "completion_junk").mkdir(parents=True, exist_ok=True)
    pq.write_table(
        pa.Table.from_pylist(junk, schema=_JUNK_SCHEMA),
        base / "completion_junk" / f"{month}.parquet",
    )
    models = [
        {"name": m.name, "skill_coding": m.skill("coding"), "median_latency": medians[m.name]}
        for m in world.models
    ]
    pq.write_table(pa.Table.from_pylist(models), base / "completion_models.parquet")
    return {
        "pairs": n_pairs,
        "accepted": sum(t["accepted_index"] is not None for t in truth),
        "records": len(lines),
        "junk": len(junk),
    }


def _junk(kind: str, shown: list[dict], user: str, top: str, rng: random.Random) -> dict | bytes:
    """A malformed record of ``kind`` (its expected reject reason: ``JUNK_KINDS``), built
    from a real pair with fresh ids so it can never join that pair."""
    if kind == "invalid_json":
        return b'{"completionId": "broken'
    if kind == "missing_pair_id":
        return {k: v for k, v in shown[0].items() if k != "pairCompletionId"} | {
            "completionId": _uuid(rng)
        }
    items = [dict(c, completionId=_uuid(rng)) for c in shown]
    if kind == "create_pair_response":  # what /create_pair answers: never persisted
        return {"pairId": _uuid(rng), "completionItems": items}
    bad = {
        "pairId": _uuid(rng),
        "userId": user,
        "acceptedIndex": 0,
        "version": EXTENSION_VERSION,
        "completionItems": [dict(i, model=top) for i in items] if kind == "same_model" else items,
    }
    if kind == "bad_accepted_index":
        bad["acceptedIndex"] = 2
    elif kind == "no_items":
        bad["completionItems"] = items[:1]
    return bad


_TRUTH_SCHEMA = pa.schema(
    [
        ("pair_id", pa.string()),
        ("month", pa.string()),
        ("user_id", pa.string()),
        ("model_top", pa.string()),
        ("model_bottom", pa.string()),
        ("latency_top", pa.float64()),
        ("latency_bottom", pa.float64()),
        ("wait", pa.float64()),
        ("p_accept", pa.float64()),
        ("p_top", pa.float64()),
        ("accepted_index", pa.int8()),
        ("file_type", pa.string()),
        ("privacy", pa.string()),
        ("planted_secret", pa.bool_()),
    ]
)
_JUNK_SCHEMA = pa.schema(
    [
        ("month", pa.string()),
        ("kind", pa.string()),
        ("expected_reason", pa.string()),
        ("line_index", pa.int64()),
    ]
)
