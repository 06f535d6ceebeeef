"""Simulated Copilot Arena: pairs of code completions shown in an editor, one accepted or none.

Written beside the chat logs, in Copilot Arena's own server format
(``completions/adapters.py`` reads it), under ``<out>/_completions/<YYYY-MM>/`` (the
underscore keeps the chat ingest away), with the hidden truth in
``<out>/_truth/completions/<YYYY-MM>.parquet`` and ``<out>/_truth/completion_models.parquet``.

Every draw comes from its own stream, ``SeedSequence([seed, month, 0xC0DE])`` (models'
latencies: ``[seed, 0xC0DE]``), so adding completions changes no chat log, truth table or
endpoint answer of a seed.

The world's models complete code with their true ``coding`` skill. Each model has a median
latency (log-normal around 0.8 s); a call takes ``median · exp(N(0, 0.35))`` seconds. A
pair shows two available models in random order (top = index 0). The user accepts one of
them with probability ``accept_rate``, and then the top one with

    P(top) = σ((s_top − s_bottom)·ln10/400 + position_bias
               + latency_effect·(lat_top − lat_bottom)/(lat_top + lat_bottom))

(``latency_effect`` < 0: the slower side loses acceptances, the effect a latency control
must remove; ``position_bias`` > 0: Tab is easier than Shift-Tab). Users' privacy setting
(Research / Debug / Private) decides, as in Copilot Arena's server, whether the code text
reaches the log; a share of prefixes carries a planted secret (an API key) the cleaning must
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
JUNK_KINDS = {"invalid_json": "invalid_json", "missing_pair_id": "missing_pair_id",
              "same_model": "same_model_battle", "bad_accepted_index": "bad_accepted_index",
              "no_items": "bad_items"}


@dataclass(frozen=True)
class CompletionConfig:
    accept_rate: float = 0.45
    position_bias: float = 0.6  # logit bonus of the top completion
    latency_effect: float = -1.5  # logit per unit of normalised latency difference
    latency_median: float = 0.8  # seconds, the models' typical median
    latency_spread: float = 0.45  # sd of log median latency across models
    call_spread: float = 0.35  # sd of log latency of one call
    secret_rate: float = 0.03
    junk_rate: float = 0.004


def model_latency(world: World, config: CompletionConfig = CompletionConfig()) -> dict[str, float]:
    """Median latency (seconds) of every model, fixed by the world seed."""
    rng = np.random.default_rng(np.random.SeedSequence([world.seed, 0xC0DE]))
    medians = config.latency_median * np.exp(rng.normal(0.0, config.latency_spread, len(world.models)))
    return {m.name: round(float(x), 4) for m, x in zip(world.models, medians, strict=True)}


def _code(rng: random.Random, lines: int) -> str:
    return "\n".join(f"    {rng.choice(_IDENT)} = {rng.choice(_CALLS)}({rng.choice(_IDENT)})" for _ in range(lines))


def _secret(rng: random.Random) -> str:
    return "sk-proj-" + "".join(rng.choices(_ALPHABET, k=40))


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def generate_completions(world: World, out: str | os.PathLike, month: str, n_pairs: int,
                         config: CompletionConfig = CompletionConfig()) -> dict:
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
    text_rng = random.Random(int(rng.integers(1 << 62)))
    truth, junk, lines = [], [], []
    for k in range(n_pairs):
        user = world.users.user_id[honest[int(users[k])]]
        top, bottom = (world.models[int(i)] for i in pairs[k])
        lat = [medians[m.name] * float(x) for m, x in zip((top, bottom), call_noise[k], strict=True)]
        ftype, privacy = FILE_TYPES[int(ftypes[k])], PRIVACY[int(privacies[k])]
        gap = (top.skill("coding") - bottom.skill("coding")) * math.log(10) / 400
        p_top = _sigmoid(gap + config.position_bias + config.latency_effect * (lat[0] - lat[1]) / (lat[0] + lat[1]))
        accepted = (0 if u_top[k] < p_top else 1) if u_accept[k] < config.accept_rate else None
        secret = bool(u_secret[k] < config.secret_rate)
        prefix = f"def step_{k}(items):\n" + _code(text_rng, text_rng.randint(2, 11))
        if secret:
            prefix = f'API_KEY = "{_secret(text_rng)}"\n' + prefix
        suffix = "\n    return result\n"
        texts = [_code(text_rng, text_rng.randint(1, 3)).lstrip() for _ in range(2)]
        ts = int(times[k])
        pair_id = f"pair-{month}-{k:06d}-{text_rng.getrandbits(32):08x}"
        items = []
        for idx, (model, latency, text) in enumerate(zip((top, bottom), lat, texts, strict=True)):
            item = {"completionId": f"{pair_id}-{idx}", "userId": user, "timestamp": ts, "model": model.name,
                    "pairIndex": idx, "latency": round(latency, 4), "prefix_length": len(prefix),
                    "suffix_length": len(suffix), "completion_length": len(text), "privacy": privacy,
                    "versionBackend": "sim"}
            if privacy == "Research":  # Copilot Arena's server drops the code otherwise
                item |= {"prompt": prefix + "<FILL>" + suffix, "prefix": prefix, "suffix": suffix,
                         "completion": text, "raw_completion": text}
            items.append(item)
        lines.append({"pairId": pair_id, "completionItems": items})
        if accepted is not None:
            lines.append({"pairId": pair_id, "userId": user, "acceptedIndex": accepted, "version": "0.2.2",
                          "privacy": privacy, "fileType": ftype, "completionItems": items})
        truth.append({"pair_id": pair_id, "month": month, "user_id": user, "model_top": top.name,
                      "model_bottom": bottom.name, "latency_top": lat[0], "latency_bottom": lat[1],
                      "p_top": p_top, "accepted_index": accepted, "file_type": ftype, "privacy": privacy,
                      "planted_secret": bool(secret)})
        if u_junk[k] < config.junk_rate:
            kind = text_rng.choice(list(JUNK_KINDS))
            bad = {"pairId": f"junk-{month}-{k}", "userId": user, "acceptedIndex": 0,
                   "completionItems": [dict(i, model=top.name) if kind == "same_model" else dict(i) for i in items]}
            if kind == "missing_pair_id":
                bad.pop("pairId")
            elif kind == "bad_accepted_index":
                bad["acceptedIndex"] = 2
            elif kind == "no_items":
                bad["completionItems"] = items[:1]
            lines.append(b'{"pairId": "broken' if kind == "invalid_json" else bad)
            junk.append({"month": month, "kind": kind, "expected_reason": JUNK_KINDS[kind],
                         "line_index": len(lines)})
    with open(folder / f"completions-{month}.jsonl", "wb") as fh:
        for line in lines:
            fh.write((line if isinstance(line, bytes) else orjson.dumps(line)) + b"\n")
    base = out / TRUTH_DIR
    (base / "completions").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(truth, schema=_TRUTH_SCHEMA), base / "completions" / f"{month}.parquet")
    (base / "completion_junk").mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(junk, schema=_JUNK_SCHEMA), base / "completion_junk" / f"{month}.parquet")
    models = [{"name": m.name, "skill_coding": m.skill("coding"), "median_latency": medians[m.name]}
              for m in world.models]
    pq.write_table(pa.Table.from_pylist(models), base / "completion_models.parquet")
    return {"pairs": n_pairs, "accepted": sum(t["accepted_index"] is not None for t in truth),
            "records": len(lines), "junk": len(junk)}


_TRUTH_SCHEMA = pa.schema([
    ("pair_id", pa.string()), ("month", pa.string()), ("user_id", pa.string()), ("model_top", pa.string()),
    ("model_bottom", pa.string()), ("latency_top", pa.float64()), ("latency_bottom", pa.float64()),
    ("p_top", pa.float64()), ("accepted_index", pa.int8()), ("file_type", pa.string()),
    ("privacy", pa.string()), ("planted_secret", pa.bool_())])
_JUNK_SCHEMA = pa.schema([("month", pa.string()), ("kind", pa.string()), ("expected_reason", pa.string()),
                          ("line_index", pa.int64())])
