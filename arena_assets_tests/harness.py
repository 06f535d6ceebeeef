"""Run the real code location's assets in-process for one month (tests only)."""

from __future__ import annotations

import dagster as dg

from arena_assets.definitions import defs as load_defs


def materialize(
    month: str,
    selection: str = "*",
    raise_on_error: bool = True,
    *,
    tags: dict[str, str] | None = None,
    instance: dg.DagsterInstance | None = None,
) -> dg.ExecuteInProcessResult:
    """Materialize ``selection`` ("*" or comma-separated asset names) for one partition,
    with its asset checks, the code location's resources and the current environment
    (``tags``: the run's tags; ``instance``: where the run is recorded, default a new
    ephemeral one)."""
    defs = load_defs()
    chosen = (
        dg.AssetSelection.all()
        if selection == "*"
        else dg.AssetSelection.assets(*selection.split(","))
    )
    return dg.materialize(
        assets=list(defs.assets or []),
        resources=defs.resources,
        partition_key=month,
        selection=chosen,
        raise_on_error=raise_on_error,
        tags=tags,
        instance=instance,
    )


def failure_lines(result: dg.ExecuteInProcessResult) -> list[str]:
    """Per failed step, what the UI shows as the headline: the failure's description (a
    known error's one line), else the first line of the error that caused it (Dagster's
    wrapper "Error occurred while executing op" unwrapped)."""
    out = []
    for event in result.get_step_failure_events():
        said = event.step_failure_data.user_failure_data
        if said is not None and said.description:
            out.append(said.description.strip().splitlines()[0])
            continue
        error = event.step_failure_data.error
        while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
            error = error.cause
        out.append((error.message or "").strip().splitlines()[0])
    return out


def s3_bucket(endpoint: str, bucket: str) -> dict:
    """Create ``bucket`` on the loopback S3 server at ``endpoint`` (the ``s3_endpoint``
    fixture) and return the fsspec storage options that reach it."""
    import boto3

    boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        region_name="us-east-1",
    ).create_bucket(Bucket=bucket)
    return {
        "key": "test",
        "secret": "test",
        "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-east-1"},
    }
