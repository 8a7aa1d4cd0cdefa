"""Example scenarios searched in two processes report exactly what the serial search reports.

Why through the result JSON: it is what a user and CI see — verdicts, counts, counterexamples with
every step and diff, converged states — so "identical output" is checked where it is promised.
Reconcile and memo counts are left out: they say how much work each process did, not what was found.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kamera_cli.cli import app
from kamera_cli.model.result import CheckResult
from kamera_cli.report.json_report import to_json
from kamera_cli.runner import Overrides, check_file
from tests.e2e.jsonstable import stable
from tests.e2e.test_examples import missing_client

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="a parallel search forks its workers")

EXAMPLES = ["quickstart", "bugs/order-dependent", "bugs/livelock", "bugs/generation-fight",
            "bugs/crash-between-writes", "bugs/stale-read", "bugs/exception-one-ordering",
            "bugs/swallowed-conflict", "bugs/action-mid-chain", "workloads/wait-for-deployment",
            "workloads/job-failure-ignored", "workloads/job-retry-seen-as-failure",
            "workloads/conditions-no-null-check",
            "kopf/duplicate-child", "kopf/timer-before-child",
            "shapes/credential-leak", "shapes/program/mirror", "shapes/program/mirror/fixed",
            "shapes/program/sweep", "shapes/program/handler",
            # replays that once kept a first run's bookkeeping (a managedFields time, a printed time)
            "workloads/scale-down-before-move/fixed", "shapes/metacontroller", "shapes/kr8s",
            # states the reduction expands fully (summed over the processes: the same global_steps)
            "shapes/metacontroller/decorator", "shapes/program/cleanup/race"]

_stable = stable


@pytest.mark.parametrize("example", EXAMPLES)
def test_two_search_processes_report_what_one_does(example: str) -> None:
    path = ROOT / "scenarios" / example / "scenario.yaml"
    if not path.exists():
        pytest.skip(f"{example} is not an example here")
    if (reason := missing_client(example)) is not None:
        pytest.skip(reason)
    serial = check_file(path, Overrides(graph_states=50))
    parallel = check_file(path, Overrides(graph_states=50, search_workers=2))
    assert list(parallel.notes) == list(serial.notes)
    assert _stable(to_json(CheckResult((parallel,)))) == _stable(to_json(CheckResult((serial,))))


def test_workers_split_a_single_scenario_s_search_under_the_cli(tmp_path: Path) -> None:
    """``--workers 2`` with one scenario: the supervised worker forks two search processes."""
    scenario = ROOT / "scenarios" / "bugs" / "order-dependent"
    outputs = []
    for workers in ("1", "2"):
        out = tmp_path / f"result-{workers}.json"
        run = CliRunner().invoke(app, ["check", str(scenario), "--workers", workers, "--json", str(out), "-q"])
        assert run.exit_code == 1, run.output
        outputs.append(_stable(json.loads(out.read_text())))
    assert outputs[0] == outputs[1]


@pytest.mark.parametrize("example", ["shapes/program/mirror", "shapes/program/sweep"])
def test_a_program_s_position_travels_with_a_shipped_state(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A program's place in the state is the digest of its input log, kept by its factory: a state
    shipped to another worker must bring the log with it, or that worker cannot go on from it.
    Every successor is shipped here (the balance rule would ship none in so small a search)."""
    from kamera_cli.explore import parallel

    monkeypatch.setattr(parallel._Coordinator, "_move_all", True)
    path = ROOT / "scenarios" / example / "scenario.yaml"
    serial = check_file(path, Overrides(graph_states=50))
    split = check_file(path, Overrides(graph_states=50, search_workers=2))
    assert _stable(to_json(CheckResult((split,)))) == _stable(to_json(CheckResult((serial,))))
