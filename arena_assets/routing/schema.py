"""Table contracts of the routing stage (one Parquet file per asset and month)."""

from __future__ import annotations

import polars as pl

from arena_assets.clean.schema import CONVERSATIONS_SCHEMA

# prompt_embeddings: one row per distinct first prompt (dedup_key) of the month
PROMPT_EMBEDDINGS_SCHEMA = {
    "month": pl.String,
    "dedup_key": pl.String,
    "embedder": pl.String,  # "wordllama-l2-256" or "<model> at <base url>"
    "dim": pl.Int32,
    "embedding": pl.List(pl.Float32),
    "language": pl.String,  # the language of the prompt's first conversation
    "prompt_chars": pl.Int32,  # characters of the (redacted) first prompt
    "is_vision": pl.Boolean,
    "n_conversations": pl.Int32,
}

# p2l_model: one row per model the month's P2L model rates (the whole model, features and
# coefficients, is the JSON file beside it: <lake>/p2l_model/_files/<month>.json)
P2L_MODEL_SCHEMA = {
    "month": pl.String,
    "model": pl.String,
    "battles": pl.Int64,  # training battles (this month and the replayed ones) it took part in
    "rating": pl.Float64,  # intercept b on the Elo scale (mean 1000): the prompt-average part
    "marginal_rating": pl.Float64,  # the W = 0 fit on the same battles: the marginal board
    "prompt_sd": pl.Float64,  # sd over the month's prompts of its rating (Elo): how much it moves
    "has_w": pl.Boolean,  # enough battles for its row of W (else held at 0)
}

# p2l_boards: one row per (prompt set, model)
P2L_BOARDS_SCHEMA = {
    "month": pl.String,
    "prompt_set": pl.String,  # overall | category:<board> | cluster:<id>
    "set_name": pl.String,  # readable name (the cluster's name)
    "prompts": pl.Int32,  # distinct prompts aggregated
    "model": pl.String,
    "rating": pl.Float64,  # Elo scale, mean 1000 over the set's models
    "lower": pl.Float64,
    "upper": pl.Float64,
    "rank": pl.Int32,
    "rank_ub": pl.Int32,
    "ci_level": pl.Float64,
}

# router: one row per (policy, budget, model) over the month's prompts
ROUTER_SCHEMA = {
    "month": pl.String,
    "policy": pl.String,  # argmax | strict | lp
    "budget": pl.Float64,  # null for argmax
    "model": pl.String,
    "price": pl.Float64,  # null when no price is configured
    "share": pl.Float64,  # share of prompts routed to it (lp: mean probability)
    "expected_win_rate": pl.Float64,  # the policy: routed model vs the arena's mix, mean over prompts
    "expected_cost": pl.Float64,  # the policy: mean price per prompt (null without prices)
    "prompts": pl.Int32,
}

# router_eval: one row per (evaluation, router)
ROUTER_EVAL_SCHEMA = {
    "month": pl.String,
    "evaluation": pl.String,  # arena_holdout: strong-tier vs weak-tier battles after the cut
    "router": pl.String,  # random | length | p2l
    "apgr": pl.Float64,
    "cpt50": pl.Float64,  # percent strong calls for 50 % of the quality gap
    "cpt80": pl.Float64,
    "battles": pl.Int32,
    "strong_quality": pl.Float64,
    "weak_quality": pl.Float64,
}

_MESSAGES = CONVERSATIONS_SCHEMA["messages"]
STYLE_COLUMNS = (
    "sum_assistant_tokens",
    "header_count",
    "ordered_list_count",
    "unordered_list_count",
    "list_count",
    "bold_count",
)
TRAINING_LABELS = ("hard", "math", "creative_writing", "code", "if_score", "is_vision")

# router_training_data: one row per kept battle of the month
ROUTER_TRAINING_SCHEMA = {
    "month": pl.String,
    "battle_id": pl.String,
    "prompt_id": pl.String,  # the near-duplicate group's id: never in two splits
    "split": pl.String,  # train | val | test (by time; a group goes where it first appears)
    "tstamp": pl.Datetime("us", "UTC"),
    "model_a": pl.String,
    "model_b": pl.String,
    "winner": pl.String,  # model_a | model_b | tie | tie (bothbad)
    "language": pl.String,
    "turn": pl.Int32,
    "prompt": pl.List(pl.String),  # the user turns (redacted)
    "conversation_a": _MESSAGES,
    "conversation_b": _MESSAGES,
    **{c: (pl.Int8 if c == "if_score" else pl.Boolean) for c in TRAINING_LABELS},
    **{f"{c}_{s}": pl.Int64 for s in "ab" for c in STYLE_COLUMNS},
    "tier_a": pl.Int32,  # RouteLLM tiers of the month's overall board (0 = strongest)
    "tier_b": pl.Int32,
    # the voter's salted hash (as in battles), so forgetting a user reaches these rows; it
    # is not written to the layout files
    "voter_hash": pl.String,
}
