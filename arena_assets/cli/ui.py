"""`arena-assets ui`: the Dagster UI (webserver + daemon, `dg dev`) over the project's
instance and data, as `make ui` starts it.

Why a command rather than `dg dev` in the project folder:
- settings: Dagster's CLI loads ``.env`` from its working directory *over* the shell's
  variables; this runs it from a folder whose ``.env`` holds the merged values with the
  shell winning (``envfile.dagster_workdir``), as `arena-assets demo` does;
- the site: the runs' metadata links the leaderboard site's pages; with no public URL
  set, the site root is served on loopback for the UI's life (``site_server.py``) so the
  links open from the UI;
- the instance: `dg dev` warns that a ``dagster.yaml`` in the working directory is ignored
  when DAGSTER_HOME is elsewhere. The project's ``dagster.yaml`` is the template `make`
  copies into DAGSTER_HOME, so from that other folder there is nothing to warn about.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path


def dev_command(workspace: Path, host: str, port: int) -> list[str]:
    """`dg dev` (the successor of `dagster dev`) for the project's workspace (code location
    name `arena_assets`, as `[tool.dg.project]` says)."""
    dg = Path(sys.executable).with_name("dg")
    return [str(dg), "dev", "-w", str(workspace), "-h", host, "-p", str(port)]


def run_ui(args: argparse.Namespace) -> int:
    from arena_assets.cli.arena_child import simulated_arena_for_runs
    from arena_assets.cli.site_server import site_for_runs
    from arena_assets.envfile import dagster_workdir, setting

    if not os.environ.get("DAGSTER_HOME"):
        raise SystemExit(
            "DAGSTER_HOME is not set: run `make ui`, or export DAGSTER_HOME "
            "(a folder holding dagster.yaml; `make install` makes .dagster_home)"
        )
    print(
        f"Dagster UI on http://{args.host}:{args.port} (instance {os.environ['DAGSTER_HOME']})",
        flush=True,
    )
    workspace = Path(args.project).resolve() / "workspace.yaml"
    raw_root = setting("ARENA_RAW_ROOT", "./data/raw")
    # tasks set to `simulated` need an arena: one child process for the UI's whole life,
    # reading the hidden truth of a local raw root (a remote one: the prompts alone)
    # the site's pages, linked from the runs' metadata, served where the UI can open them
    with (
        simulated_arena_for_runs(setting, None if "://" in raw_root else raw_root) as arena,
        site_for_runs(setting, args.project) as site,
        dagster_workdir(args.project) as (workdir, env),
    ):
        if arena:
            print(f"the simulated arena serves the LLM tasks at {arena}", flush=True)
        if site:
            print(f"the leaderboard site is served at {site}/", flush=True)
        proc = subprocess.Popen(dev_command(workspace, args.host, args.port), cwd=workdir, env=env)
        try:
            return proc.wait()
        except KeyboardInterrupt:
            # Ctrl-C reached `dg dev` too: let it stop its webserver, daemon and code server
            # (subprocess.run would kill it a quarter second later and orphan them)
            return proc.wait()


def register(sub: argparse._SubParsersAction) -> None:
    ui = sub.add_parser("ui", help="the Dagster UI (dg dev) over the project's instance and data")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.add_argument(
        "--project", default=".", help="folder holding the project's .env and workspace.yaml"
    )
    ui.set_defaults(func=run_ui)
