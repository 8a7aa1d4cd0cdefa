"""A sweep's ticks on the virtual clock: at the start, one period later (``firstTick: afterPeriod``),
or at the points of a cron ``schedule``, the first one pending work that keeps the cluster unconverged."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kamera_cli.errors import ScenarioError
from kamera_cli.model.result import Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.bootstrap import EPOCH
from tests.sim.test_programs import HEAD

#: a sweep that appends the virtual time of each of its first three ticks to a ConfigMap
TICKS = """
import time
from kubernetes import client, config

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    try:
        cm = v1.read_namespaced_config_map("ticks", "default")
    except client.ApiException:
        cm = v1.create_namespaced_config_map("default", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="ticks"), data={"at": ""}))
    seen = [t for t in cm.data["at"].split(",") if t]
    if len(seen) < 3:
        cm.data["at"] = ",".join([*seen, str(int(time.time()) - EPOCH)])
        v1.replace_namespaced_config_map("ticks", "default", cm)
"""


def _scenario(tmp_path: Path, keys: str) -> Path:
    (tmp_path / "sweep.py").write_text(f"EPOCH = {EPOCH}\n" + TICKS)
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(f"""\
        controllers:
          - {{name: sweep, program: sweep.py:main{keys}}}
        seed: []
        """), "  "))
    return path


def _ticks(tmp_path: Path, keys: str) -> list[int]:
    result = explore(load_scenario(_scenario(tmp_path, keys))).result
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
    (converged,) = result.converged
    cm = next(o for o in converged.objects if o["metadata"]["name"] == "ticks")
    return [int(t) for t in cm["data"]["at"].split(",")]


@pytest.mark.parametrize(("keys", "expected"), [
    (", every: 60s", [0, 60, 120]),
    (", every: 60s, firstTick: start", [0, 60, 120]),
    (", every: 60s, firstTick: afterPeriod", [60, 120, 180]),
    # the epoch is 2026-01-01T00:00:00Z, a schedule point itself: the first tick is the next one
    (", schedule: '*/5 * * * *'", [300, 600, 900]),
    (", schedule: '@hourly'", [3600, 7200, 10800]),
])
def test_ticks_come_when_the_sweep_says(tmp_path: Path, keys: str, expected: list[int]) -> None:
    assert _ticks(tmp_path, keys) == expected


def test_a_pending_first_tick_keeps_the_cluster_from_converging_before_it(tmp_path: Path) -> None:
    result = explore(load_scenario(_scenario(tmp_path, ", schedule: '*/5 * * * *'"))).result
    (converged,) = result.converged
    assert any(o["metadata"]["name"] == "ticks" for o in converged.objects)  # no outcome without a tick
    assert converged.path[0].actor == "sweep"


@pytest.mark.parametrize(("keys", "message"), [
    (", schedule: 'every five minutes'", "'every five minutes' is not a cron schedule"),
    (", every: 60s, schedule: '@hourly'", "'schedule' cannot be combined with 'every'"),
    (", schedule: '@hourly', firstTick: afterPeriod", "firstTick"),
    (", firstTick: later, every: 5s", "firstTick"),
])
def test_bad_schedules_are_located_errors(tmp_path: Path, keys: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path, keys))
    assert message in str(info.value) and "scenario.yaml:6:" in str(info.value), str(info.value)
