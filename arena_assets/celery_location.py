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

# Celery settings of the workers (deploy/celery-worker.yaml: its comment says why) and of the
# runs, kept the same so that both sides read one configuration (a test checks): a step is
# acknowledged when it ends (the workers' copy is the one that acts), so a busy worker does
# not reserve the next step while another is idle.
CELERY_SETTINGS = {"worker_prefetch_multiplier": 1, "task_acks_late": True}


@dg.definitions
def defs() -> dg.Definitions:
    # imported here so that the package imports without the `deploy` extra installed
    from dagster_celery import celery_executor

    executor = celery_executor.configured(
        {
            "broker": {"env": "ARENA_CELERY_BROKER_URL"},
            "backend": {"env": "ARENA_CELERY_BACKEND_URL"},
            "config_source": dict(CELERY_SETTINGS),
        },
        name="arena_celery_executor",
    )
    return dg.Definitions.merge(code_location.defs(), dg.Definitions(executor=executor))
