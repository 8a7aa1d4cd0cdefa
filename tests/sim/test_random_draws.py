"""Values a step draws (uuid4, random) are keyed by its request's count of drawing writes, not the cluster.

On a cluster a name made from ``uuid4()`` is just a fresh name. kamera draws it from a seed; when the seed
held the whole cluster, a step reached after an unrelated write drew another name, and the same outcome
showed as two converged states ("the outcome depends on the order of steps"). Found on the dask-kubernetes
operator, whose worker Deployments are named ``<group>-worker-<uuid4 hex[:10]>``.
"""

from __future__ import annotations

from dataclasses import replace

from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import CrashSpec, ExpectSpec, ExploreBounds, InvariantSpec, Perturbations
from kamera_cli.runner import explore, outcome_key
from tests.sim.conftest import CONFIGMAP, MakeScenario


def _cm(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


CODE = """
import uuid
from kubernetes import client
core = client.CoreV1Api()

def namer(request):
    # one worker for ConfigMap 'x', named from uuid4; 'done' marks it made
    if request.name != "x":
        return
    core.list_namespaced_config_map("default")  # reads y too: its step differs by whether y was patched
    cm = core.read_namespaced_config_map("x", "default")
    if (cm.metadata.labels or {}).get("done"):
        return
    name = f"worker-{uuid.uuid4().hex[:10]}"
    core.create_namespaced_config_map("default", {"metadata": {"name": name, "labels": {"worker-of": "x"}}})
    core.patch_namespaced_config_map("x", "default", {"metadata": {"labels": {"done": "1"}}})

def lister(request):
    # keeps one worker, reading only the workers: after a reap it reads what it read at the start
    if request.name == "x" and not core.list_namespaced_config_map("default", label_selector="worker-of=x").items:
        core.create_namespaced_config_map("default", {"metadata": {"name": f"worker-{uuid.uuid4().hex[:10]}",
                                                                   "labels": {"worker-of": "x"}}})

def reaper(request):
    # deletes the first worker once, marking x (which wakes the lister for x again)
    x = core.read_namespaced_config_map("x", "default")
    if request.name.startswith("worker-") and not (x.data or {}).get("reaped"):
        core.delete_namespaced_config_map(request.name, "default")
        core.patch_namespaced_config_map("x", "default", {"data": {"reaped": "1"}})

def bystander(request):
    # an unrelated write, before or after the namer's step depending on the path
    if request.name == "y":
        core.patch_namespaced_config_map("y", "default", {"data": {"seen": "1"}})

def nonce(request):
    # a fresh value on every run: on a cluster this never settles
    if request.name == "x":
        core.patch_namespaced_config_map("x", "default", {"metadata": {"annotations": {"nonce": uuid.uuid4().hex}}})

def jitter(request):
    # draws, writes nothing: its draws stay the same and its memo entry serves every later state
    import random
    random.random()
"""

UNREDUCED = ExploreBounds(max_depth=30, max_states=5000, timeout_seconds=60, reduction="none")
WORKERS = InvariantSpec(name="one worker", select="$.items[?@.metadata.labels['worker-of'] == 'x']",
                        expect=ExpectSpec(count=1))


def _check(result, name):  # type: ignore[no-untyped-def]
    return next(c for c in result.checks if c.name == name)


def test_a_name_drawn_from_uuid4_is_the_same_on_every_path_that_made_it_the_same_way(
        make_scenario: MakeScenario) -> None:
    s = make_scenario(CODE, [("namer", "namer", CONFIGMAP), ("bystander", "bystander", CONFIGMAP)],
                      [_cm("x"), _cm("y")], explore=UNREDUCED)
    r = explore(s).result
    det = _check(r, CheckName.DETERMINISTIC)
    assert det.verdict is Verdict.PASSED, det.message
    assert r.stats.converged_states == 1


def test_a_fresh_value_written_on_every_run_still_never_settles(make_scenario: MakeScenario) -> None:
    s = make_scenario(CODE, [("nonce", "nonce", CONFIGMAP)], [_cm("x")],
                      explore=ExploreBounds(max_depth=12, max_states=2000, timeout_seconds=60))
    r = explore(s).result
    conv = _check(r, CheckName.CONVERGES)
    assert conv.verdict is Verdict.FAILED, conv.message


def test_a_retry_after_a_crash_draws_a_fresh_name(make_scenario: MakeScenario) -> None:
    # the crash lands after the create and before 'done': the retry makes a second worker under a new
    # name (as on a cluster), which the invariant catches; the same name again would be refused with 409
    s = make_scenario(CODE, [("namer", "namer", CONFIGMAP)], [_cm("x")], explore=UNREDUCED,
                      invariants=(WORKERS,),
                      perturbations=Perturbations(crashes=(CrashSpec("namer", (1,), max=1),)))
    r = explore(s).result
    inv = _check(r, "invariant: one worker")
    assert inv.verdict is Verdict.FAILED, inv.message
    assert _check(r, CheckName.NO_CONTROLLER_ERRORS).verdict is Verdict.PASSED


def test_a_step_that_draws_without_writing_keeps_its_memo(make_scenario: MakeScenario) -> None:
    s = make_scenario(CODE, [("jitter", "jitter", CONFIGMAP), ("bystander", "bystander", CONFIGMAP)],
                      [_cm("x"), _cm("y")], explore=UNREDUCED)
    r = explore(s).result
    assert r.verdict is Verdict.PASSED
    fresh = explore(replace(s, explore=replace(UNREDUCED, memoize=False))).result
    assert (r.stats.states, r.stats.converged_states) == (fresh.stats.states, fresh.stats.converged_states)
    assert r.stats.memo_hits > 0


def test_a_drawing_controller_s_search_is_the_same_with_the_memo_on_and_off(make_scenario: MakeScenario) -> None:
    # after the reap the lister reads what it read first (the workers: none), one drawing write later;
    # with the memo its second run must name the new worker as a fresh run does. (The count's own memo
    # region is not what keeps them apart here: the created name's incarnation already does, and this
    # test passes without that region; it guards the outcome, with or without the memo.)
    s = make_scenario(CODE, [("lister", "lister", CONFIGMAP), ("reaper", "reaper", CONFIGMAP)],
                      [_cm("x"), _cm("y")], explore=UNREDUCED)
    outcomes = []
    for memoize in (True, False):
        found = explore(replace(s, explore=replace(UNREDUCED, memoize=memoize)))
        search = found.search
        outcomes.append({outcome_key(search.state(n).snapshot) for n in search.converged})
        assert found.result.verdict is Verdict.PASSED, [(c.name, c.message) for c in found.result.checks]
        assert memoize is False or found.result.stats.memo_hits > 0
        search.close()
    assert outcomes[0] == outcomes[1]

