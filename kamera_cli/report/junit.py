"""JUnit XML for CI: one ``<testsuite>`` per scenario, one ``<testcase>`` per check.

Why stdlib ElementTree and this exact shape: it is the subset that dorny/test-reporter,
mikepenz/action-junit-report, GitLab and Jenkins all read (``<testsuites>`` root, decimal-second
times, ``file``/``line`` on test cases for annotations).  Every string is passed through
``xml_safe`` because ElementTree writes control characters (an ANSI escape from a controller's
exception message, say) verbatim, and the file then no longer parses.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from pathlib import Path

from kamera_cli.model.result import Check, CheckName, CheckResult, ScenarioResult, Verdict
from kamera_cli.report.story import story
from kamera_cli.report.text import one_line, xml_safe

#: JUnit ``message`` attributes are titles (action-junit-report shows them as such): keep them short
MESSAGE_LIMIT = 500


def to_junit_xml(result: CheckResult) -> bytes:
    root = ET.Element("testsuites")
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    elapsed = 0.0
    for scenario in result.scenarios:
        suite, counts = _suite(scenario)
        root.append(suite)
        for key in totals:
            totals[key] += counts[key]
        elapsed += scenario.stats.elapsed_seconds
    _set(root, "name", "kamera")
    for key, value in totals.items():
        _set(root, key, str(value))
    _set(root, "time", _seconds(elapsed))
    stamps = sorted(s.started_at for s in result.scenarios if s.started_at)
    if stamps:
        _set(root, "timestamp", stamps[0])
    ET.indent(root)
    body: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return body + b"\n"


def write_junit(result: CheckResult, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(to_junit_xml(result))


def _suite(scenario: ScenarioResult) -> tuple[ET.Element, dict[str, int]]:
    suite = ET.Element("testsuite")
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    stats = scenario.stats
    if scenario.verdict is Verdict.ERROR:
        case = _case(scenario, CheckName.LOAD, scenario.position.line, stats.elapsed_seconds)
        text = scenario.error or "the scenario could not be loaded"
        _outcome(case, "error", "invalid-scenario", text.strip().splitlines()[0] if text.strip() else text, text)
        suite.append(case)
        counts["tests"] = counts["errors"] = 1
    else:
        properties = ET.SubElement(suite, "properties")
        for name, value in (
            ("states", str(stats.states)),
            ("transitions", str(stats.transitions)),
            ("reconciles", str(stats.reconciles)),
            ("memo_hits", str(stats.memo_hits)),
            ("max_depth", str(stats.max_depth)),
            ("converged_states", str(stats.converged_states)),
            ("states_per_second", f"{stats.states_per_second:.1f}"),
            ("bound_hit", stats.bound_hit),
        ):
            prop = ET.SubElement(properties, "property")
            _set(prop, "name", name)
            _set(prop, "value", value)
        share = stats.elapsed_seconds / len(scenario.checks) if scenario.checks else 0.0
        for check in scenario.checks:
            suite.append(_check_case(scenario, check, share))
            counts["tests"] += 1
            if check.verdict is Verdict.FAILED:
                counts["failures"] += 1
            elif check.verdict in (Verdict.INCONCLUSIVE, Verdict.ERROR):
                counts["errors"] += 1
    _set(suite, "name", scenario.name)
    _set(suite, "file", scenario.file)
    for key, count in counts.items():
        _set(suite, key, str(count))
    _set(suite, "time", _seconds(stats.elapsed_seconds))
    if scenario.started_at:
        _set(suite, "timestamp", scenario.started_at)
    # ElementTree keeps insertion order; put the counters first as every other producer does.
    suite.attrib = dict(sorted(suite.attrib.items(), key=lambda kv: _SUITE_ORDER.index(kv[0])))
    return suite, counts


_SUITE_ORDER = ("name", "file", "tests", "failures", "errors", "skipped", "time", "timestamp")


def _check_case(scenario: ScenarioResult, check: Check, seconds: float) -> ET.Element:
    # file and line travel together: a check declared in another file points there
    if check.position.file and check.position.line:
        case = _case(scenario, check.name, check.position.line, seconds, check.position.file)
    else:
        case = _case(scenario, check.name, check.position.line or scenario.position.line, seconds)
    if check.verdict is Verdict.FAILED:
        kind = check.counterexamples[0].kind if check.counterexamples else "failed"
        text = "\n\n".join(story(cx, verbose=True) for cx in check.counterexamples) or check.message
        _outcome(case, "failure", kind, check.message or kind, text)
    elif check.verdict is Verdict.INCONCLUSIVE:
        bound = scenario.stats.bound_hit
        text = "\n".join(t for t in (check.message, f"bound hit: {bound}" if bound else "") if t)
        _outcome(case, "error", "inconclusive", check.message or "inconclusive", text)
    elif check.verdict is Verdict.ERROR:
        _outcome(case, "error", "error", check.message or "error", check.message)
    return case


def _case(scenario: ScenarioResult, name: str, line: int, seconds: float, file: str = "") -> ET.Element:
    case = ET.Element("testcase")
    _set(case, "classname", scenario.name)
    _set(case, "name", name)
    _set(case, "file", file or scenario.file)
    if line > 0:
        _set(case, "line", str(line))
    _set(case, "time", _seconds(seconds))
    return case


def _outcome(case: ET.Element, tag: str, kind: str, message: str, text: str) -> None:
    element = ET.SubElement(case, tag)
    short = one_line(message)
    if len(short) > MESSAGE_LIMIT:
        short = short[: MESSAGE_LIMIT - 1] + "…"
    _set(element, "message", short)
    _set(element, "type", kind)
    element.text = xml_safe(text)


def _set(element: ET.Element, key: str, value: str) -> None:
    element.set(key, xml_safe(value))


def _seconds(value: float) -> str:
    """Plain decimal seconds with three places (the Surefire time pattern consumers accept)."""
    return f"{max(value, 0.0):.3f}"
