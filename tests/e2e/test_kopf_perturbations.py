"""Perturbations reach a kopf operator's timers and daemons: the controller's name covers every part
it runs as, and one part may be named on its own (``rmns/timer:cleanup``).  The example is
scenarios/kopf/namespace-cleanup, whose race needs a stale read in the timer's step.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Verdict
from kamera_cli.model.scenario import covers

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

CLEANUP = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "namespace-cleanup"
INVARIANT = "invariant: no namespace is deleted while it holds a pod"


def run(tmp_path: Path, named: str) -> ScenarioResult:
    shutil.copy(CLEANUP / "operator.py", tmp_path / "operator.py")
    text = (CLEANUP / "scenario.yaml").read_text()
    (tmp_path / "scenario.yaml").write_text(text.replace("{controller: rmns,", f"{{controller: {named!r},"))
    (result,) = kamera_cli.check(tmp_path).scenarios
    return result


def verdicts(result: ScenarioResult) -> dict[str, Verdict]:
    return {c.name: c.verdict for c in result.checks}


@pytest.mark.parametrize("named", ["rmns", "rmns/timer:cleanup", "*"])
def test_the_race_is_found_whichever_way_the_timer_is_named(tmp_path: Path, named: str) -> None:
    result = run(tmp_path, named)
    assert verdicts(result)[INVARIANT] is Verdict.FAILED, result.checks
    (check,) = [c for c in result.checks if c.name == INVARIANT]
    steps = check.counterexamples[0].steps
    assert steps[-1].actor == "rmns/timer:cleanup" and "stale view of v1/Pod" in steps[-1].note


def test_naming_a_part_the_operator_does_not_have_is_a_located_error(tmp_path: Path) -> None:
    result = run(tmp_path, "rmns/timer:nope")
    assert result.verdict is Verdict.ERROR
    assert "controller 'rmns' has no part named 'rmns/timer:nope'" in (result.error or "")
    assert "'rmns/timer:cleanup'" in (result.error or "") and "scenario.yaml:" in (result.error or "")


def test_without_the_stale_read_the_timer_never_deletes_a_namespace_in_use(tmp_path: Path) -> None:
    result = run(tmp_path, "rmns/daemon:none")
    assert result.verdict is Verdict.ERROR  # a part that does not exist is refused, never ignored
    (tmp_path / "scenario.yaml").write_text(
        (CLEANUP / "scenario.yaml").read_text().replace("    staleReads: [{controller: rmns, kinds: [v1/Pod]}]\n",
                                                        "    staleReads: []\n"))
    (result,) = kamera_cli.check(tmp_path).scenarios
    assert verdicts(result)[INVARIANT] is Verdict.PASSED, result.checks


def test_a_name_covers_its_parts_and_only_them() -> None:
    assert covers("*", "rmns/timer:cleanup") and covers("rmns", "rmns") and covers("rmns", "rmns/timer:cleanup")
    assert covers("rmns/timer:cleanup", "rmns/timer:cleanup")
    assert not covers("rmns/timer:cleanup", "rmns") and not covers("rm", "rmns/timer:cleanup")
    assert not covers("rmns", "rmnsx")
