"""Linked identities: accounts that one person most likely runs, as clusters.

A behavioural rule keyed on the voter hash alone lets an attacker with fresh accounts of
1-5 votes each stay below every threshold. Accounts are linked by
what the raw events carry (salted hashes only, `ingest/validate.py` ``links_of``):

* the same IP address (``ip_hash``: also when the account signs in with a ``user_id``);
* the same device or browser id (``device_hash``), where the platform sends one;
* the same /24 (IPv4) or /48 (IPv6) network (``net_hash``), but only between *fresh*
  accounts (first seen this month: account age). Established users of one campus or
  office network share a /24 all the time; a burst of new accounts on one network is
  what a sybil farm looks like.

An identifier shared by more than ``link_max_accounts`` accounts links nobody (a carrier
NAT, a VPN exit, a university proxy: linking thousands of strangers proves nothing and
would pool the month into one cluster). Accounts connected through any chain of shared
identifiers form one cluster (union-find); the cluster's id is its smallest voter hash.

The sequential test (`anomaly.py`, same alpha, its members' votes pooled in time order
and judged against a reference without them), the daily cap and the burst rule then run
per cluster as well as per voter (`build.py`). Votes of an honest user who happens to
share an address with a flagged cluster go with it: the price of linking, bounded by
``link_max_accounts`` and measured in ``benchmarks/rigging.py``.
"""

from __future__ import annotations

import polars as pl


def fresh_voters(voters: pl.Series, history: pl.DataFrame | None) -> set[str]:
    """Voters not seen in any earlier month (``history``: column voter_hash); every voter
    when there is no history at all."""
    seen = set() if history is None else set(history["voter_hash"].to_list())
    return {v for v in voters.unique().to_list() if v is not None and v not in seen}


def linked_clusters(events: pl.DataFrame, fresh: set[str], max_accounts: int) -> pl.DataFrame:
    """(voter_hash, group) for every voter in a cluster of 2+ linked accounts.

    ``events``: voter_hash, ip_hash, net_hash, device_hash of the month's votes and served
    battles (null hashes are no link)."""
    parts = [
        events.select("voter_hash", ("ip:" + pl.col("ip_hash")).alias("ident")),
        events.select("voter_hash", ("dev:" + pl.col("device_hash")).alias("ident")),
        events.filter(
            pl.col("voter_hash").is_in(pl.Series(list(fresh), dtype=pl.String).implode())
        ).select("voter_hash", ("net:" + pl.col("net_hash")).alias("ident")),
    ]
    edges = pl.concat(parts).drop_nulls().unique()
    sizes = edges.group_by("ident").agg(pl.len().alias("_n"))
    useful = sizes.filter((pl.col("_n") >= 2) & (pl.col("_n") <= max_accounts))["ident"]
    edges = edges.filter(pl.col("ident").is_in(useful.implode())).sort("ident", "voter_hash")
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        root = x
        while parent.get(root, root) != root:
            root = parent[root]
        while x != root:  # path compression
            parent[x], x = root, parent[x]
        return root

    for _, group in edges.group_by("ident", maintain_order=True):
        voters = group["voter_hash"].to_list()
        first = find(voters[0])
        for v in voters[1:]:
            other = find(v)
            if other != first:
                keep, drop = sorted((first, other))
                parent[drop] = keep
                first = keep
    voters = sorted(set(edges["voter_hash"].to_list()))
    frame = pl.DataFrame(
        {"voter_hash": voters, "root": [find(v) for v in voters]},
        schema={"voter_hash": pl.String, "root": pl.String},
    )
    return (
        frame.with_columns(pl.col("voter_hash").min().over("root").alias("group"))
        .filter(pl.len().over("root") >= 2)
        .select("voter_hash", ("link:" + pl.col("group")).alias("group"))
        .sort("voter_hash")
    )
