"""Every example scenario explored with and without partial-order reduction: the same answers.

Why: the reduction skips orders of independent steps; it is only allowed to because nothing kamera
reports depends on them. Verdicts, which checks fail, and the set of converged outcomes must be the
same both ways, and the reduced search must never explore more states.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kamera_cli.adapters.kopf.events import supported as kopf_supported
from kamera_cli.model.scenario import Scenario
from kamera_cli.runner import Exploration, explore, outcome_key
from kamera_cli.scenario import load_scenario
from tests.e2e.test_examples import missing_client

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
EXAMPLES = sorted(str(p.parent.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("scenario.yaml"))


def run_with(scenario: Scenario, reduction: str) -> Exploration:
    """``scenario`` explored with ``reduction`` ("none" or "persistent")."""
    return explore(replace(scenario, explore=replace(scenario.explore, reduction=reduction)))  # type: ignore[arg-type]


def outcomes_of(exploration: Exploration) -> set[str]:
    """The converged outcomes of an exploration (halted executions left out)."""
    search = exploration.search
    return {outcome_key(search.state(n).snapshot) for n in search.converged if not search.state(n).halted}


@pytest.mark.parametrize("rel", EXAMPLES)
def test_reduced_and_full_search_agree(rel: str) -> None:
    if rel.startswith("kopf/") and (reason := kopf_supported()) is not None:
        pytest.skip(reason)
    if (reason := missing_client(rel)) is not None:
        pytest.skip(reason)
    if rel.startswith("shapes/program/workqueue"):
        # one program and no other process: only its threads' traces differ between the two searches
        # (474 states against 1,794), and the unreduced one takes minutes; the traces are checked against
        # every order on smaller families of thread programs in tests/sim/test_thread_traces.py
        pytest.skip("a program with threads: slow to explore twice")
    assert_reduction_agrees(load_scenario(SCENARIOS / rel / "scenario.yaml"))


def assert_reduction_agrees(scenario: Scenario) -> Exploration:
    """Explore ``scenario`` with and without reduction and assert that everything reported agrees
    (verdicts, converged outcomes, stuck regions, findings); returns the reduced exploration."""
    full = run_with(scenario, "none")
    reduced = run_with(scenario, "persistent")
    assert full.search.stats.reduced == 0
    assert reduced.result.verdict == full.result.verdict
    assert ({c.name: c.verdict for c in reduced.result.checks}
            == {c.name: c.verdict for c in full.result.checks})
    assert outcomes_of(reduced) == outcomes_of(full)
    assert bool(reduced.search.livelocks) == bool(full.search.livelocks)
    assert bool(reduced.search.deadlocks) == bool(full.search.deadlocks)
    assert ({f.key for f in reduced.search.findings} == {f.key for f in full.search.findings})
    assert reduced.search.stats.states <= full.search.stats.states
    return reduced


def assert_complete_agreement(path: Path) -> Exploration:
    """``assert_reduction_agrees`` on the scenario at ``path``, whose reduced search must also have
    finished (a cut search agrees vacuously)."""
    reduced = assert_reduction_agrees(load_scenario(path))
    assert reduced.search.complete
    return reduced
