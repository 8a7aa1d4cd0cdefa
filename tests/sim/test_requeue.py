"""Reconcile results: requeue now, requeue_after timers on the virtual clock, and hot loops."""

from __future__ import annotations

from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}

RESULTS = """
import time
from kamera_cli import Result
from kubernetes import client
core = client.CoreV1Api()

def hot(request):
    return Result(requeue=True)          # asks again at once, forever, changing nothing

def resync(request):
    return {"requeue_after": 30}         # a periodic resync that changes nothing: converged

def countdown(request):
    # writes to an object it does not watch, so only its timer brings it back
    sa = core.read_namespaced_service_account("log", request.namespace)
    n = int((sa.metadata.annotations or {}).get("n", "0"))
    if n < 2:
        core.patch_namespaced_service_account("log", request.namespace, {"metadata": {"annotations": {
            "n": str(n + 1), "at": str(int(time.time()))}}})
        return Result(requeue_after=60)  # changed something: the timer must fire
    return None

def poll(request):
    # polls an object it does not watch: only its timer brings it back after the flag is set
    sa = core.read_namespaced_service_account("flag", request.namespace)
    if (sa.metadata.annotations or {}).get("go") == "yes":
        try:
            core.create_namespaced_config_map(request.namespace, {"metadata": {"name": "done"}})
        except client.ApiException as e:
            if e.status != 409:
                raise
    return {"requeue_after": 30}

def flip(request):
    core.patch_namespaced_service_account("flag", request.namespace, {"metadata": {"annotations": {"go": "yes"}}})
"""


def _checks(result):
    return {c.name: c.verdict for c in result.checks}


def test_requeue_forever_without_changes_is_a_hot_loop(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(RESULTS, [("hot", "hot", CONFIGMAP)], [CM])).result
    assert _checks(r)[CheckName.CONVERGES] is Verdict.FAILED
    conv = next(c for c in r.checks if c.name == CheckName.CONVERGES)
    (cex,) = conv.counterexamples
    assert cex.kind == "livelock"
    assert [s.note for s in cex.loop] == ["requeue"]


def test_a_resync_timer_that_changes_nothing_is_converged(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(RESULTS, [("resync", "resync", CONFIGMAP)], [CM])).result
    assert r.verdict is Verdict.PASSED
    assert r.stats.converged_states == 1


def test_timers_jump_the_virtual_clock(make_scenario: MakeScenario) -> None:
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "log", "namespace": "default"}}
    r = explore(make_scenario(RESULTS, [("countdown", "countdown", CONFIGMAP)], [CM, sa])).result
    assert r.verdict is Verdict.PASSED
    (final,) = r.converged
    log = next(o for o in final.objects if o["kind"] == "ServiceAccount")
    assert log["metadata"]["annotations"]["n"] == "2"
    # the second write happened after the 60-second timer fired, on the virtual clock
    first, second = [s for s in final.path if s.writes]
    assert first.note == "requeue after 60s"
    def stamp(step):
        for w in step.writes:
            for d in w.diff:
                if d.path == "/metadata/annotations/at":
                    return int(d.new)
                if d.path == "/metadata/annotations":
                    return int(d.new["at"])
        raise AssertionError(step)

    assert stamp(second) - stamp(first) >= 60


def test_a_resync_is_stable_only_while_what_it_read_is_unchanged(make_scenario: MakeScenario) -> None:
    """The poller's tick before the flag is set changes nothing; the flag is then set by a step that
    sends the poller no event. Its next tick would create ``done``, so that state is not converged:
    one outcome, with ``done``. (Taken as stable for good, the early tick made a second, false one.)"""
    flag = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "flag", "namespace": "default"}}
    r = explore(make_scenario(RESULTS, [("poller", "poll", CONFIGMAP), ("flipper", "flip", CONFIGMAP)],
                              [CM, flag])).result
    assert _checks(r)[CheckName.DETERMINISTIC] is Verdict.PASSED, r.checks
    (final,) = r.converged
    assert any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == "done" for o in final.objects)
