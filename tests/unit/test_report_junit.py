"""JUnit XML: valid against the JUnit XSD, the structure CI reporters read, and clean characters.

Covers: the XSD (``../shared/data/junit-10.xsd``, skipped when absent), counts on the root and
each suite, testcase names/file/line, failure/error elements per verdict, the story as failure
text, stripping of ANSI and XML-illegal characters, and byte-identical output.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from kamera_cli.model.result import Check, CheckResult, Counterexample, ScenarioResult, Step, Verdict
from kamera_cli.report import to_junit_xml, write_junit
from kamera_cli.report.story import story

try:
    from tests.unit.test_report_samples import FILE, everything, livelock, load_error, passing
except ImportError:  # tests/unit is not a package: pytest put this folder on sys.path
    from test_report_samples import FILE, everything, livelock, load_error, passing  # type: ignore[no-redef]

XSD = Path(__file__).resolve().parents[2] / ".." / "shared" / "data" / "junit-10.xsd"


def parse(result: CheckResult) -> ET.Element:
    return ET.fromstring(to_junit_xml(result))


def for_xsd(data: bytes, xsd_text: str) -> bytes:
    """Adapt our output to the XSD's dialect, removing only what it does not know.

    The XSD (the one pytest validates against) predates the ``file``/``line`` test-case attributes
    and root ``skipped``/``timestamp`` that GitHub/GitLab reporters read, and it spells the error
    element ``errors`` where every consumer (Jenkins, GitLab, dorny, mikepenz) reads ``error``.
    """
    root = ET.fromstring(data)
    for key in ("skipped", "timestamp"):
        root.attrib.pop(key, None)
    for case in root.iter("testcase"):
        case.attrib.pop("file", None)
        case.attrib.pop("line", None)
        if 'name="error"' not in xsd_text:
            for element in case.iter("error"):
                element.tag = "errors"
    out: bytes = ET.tostring(root, encoding="utf-8")
    return out


def test_validates_against_the_junit_xsd() -> None:
    xmlschema = pytest.importorskip("xmlschema", reason="xmlschema is not installed")
    if not XSD.is_file():
        pytest.skip(f"the JUnit XSD is absent ({XSD}); it ships with the shared reference data, not the package")
    schema = xmlschema.XMLSchema(str(XSD))
    xsd_text = XSD.read_text(encoding="utf-8")
    for result in (everything(), CheckResult(()), CheckResult((load_error(),))):
        schema.validate(for_xsd(to_junit_xml(result), xsd_text).decode("utf-8"))


def test_root_and_suite_counts() -> None:
    root = parse(everything())
    assert root.tag == "testsuites"
    assert root.attrib == {
        "name": "kamera",
        "tests": "12",
        "failures": "4",
        "errors": "2",
        "skipped": "0",
        "time": "16.700",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [s.name for s in everything().scenarios]
    first = suites[0]
    assert first.attrib == {
        "name": "widget-basic",
        "file": FILE,
        "tests": "4",
        "failures": "0",
        "errors": "0",
        "skipped": "0",
        "time": "0.840",
        "timestamp": "2026-01-01T00:00:00Z",
    }
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests", "")) == len(cases)
        assert int(suite.get("failures", "")) == len(suite.findall("testcase/failure"))
        assert int(suite.get("errors", "")) == len(suite.findall("testcase/error"))


def test_statistics_are_suite_properties() -> None:
    props = {p.get("name"): p.get("value") for p in parse(CheckResult((passing(),))).iter("property")}
    assert props == {
        "states": "412",
        "transitions": "1203",
        "reconciles": "380",
        "memo_hits": "620",
        "max_depth": "9",
        "converged_states": "1",
        "states_per_second": "490.5",
        "bound_hit": "",
    }


def test_testcases_carry_names_classname_file_and_line() -> None:
    cases = parse(CheckResult((passing(),))).findall("testsuite/testcase")
    assert [c.get("name") for c in cases] == [
        "converges",
        "deterministic",
        "no controller errors",
        "invariant: one-configmap",
    ]
    assert {c.get("classname") for c in cases} == {"widget-basic"}
    assert {c.get("file") for c in cases} == {FILE}
    assert [c.get("line") for c in cases] == ["20", "21", "22", "25"]
    assert all(list(c) == [] for c in cases)  # passed: no child element
    # the search is shared: its time is split evenly so the cases add up to the suite
    assert [c.get("time") for c in cases] == ["0.210"] * 4


def test_failure_carries_kind_message_and_the_story() -> None:
    scenario = livelock()
    [failure] = parse(CheckResult((scenario,))).iter("failure")
    assert failure.get("type") == "livelock"
    assert failure.get("message") == "no converged state is reachable from 1 state"
    assert failure.text == story(scenario.checks[0].counterexamples[0])
    assert failure.text is not None and "↺ back to step 2" in failure.text


def test_inconclusive_is_an_error_of_type_inconclusive() -> None:
    root = parse(everything())
    suite = next(s for s in root.iter("testsuite") if s.get("name") == "widget-big")
    [error] = suite.iter("error")
    assert error.get("type") == "inconclusive"
    assert error.get("message") == "no counterexample in the states explored"
    assert error.text == "no counterexample in the states explored\nbound hit: maxStates 100000 reached"


def test_load_error_is_one_load_testcase() -> None:
    [suite] = parse(CheckResult((load_error(),))).findall("testsuite")
    assert suite.get("tests") == "1" and suite.get("errors") == "1" and suite.get("failures") == "0"
    assert suite.find("properties") is None
    [case] = suite.findall("testcase")
    assert case.get("name") == "load"
    assert case.get("line") == "7"
    error = case.find("error")
    assert error is not None
    assert error.get("type") == "invalid-scenario"
    assert error.get("message") == (
        "scenarios/03-broken/scenario.yaml:7:3: $.spec.controllers[0]: 'entrypoint' is a required property"
    )
    assert error.text == load_error().error


def test_ansi_and_illegal_characters_are_stripped() -> None:
    nasty = "\x1b[31mKeyError\x1b[0m: 'a\x00b\x1fc' \ufffe"
    check = Check(
        "no controller errors",
        Verdict.FAILED,
        nasty + "\nsecond line",
        (Counterexample("controller-error", nasty, (Step(1, "reconcile", "c\x1b[1m", "ns/n", error=nasty),)),),
    )
    data = to_junit_xml(CheckResult((ScenarioResult("s\x07", FILE, Verdict.FAILED, (check,)),)))
    assert b"\x1b" not in data and b"\x00" not in data
    root = ET.fromstring(data)  # would raise on an illegal character
    failure = root.find("testsuite/testcase/failure")
    assert failure is not None
    assert failure.get("message") == "KeyError: 'a\\x00b\\x1fc' \\xfffe second line"
    assert failure.text is not None and "controller-error: KeyError: 'a\\x00b\\x1fc'" in failure.text
    suite = root.find("testsuite")
    assert suite is not None and suite.get("name") == "s\\x07"


def test_output_is_byte_identical_and_written_to_disk(tmp_path: Path) -> None:
    assert to_junit_xml(everything()) == to_junit_xml(everything())
    target = tmp_path / "reports" / "junit.xml"
    write_junit(everything(), target)
    assert target.read_bytes() == to_junit_xml(everything())
    assert target.read_bytes().startswith(b"<?xml version='1.0' encoding='utf-8'?>\n<testsuites ")


def test_a_check_declared_in_another_file_points_there() -> None:
    from kamera_cli.model.scenario import Position

    check = Check("invariant: shared", Verdict.FAILED, "x", position=Position("invariants/shared.yaml", 4, 3))
    unplaced = Check("converges", Verdict.PASSED)
    scenario = ScenarioResult("s", FILE, Verdict.FAILED, (check, unplaced), position=Position(FILE, 1, 1))
    cases = parse(CheckResult((scenario,))).findall("testsuite/testcase")
    assert [(c.get("file"), c.get("line")) for c in cases] == [("invariants/shared.yaml", "4"), (FILE, "1")]
    failure = cases[0].find("failure")
    assert failure is not None and failure.get("type") == "failed" and failure.text == "x"
