"""Each model's share of votes from accounts without history (`battles/newcomers.py`) on
hand-built months: newcomers that meet models like everyone else name no model; accounts
opened to vote for one model name it, cover votes or not."""

from __future__ import annotations

import numpy as np
import polars as pl

from arena_assets.battles.cohort import threshold
from arena_assets.battles.newcomers import newcomer_excess

MODELS = [f"m{i:02d}" for i in range(12)]
TARGET = "m03"
Z0 = threshold(len(MODELS), 0.01)


def _month(seed: int, sybils: int = 0, cover: int = 0) -> tuple[pl.DataFrame, set[str]]:
    """600 established voters (2-9 votes), 400 newcomers (1-3) on uniformly drawn pairs;
    ``sybils`` fresh accounts with 2 votes on TARGET's battles and ``cover`` on others."""
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []

    def vote(voter: str, pair: tuple[str, str]) -> None:
        rows.append((f"b{len(rows):06d}", voter, *pair))

    def pair(with_target: bool | None = None) -> tuple[str, str]:
        while True:
            a, b = (MODELS[i] for i in rng.choice(len(MODELS), 2, replace=False))
            if with_target is None or (TARGET in (a, b)) == with_target:
                return a, b

    for v in range(600):
        for _ in range(int(rng.integers(2, 10))):
            vote(f"old-{v}", pair())
    fresh = set()
    for v in range(400):
        fresh.add(f"new-{v}")
        for _ in range(int(rng.integers(1, 4))):
            vote(f"new-{v}", pair())
    for k in range(sybils):
        fresh.add(f"syb-{k}")
        for _ in range(2):
            vote(f"syb-{k}", pair(True))
        for _ in range(cover):
            vote(f"syb-{k}", pair(False))
    frame = pl.DataFrame(
        rows, schema=["battle_id", "voter_hash", "model_a", "model_b"], orient="row"
    )
    return frame, fresh


def test_honest_newcomers_name_no_model() -> None:
    for seed in range(5):
        votes, fresh = _month(seed)
        assert newcomer_excess(votes, fresh, Z0, 20) == []


def test_accounts_opened_for_one_model_name_it_with_a_readable_reason() -> None:
    votes, fresh = _month(7, sybils=150)
    found = newcomer_excess(votes, fresh, Z0, 20)
    assert [f["model"] for f in found] == [TARGET]
    assert found[0]["fresh_share"] > found[0]["base_rate"]
    assert found[0]["reason"].startswith(f"newcomer_share:{TARGET} ")
    assert "accounts without history" in found[0]["reason"]


def test_light_cover_leaves_the_excess_heavy_cover_dilutes_it() -> None:
    # cover votes raise the newcomers' share on every other model: a little cover leaves
    # the target above the rest, four cover votes per rigged one hide it (the cohort
    # tests, which read how the votes go, are what stops that attack)
    votes, fresh = _month(8, sybils=150, cover=2)
    assert [f["model"] for f in newcomer_excess(votes, fresh, Z0, 20)] == [TARGET]
    votes, fresh = _month(8, sybils=150, cover=8)
    assert newcomer_excess(votes, fresh, Z0, 20) == []


def test_without_newcomers_nothing_is_tested() -> None:
    votes, _ = _month(9)
    assert newcomer_excess(votes, set(), Z0, 20) == []
    assert newcomer_excess(votes.clear(), {"new-1"}, Z0, 20) == []
