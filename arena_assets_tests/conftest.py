"""Shared fixtures: an isolated project environment (raw root, lake, catalog) per test."""

from __future__ import annotations

from pathlib import Path

import pytest

from arena_assets import settings

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
    env = with_simulated_arena(arena_env_values(tmp_path))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


# The tests' values where they differ from `.env.example`'s (smaller and faster, test
# secrets); every other setting is its default in the registry (arena_assets/settings.py).
TEST_SETTINGS = {
    "ARENA_DUCKDB_MEMORY_LIMIT": "1GB",
    "ARENA_USER_SALT": "test-salt",
    "ARENA_BOOTSTRAP_ROUNDS": "50",
    "ARENA_MIN_BATTLES": "10",
    "ARENA_MIN_CATEGORY_BATTLES": "100",
    "ARENA_RELEASE_SECRET": "test-release-secret",
    "ARENA_LABELER_PRICE_INPUT_PER_1M": "0.15",
    "ARENA_LABELER_PRICE_OUTPUT_PER_1M": "0.6",
    # a batch job in flight is looked at every 50 ms (the simulated arena's end at once)
    "ARENA_LLM_BATCH_POLL_SECONDS": "0.05",
    "ARENA_CANDIDATES": '[{"name": "kelp-34b-pro", "base_url": "simulated"}, '
    '{"name": "atlas-8b-preview", "base_url": "simulated"}]',
    "ARENA_BENCH_SIZE": "20",
    "ARENA_BENCH_BOOTSTRAP_ROUNDS": "20",
    "ARENA_AGREEMENT_SAMPLE_SIZE": "120",
    "ARENA_COPILOT_MIN_BATTLES": "10",
    "ARENA_P2L_RANK": "4",
    "ARENA_P2L_MIN_MODEL_BATTLES": "20",
    "ARENA_P2L_BOOTSTRAP_ROUNDS": "20",
    # a UI or demo started by a test serves no site on the shared machine's fixed port;
    # test_site_server.py serves one on a free port
    "ARENA_SITE_SERVE_PORT": "0",
}
# Settings the fixture leaves to the shell and the code: the partition bounds are read once
# per process (when arena_assets.defs.partitions is first imported), the Celery URLs only
# by arena_assets.celery_location.
NOT_SET_BY_TESTS = (
    "ARENA_PARTITIONS_START",
    "ARENA_PARTITIONS_END",
    "ARENA_CELERY_BROKER_URL",
    "ARENA_CELERY_BACKEND_URL",
)


def arena_env_values(tmp_path: Path) -> dict[str, str]:
    """The ``arena_env`` settings under ``tmp_path`` (for module-scoped fixtures, which
    cannot use the function-scoped one): the registry's defaults, ``TEST_SETTINGS`` and the
    folders under ``tmp_path``."""
    env = {k: v for k, v in settings.defaults().items() if k not in NOT_SET_BY_TESTS}
    return {
        **env,
        **TEST_SETTINGS,
        "ARENA_RAW_ROOT": str(tmp_path / "raw"),
        "ARENA_LAKE_ROOT": str(tmp_path / "lake"),
        "ARENA_CATALOG": str(tmp_path / "arena.duckdb"),
        "ARENA_RELEASE_ROOT": str(tmp_path / "release"),
        "ARENA_SITE_ROOT": str(tmp_path / "site"),
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


def with_simulated_arena(env: dict[str, str]) -> dict[str, str]:
    """``env`` with ``ARENA_SIM_BASE_URL`` naming a simulated arena in this process for its
    raw root and world seed, as `make demo` hands one to the runs: the product meets it by
    URL only. Started here (a daemon thread, a few milliseconds; its world is read from the
    logs' world.json at the first request, so a test may simulate after this), shared by
    every test of the process with the same raw root, so its counters can be read."""
    from arena_assets.simulator.shared import simulated_endpoint_url

    url = simulated_endpoint_url(env["ARENA_RAW_ROOT"], int(env["ARENA_SIM_WORLD_SEED"]))
    return {**env, "ARENA_SIM_BASE_URL": url}
