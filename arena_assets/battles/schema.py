"""The battles table's contract: its removal flags (in the order they are applied), the
closing columns and the style columns of each side (``{feature}_a`` / ``{feature}_b``).

The rest of a battle row (ids, models, winner, language, voter hash, test figures) is
assembled in ``build.py``; these are the names other stages rely on.
"""

from __future__ import annotations

REMOVAL_REASONS = (
    "not_anonymous",
    "same_model",
    "identity_leak",
    "anomalous_voter",
    "vote_burst",
    "daily_cap",
    # the same rules per linked cluster (linking.py), and served-but-not-voted
    # per voter and per signature group (selective.py)
    "linked_anomalous",
    "linked_burst",
    "linked_daily_cap",
    "selective_voter",
    "selective_cluster",
    "dedup_sampled_out",
)
# the last columns of every battle row: all flags raised, the first one, kept or not, and
# what a kept vote weighs on the boards with the reason when below 1 (cohort.py)
TAIL_COLUMNS = ("flag_reasons", "removed_reason", "keep", "weight", "weight_reason")
STYLE_FEATURES = (
    "sum_assistant_tokens",
    "header_count",
    "ordered_list_count",
    "unordered_list_count",
    "list_count",
    "bold_count",
)
