"""What the commands that start Dagster runs share: settings read outside Dagster, paths
that may be local folders or object-store URLs, and freeing what killed runs held."""

from __future__ import annotations

import os
import shutil


def env_setting(name: str, default: str) -> str:
    """The demo runs outside Dagster: the shell's variable, else ``.env`` (python-dotenv's
    parser), else the default; the Dagster runs it starts see the same values
    (``envfile.dagster_workdir``)."""
    from arena_assets.envfile import setting

    return setting(name, default)


# the job that covers every asset for one month (arena_assets/defs/schedules.py)
EVERY_ASSET_JOB = "monthly_refresh"


def free_dead_runs() -> None:
    """Runs of the instance killed earlier hold pool slots that would block this run: fail
    them and free the slots first (arena_assets/instance.py; the daemon does it when up)."""
    if not os.environ.get("DAGSTER_HOME"):
        return
    import dagster as dg

    from arena_assets.instance import reap_dead_runs

    with dg.DagsterInstance.get() as instance:
        for run_id in reap_dead_runs(instance):
            print(f"  run {run_id}: its worker had died; marked ended, pool slots freed")


def children_cpu() -> float:
    """CPU seconds (user + system) of the finished child processes so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def is_url(path: str) -> bool:
    return "://" in path


def storage_options(url: str) -> dict:
    """fsspec options for an s3:// root from the ARENA_S3_* settings, built by the code
    location's own resource (one place decides what they mean)."""
    if not url.startswith("s3://"):
        return {}
    from arena_assets.defs.resources import ArenaStorage

    return ArenaStorage.from_settings().storage_options()


def remove_path(path: str) -> None:
    if is_url(path):
        import fsspec

        fs, root = fsspec.core.url_to_fs(path, **storage_options(path))
        if fs.exists(root):
            fs.rm(root, recursive=True)
    elif os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)


def simulated_url(url: str | None, seed: int, flag: str) -> str:
    """The simulated arena's URL for an endpoint given as ``simulated``: ``url`` (the
    command's ``--sim-base-url``, by default ``ARENA_SIM_BASE_URL``); one clear line when
    none is given. The command meets the arena over HTTP, as it meets a real endpoint."""
    from arena_assets.llm.endpoints import simulated_arena_url

    # read here, not when the parser is built: `--help` and the generated command
    # reference show no value of this machine's environment
    if url is None:
        url = env_setting("ARENA_SIM_BASE_URL", "")
    return simulated_arena_url(url, seed, flag)


def add_simulated_args(parser) -> None:
    """``--sim-base-url`` and ``--sim-seed``: where endpoints given as ``simulated`` are."""
    parser.add_argument(
        "--sim-base-url",
        default=None,
        help="URL of the simulated arena (`arena-sim serve`) that endpoints given as "
        "'simulated' mean (default: ARENA_SIM_BASE_URL)",
    )
    parser.add_argument(
        "--sim-seed",
        type=int,
        default=7,
        help="the simulated arena's world seed (named in the output)",
    )
