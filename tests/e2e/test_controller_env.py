"""A controller's ``env:`` is set while its code runs (import included) and put back afterwards."""

from __future__ import annotations

import os
from pathlib import Path

import kamera_cli
from kamera_cli.model.result import Verdict
from tests.e2e.misbehaving import scenario_with


def test_env_is_seen_at_import_and_in_reconcile_then_restored(tmp_path: Path) -> None:
    scenario = scenario_with(tmp_path, 'assert os.environ["GREETING"] == "hi", "reconcile saw no GREETING"')
    ctrl = scenario / "controllers" / "widget.py"
    ctrl.write_text('import os\nassert os.environ["GREETING"] == "hi", "import saw no GREETING"\n' + ctrl.read_text())
    text = (scenario / "scenario.yaml").read_text()
    (scenario / "scenario.yaml").write_text(text.replace("      owns: [v1/ConfigMap]\n",
                                                         "      owns: [v1/ConfigMap]\n      env: {GREETING: hi}\n", 1))
    assert "GREETING" not in os.environ
    (result,) = kamera_cli.check(scenario).scenarios
    assert result.verdict is Verdict.PASSED, [c.message for c in result.checks]
    assert "GREETING" not in os.environ

