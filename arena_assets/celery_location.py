"""The same code location with the Celery executor (dagster-celery), for deployments that
spread the steps of a run over Celery workers instead of one process per run.

Selecting it is configuration, not a code edit: the webserver, daemon and workers load
``-m arena_assets.celery_location`` instead of ``-m arena_assets.definitions`` (workspace.yaml,
or the Helm chart's ``dagsterApiGrpcArgs``), and the broker and result backend come from
``ARENA_CELERY_BROKER_URL`` / ``ARENA_CELERY_BACKEND_URL`` at run time. Assets, resources and
checks are the code location's own; only the executor differs. See deploy/README.md.
"""

import dagster as dg

# the module, not its `defs`: Dagster allows one @definitions function per module scope
from arena_assets import definitions as code_location


@dg.definitions
def defs() -> dg.Definitions:
    # imported here so that the package imports without the `deploy` extra installed
    from dagster_celery import celery_executor

    executor = celery_executor.configured(
        {"broker": {"env": "ARENA_CELERY_BROKER_URL"},
         "backend": {"env": "ARENA_CELERY_BACKEND_URL"}},
        name="arena_celery_executor",
    )
    return dg.Definitions.merge(code_location.defs(), dg.Definitions(executor=executor))
