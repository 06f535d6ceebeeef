"""The environment the code location and the commands read, judged before anything runs.

Every registered ``ARENA_*`` setting in it (the shell's value, else ``.env``'s: the rule of
``envfile``) is checked by the registry (``settings.problems``) when the code location loads
(``definitions.py``) and before an `arena-assets` command runs (``cli.main``): a value that
cannot work stops both with one line per setting, naming the variable, the value and what
is allowed, instead of failing a step minutes later. No Dagster here (commands that do not
need it stay fast).
"""

from __future__ import annotations

from collections.abc import Mapping

from arena_assets import settings
from arena_assets.envfile import effective_env, setting
from arena_assets.errors import FIX_SETTING, SettingError


def check_settings(environ: Mapping[str, str] | None = None, env_file: str = ".env") -> None:
    """Raise ``SettingError`` (one line per setting) unless every registered setting in the
    environment (``environ``, default ``os.environ``, over ``env_file``) has a value its
    kind allows."""
    found = settings.problems(effective_env(env_file, environ))
    if found:
        raise SettingError(*(f"{line}: {FIX_SETTING}" for line in found))


def debug() -> bool:
    """``ARENA_DEBUG``: show the traceback behind a known error's one line."""
    return setting("ARENA_DEBUG", "false").strip().lower() in ("1", "true", "yes", "on")
