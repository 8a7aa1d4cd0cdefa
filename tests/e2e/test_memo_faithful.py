"""Memoization changes how much code runs, never what is found: every example scenario searched with
and without the memo gives the same states, transitions, verdict and converged outcomes.

Why every example: a memoised step must be what a fresh run at that state would do, or the search
depends on which of two equal states it met first (and a split search, whose processes meet them in
other orders, would differ from the serial one). Built-ins that read or write the clock, kopf's
retries, programs' logs, fakes' stores and stale views each have their own way of breaking that.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kamera_cli.model.result import CheckResult
from kamera_cli.report.json_report import to_json
from kamera_cli.runner import Overrides, explore, outcome_key
from kamera_cli.scenario import load_scenario
from tests.e2e.jsonstable import stable
from tests.e2e.test_examples import kopf_supported, missing_client

ROOT = Path(__file__).resolve().parents[2]
#: searched elsewhere with the memo (test_examples.py); without it, this one alone takes a minute; the
#: threaded programs' steps are never memoised (docs/controllers.md), and each search takes ~30 s
_SLOW = {"workloads/wait-for-deployment", "shapes/program/workqueue", "shapes/program/workqueue/fixed"}
EXAMPLES = sorted(str(p.parent.relative_to(ROOT / "scenarios")) for p in (ROOT / "scenarios").rglob("scenario.yaml"))


def _summary(path: Path, memoize: bool) -> tuple[int, int, str, set[str], object]:
    """Counts, verdict and outcomes, and the whole result as a user sees it: every object of the
    reported states, every step's diff and log (what differs in server bookkeeping only, a
    managedFields time, a printed time, would show there and nowhere else)."""
    scenario = load_scenario(path)
    chosen = replace(scenario, explore=replace(scenario.explore, memoize=memoize))
    exploration = explore(chosen, overrides=Overrides(graph_states=50))
    search = exploration.search
    outcomes = {outcome_key(search.state(n).snapshot) for n in search.converged}
    stats = exploration.result.stats
    shown = stable(to_json(CheckResult((exploration.result,))))
    search.close()
    return stats.states, stats.transitions, exploration.result.verdict.value, outcomes, shown


def runnable(example: str) -> Path:
    """The example's scenario file; skips the test when what the example needs is not installed."""
    if example.startswith("kopf/") and (reason := kopf_supported()) is not None:
        pytest.skip(reason)
    if (reason := missing_client(example)) is not None:
        pytest.skip(reason)
    return ROOT / "scenarios" / example / "scenario.yaml"


@pytest.mark.parametrize("example", [e for e in EXAMPLES if e not in _SLOW])
def test_an_example_searched_with_and_without_the_memo_finds_the_same(example: str) -> None:
    path = runnable(example)
    memoised = _summary(path, True)
    fresh = _summary(path, False)
    assert memoised == fresh
