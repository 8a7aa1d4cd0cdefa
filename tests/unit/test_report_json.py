"""The JSON report: schema-valid, complete (round trip), sorted and byte-stable.

Covers: validation of every sample against ``schemas/result.schema.json``; ``from_json`` rebuilding
the exact ``CheckResult`` (directly and through the file text); sorted keys; identical bytes under
different ``PYTHONHASHSEED``; derived figures; clear errors for foreign documents.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from kamera_cli.model.result import RESULT_FORMAT_VERSION, CheckResult
from kamera_cli.report import ResultFormatError, from_json, to_json, write_json
from kamera_cli.report.json_report import dumps

try:
    from tests.unit.test_report_samples import everything, livelock, nondeterministic, passing
except ImportError:  # tests/unit is not a package: pytest put this folder on sys.path
    from test_report_samples import everything, livelock, nondeterministic, passing  # type: ignore[no-redef]

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "result.schema.json").read_text(encoding="utf-8"))


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize("result", [everything(), CheckResult(())], ids=["everything", "empty"])
def test_output_validates_against_the_schema(result: CheckResult) -> None:
    jsonschema.Draft202012Validator(SCHEMA).validate(to_json(result))


def test_schema_rejects_unknown_fields() -> None:
    doc = to_json(CheckResult((passing(),)))
    doc["scenarios"][0]["stats"]["surprise"] = 1
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(SCHEMA).validate(doc)


def test_every_schema_property_has_a_description() -> None:
    def walk(node: Any, where: str) -> None:
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                assert "description" in sub or "$ref" in sub, f"{where}.{name} has no description"
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}[{i}]")

    walk(SCHEMA, "$")


def test_round_trip_rebuilds_the_same_result() -> None:
    result = everything()
    assert from_json(to_json(result)) == result
    assert from_json(json.loads(dumps(result))) == result
    assert from_json(to_json(CheckResult(()))) == CheckResult(())


def test_top_level_and_derived_figures() -> None:
    doc = to_json(everything())
    assert doc["version"] == RESULT_FORMAT_VERSION
    assert doc["verdict"] == "error" and doc["passed"] is False
    assert doc["summary"] == {
        "scenarios": 7,
        "passed": 1,
        "failed": 4,
        "inconclusive": 1,
        "error": 1,
        "elapsed_seconds": pytest.approx(16.7),
    }
    stats = doc["scenarios"][0]["stats"]
    assert stats["states_per_second"] == 490.476
    assert stats["memo_hit_rate"] == 0.62


def test_counterexample_carries_steps_writes_diffs_loop_and_story() -> None:
    cx = to_json(CheckResult((livelock(),)))["scenarios"][0]["checks"][0]["counterexamples"][0]
    assert cx["kind"] == "livelock"
    assert [s["index"] for s in cx["steps"]] == [1]
    assert [s["index"] for s in cx["loop"]] == [2, 3]
    first_write = cx["steps"][0]["writes"][0]
    assert first_write == {
        "verb": "created",
        "ref": {"api_version": "v1", "kind": "ConfigMap", "namespace": "default", "name": "demo-cfg"},
        "subresource": "",
        "refused": 0,
        "defaulted": 0,
        "diff": [{"op": "add", "path": "/data/key", "old": None, "new": "v"}],
        "description": "created v1/ConfigMap default/demo-cfg",
    }
    assert cx["steps"][0]["headline"].startswith("1. widget reconcile default/demo → created")
    assert cx["story"].endswith("↺ back to step 2")


def test_nondeterminism_has_alternative_state_diff_and_converged_states() -> None:
    scenario = to_json(CheckResult((nondeterministic(),)))["scenarios"][0]
    cx = scenario["checks"][0]["counterexamples"][0]
    assert [s["actor"] for s in cx["alternative"]] == ["sidecar"]
    assert cx["state_diff"][0]["diff"] == [{"op": "replace", "path": "/data/key", "old": "v", "new": "w"}]
    assert [c["fingerprint"] for c in scenario["converged"]] == ["aaaa1111bbbb2222", "cccc3333dddd4444"]
    assert scenario["converged"][1]["objects"][0]["data"] == {"key": "w"}
    assert scenario["converged"][1]["path"][0]["actor"] == "sidecar"


def test_keys_are_sorted_everywhere() -> None:
    def check(node: Any) -> None:
        if isinstance(node, dict):
            assert list(node) == sorted(node)
            for value in node.values():
                check(value)
        elif isinstance(node, list):
            for value in node:
                check(value)

    check(to_json(everything()))


def test_file_is_byte_identical_across_hash_seeds(tmp_path: Path) -> None:
    script = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "from test_report_samples import everything\n"
        "from kamera_cli.report.json_report import dumps\n"
        "sys.stdout.buffer.write(dumps(everything()).encode())\n"
    )
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run(
            [sys.executable, "-c", script, str(ROOT), str(Path(__file__).parent)],
            env=env,
            capture_output=True,
            check=True,
        )
        outputs.add(run.stdout)
    assert len(outputs) == 1
    target = tmp_path / "out" / "result.json"
    write_json(everything(), target)
    assert target.read_bytes() in outputs
    assert target.read_text(encoding="utf-8").endswith("}\n")


def test_foreign_documents_get_a_clear_error() -> None:
    with pytest.raises(ResultFormatError, match="unsupported result format version 'other/v9'"):
        from_json({"version": "other/v9", "scenarios": []})
    broken = to_json(CheckResult((passing(),)))
    del broken["scenarios"][0]["checks"][0]["verdict"]
    with pytest.raises(ResultFormatError, match="malformed kamera result document: KeyError"):
        from_json(broken)
    bad_verdict = to_json(CheckResult((passing(),)))
    bad_verdict["scenarios"][0]["verdict"] = "maybe"
    with pytest.raises(ResultFormatError, match="'maybe' is not a valid Verdict"):
        from_json(bad_verdict)


def test_reads_a_v1alpha1_document_with_the_newer_fields_empty() -> None:
    """v1alpha2 only added fields (``reads``, ``nodes``, ``alternative_nodes``, ``graph``): older files still read."""
    doc = to_json(everything())
    doc["version"] = "kamera.dev/result/v1alpha1"
    for scenario in doc["scenarios"]:
        scenario.pop("graph", None)
        for check in scenario["checks"]:
            for cx in check["counterexamples"]:
                del cx["nodes"], cx["alternative_nodes"]
                for step in [*cx["steps"], *cx["loop"], *cx["alternative"]]:
                    del step["reads"]
    old = from_json(doc)
    assert all(s.graph is None for s in old.scenarios)
    assert all(not x.nodes for s in old.scenarios for c in s.checks for x in c.counterexamples)
    assert [s.name for s in old.scenarios] == [s.name for s in everything().scenarios]
