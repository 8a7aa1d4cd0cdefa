"""The model the supervised search sees is the model: every hook the explorer reads is forwarded.

Why a test: the supervisor's wrapper once forwarded ``process`` and ``footprint`` but not
``horizon``, so runs through ``kamera check`` deferred work past pending timers, and gave other
counts than the library API (``kamera_cli.check``) for the same scenario.
"""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

import kamera_cli
from kamera_cli.cli import app

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_cli_and_the_library_count_the_same(tmp_path: Path) -> None:
    scenario = SCENARIOS / "bugs" / "exception-one-ordering" / "scenario.yaml"
    library = kamera_cli.check(scenario).scenarios[0].stats.states
    out = CliRunner().invoke(app, ["check", str(scenario), "--json", str(tmp_path / "r.json")],
                             env={"NO_COLOR": "1"})
    cli = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["stats"]["states"]
    assert cli == library, out.output
