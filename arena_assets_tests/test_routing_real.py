"""P2L on the real 2023 arena votes (../shared/real): 10-fold time-split log loss against
the marginal board. With 1,135 votes the bar is no harm."""

from __future__ import annotations

import numpy as np
import pytest

from arena_assets.routing.p2l import P2LConfig
from arena_assets.routing.timesplit import time_split_scores


@pytest.mark.parametrize("loss", ["bt", "grk"])
def test_time_split_log_loss_is_no_worse_than_the_marginal_board(real_data, loss):
    import polars as pl

    from arena_assets.labels.clusters import OfflineEmbedder
    from arena_assets.routing.timesplit import read_vote_prompts

    battles = read_vote_prompts(
        real_data / "battles" / "votes_2023_hard_english_with_prompts.jsonl"
    )
    assert battles.height == 1135
    prompts = pl.DataFrame(
        {
            "dedup_key": battles["dedup_key"],
            "language": "en",
            "prompt_chars": battles["prompt"].str.len_chars(),
        }
    )
    emb = OfflineEmbedder()(battles["prompt"].to_list())
    scores, summary = time_split_scores(
        battles, prompts, emb, folds=10, cfg=P2LConfig(loss=loss, rank=4, min_model_battles=20)
    )
    assert summary["folds_scored"] == 9 and summary["test_battles"] > 600
    # no harm: P2L's mean log loss is not worse than the marginal board's beyond noise
    assert summary["gain_per_battle"] >= -2 * summary["gain_se"]
    assert all(np.isfinite([s.log_loss_p2l for s in scores]))
