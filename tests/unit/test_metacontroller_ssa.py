"""metacontroller's ``--apply-strategy=server-side-apply`` (v4.17.2 ``ServerSideApply.Apply``), one sync at a time.

Children go through the simulated API server's server-side apply as the field manager
``metacontroller``, with force; the last-update cache skips an apply whose desired object and child
are unchanged since the last one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.metacontroller.apply import LAST_APPLIED
from kamera_cli.adapters.metacontroller.rest import Rest
from kamera_cli.adapters.metacontroller.ssa import SsaApplier, sanitized
from kamera_cli.model.objects import ObjectRef
from kamera_cli.runner import check
from tests.unit.test_metacontroller_engine import Cluster, Hook, children, cluster, cm, composite, task

__all__ = ["cluster"]  # the fixture, shared with the engine's tests

CM = ObjectRef("v1", "ConfigMap", "default", "a")
TASK_CHILD = ObjectRef("example.com/v1", "Task", "default", "child")


def manifest(method: str, resource: str = "configmaps", api_version: str = "v1") -> dict[str, Any]:
    return composite(childResources=[{"apiVersion": api_version, "resource": resource,
                                      "updateStrategy": {"method": method}}])


class Syncs:
    """Syncs of the parent ``t`` with server-side apply, the cache carried from one to the next."""

    def __init__(self, cluster: Cluster, method: str, manager: str = "metacontroller", **child: Any) -> None:
        self.cluster = cluster
        self.manifest = manifest(method, **child)
        self.manager = manager
        self.cache: dict[str, list[Any]] = {}
        self.requests: list[str] = []

    def sync(self, hook: Hook) -> None:
        engine = self.cluster.engine(self.manifest, {"sync": hook})
        engine.ssa = SsaApplier(Rest(self.cluster.client), self.manager, self.cache)
        before = len(self.cluster.server.journal)
        engine.sync("default", "t")
        self.requests = [_label(a) for a in self.cluster.server.journal[before:]
                         if a.is_write and a.name != "t" and a.resource is not None and a.resource.kind != "Event"]
        self.cache = engine.ssa.cache


def _label(access: Any) -> str:
    """A child write: ``apply`` (a PATCH with force, as server-side apply), ``dry-run apply``, or its verb."""
    if access.verb == "patch" and ("force", "true") in access.query:
        return "dry-run apply" if access.dry_run else "apply"
    return str(access.verb)


def managers(obj: dict[str, Any] | None) -> list[tuple[str, str]]:
    assert obj is not None
    return sorted((e["manager"], e["operation"]) for e in obj["metadata"].get("managedFields") or [])


def test_a_child_is_created_by_an_apply_owned_by_the_parent_without_a_last_applied_annotation(
        cluster: Cluster) -> None:
    cluster.server.create(task())
    syncs = Syncs(cluster, "InPlace", manager="my-mc")
    syncs.sync(children(cm("a", {"k": "v"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["data"] == {"k": "v"}
    assert LAST_APPLIED not in (child["metadata"].get("annotations") or {})
    (ref,) = child["metadata"]["ownerReferences"]
    assert ref["kind"] == "Task" and ref["controller"] is True
    assert managers(child) == [("my-mc", "Apply")]
    assert syncs.requests == ["apply"]


def test_in_place_an_apply_updates_keeps_others_fields_and_drops_fields_no_longer_desired(cluster: Cluster) -> None:
    cluster.server.create(task())
    syncs = Syncs(cluster, "InPlace")
    syncs.sync(children(cm("a", {"k": "v", "gone": "soon"}, task="t")))
    cluster.server.patch(CM, "merge", {"data": {"byOthers": "x"}})
    syncs.sync(children(cm("a", {"k": "new"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["data"] == {"k": "new", "byOthers": "x"}
    # a field metacontroller owns and someone else changed is taken back (force)
    cluster.server.patch(CM, "merge", {"data": {"k": "theirs"}})
    syncs.sync(children(cm("a", {"k": "new"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["data"]["k"] == "new"


def test_the_last_update_cache_skips_an_apply_until_the_desired_object_or_the_generation_changes(
        cluster: Cluster) -> None:
    """A child with a generation (a custom resource): a label changed by someone else does not change
    it, so the cached apply stands and the label stays changed — until the hook's answer changes."""
    cluster.server.create(task())
    syncs = Syncs(cluster, "InPlace", resource="tasks", api_version="example.com/v1")

    def child(value: str) -> Hook:
        return children({"apiVersion": "example.com/v1", "kind": "Task",
                         "metadata": {"name": "child", "labels": {"task": "t", "tier": "a"}},
                         "spec": {"value": value}})

    syncs.sync(child("1"))
    assert syncs.requests == ["apply"]
    syncs.sync(child("1"))
    assert syncs.requests == []  # cache hit: no request at all
    cluster.server.patch(TASK_CHILD, "merge", {"metadata": {"labels": {"tier": "b"}}})
    syncs.sync(child("1"))
    found = cluster.get("example.com/v1", "Task", "child")
    assert syncs.requests == [] and found is not None and found["metadata"]["labels"]["tier"] == "b"
    cluster.server.patch(TASK_CHILD, "merge", {"spec": {"value": "theirs"}})  # a new generation
    syncs.sync(child("1"))
    found = cluster.get("example.com/v1", "Task", "child")
    assert syncs.requests == ["apply"] and found is not None
    assert found["spec"]["value"] == "1" and found["metadata"]["labels"]["tier"] == "a"


def test_on_delete_never_writes_an_existing_child(cluster: Cluster) -> None:
    cluster.server.create(task())
    syncs = Syncs(cluster, "OnDelete")
    syncs.sync(children(cm("a", {"k": "old"}, task="t")))
    syncs.sync(children(cm("a", {"k": "new"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["data"] == {"k": "old"} and syncs.requests == []


def test_recreate_deletes_only_when_a_dry_run_apply_would_change_the_child(cluster: Cluster) -> None:
    cluster.server.create(task())
    syncs = Syncs(cluster, "Recreate")
    syncs.sync(children(cm("a", {"k": "v"}, task="t")))
    syncs.cache.clear()  # as after a restart: the dry run finds nothing to change, nothing is deleted
    syncs.sync(children(cm("a", {"k": "v"}, task="t")))
    assert syncs.requests == ["dry-run apply"] and cluster.get("v1", "ConfigMap", "a") is not None
    syncs.sync(children(cm("a", {"k": "new"}, task="t")))
    assert syncs.requests == ["dry-run apply", "delete"] and cluster.get("v1", "ConfigMap", "a") is None
    syncs.sync(children(cm("a", {"k": "new"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["data"] == {"k": "new"}


def test_in_place_a_child_dynamic_apply_wrote_loses_its_last_applied_annotation_first(cluster: Cluster) -> None:
    cluster.server.create(task())
    cluster.engine(manifest("InPlace"), {"sync": children(cm("a", {"k": "v"}, task="t"))}).sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and LAST_APPLIED in child["metadata"]["annotations"]
    syncs = Syncs(cluster, "InPlace")
    syncs.sync(children(cm("a", {"k": "v2"}, task="t")))
    child = cluster.get("v1", "ConfigMap", "a")
    assert syncs.requests == ["patch", "apply"]
    assert child is not None and child["data"] == {"k": "v2"}
    assert LAST_APPLIED not in (child["metadata"].get("annotations") or {})


def test_sanitized_drops_server_fields_status_and_the_annotation() -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "status": {"x": 1},
           "metadata": {"name": "a", "uid": "u", "resourceVersion": "3", "generation": 2, "managedFields": [],
                        "creationTimestamp": "t", "annotations": {LAST_APPLIED: "{}", "keep": "me"}}}
    assert sanitized(obj) == {"apiVersion": "v1", "kind": "ConfigMap",
                              "metadata": {"name": "a", "annotations": {"keep": "me"}}}


@pytest.mark.parametrize("strategy", ["dynamic-apply", "server-side-apply"])
def test_the_scenario_chooses_the_apply_strategy_and_the_cache_is_explored_state(tmp_path: Path,
                                                                                 strategy: str) -> None:
    (tmp_path / "hooks.py").write_text(
        "def sync(request):\n"
        "    return {'children': [{'apiVersion': 'v1', 'kind': 'Secret',\n"
        "                          'metadata': {'name': 'x', 'labels': {'controller-uid':\n"
        "                                       request['parent']['metadata']['uid']}},\n"
        "                          'stringData': {'k': 'v'}}]}\n")
    (tmp_path / "controller.yaml").write_text(json.dumps(
        {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController", "metadata": {"name": "c"},
         "spec": {"generateSelector": True, "parentResource": {"apiVersion": "v1", "resource": "configmaps"},
                  "childResources": [{"apiVersion": "v1", "resource": "secrets",
                                      "updateStrategy": {"method": "InPlace"}}],
                  "hooks": {"sync": {"webhook": {"url": "http://h/sync"}}}}}))
    (tmp_path / "scenario.yaml").write_text(f"""\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: ssa}}
spec:
  controllers:
    - name: c
      metacontroller: controller.yaml
      hooks: {{sync: hooks.py:sync}}
      applyStrategy: {strategy}
      ssaFieldManager: my-metacontroller
  seed: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: p, namespace: default}}}}]
  invariants:
    - name: the secret is written by the strategy's writer
      select: "$.items[?@.kind == 'Secret' && @.metadata.managedFields[?@.manager == 'my-metacontroller']]"
      expect: {{count: {1 if strategy == "server-side-apply" else 0}}}
      vacuous: allowed
""")
    (result,) = check(tmp_path / "scenario.yaml").scenarios
    assert result.verdict == "passed", [c.message for c in result.checks]
