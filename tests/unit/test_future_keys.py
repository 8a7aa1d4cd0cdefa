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
