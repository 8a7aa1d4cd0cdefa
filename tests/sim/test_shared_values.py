"""Equal values made one object (issue #26, memory per state): a memo replay's copies of the objects
its run wrote (``EqualObjects``), a queue's items (``shared_items``), the parts of a written object
equal to the version it replaced (``share_unchanged``) and the snapshot maps' keys (``snapshot._KEYS``).
Sharing must change nothing but identity: the search's counts and the whole result a user sees are
the same without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kamera_cli.apiserver.server import state as server_state
from kamera_cli.apiserver.server.encoding import EqualObjects, encode_object, share_unchanged
from kamera_cli.apiserver.storage import snapshot
from kamera_cli.apiserver.storage.identity import RecentCache, Seen
from kamera_cli.model.result import CheckResult
from kamera_cli.report.json_report import to_json
from kamera_cli.runner import Overrides, explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim import runtime, state
from kamera_cli.sim.state import WATCH, PendingItem, merge_pending
from tests.e2e.jsonstable import stable

ROOT = Path(__file__).resolve().parents[2]


def _deployment(rv: str, replicas: int = 1) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": rv,
                         "managedFields": [{"manager": "m", "operation": "Update", "time": "2024-01-01T00:00:00Z"}]},
            "spec": {"replicas": replicas}}


def test_equal_objects_are_one_object_and_unequal_ones_stay_apart() -> None:
    table = EqualObjects(100)
    first = table.one(_deployment("5"))
    assert table.one(_deployment("5")) is first
    assert table.one(_deployment("6")) is not first
    assert table.one(_deployment("5", replicas=2)) is not first
    reordered = _deployment("5")
    reordered = {k: reordered[k] for k in reversed(list(reordered))}  # equal, but reads back in another order
    assert table.one(reordered) is reordered
    assert encode_object(first) == encode_object(_deployment("5"))


def test_a_value_that_is_not_json_is_kept_as_it_is() -> None:
    import datetime

    odd = {"metadata": {"name": "x", "creationTimestamp": datetime.datetime(2024, 1, 1)}}
    assert EqualObjects(10).one(odd) is odd


def test_equal_objects_forget_their_oldest_past_their_limit() -> None:
    table = EqualObjects(2)
    first = table.one(_deployment("1"))
    second = table.one(_deployment("2"))
    table.one(_deployment("3"))  # past the limit: the oldest is forgotten, the others kept
    assert table.one(_deployment("2")) is second
    assert table.one(_deployment("1")) is not first


def test_the_identity_tables_forget_their_oldest_first() -> None:
    # kept full instead of emptied wholesale, a table holds as many objects from its first fill on,
    # and the heap does not move with where a search stands in a cycle of fills (issue #26)
    keys = [object() for _ in range(4)]
    cache: RecentCache[int] = RecentCache(2)
    for i, k in enumerate(keys[:3]):
        cache.put(k, i)
    assert [cache.get(k) for k in keys[:3]] == [None, 1, 2]
    cache.put(keys[1], 5)  # the same key again: replaced, and now the newest
    cache.put(keys[3], 3)
    assert [cache.get(k) for k in keys] == [None, 5, None, 3]
    seen = Seen(2)
    assert [seen.again(k) for k in keys[:3]] == [False, False, False]
    assert [seen.again(k) for k in (keys[2], keys[1], keys[0])] == [True, True, False]


def test_a_write_shares_the_parts_equal_to_the_version_it_replaced() -> None:
    old = _deployment("5")
    old["spec"] = {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"x": [1, 2]}}}
    old["status"] = {"replicas": 1, "ready": True, "seen": 1}
    new = _deployment("6")
    new["spec"] = {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"x": [1, 2]}}}
    new["status"] = {"replicas": 1.0, "ready": 1, "seen": True}  # equal by ==, not as JSON: kept apart
    text = encode_object(new)
    share_unchanged(new, old)
    assert new["spec"] is old["spec"]
    assert new["metadata"] is not old["metadata"] and new["metadata"]["name"] is old["metadata"]["name"]
    assert new["metadata"]["managedFields"] is old["metadata"]["managedFields"]
    assert new["status"] is not old["status"] and encode_object(new) == text
    assert [type(v) for v in new["status"].values()] == [float, int, bool]
    reordered = _deployment("7")
    reordered["spec"] = {"template": old["spec"]["template"], "replicas": 1}  # same keys, other order
    share_unchanged(reordered, old)
    assert reordered["spec"] is not old["spec"] and list(reordered["spec"]) == ["template", "replicas"]
    listed = {"spec": [{"a": 1}, {"a": 2}]}
    share_unchanged(listed, {"spec": ({"a": 1}, {"a": 2})})  # a tuple is not the list it encodes as
    assert type(listed["spec"]) is list


def test_two_different_queues_share_their_equal_items() -> None:
    a = PendingItem("c", "default", "a", 3, WATCH)
    (one,) = merge_pending((), [a], None)
    both = merge_pending((), [PendingItem("c", "default", "a", 3, WATCH), PendingItem("c", "default", "b", 3, WATCH)],
                         None)
    assert both[0] == one and both[0] is one


#: memo replays of built-in workloads (Deployments, ReplicaSets, Pods), a kopf timer, a plain controller
_EXAMPLES = ["workloads/wait-for-deployment", "workloads/cron-report", "bugs/generation-fight", "quickstart"]


def _shown(path: Path) -> object:
    exploration = explore(load_scenario(path), overrides=Overrides(graph_states=50, keep_states=False))
    stats = exploration.result.stats
    exploration.search.close()
    return stats.states, stats.transitions, stable(to_json(CheckResult((exploration.result,))))


@pytest.mark.parametrize("example", _EXAMPLES)
def test_a_search_is_the_same_without_sharing_equal_values(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / "scenarios" / example / "scenario.yaml"
    shared = _shown(path)

    class _Apart(EqualObjects):
        def one(self, obj: Any) -> Any:
            return obj

    class _Fresh(dict[Any, Any]):
        def setdefault(self, key: Any, default: Any = None) -> Any:
            return default

    monkeypatch.setattr(runtime, "_EQUAL", _Apart(1))
    monkeypatch.setattr(state, "shared_items", lambda pending: pending)
    monkeypatch.setattr(server_state, "share_unchanged", lambda new, old: None)
    monkeypatch.setattr(snapshot, "_KEYS", _Fresh())
    assert shared == _shown(path)
