"""What a future's key (``sim/future_keys.group_digest``) tells apart, and what it need not."""

from __future__ import annotations

from dataclasses import replace

from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.explore import Footprint
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.future_keys import group_digest
from kamera_cli.sim.state import SimState

_REF = ObjectRef("v1", "ConfigMap", "default", "a")
_PROCESS = ("reconcile", "c", "default", "a")
_READS = Footprint(None, frozenset({("obj", "", "ConfigMap", "default", "a")}))


def _state(value: str, steps: int = 0, next_action: int = 0) -> SimState:
    snapshot = Snapshot.empty().with_object(_REF, {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": value},
                                                   "metadata": {"name": "a", "namespace": "default"}})
    return SimState(snapshot, (), 100, next_action, steps)


def _key(state: SimState) -> str | None:
    return group_digest(state, [_PROCESS], _READS, actor_work=False, symmetry=False)


def test_the_steps_since_the_last_action_are_not_in_the_key() -> None:
    """Only an action due after a number of steps reads them, and then no future is worked out."""
    assert _key(_state("1")) == _key(_state("1", steps=7))
    assert _key(_state("1")) != _key(_state("1", next_action=1))


def test_each_state_is_digested_with_its_own_values() -> None:
    """Token values are kept for the last state asked about only: another state is digested anew."""
    one, two = _state("1"), _state("2")
    assert _key(one) != _key(two)
    assert _key(one) == _key(replace(one))
    assert _key(two) != _key(one)


_DEPLOY = ObjectRef("apps/v1", "Deployment", "default", "web")
_DEPLOYMENT = ("reconcile", "deployment", "default", "web")
_DEPLOY_READS = Footprint(None, frozenset({("obj", "apps", "Deployment", "default", "web")}), window=5)
_GC = ("actor", "garbage-collector", "0")


def _stamp(second: int) -> str:
    import datetime
    return datetime.datetime.fromtimestamp(second, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _deployment(clock: int, progressed: int, created: int, min_ready: int = 0, **extra: object) -> SimState:
    spec: dict[str, object] = {"replicas": 1, **({"minReadySeconds": min_ready} if min_ready else {})}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "spec": spec,
           "metadata": {"name": "web", "namespace": "default", "creationTimestamp": _stamp(created)},
           "status": {"conditions": [{"type": "Progressing", "lastUpdateTime": _stamp(progressed),
                                      "lastTransitionTime": _stamp(created)}]}}
    snapshot = Snapshot.empty().with_object(_DEPLOY, obj)
    for ref, other in extra.items():
        assert isinstance(other, dict)
        snapshot = snapshot.with_object(ObjectRef("v1", "ConfigMap", "default", ref), other)
    return SimState(snapshot, (), clock, 0, 0)


def _shifted_key(state: SimState, processes: tuple[object, ...] = (_DEPLOYMENT,),
                 shifted: frozenset[str] = frozenset({"deployment"})) -> str | None:
    return group_digest(state, list(processes), _DEPLOY_READS, actor_work=False, symmetry=False, shifted=shifted)


def test_a_builtins_future_is_keyed_by_the_distances_it_compares() -> None:
    """The deployment built-in compares the clock only with its progress deadline: a future of it is
    the same at another instant whose Progressing condition is as old, whatever else was stamped."""
    here = _deployment(1_000, progressed=995, created=900)
    assert _shifted_key(here) == _shifted_key(_deployment(1_030, progressed=1_025, created=960))
    assert _shifted_key(here) != _shifted_key(_deployment(1_030, progressed=1_024, created=960))
    # a controller not known to compare only those instants: the clock and every timestamp count
    other = frozenset({"someone"})
    assert _shifted_key(here, shifted=other) != _shifted_key(_deployment(1_030, progressed=1_025, created=960),
                                                              shifted=other)
    assert _shifted_key(here, shifted=other) == _shifted_key(_deployment(1_000, progressed=995, created=900),
                                                              shifted=other)


def test_min_ready_seconds_keeps_the_clock_in_the_key() -> None:
    """With minReadySeconds the replica set compares its Pods' readiness times with the clock, which
    the shifted view does not show: the future is keyed by the clock and every timestamp."""
    here = _deployment(1_000, progressed=995, created=900, min_ready=10)
    assert _shifted_key(here) is not None
    assert _shifted_key(here) != _shifted_key(_deployment(1_030, progressed=1_025, created=960, min_ready=10))
    assert _shifted_key(here) == _shifted_key(_deployment(1_000, progressed=995, created=900, min_ready=10))


def test_the_collectors_work_is_digested_from_the_whole_cluster() -> None:
    """A group holding the collector is keyed (it was not before), by what its work list is a
    function of: an object no step read but whose owner is gone counts."""
    def orphan(uid: str) -> dict[str, object]:
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "dep", "namespace": "default", "uid": "u-dep",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Secret", "name": "gone", "uid": uid}]}}
    one = _deployment(1_000, progressed=995, created=900, dep=orphan("a"))
    two = _deployment(1_000, progressed=995, created=900, dep=orphan("b"))
    assert _shifted_key(one, (_DEPLOYMENT, _GC)) is not None
    assert _shifted_key(one, (_DEPLOYMENT, _GC)) != _shifted_key(two, (_DEPLOYMENT, _GC))
    assert _shifted_key(one) == _shifted_key(two)  # without the collector, what no step read does not count
