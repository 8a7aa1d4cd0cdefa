"""Which requests a write enqueues: for, owns (controller ownerReference), and each watch mapping."""

from __future__ import annotations

from typing import Any

import pytest

from kamera_cli.model.objects import KindRef
from kamera_cli.sim.triggers import MapperFailed, Triggers, Wiring

WIDGET = KindRef("example.com", "v1", "Widget")
CM = KindRef("", "v1", "ConfigMap")
SECRET = KindRef("", "v1", "Secret")
NODE = KindRef("", "v1", "Node")


def obj(kind: KindRef, name: str, ns: str = "default", owners: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if ns:
        meta["namespace"] = ns
    if owners:
        meta["ownerReferences"] = owners
    return {"apiVersion": kind.api_version, "kind": kind.kind, "metadata": meta}


def owner(name: str, controller: bool = True, kind: KindRef = WIDGET) -> dict[str, Any]:
    return {"apiVersion": kind.api_version, "kind": kind.kind, "name": name, "uid": "u", "controller": controller}


def lister(kind: KindRef, ns: str | None) -> list[tuple[str, str]]:
    widgets = [("default", "a"), ("default", "b"), ("other", "c")]
    return [w for w in widgets if ns is None or w[0] == ns] if kind == WIDGET else []


def test_for_kind_enqueues_the_object_itself() -> None:
    t = Triggers([Wiring("w", WIDGET, True, frozenset(), ())])
    assert t.requests(None, obj(WIDGET, "a"), lister) == [("w", "default", "a")]
    assert t.requests(obj(CM, "x"), None, lister) == []


def test_owned_kind_enqueues_the_controller_owner_only() -> None:
    t = Triggers([Wiring("w", WIDGET, True, frozenset({CM}), ())])
    child = obj(CM, "x", owners=[owner("a"), owner("b", controller=False)])
    assert t.requests(None, child, lister) == [("w", "default", "a")]
    # an owner of another kind does not count
    assert t.requests(None, obj(CM, "y", owners=[owner("n", kind=NODE)]), lister) == []


def test_owner_reference_removed_still_enqueues_the_old_owner() -> None:
    t = Triggers([Wiring("w", WIDGET, True, frozenset({CM}), ())])
    before = obj(CM, "x", owners=[owner("a")])
    after = obj(CM, "x")
    assert t.requests(before, after, lister) == [("w", "default", "a")]


@pytest.mark.parametrize(("mapping", "expected"), [
    ("sameName", [("w", "default", "s")]),
    ("owner", [("w", "default", "a"), ("w", "default", "b")]),
    ("namespace", [("w", "default", "a"), ("w", "default", "b")]),
    ("all", [("w", "default", "a"), ("w", "default", "b"), ("w", "other", "c")]),
])
def test_watch_mappings(mapping: str, expected: list[tuple[str, str, str]]) -> None:
    t = Triggers([Wiring("w", WIDGET, True, frozenset(), ((SECRET, mapping),))])
    secret = obj(SECRET, "s", owners=[owner("a"), owner("b", controller=False)])
    assert t.requests(None, secret, lister) == expected


def test_cluster_scoped_for_kind_gets_no_namespace() -> None:
    t = Triggers([Wiring("n", NODE, False, frozenset(), ((CM, "sameName"),))])
    assert t.requests(None, obj(CM, "node-1"), lister) == [("n", "", "node-1")]


def test_mapper_function_and_its_mistakes() -> None:
    t = Triggers([Wiring("w", WIDGET, True, frozenset(), ((CM, lambda o: [("default", "z"), (None, "q")]),))])
    assert t.requests(None, obj(CM, "x"), lister) == [("w", "default", "z"), ("w", "", "q")]
    bad = Triggers([Wiring("w", WIDGET, True, frozenset(), ((CM, lambda o: ["oops"]),))])
    with pytest.raises(MapperFailed, match="expected \\(namespace, name\\) pairs"):
        bad.requests(None, obj(CM, "x"), lister)

    def boom(o: Any) -> list[tuple[str, str]]:
        raise KeyError("k")

    raising = Triggers([Wiring("w", WIDGET, True, frozenset(), ((CM, boom),))])
    with pytest.raises(MapperFailed, match="KeyError"):
        raising.requests(None, obj(CM, "x"), lister)


def test_requests_are_deduplicated_in_order() -> None:
    t = Triggers([Wiring("w", CM, True, frozenset({CM}), ((CM, "sameName"),))])
    assert t.requests(None, obj(CM, "x"), lister) == [("w", "default", "x")]


def test_a_timer_wiring_says_which_changes_reach_it_and_how() -> None:
    """A timer-shaped controller (a kopf timer) decides per change: re-arm, start if idle, or nothing."""
    def events(before: Any, after: Any) -> str:
        return "" if after is None else "reset" if before is None else "spawn"

    t = Triggers([Wiring("t", WIDGET, True, frozenset(), (), timer=events)])
    spawns: set[tuple[str, str, str]] = set()
    assert t.requests(None, obj(WIDGET, "a"), lister, spawns) == [("t", "default", "a")]
    assert spawns == set()
    assert t.requests(obj(WIDGET, "a"), obj(WIDGET, "a"), lister, spawns) == [("t", "default", "a")]
    assert spawns == {("t", "default", "a")}
    assert t.requests(obj(WIDGET, "a"), None, lister, spawns) == []


def test_a_spawning_event_leaves_a_running_timer_alone_and_starts_a_stopped_one() -> None:
    from kamera_cli.sim.state import TIMER, WATCH, PendingItem, merge_pending

    tick = PendingItem("t", "default", "a", 60, TIMER, woken=True, carry="{}")
    event = PendingItem("t", "default", "a", 2, WATCH, spawn=True)
    assert merge_pending((tick,), [event], None) == (tick,)  # kopf keeps an interval timer's schedule
    (started,) = merge_pending((), [event], None)
    assert (started.ready_at, started.spawn, started.woken) == (2, False, False)
    reset = PendingItem("t", "default", "a", 2, WATCH)  # an essential change re-arms an idle timer
    (rearmed,) = merge_pending((tick,), [reset], None)
    assert (rearmed.ready_at, rearmed.woken, rearmed.carry) == (2, False, "")
