"""Property tests: any text a controller or user can produce survives every reporter.

Covers: JUnit output always parses (whatever characters messages, tracebacks, names and values
hold); the plain terminal report never carries an escape or a carriage return; the JSON report
round-trips and validates against its schema for arbitrary results.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import (
    Check,
    CheckResult,
    ConvergedState,
    Counterexample,
    DiffEntry,
    ScenarioResult,
    Stats,
    Step,
    Verdict,
    Write,
)
from kamera_cli.model.scenario import Position
from kamera_cli.report import from_json, render, to_json, to_junit_xml
from kamera_cli.report.json_report import dumps

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "result.schema.json").read_text("utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)

text = st.text(max_size=30)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
refs = st.builds(ObjectRef, text, text, text, text)
diffs = st.builds(DiffEntry, st.sampled_from(["add", "remove", "replace"]), text, json_values, json_values)
writes = st.builds(
    Write, text, refs, st.sampled_from(["", "status"]), st.tuples(diffs) | st.just(()), st.sampled_from([0, 409])
)
steps = st.builds(
    Step,
    st.integers(1, 30),
    st.sampled_from(["reconcile", "action", "garbage-collector", "time"]),
    text,
    text,
    st.lists(writes, max_size=2).map(tuple),
    text,
    text,
)
step_tuples = st.lists(steps, max_size=2).map(tuple)
counterexamples = st.builds(
    Counterexample,
    text,
    text,
    step_tuples,
    step_tuples,
    step_tuples,
    st.lists(st.tuples(refs, st.lists(diffs, max_size=2).map(tuple)), max_size=2).map(tuple),
    text,
)
positions = st.builds(Position, text, st.integers(0, 500), st.integers(0, 80))
checks = st.builds(
    Check, text, st.sampled_from(list(Verdict)), text, st.lists(counterexamples, max_size=2).map(tuple), positions
)
stats = st.builds(
    Stats,
    *(st.integers(0, 10**6) for _ in range(6)),
    st.floats(0, 1e4, allow_nan=False),
    text,
)
manifests = st.dictionaries(text, json_values, max_size=3)
converged = st.builds(ConvergedState, text, st.lists(manifests, max_size=2).map(tuple), step_tuples)
scenarios = st.builds(
    ScenarioResult,
    text,
    text,
    st.sampled_from(list(Verdict)),
    st.lists(checks, max_size=3).map(tuple),
    stats,
    st.lists(converged, max_size=2).map(tuple),
    text,
    text,
    text,
    positions,
)
results = st.lists(scenarios, max_size=2).map(lambda s: CheckResult(tuple(s)))

fast = settings(
    max_examples=25, deadline=None, database=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


@fast
@given(results)
def test_junit_always_parses(result: CheckResult) -> None:
    root = ET.fromstring(to_junit_xml(result))
    assert root.tag == "testsuites"
    assert len(root.findall("testsuite")) == len(result.scenarios)


@fast
@given(results)
def test_plain_terminal_report_is_free_of_control_characters(result: CheckResult) -> None:
    for verbosity in (-1, 0, 1):
        out = render(result, verbosity=verbosity)
        assert not any(ch in out for ch in "\x1b\r\x00\x07")


@fast
@given(results)
def test_json_round_trips_and_validates(result: CheckResult) -> None:
    doc = to_json(result)
    VALIDATOR.validate(doc)
    assert from_json(json.loads(dumps(result))) == result
