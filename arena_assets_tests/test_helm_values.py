"""deploy/check_helm_values.py on a small hand-written chart: Helm's merge of our values
over the chart's defaults, and errors that name the key. (The real chart's schema is not
kept in this repository; deploy/README.md says which version the values passed.)"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "deploy" / "check_helm_values.py"

SCHEMA = {
    "type": "object",
    "required": ["runLauncher", "image"],
    "properties": {
        "image": {
            "type": "object",
            "required": ["repository", "pullPolicy"],
            "properties": {
                "pullPolicy": {"enum": ["Always", "IfNotPresent"]},
                "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            },
        },
        "runLauncher": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "type": {"enum": ["K8sRunLauncher", "CeleryK8sRunLauncher"]},
                "envSecrets": {"type": "array"},
                "resources": {"$ref": "https://example.invalid/k8s.json#/defs/R"},
            },
            "allOf": [
                {
                    "if": {"properties": {"type": {"const": "CeleryK8sRunLauncher"}}},
                    "then": {"required": ["queues"]},
                }
            ],
        },
    },
}
CHART_DEFAULTS = """
image: {repository: dagster/user-code, tag: ~, pullPolicy: Always}
runLauncher: {type: K8sRunLauncher, envSecrets: [{name: default}]}
"""


def _check(tmp_path: Path, ours: str) -> subprocess.CompletedProcess:
    (tmp_path / "values.schema.json").write_text(json.dumps(SCHEMA))
    (tmp_path / "values.yaml").write_text(CHART_DEFAULTS)
    (tmp_path / "ours.yaml").write_text(ours)
    return subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(tmp_path / "values.schema.json"),
            str(tmp_path / "ours.yaml"),
        ],
        capture_output=True,
        text=True,
    )


def test_our_values_merge_over_the_chart_defaults(tmp_path):
    # image.repository comes from the chart; our list replaces the chart's list
    out = _check(
        tmp_path,
        "image: {pullPolicy: IfNotPresent, tag: '1.0'}\n"
        "runLauncher: {envSecrets: [{name: ours}], resources: {cpu: 2}}\n",
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "valid against" in out.stdout and "1 references into" in out.stdout


@pytest.mark.parametrize(
    ("ours", "expected"),
    [
        (
            "runLauncher: {envSecret: []}\n",
            "runLauncher: Additional properties are not allowed ('envSecret'",
        ),
        ("image: {pullPolicy: Sometimes}\n", "image.pullPolicy: 'Sometimes' is not one of"),
        ("image: {repository: ~}\n", "image: 'repository' is a required property"),  # null deletes
        ("runLauncher: {type: CeleryK8sRunLauncher}\n", "'queues' is a required property"),
        ("image: {tag: 3}\n", "image.tag: 3 is not valid under any of the given schemas"),
    ],
)
def test_errors_name_the_key(tmp_path, ours, expected):
    out = _check(tmp_path, ours)
    assert out.returncode == 1
    assert expected in out.stdout, out.stdout


def test_missing_chart_defaults_is_a_clear_error(tmp_path):
    (tmp_path / "values.schema.json").write_text(json.dumps(SCHEMA))
    out = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path / "values.schema.json")],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 2 and "--chart-values" in out.stderr
