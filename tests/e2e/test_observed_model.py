"""The model the supervised search sees is the model: every hook the explorer reads is forwarded.

Why a test: the supervisor's wrapper once forwarded ``process`` and ``footprint`` but not
``horizon``, so runs through ``kamera check`` deferred work past pending timers, and gave other
counts than the library API (``kamera_cli.check``) for the same scenario.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from typer.testing import CliRunner

import kamera_cli
from kamera_cli.cli import app
from kamera_cli.explore import Transition
from kamera_cli.runner import _Observed

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def test_the_cli_and_the_library_count_the_same(tmp_path: Path) -> None:
    scenario = SCENARIOS / "bugs" / "exception-one-ordering" / "scenario.yaml"
    library = kamera_cli.check(scenario).scenarios[0].stats.states
    out = CliRunner().invoke(app, ["check", str(scenario), "--json", str(tmp_path / "r.json")],
                             env={"NO_COLOR": "1"})
    cli = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["stats"]["states"]
    assert cli == library, out.output


def test_a_footprint_worked_out_later_names_its_step_as_the_running_one() -> None:
    """A clock window worked out when the reduction asks (``Transition.settle``) runs the step again:
    the supervisor's record of the running step must name it then, so that a worker dying there is
    reported in that step, not in the last one the search took."""
    told: list[str] = []
    model = SimpleNamespace(**{name: None for name in ("initial_states", "fingerprint", "is_converged", "actions",
                                                       "process", "horizon", "unit", "release", "pack", "unpack")},
                            footprint=lambda state, act, t: t.settled())
    observed = _Observed(model, told.append)  # type: ignore[arg-type]
    act = SimpleNamespace(describe=lambda: "op reconcile default/w0")
    assert observed.footprint(None, act, Transition(None)) is None  # type: ignore[arg-type]
    assert told == []
    assert observed.footprint(None, act, Transition(None, settle=lambda: (None, "narrow"))) is None  # type: ignore[arg-type]
    assert told == ["op reconcile default/w0"]
