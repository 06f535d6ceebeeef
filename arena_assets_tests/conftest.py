"""Shared fixtures: an isolated project environment (raw root, lake, catalog) per test."""

from __future__ import annotations

from pathlib import Path

import pytest

# ../shared/real beside the checkout; a worktree one level deeper (wt/<name>) finds it higher up
REAL = next(
    (
        p / "shared" / "real"
        for p in Path(__file__).resolve().parents[2:4]
        if (p / "shared" / "real").is_dir()
    ),
    Path(__file__).resolve().parents[2] / "shared" / "real",
)


@pytest.fixture
def real_data() -> Path:
    """../shared/real, or a clean skip where it is absent."""
    if not REAL.is_dir():
        pytest.skip("../shared/real is not present")
    return REAL


@pytest.fixture
def arena_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Every ARENA_* variable pointed at a fresh folder, as `.env.example` lists them."""
    env = arena_env_values(tmp_path)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def arena_env_values(tmp_path: Path) -> dict[str, str]:
    """The ``arena_env`` settings under ``tmp_path`` (for module-scoped fixtures, which
    cannot use the function-scoped one)."""
    return {
        "ARENA_RAW_ROOT": str(tmp_path / "raw"),
        "ARENA_LAKE_ROOT": str(tmp_path / "lake"),
        "ARENA_CATALOG": str(tmp_path / "arena.duckdb"),
        "ARENA_DUCKDB_MEMORY_LIMIT": "1GB",
        "ARENA_S3_ENDPOINT_URL": "",
        "ARENA_S3_ACCESS_KEY_ID": "",
        "ARENA_S3_SECRET_ACCESS_KEY": "",
        "ARENA_S3_REGION": "",
        "ARENA_USER_SALT": "test-salt",
        "ARENA_INGEST_WORKERS": "1",
        "ARENA_ALLOW_PARTIAL_FILES": "false",
        "ARENA_RAW_LOGS_RETENTION_MONTHS": "0",
        "ARENA_MODERATION_BASE_URL": "",
        "ARENA_MODERATION_API_KEY": "",
        "ARENA_MODERATION_MODEL": "omni-moderation-latest",
        "ARENA_ALIAS_TABLE": "",
        "ARENA_IDENTITY_NAMES": "",
        "ARENA_DAILY_VOTE_CAP": "50",
        "ARENA_ANOMALY_ALPHA": "0.001",
        "ARENA_BOOTSTRAP_ROUNDS": "50",
        "ARENA_MIN_BATTLES": "10",
        "ARENA_MIN_CATEGORY_BATTLES": "100",
        "ARENA_ANCHOR_MODEL": "",
        "ARENA_RELEASE_ROOT": str(tmp_path / "release"),
        "ARENA_RELEASE_SECRET": "test-release-secret",
        "ARENA_RELEASE_LICENSE": "cc-by-4.0",
        "ARENA_LABELER_BASE_URL": "simulated",
        "ARENA_LABELER_API_KEY": "",
        "ARENA_LABELER_MODEL": "sim-labeler-large",
        "ARENA_LABELER_MAX_CONCURRENCY": "8",
        "ARENA_LABELER_PRICE_INPUT_PER_1M": "0.15",
        "ARENA_LABELER_PRICE_OUTPUT_PER_1M": "0.6",
        "ARENA_EMBED_BASE_URL": "simulated",
        "ARENA_EMBED_API_KEY": "",
        "ARENA_EMBED_MODEL": "sim-embed-large",
        "ARENA_EMBED_MAX_CONCURRENCY": "8",
        "ARENA_EMBED_PRICE_INPUT_PER_1M": "",
        "ARENA_EMBED_PRICE_OUTPUT_PER_1M": "",
        "ARENA_LLM_CACHE_ROOT": "",
        "ARENA_LLM_BUDGET_USD": "",
        "ARENA_SIM_WORLD_SEED": "7",
        "ARENA_SIM_LATENCY": "",
        "ARENA_SIM_BASE_URL": "",
        "ARENA_LABEL_MAX_PROMPT_CHARS": "12500",
        "ARENA_LABEL_PROMPTS": "",
        "ARENA_IMAGE_ROOT": "",
        "ARENA_LABEL_REASK_UNREADABLE": "false",
        "ARENA_LABEL_MAX_PARSE_FAILURE_RATE": "0.05",
        "ARENA_JUDGE_BASE_URL": "simulated",
        "ARENA_JUDGE_API_KEY": "",
        "ARENA_JUDGE_MODEL": "sim-judge",
        "ARENA_JUDGE_MAX_CONCURRENCY": "8",
        "ARENA_JUDGE_PRICE_INPUT_PER_1M": "",
        "ARENA_JUDGE_PRICE_OUTPUT_PER_1M": "",
        "ARENA_BENCH_JUDGES": "sim-judge",
        "ARENA_CANDIDATES": '[{"name": "kelp-34b-pro", "base_url": "simulated"}, '
        '{"name": "atlas-8b-preview", "base_url": "simulated"}]',
        "ARENA_BENCH_BASELINE": "atlas-8b-preview",
        "ARENA_BENCH_SIZE": "20",
        "ARENA_BENCH_VISION_SIZE": "0",
        "ARENA_BENCH_MIN_QUALITY": "5",
        "ARENA_BENCH_MIN_CLUSTER_MEAN": "3",
        "ARENA_BENCH_STRONG_MIN_QUALITY": "6",
        "ARENA_BENCH_STRONG_MIN_CLUSTER_MEAN": "6",
        "ARENA_BENCH_PER_CLUSTER": "2",
        "ARENA_BENCH_JUDGE_MAX_TOKENS": "0",
        "ARENA_BENCH_ANSWER_MAX_TOKENS": "0",
        "ARENA_BENCH_MAX_CAP_HIT_SHARE": "0.01",
        "ARENA_BENCH_BOOTSTRAP_SEED": "42",
        "ARENA_BENCH_STRONG_WEIGHT": "3",
        "ARENA_BENCH_BOOTSTRAP_ROUNDS": "20",
        "ARENA_BENCH_RELABEL_MODEL": "",
        "ARENA_BENCH_SINGLE_GRADES": "false",
        "ARENA_BENCH_PROTOCOL": "arena-hard-v0.1",
        "ARENA_SITE_ROOT": str(tmp_path / "site"),
        "ARENA_SITE_NAME": "Arena leaderboard",
        "ARENA_SITE_PUBLIC_URL": "",
        "ARENA_SITE_DEPRECATE_AFTER_MONTHS": "2",
        "ARENA_SITE_PLOT_TOP": "30",
        "ARENA_SITE_HEATMAP_TOP": "20",
        # evaluators stage
        "ARENA_AGREEMENT_JUDGES": "sim-judge,reward:sim-reward,longer,markdown",
        "ARENA_AGREEMENT_SAMPLE_SIZE": "120",
        "ARENA_AGREEMENT_SEED": "0",
        "ARENA_AGREEMENT_BOOTSTRAP_ROUNDS": "200",
        "ARENA_AGREEMENT_BOARD_ROUNDS": "100",
        "ARENA_EVALUATORS_CI_LEVEL": "0.95",
        "ARENA_AGREEMENT_MIN_SLICE_BATTLES": "30",
        "ARENA_REFUSAL_THRESHOLD": "0.2",
        "ARENA_REFUSAL_MIN_CONVERSATIONS": "5",
        "ARENA_REFUSAL_MAX_PROMPT_CHARS": "4000",
        "ARENA_REWARD_BASE_URL": "simulated",
        "ARENA_REWARD_API_KEY": "",
        "ARENA_REWARD_MODEL": "sim-reward",
        "ARENA_REWARD_MAX_CONCURRENCY": "8",
        "ARENA_REWARD_PRICE_INPUT_PER_1M": "",
        "ARENA_REWARD_PRICE_OUTPUT_PER_1M": "",
        # completions stage
        "ARENA_COMPLETIONS_ROOT": "",
        "ARENA_COPILOT_MIN_BATTLES": "10",
        "ARENA_COPILOT_MIN_FILE_TYPE_BATTLES": "300",
        "ARENA_COPILOT_CI_LEVEL": "0.95",
        "ARENA_COPILOT_SEED": "0",
        "ARENA_COPILOT_INCLUDE_UNACCEPTED": "false",
        # routing stage
        "ARENA_P2L_LOSS": "bt",
        "ARENA_P2L_RANK": "4",
        "ARENA_P2L_REPLAY_MONTHS": "6",
        "ARENA_P2L_MAX_BATTLES": "1000000",
        "ARENA_P2L_MIN_MODEL_BATTLES": "20",
        "ARENA_P2L_BOOTSTRAP_ROUNDS": "20",
        "ARENA_ROUTER_PRICES": "",
        "ARENA_ROUTER_BUDGETS": "",
        # resilience (issue 16)
        "ARENA_ALLOW_EMPTY_MONTH": "false",
        "ARENA_RELEASE_PUBLISHED": "",
        "ARENA_PROJECT_DIR": "",
        "ARENA_LABEL_MAX_MISSING_RATE": "0.05",
    }


@pytest.fixture
def s3_endpoint():
    """moto's S3 server on loopback; it binds a free port itself and reports it (port 0,
    no probe-and-reuse race). moto keeps one in-memory backend per process: use a bucket
    of your own."""
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def env_example_keys() -> set[str]:
    path = Path(__file__).resolve().parents[1] / ".env.example"
    keys = set()
    for line in path.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            keys.add(line.split("=", 1)[0])
    return keys
