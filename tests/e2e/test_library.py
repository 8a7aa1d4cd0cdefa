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


def test_kamera_cli_explore_is_always_the_explorer_package() -> None:
    """``kamera_cli.explore`` once answered ``runner.explore`` (a function) until the explorer's
    package was imported, and the package from then on; it is the package, in a fresh interpreter too."""
    import subprocess
    import sys

    code = ("import kamera_cli, types; first = kamera_cli.explore; import kamera_cli.runner; "
            "print(isinstance(first, types.ModuleType), first is kamera_cli.explore, 'explore' in kamera_cli.__all__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.split() == ["True", "True", "False"]
