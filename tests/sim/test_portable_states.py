"""A state packed in one process goes on in another exactly as it would have gone on where it was made.

Why: a split search ships states between its processes. A program controller's position is the digest
of its input log, and the log lives in the program's factory, outside the state: packing the state
must bring the log along (``KubeModel.pack``/``unpack``), or the receiving process cannot run the
program's next step. Here the receiving "process" is a second simulation of the same scenario, whose
factories have never seen a log.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kamera_cli import explore as ex
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.bootstrap import Simulation

ROOT = Path(__file__).resolve().parents[2]


def _successor_prints(model: object, state: object) -> list[tuple[str, str]]:
    m: ex.Model[object, object] = model  # type: ignore[assignment]
    return [(repr(a), m.fingerprint(m.successor(state, a).state)) for a in m.actions(state)]


@pytest.mark.parametrize("example", ["shapes/program/mirror", "shapes/program/mirror/fixed"])
def test_a_packed_program_state_goes_on_in_a_fresh_simulation(example: str) -> None:
    scenario = load_scenario(ROOT / "scenarios" / example / "scenario.yaml")
    with Simulation(scenario) as sim:
        search = ex.search(sim.model, reduction="none")
        nodes = [n for n in range(search.graph.num_states) if search.state(n).memory]
        assert nodes, "the example's program made no step"
        packed = [sim.model.pack(search.state(n)) for n in nodes]
        expected = [_successor_prints(sim.model, search.state(n)) for n in nodes]
    with Simulation(scenario) as fresh:
        for blob, want in zip(packed, expected, strict=True):
            state = fresh.model.unpack(blob)
            assert _successor_prints(fresh.model, state) == want
