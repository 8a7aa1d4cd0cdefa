"""A reconcile stopped at its budget never reaches a later step (issue #28).

Why: the stop is an asynchronous exception into the worker thread, which lands wherever that thread
evaluates next — inside a ``__del__`` that swallows it (reported through ``sys.unraisablehook``, into
whichever step's output was being captured then, while the loop went on), or in code that catches
``BaseException`` and carries on calling the API in a later step.  kamera fences the abandoned thread:
the stop is asked again until it unwinds the loop, and nothing it does afterwards reaches anything.
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.sandbox import calls
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import ControllerSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}

CODE = """
import os
from kubernetes import client
core = client.CoreV1Api()
SEEN = os.path.join(os.path.dirname(__file__), "seen.txt")


def _note(text):
    with open(SEEN, "a") as file:
        file.write(text + "\\n")


class Heavy:
    def __del__(self):
        for _ in range(2_000):  # nearly all of the loop's time is spent here, in a finalizer
            pass


def finalizes(request):
    while True:
        Heavy()


def swallows(request):
    if request.name != "x":
        return None
    try:
        while True:
            pass
    except BaseException as exc:  # the budget's stop, caught: the thread goes on after its step
        _note(type(exc).__name__)
    while True:  # kamera may ask it to stop again meanwhile: it goes on until its create is answered
        try:
            print("printed after the budget")
            core.create_namespaced_config_map("default", {"metadata": {"name": "late"}})
        except BaseException as exc:
            if type(exc).__name__ != "_BudgetExceeded":
                _note(type(exc).__name__)
                break
    _note("done")
"""


def _run(make_scenario: MakeScenario, attr: str, seed: list[dict[str, Any]]) -> tuple[Any, Path]:
    spec = ControllerSpec(name="c", entrypoint=f"ctrl.py:{attr}", for_kind=CONFIGMAP, timeout=0.3)
    scenario = make_scenario(CODE, [spec], seed)
    return explore(scenario), Path(scenario.base_dir) / "seen.txt"


def _wait_for(file: Path, last: str) -> list[str]:
    deadline = time.monotonic() + 60  # returns as soon as it is there; long for a loaded machine
    while time.monotonic() < deadline:
        lines = file.read_text().splitlines() if file.exists() else []
        if lines and lines[-1] == last:
            return lines
        time.sleep(0.05)
    raise AssertionError(f"the abandoned reconcile never got to {last!r}")


def test_a_stop_swallowed_by_a_finalizer_is_asked_again_and_never_reported_elsewhere(
        make_scenario: MakeScenario, monkeypatch: pytest.MonkeyPatch) -> None:
    reported: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", reported.append)
    abandoned: list[threading.Thread] = []  # recorded when abandoned: it may have ended by the check
    real_abandon = calls._abandon

    def abandon(worker: Any, call: Any, stuck_at: Any = ()) -> None:
        abandoned.append(worker.thread)
        real_abandon(worker, call, stuck_at)

    monkeypatch.setattr(calls, "_abandon", abandon)
    exploration, _ = _run(make_scenario, "finalizes", [CM])
    check = next(c for c in exploration.result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.FAILED
    assert "Timeout: did not return within 0.3 s" in check.counterexamples[0].summary
    assert abandoned
    for thread in abandoned:
        thread.join(60)
        assert not thread.is_alive(), "the abandoned worker kept looping: its stop was swallowed for good"
    assert reported == []  # the stop that landed in __del__ went nowhere


def test_an_abandoned_reconcile_that_goes_on_reaches_nothing_in_a_later_step(make_scenario: MakeScenario) -> None:
    seed = [CM, {**CM, "metadata": {"name": "y", "namespace": "default"}}]
    exploration, seen = _run(make_scenario, "swallows", seed)
    assert _wait_for(seen, "done") == ["_BudgetExceeded", "ThreadOutlived", "done"]  # the late create was refused
    search = exploration.search
    names = {o["metadata"]["name"] for n in range(search.graph.num_states) for o in search.state(n).snapshot.objects()}
    assert "late" not in names
    logs = [s.log for c in exploration.result.checks for x in c.counterexamples for s in x.steps]
    assert logs and not any("printed after the budget" in text for text in logs)
