"""The release stage's settings: where public snapshots go, their salt secret, their licence."""

from __future__ import annotations

import dagster as dg


class ReleaseSettings(dg.ConfigurableResource):
    """Where each month's release is written and how it is keyed and licensed."""

    release_root: str = "./data/release"
    # each release's salt is an HMAC of its name under this secret (release.release_salt):
    # user hashes cannot be joined across releases, nor to the lake's
    secret: str = ""
    license: str = "other"
    # months whose release left our hands (pushed to a hub, sent out): comma-separated, "*"
    # for all. A forget still rewrites their local folder, and warns that the published
    # copy holds the user (arena_assets/privacy/releases.py)
    published: str = ""


@dg.definitions
def resources() -> dg.Definitions:
    return dg.Definitions(
        resources={
            "release_settings": ReleaseSettings(
                release_root=dg.EnvVar("ARENA_RELEASE_ROOT"),
                secret=dg.EnvVar("ARENA_RELEASE_SECRET"),
                license=dg.EnvVar("ARENA_RELEASE_LICENSE"),
                published=dg.EnvVar("ARENA_RELEASE_PUBLISHED"),
            )
        }
    )
