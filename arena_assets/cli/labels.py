"""`arena-assets label-topics CONVERSATIONS --base-url URL --model M --out FILE`.

Topic labels (and optionally clusters) for a conversations Parquet file, without Dagster.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arena_assets.envfile import setting


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "label-topics",
        help="LLM topic labels (and clusters) for a conversations file",
        description="Label each conversation with LMArena's categories through an OpenAI-compatible "
        "endpoint (criteria, instruction following, math, creative writing, refusals, vision; asked "
        "once per distinct input of all user turns; code by heuristic); optionally cluster the prompts.",
    )
    p.add_argument("conversations", type=Path, help="conversations Parquet (the lake's file)")
    p.add_argument(
        "--base-url", required=True, help="OpenAI-compatible root, e.g. http://127.0.0.1:8089/v1"
    )
    p.add_argument("--model", required=True, help="labeler model the endpoint serves")
    p.add_argument(
        "--api-key-env",
        default="OPENAI_API_KEY",
        help="variable holding the key (default OPENAI_API_KEY)",
    )
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument(
        "--max-prompt-chars",
        type=int,
        default=12_500,
        help="the joined user turns are cut here (LMArena's labeller: 12,500)",
    )
    p.add_argument("--prompts", default="", help="label prompt set YAML (default: the project's)")
    p.add_argument(
        "--image-root",
        default="",
        help="folder or s3:// prefix holding the images as <sha256>.<ext>: vision labels get "
        "each image as a data URL (without it, image prompts need --image-refs)",
    )
    p.add_argument(
        "--image-refs",
        action="store_true",
        help="the endpoint reads sha256:<hex> image references itself (a simulated arena)",
    )
    p.add_argument(
        "--cache", default="./data/lake/_llm_cache", help="cache root (folder or s3:// URL)"
    )
    p.add_argument("--month", default="", help="month column value (default: the file's own)")
    p.add_argument("--out", type=Path, required=True, help="topic_labels Parquet to write")
    p.add_argument(
        "--clusters-out", type=Path, help="also cluster: writes FILE and FILE's summary beside it"
    )
    p.add_argument(
        "--embed-model", help="embedding model at --base-url (default: offline wordllama)"
    )
    p.add_argument("--n-clusters", type=int, default=None)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import polars as pl

    from arena_assets.labels import (
        ClusterConfig,
        LabelConfig,
        OfflineEmbedder,
        build_topic_clusters,
        distinct_prompts,
        label_conversations,
    )
    from arena_assets.labels.prompt_sets import load_prompt_set
    from arena_assets.llm import LLMEndpointError, LLMTask, embed_texts, embeddings_cache

    conv = pl.read_parquet(args.conversations)
    month = args.month or (conv["month"][0] if "month" in conv.columns and conv.height else "")
    key = setting(args.api_key_env, "") or "sk-no-key"
    task = LLMTask(
        model=args.model, base_url=args.base_url, api_key=key, max_concurrency=args.concurrency
    )
    try:
        labels, report = label_conversations(
            conv,
            task,
            month=month,
            cache_root=args.cache,
            cfg=LabelConfig(
                max_prompt_chars=args.max_prompt_chars,
                prompt_set=load_prompt_set(args.prompts),
                image_root=args.image_root,
                image_refs=args.image_refs or None,
            ),
            progress=lambda p: print(f"  {p}", file=sys.stderr),
        )
        labels.write_parquet(args.out)
        print(f"{args.out}: {labels.height} rows; {report.as_metadata()}")
        if args.clusters_out:
            if args.embed_model:
                etask = LLMTask(
                    model=args.embed_model,
                    base_url=args.base_url,
                    api_key=key,
                    max_concurrency=args.concurrency,
                )
                cache = embeddings_cache(args.cache)
                embedder = lambda texts: embed_texts(etask, texts, cache)[0]  # noqa: E731
            else:
                embedder = OfflineEmbedder()
            assign, summary, _ = build_topic_clusters(
                distinct_prompts(conv),
                labels,
                embedder,
                month=month,
                cfg=ClusterConfig(n_clusters=args.n_clusters),
                namer=task,
                cache_root=args.cache,
            )
            assign.write_parquet(args.clusters_out)
            summary_path = args.clusters_out.with_name(args.clusters_out.stem + "_summary.parquet")
            summary.write_parquet(summary_path)
            print(
                f"{args.clusters_out}: {assign.height} prompts in {summary.height} clusters; {summary_path}"
            )
    except LLMEndpointError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
