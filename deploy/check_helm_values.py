"""Validate deploy/helm/values.yaml against the Dagster Helm chart's values schema, offline.

    python deploy/check_helm_values.py SCHEMA_JSON [VALUES] [--chart-values CHART_VALUES]

SCHEMA_JSON is the chart's ``values.schema.json`` (from a checkout or an unpacked
``helm pull dagster/dagster --untar``; nothing of the chart is kept in this repository).
The chart's own ``values.yaml`` (``--chart-values``, by default the one beside the schema)
is merged under ours first, as ``helm install -f`` does: maps merge key by key, lists and
scalars replace, a null in our file deletes the chart's key. Without that merge every key
the chart defaults would be reported missing.

The schema's Kubernetes types point at an external site (kubernetesjsonschema.dev) that
is not reachable offline; those references are dropped (and counted in the output) and
only the constraints written beside them in the chart's schema apply (an object, a map of
strings...), so pod-spec fields (resources, probes, affinity...) are checked for their
place and type in the tree but not their inner shape. Exit status 0 when valid, 1 with one line
per error otherwise.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml
from jsonschema import Draft7Validator
from jsonschema.exceptions import best_match

DEFAULT_VALUES = Path(__file__).resolve().parent / "helm" / "values.yaml"


def merge_like_helm(ours: dict, chart: dict) -> dict:
    """Our values over the chart's defaults, with Helm's coalescing rules."""
    out = dict(chart)
    for key, value in ours.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge_like_helm(value, out[key])
        else:
            out[key] = value
    return out


def without_external_refs(node, dropped: list[str]):
    """A copy of a schema with every ``$ref`` outside the document removed."""
    if isinstance(node, list):
        return [without_external_refs(item, dropped) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "$ref" and isinstance(value, str) and not value.startswith("#"):
            dropped.append(value)
            continue
        out[key] = without_external_refs(value, dropped)
    return out


def validation_errors(schema: dict, values: dict) -> tuple[list[str], list[str]]:
    """(one line per schema error, the external references that were dropped)."""
    dropped: list[str] = []
    # draft 7: the chart's schema uses if/then/const and no $schema of its own
    validator = Draft7Validator(without_external_refs(schema, dropped))
    # an anyOf (value-or-null) error names the branch that got closest, not the whole value
    errors = [best_match([e]) for e in validator.iter_errors(values)]
    errors.sort(key=lambda e: list(map(str, e.absolute_path)))
    lines = [f"{'.'.join(map(str, e.absolute_path)) or '(root)'}: {e.message}" for e in errors]
    return lines, dropped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("schema", type=Path, help="the chart's values.schema.json")
    parser.add_argument(
        "values",
        type=Path,
        nargs="?",
        default=DEFAULT_VALUES,
        help="our values (default: deploy/helm/values.yaml)",
    )
    parser.add_argument(
        "--chart-values",
        type=Path,
        help="the chart's values.yaml (default: values.yaml beside the schema)",
    )
    args = parser.parse_args(argv)

    schema = json.loads(args.schema.read_text())
    ours = yaml.safe_load(args.values.read_text()) or {}
    chart_values = args.chart_values or args.schema.with_name("values.yaml")
    if not chart_values.exists():
        parser.error(
            f"{chart_values}: the chart's values.yaml is needed for its defaults "
            "(pass --chart-values)"
        )
    merged = merge_like_helm(ours, yaml.safe_load(chart_values.read_text()) or {})

    errors, dropped = validation_errors(schema, merged)
    for line in errors:
        print(f"error: {line}")
    sites = sorted({ref.split("#")[0] for ref in dropped})
    refs = f"; {len(dropped)} references into {sites} not checked (offline)"
    if errors:
        print(f"{args.values}: {len(errors)} error(s) against {args.schema}{refs}")
        return 1
    print(
        f"{args.values}: valid against {args.schema} merged over {chart_values} "
        f"({len(ours)} top-level keys of ours){refs}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
