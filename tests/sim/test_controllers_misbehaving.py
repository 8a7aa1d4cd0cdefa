"""Controllers that are not functions of what they read, or that misbehave: findings, never a hang."""

from __future__ import annotations

from dataclasses import replace

from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import ControllerSpec, Expectations
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}

CODE = """
import sys
import time
from kubernetes import client
core = client.CoreV1Api()
CALLS = []

def hidden_state(request):
    CALLS.append(request.name)  # a module-level cache: each run sees a different history
    core.patch_namespaced_config_map(request.name, request.namespace,
                                     {"metadata": {"labels": {"runs": str(len(CALLS))}}})

def virtual_time(request):
    # wall-clock reads and random are virtualised: this is deterministic
    import random, uuid
    stamp = f"{time.time():.0f}-{random.randint(0, 10**6)}-{uuid.uuid4().hex[:6]}"
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if not (cm.metadata.labels or {}).get("stamp"):
        core.patch_namespaced_config_map(request.name, request.namespace, {"metadata": {"labels": {"stamp": stamp}}})

def spins(request):
    while True:
        pass

def exits(request):
    sys.exit(3)

def raises(request):
    raise ValueError("always")
"""


def _check(result, name):
    return next(c for c in result.checks if c.name == name)


def test_hidden_module_state_is_reported_as_a_nondeterministic_controller(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(CODE, [("cache", "hidden_state", CONFIGMAP)], [CM])).result
    det = _check(r, CheckName.DETERMINISTIC)
    assert det.verdict is Verdict.FAILED
    cex = next(c for c in det.counterexamples if c.kind == "nondeterministic-controller")
    assert "controller 'cache' is not deterministic" in cex.summary
    assert "API call #1" in cex.summary and "runs" in cex.summary


def test_virtualised_time_random_and_uuid_keep_a_controller_deterministic(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(CODE, [("stamp", "virtual_time", CONFIGMAP)], [CM])).result
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_a_reconcile_that_never_returns_is_a_finding_not_a_hang(make_scenario: MakeScenario) -> None:
    s = make_scenario(CODE, [ControllerSpec(name="spin", entrypoint="ctrl.py:spins", for_kind=CONFIGMAP,
                                            timeout=0.3)], [CM])
    r = explore(s).result
    err = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert err.verdict is Verdict.FAILED
    assert "did not return within its time budget" in err.counterexamples[0].summary


def test_sys_exit_is_a_finding(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(CODE, [("bye", "exits", CONFIGMAP)], [CM])).result
    err = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert err.verdict is Verdict.FAILED
    assert "tried to exit the process" in err.counterexamples[0].summary


def test_tolerated_controller_errors_drop_the_check(make_scenario: MakeScenario) -> None:
    s = make_scenario(CODE, [("bye", "exits", CONFIGMAP)], [CM])
    r = explore(replace(s, expect=Expectations(controller_errors=True))).result
    assert CheckName.NO_CONTROLLER_ERRORS not in {c.name for c in r.checks}


LATE = """
from kubernetes import client
core = client.CoreV1Api()
CALLS = [0]

def reconcile(request):
    CALLS[0] += 1  # hidden state the first-run double check cannot see: it bites from the 4th call on
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    step = (cm.metadata.labels or {}).get("step")
    if not step:
        core.patch_namespaced_config_map(request.name, request.namespace, {"metadata": {"labels": {"step": "1"}}})
    elif step == "1":
        labels = {"step": "2"}
        if CALLS[0] > 3:
            labels["late"] = "yes"
        core.patch_namespaced_config_map(request.name, request.namespace, {"metadata": {"labels": labels}})
"""


def test_a_counterexample_whose_replay_diverges_is_reported(make_scenario: MakeScenario) -> None:
    from kamera_cli.model.scenario import ExpectSpec, InvariantSpec

    never_two = InvariantSpec(name="never step 2", when="always", expect=ExpectSpec(count=0),
                              select="$.items[?@.kind == 'ConfigMap' && @.metadata.labels.step == '2']")
    r = explore(make_scenario(LATE, [("late", "reconcile", CONFIGMAP)], [CM], invariants=(never_two,))).result
    det = _check(r, CheckName.DETERMINISTIC)
    assert det.verdict is Verdict.FAILED
    (cex,) = [c for c in det.counterexamples if c.kind == "nondeterministic-controller"]
    assert "replaying a counterexample diverged at step 2" in cex.summary
    assert _check(r, "invariant: never step 2").verdict is Verdict.FAILED


BLOCKING_WATCH = """
from kubernetes import client, watch
core = client.CoreV1Api()

def reconcile(request):
    for _event in watch.Watch().stream(core.list_namespaced_config_map, request.namespace):
        pass   # no timeout_seconds: against a real cluster this never returns
"""


def test_a_watch_that_would_block_forever_is_a_controller_error(make_scenario: MakeScenario) -> None:
    r = explore(make_scenario(BLOCKING_WATCH, [("w", "reconcile", CONFIGMAP)], [CM])).result
    err = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert err.verdict is Verdict.FAILED
    assert "would block forever" in err.counterexamples[0].summary
    assert _check(r, CheckName.CONVERGES).verdict is Verdict.PASSED  # not retried in a hot loop


def test_a_controller_that_always_raises_is_one_finding_not_two(make_scenario: MakeScenario) -> None:
    """Its retries never settle; that is the exception's story, told once by 'no controller errors'."""
    s = make_scenario(CODE, [("boom", "raises", CONFIGMAP)], [CM])
    r = explore(s).result
    assert r.verdict is Verdict.FAILED
    assert _check(r, CheckName.NO_CONTROLLER_ERRORS).verdict is Verdict.FAILED
    conv = _check(r, CheckName.CONVERGES)
    assert conv.verdict is Verdict.INCONCLUSIVE, conv.message
    assert "loop on a controller error" in conv.message and "no controller errors" in conv.message
    # where errors are tolerated, the loop is the finding again
    tolerated = explore(replace(s, expect=Expectations(controller_errors=True))).result
    assert _check(tolerated, CheckName.CONVERGES).verdict is Verdict.FAILED
