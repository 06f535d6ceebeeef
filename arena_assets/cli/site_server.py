"""The leaderboard site served on loopback for the UI's and the demo's runs.

The site's pages are linked from Dagster metadata (each month's page, every board's page,
the bench's and the history's anchors). A link to a ``file://`` path is dead in the UI: a
web page may not open local files, so the UI shows it as text. When no public address is
configured (``ARENA_SITE_PUBLIC_URL`` empty) and the site root is a local folder,
`arena-assets ui` and `arena-assets demo` serve that folder on
``http://127.0.0.1:ARENA_SITE_SERVE_PORT`` and set ``ARENA_SITE_PUBLIC_URL`` to it for
the runs they start, the way they hand in the simulated arena's URL. The port is fixed, so
the links the demo's runs recorded work again whenever `make ui` runs. No Dagster here.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

SERVE_PORT_SETTING = "ARENA_SITE_SERVE_PORT"
PUBLIC_URL_SETTING = "ARENA_SITE_PUBLIC_URL"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format, *args) -> None:
        pass  # one line per request would bury the runs' output


def serve_port(setting: Callable[[str, str], str]) -> int:
    """``ARENA_SITE_SERVE_PORT`` as a port (0 = do not serve); exits with one line when it
    is not one."""
    value = setting(SERVE_PORT_SETTING, "3001").strip() or "0"
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise SystemExit(f"{SERVE_PORT_SETTING}={value!r} is not a port (0 to 65535)")
    return port


def local_root(root: str, project: str | Path = ".") -> Path | None:
    """The site root as a local folder (relative to ``project``), None for a remote one."""
    if "://" in root and not root.startswith("file://"):
        return None
    path = Path(root.removeprefix("file://"))
    return (path if path.is_absolute() else Path(project) / path).resolve()


@contextmanager
def site_for_runs(
    setting: Callable[[str, str], str], project: str | Path = ".", host: str = "127.0.0.1"
) -> Iterator[str | None]:
    """Serve the local site root on ``host``:``ARENA_SITE_SERVE_PORT`` and set
    ``ARENA_SITE_PUBLIC_URL`` to it in this process's environment (which the runs started
    from here inherit) for the duration; yield that URL. Yields None and changes nothing
    when a public URL is set, the port is 0 or the root is remote. When the port is taken
    (a `make ui` already serving the same root, say), the URL is set all the same and
    nothing is served from here."""
    port = serve_port(setting)
    folder = local_root(setting("ARENA_SITE_ROOT", "./data/site"), project)
    if setting(PUBLIC_URL_SETTING, "").strip() or port == 0 or folder is None:
        yield None
        return
    folder.mkdir(parents=True, exist_ok=True)
    url = f"http://{host}:{port}"
    handler = functools.partial(_QuietHandler, directory=str(folder))
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError as exc:
        print(
            f"the site's links point at {url}/, but that port is taken ({exc.strerror}); "
            f"whoever holds it serves them (free it or set {SERVE_PORT_SETTING})",
            flush=True,
        )
        server = None
    thread = None
    if server is not None:
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="site-server", daemon=True)
        thread.start()
    saved = os.environ.get(PUBLIC_URL_SETTING)
    os.environ[PUBLIC_URL_SETTING] = url  # the runs' environment: the shell wins over .env
    try:
        yield url
    finally:
        if saved is None:
            os.environ.pop(PUBLIC_URL_SETTING, None)
        else:
            os.environ[PUBLIC_URL_SETTING] = saved
        if server is not None:
            server.shutdown()
            server.server_close()
            thread.join()
