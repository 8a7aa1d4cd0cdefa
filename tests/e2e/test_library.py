"""The library API: usable from a project's own pytest without the CLI."""

from __future__ import annotations

from pathlib import Path

import kamera_cli
from kamera_cli.model.result import CheckResult, Verdict

ROOT = Path(__file__).resolve().parents[2]


def test_check_returns_the_result_model() -> None:
    result = kamera_cli.check(ROOT / "scenarios" / "bugs" / "order-dependent")
    assert isinstance(result, CheckResult)
    (scenario,) = result.scenarios
    assert scenario.verdict is Verdict.FAILED
    assert {c.name: c.verdict for c in scenario.checks}["deterministic"] is Verdict.FAILED
    assert len(scenario.converged) == 2
    assert all(st.objects for st in scenario.converged)


def test_public_request_and_result_values() -> None:
    request = kamera_cli.Request("default", "demo")
    assert (request.namespace, request.name) == ("default", "demo")
    assert kamera_cli.Result(requeue_after=30).requeue_after == 30
