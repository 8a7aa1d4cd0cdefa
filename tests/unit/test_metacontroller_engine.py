"""metacontroller's engine, one sync at a time, against the simulated API server (metacontroller v4.17).

Each test sets up a parent (and children), runs ``Engine.sync`` with Python hooks through the routed
official client, and checks what metacontroller would have written.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kamera_cli.adapters.metacontroller.apply import LAST_APPLIED
from kamera_cli.adapters.metacontroller.children import SyncError
from kamera_cli.adapters.metacontroller.hooks import HookTarget
from kamera_cli.adapters.metacontroller.manifest import parse_manifest
from kamera_cli.adapters.metacontroller.rest import Rest
from kamera_cli.adapters.metacontroller.sync import DECORATOR_ANNOTATION, Engine
from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.transports.containment import Containment
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.bootstrap import EPOCH, _resolver
from tests.sim.conftest import TASK_CRD

Hook = Callable[[dict[str, Any]], dict[str, Any]]


class Cluster:
    def __init__(self, server: ApiServer, client: Any, registry: Registry) -> None:
        self.server = server
        self.client = client
        self.resolve = _resolver(registry)
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def engine(self, manifest: dict[str, Any], hooks: dict[str, Hook]) -> Engine:
        spec, problems = parse_manifest(manifest, {h: f"hooks.py:{h}" for h in hooks})
        assert spec is not None, problems

        def recording(name: str, fn: Hook) -> Hook:
            def call(request: dict[str, Any]) -> dict[str, Any]:
                self.calls.append((name, copy.deepcopy(request)))
                return fn(request)
            return call

        targets = {h: HookTarget(h, f"hooks.py:{h}", "function", recording(h, fn)) for h, fn in hooks.items()}
        rule = spec.parents[0]
        parent = self.resolve(rule.api_version, rule.resource)
        assert parent is not None
        return Engine(spec, manifest, Rest(self.client), targets, parent, self.resolve, rule.label_selector,
                      rule.annotation_selector)

    def get(self, api_version: str, kind: str, name: str) -> dict[str, Any] | None:
        found = self.server.snapshot.get(ObjectRef(api_version, kind, "default", name))
        return None if found is None else dict(found)

    def kinds(self, kind: str) -> list[str]:
        return sorted(o["metadata"]["name"] for o in self.server.snapshot.objects() if o["kind"] == kind)


#: metacontroller's ControllerRevision CRD (what its Helm chart installs), for rolling updates
REVISION_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "controllerrevisions.metacontroller.k8s.io"},
    "spec": {"group": "metacontroller.k8s.io", "scope": "Namespaced",
             "names": {"plural": "controllerrevisions", "singular": "controllerrevision",
                       "kind": "ControllerRevision", "listKind": "ControllerRevisionList"},
             "versions": [{"name": "v1alpha1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object",
                                                          "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    registry = Registry.builtin().with_crds([TASK_CRD, REVISION_CRD])
    server = ApiServer(registry, Snapshot.empty(), now=lambda: EPOCH)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    with Containment() as containment:
        containment.bind(server)
        yield Cluster(server, containment.api_client(), registry)


def composite(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "parentResource": {"apiVersion": "example.com/v1", "resource": "tasks"},
        "childResources": [{"apiVersion": "v1", "resource": "configmaps"}],
        "hooks": {"sync": {"webhook": {"url": "http://hook/sync"}}},
    }
    base.update(spec)
    return {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
            "metadata": {"name": "tasks"}, "spec": base}


def task(name: str = "t", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Task", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"task": name}},
                     "template": {"metadata": {"labels": {"task": name}}}, **spec}}


def cm(name: str, data: dict[str, str] | None = None, **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default", "labels": labels}, "data": data or {}}


def children(*objs: dict[str, Any], status: dict[str, Any] | None = None) -> Hook:
    return lambda request: {"children": [copy.deepcopy(o) for o in objs], "status": status or {}}


def test_children_are_created_owned_and_annotated_and_the_status_is_replaced(cluster: Cluster) -> None:
    parent = cluster.server.create(task())
    uid = parent["metadata"]["uid"]
    engine = cluster.engine(composite(), {"sync": children(cm("a", task="t"), status={"phase": "Done"})})
    engine.sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None
    (ref,) = child["metadata"]["ownerReferences"]
    assert ref == {"apiVersion": "example.com/v1", "kind": "Task", "name": "t", "uid": uid, "controller": True,
                   "blockOwnerDeletion": True}
    assert json.loads(child["metadata"]["annotations"][LAST_APPLIED])["metadata"]["name"] == "a"
    stored = cluster.get("example.com/v1", "Task", "t")
    assert stored is not None and stored["status"] == {"phase": "Done", "observedGeneration": 1}
    name, request = cluster.calls[0]
    assert name == "sync" and request["children"] == {"ConfigMap.v1": {}} and request["finalizing"] is False
    assert request["controller"]["kind"] == "CompositeController" and request["parent"]["metadata"]["uid"] == uid


def test_the_whole_status_is_replaced_not_merged(cluster: Cluster) -> None:
    cluster.server.create(task())
    cluster.engine(composite(), {"sync": children(status={"a": 1, "b": 2})}).sync("default", "t")
    cluster.engine(composite(), {"sync": children(status={"a": 1})}).sync("default", "t")
    stored = cluster.get("example.com/v1", "Task", "t")
    assert stored is not None and stored["status"] == {"a": 1, "observedGeneration": 1}


def test_children_no_longer_desired_are_deleted_and_observed_ones_reach_the_hook(cluster: Cluster) -> None:
    cluster.server.create(task())
    cluster.engine(composite(), {"sync": children(cm("a", task="t"), cm("b", task="t"))}).sync("default", "t")
    assert cluster.kinds("ConfigMap") == ["a", "b"]
    cluster.engine(composite(), {"sync": children(cm("a", task="t"))}).sync("default", "t")
    assert cluster.kinds("ConfigMap") == ["a"]
    assert sorted(cluster.calls[1][1]["children"]["ConfigMap.v1"]) == ["a", "b"]


def test_orphans_matching_the_selector_are_adopted_and_own_children_that_stop_matching_released(
        cluster: Cluster) -> None:
    parent = cluster.server.create(task())
    cluster.server.create(cm("orphan", task="t"))
    cluster.server.create(cm("stranger", task="other"))
    engine = cluster.engine(composite(), {"sync": children(cm("orphan", task="t"))})
    engine.sync("default", "t")
    orphan = cluster.get("v1", "ConfigMap", "orphan")
    assert orphan is not None and orphan["metadata"]["ownerReferences"][0]["uid"] == parent["metadata"]["uid"]
    assert sorted(cluster.calls[0][1]["children"]["ConfigMap.v1"]) == ["orphan"]
    stranger = cluster.get("v1", "ConfigMap", "stranger")
    assert stranger is not None and not stranger["metadata"].get("ownerReferences")
    # adopted children that are not desired are deleted like any other
    cluster.engine(composite(), {"sync": children()}).sync("default", "t")
    assert cluster.kinds("ConfigMap") == ["stranger"]
    owned = cm("relabelled", task="other")
    owned["metadata"]["ownerReferences"] = [{"apiVersion": "example.com/v1", "kind": "Task", "name": "t",
                                             "uid": parent["metadata"]["uid"], "controller": True}]
    cluster.server.create(owned)
    engine.sync("default", "t")
    released = cluster.get("v1", "ConfigMap", "relabelled")
    assert released is not None and not released["metadata"].get("ownerReferences")


def test_generate_selector_labels_children_with_the_parents_uid(cluster: Cluster) -> None:
    parent = cluster.server.create(task())
    cluster.engine(composite(generateSelector=True), {"sync": children(cm("a"))}).sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "a")
    assert child is not None and child["metadata"]["labels"] == {"controller-uid": parent["metadata"]["uid"]}


def test_a_desired_child_outside_the_selector_fails_the_sync_before_any_child_is_written(
        cluster: Cluster) -> None:
    cluster.server.create(task())
    with pytest.raises(SyncError, match="don't match parent selector"):
        cluster.engine(composite(), {"sync": children(cm("a", task="nope"))}).sync("default", "t")
    assert cluster.kinds("ConfigMap") == []


def strategy(method: str) -> dict[str, Any]:
    return composite(childResources=[{"apiVersion": "v1", "resource": "configmaps",
                                      "updateStrategy": {"method": method}}])


@pytest.mark.parametrize(("method", "expected"), [
    ("OnDelete", {"k": "old"}), ("InPlace", {"k": "new", "byOthers": "x"}),
    ("RollingInPlace", {"k": "new", "byOthers": "x"}), ("Recreate", None), ("RollingRecreate", None),
])
def test_update_strategies(cluster: Cluster, method: str, expected: dict[str, str] | None) -> None:
    cluster.server.create(task())
    cluster.engine(strategy(method), {"sync": children(cm("a", {"k": "old"}, task="t"))}).sync("default", "t")
    cluster.server.patch(ObjectRef("v1", "ConfigMap", "default", "a"), "merge", {"data": {"byOthers": "x"}})
    cluster.engine(strategy(method), {"sync": children(cm("a", {"k": "new"}, task="t"))}).sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "a")
    if expected is None:  # deleted now, created afresh by a later sync
        assert child is None
    elif method == "OnDelete":
        assert child is not None and child["data"] == {"k": "old", "byOthers": "x"}
    else:
        assert child is not None and child["data"] == expected


def test_finalize_hook_adds_the_finalizer_then_finalizes_a_deleted_parent(cluster: Cluster) -> None:
    cluster.server.create(task())
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "finalize": {"webhook": {"url": "http://hook/finalize"}}})
    hooks: dict[str, Hook] = {
        "sync": children(cm("a", task="t")),
        "finalize": lambda request: {"children": [], "finalized": not request["children"]["ConfigMap.v1"]},
    }
    cluster.engine(manifest, hooks).sync("default", "t")
    stored = cluster.get("example.com/v1", "Task", "t")
    assert stored is not None and stored["metadata"]["finalizers"] == ["metacontroller.io/compositecontroller-tasks"]
    cluster.server.delete(ObjectRef("example.com/v1", "Task", "default", "t"))
    cluster.engine(manifest, hooks).sync("default", "t")  # finalizing: children deleted, not finalized yet
    assert cluster.calls[-1][0] == "finalize" and cluster.calls[-1][1]["finalizing"] is True
    assert cluster.kinds("ConfigMap") == [] and cluster.kinds("Task") == ["t"]
    cluster.engine(manifest, hooks).sync("default", "t")  # no children left: finalized, finalizer removed
    assert cluster.kinds("Task") == []


def test_without_a_finalize_hook_a_leftover_finalizer_is_removed(cluster: Cluster) -> None:
    parent = task()
    parent["metadata"]["finalizers"] = ["metacontroller.io/compositecontroller-tasks"]
    cluster.server.create(parent)
    cluster.engine(composite(), {"sync": children()}).sync("default", "t")
    stored = cluster.get("example.com/v1", "Task", "t")
    assert stored is not None and not stored["metadata"].get("finalizers")


def test_a_parent_outside_the_label_selector_is_ignored(cluster: Cluster) -> None:
    cluster.server.create(task())
    manifest = composite(parentResource={"apiVersion": "example.com/v1", "resource": "tasks",
                                         "labelSelector": {"matchLabels": {"managed": "yes"}}})
    cluster.engine(manifest, {"sync": children(cm("a", task="t"))}).sync("default", "t")
    assert cluster.calls == [] and cluster.kinds("ConfigMap") == []


def test_customize_hook_related_objects_reach_the_sync_hook(cluster: Cluster) -> None:
    cluster.server.create(task())
    cluster.server.create(cm("settings", {"x": "1"}))
    cluster.server.create(cm("labelled", {"y": "2"}, role="config"))
    cluster.server.create(cm("ignored"))
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "customize": {"webhook": {"url": "http://hook/customize"}}})
    rules = [{"apiVersion": "v1", "resource": "configmaps", "names": ["settings"]},
             {"apiVersion": "v1", "resource": "configmaps", "labelSelector": {"matchLabels": {"role": "config"}}}]
    hooks: dict[str, Hook] = {"customize": lambda request: {"relatedResources": rules}, "sync": children()}
    cluster.engine(manifest, hooks).sync("default", "t")
    assert [c[0] for c in cluster.calls] == ["customize", "sync"]
    assert sorted(cluster.calls[1][1]["related"]["ConfigMap.v1"]) == ["labelled", "settings"]


DECORATOR: dict[str, Any] = {
    "apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "DecoratorController",
    "metadata": {"name": "deco"},
    "spec": {"resources": [{"apiVersion": "example.com/v1", "resource": "tasks",
                            "labelSelector": {"matchLabels": {"tier": "app"}},
                            "annotationSelector": {"matchAnnotations": {"decorate": "yes"}}}],
             "attachments": [{"apiVersion": "v1", "resource": "configmaps"}],
             "hooks": {"sync": {"webhook": {"url": "http://hook/sync"}}}},
}


def decorated(name: str, labels: dict[str, str], annotations: dict[str, str]) -> dict[str, Any]:
    obj = task(name)
    obj["metadata"].update(labels=labels, annotations=annotations)
    return obj


def test_decorator_selects_by_labels_and_annotations_and_sets_labels_annotations_and_attachments(
        cluster: Cluster) -> None:
    cluster.server.create(decorated("on", {"tier": "app", "drop": "me"}, {"decorate": "yes"}))
    cluster.server.create(decorated("off", {"tier": "app"}, {"decorate": "no"}))
    def hook(request: dict[str, Any]) -> dict[str, Any]:
        return {"labels": {"decorated": "true", "drop": None}, "annotations": {"by": "deco"},
                "attachments": [cm(request["object"]["metadata"]["name"] + "-extra")]}

    for name in ("on", "off"):
        cluster.engine(DECORATOR, {"sync": hook}).sync("default", name)
    assert len(cluster.calls) == 1 and cluster.calls[0][1]["object"]["metadata"]["name"] == "on"
    stored = cluster.get("example.com/v1", "Task", "on")
    assert stored is not None and stored["metadata"]["labels"] == {"tier": "app", "decorated": "true"}
    assert stored["metadata"]["annotations"] == {"decorate": "yes", "by": "deco"}
    attachment = cluster.get("v1", "ConfigMap", "on-extra")
    assert attachment is not None and attachment["metadata"]["annotations"][DECORATOR_ANNOTATION] == "deco"
    cluster.engine(DECORATOR, {"sync": hook}).sync("default", "on")
    assert cluster.calls[-1][1]["attachments"] == {"ConfigMap.v1": {"on-extra": attachment}}


def rolling(checks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    strategy: dict[str, Any] = {"method": "RollingInPlace"}
    if checks:
        strategy["statusChecks"] = {"conditions": checks}
    return composite(childResources=[{"apiVersion": "v1", "resource": "configmaps", "updateStrategy": strategy}])


def versioned(request: dict[str, Any]) -> dict[str, Any]:
    version = request["parent"]["spec"]["version"]
    return {"children": [cm(n, {"version": version}, task="t") for n in ("a", "b")], "status": {}}


def roll(cluster: Cluster, manifest: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any], list[str]]:
    cluster.engine(manifest, {"sync": versioned}).sync("default", "t")
    data = {}
    for name in ("a", "b"):
        child = cluster.get("v1", "ConfigMap", name)
        assert child is not None
        data[name] = child["data"]["version"]
    parent = cluster.get("example.com/v1", "Task", "t")
    assert parent is not None
    updated = next(c for c in parent["status"]["conditions"] if c["type"] == "Updated")
    return data, updated, cluster.kinds("ControllerRevision")


def test_a_rolling_update_moves_one_child_per_sync_through_controller_revisions(cluster: Cluster) -> None:
    cluster.server.create(task(version="v1"))
    data, updated, revisions = roll(cluster, rolling())
    assert data == {"a": "v1", "b": "v1"} and updated["reason"] == "OnLatestRevision" and len(revisions) == 1
    cluster.server.patch(ObjectRef("example.com/v1", "Task", "default", "t"), "merge", {"spec": {"version": "v2"}})
    data, updated, revisions = roll(cluster, rolling())
    # the hook was called for both revisions, the parent as each had it
    assert [c[1]["parent"]["spec"]["version"] for c in cluster.calls[-2:]] == ["v2", "v1"]
    assert data == {"a": "v2", "b": "v1"} and updated["reason"] == "RolloutProgressing"
    assert updated["message"] == "updating ConfigMap a" and len(revisions) == 2
    data, updated, revisions = roll(cluster, rolling())
    assert data == {"a": "v2", "b": "v2"} and updated["message"] == "updating ConfigMap b"
    data, updated, revisions = roll(cluster, rolling())
    assert updated["reason"] == "OnLatestRevision" and len(revisions) == 1  # the old revision is gone
    revision = cluster.get("metacontroller.k8s.io/v1alpha1", "ControllerRevision", revisions[0])
    assert revision is not None and revision["parentPatch"]["spec"]["version"] == "v2"
    assert revision["children"] == [{"apiGroup": "", "kind": "ConfigMap", "names": ["a", "b"]}]


def test_a_rolling_update_waits_for_the_status_checks_of_the_children_already_rolled(cluster: Cluster) -> None:
    cluster.server.create(task(version="v1"))
    manifest = rolling([{"type": "Ready", "status": "True"}])
    roll(cluster, manifest)
    cluster.server.patch(ObjectRef("example.com/v1", "Task", "default", "t"), "merge", {"spec": {"version": "v2"}})
    data, updated, _ = roll(cluster, manifest)
    assert data == {"a": "v2", "b": "v1"}
    data, updated, _ = roll(cluster, manifest)  # a has no Ready condition: b waits
    assert data == {"a": "v2", "b": "v1"} and updated["reason"] == "RolloutWaiting"
    assert updated["message"] == "child ConfigMap a failed status check: required condition type missing: 'Ready'"


@pytest.mark.parametrize(("answer", "period", "expected"), [
    ({"resyncAfterSeconds": 30}, 0, (30.0, False)),
    ({"resyncAfterSeconds": 30}, 10, (10.0, False)),   # the manifest's resyncPeriodSeconds is shorter
    ({}, 0, (None, False)),
    ({"too-many": True}, 60, (7.0, True)),             # a 429 from the hook server: a retry after Retry-After
])
def test_a_step_resyncs_on_the_virtual_clock(cluster: Cluster, tmp_path: Any, answer: dict[str, Any], period: int,
                                             expected: tuple[float | None, bool]) -> None:
    from kamera_cli.adapters.metacontroller import load_metacontroller
    from kamera_cli.adapters.sandbox.values import Request

    (tmp_path / "hooks.py").write_text(
        "import json\n"
        "from http.server import BaseHTTPRequestHandler\n"
        f"ANSWER = {answer!r}\n"
        "class Hook(BaseHTTPRequestHandler):\n"
        "    def do_POST(self):\n"
        "        self.rfile.read(int(self.headers['Content-Length']))\n"
        "        self.send_response(429 if ANSWER.get('too-many') else 200)\n"
        "        self.send_header('Retry-After', '7')\n"
        "        self.end_headers()\n"
        "        self.wfile.write(json.dumps(ANSWER).encode())\n"
        "    def log_message(self, *args):\n"
        "        pass\n")
    manifest = composite(resyncPeriodSeconds=period)
    spec, _ = parse_manifest(manifest, {"sync": "hooks.py:Hook"})
    assert spec is not None
    controller = load_metacontroller(spec, manifest, {"sync": "hooks.py:Hook"}, tmp_path, scenario="s",
                                     controller="c")
    try:
        controller.bind(cluster.resolve)
        cluster.server.create(task())
        result = controller.step(Request("default", "t", remembered='{"requeues": 2}'), cluster.client)
        assert ((result.requeue_after or None), result.retry) == expected
        # a sync that succeeds forgets the parent's failures (Forget); a 429 keeps them (AddAfter)
        assert getattr(result, "memory", None) == (None if result.retry else "")
    finally:
        controller.unload()


def test_related_rules_by_name_look_in_every_namespace_and_by_label_in_the_parents(cluster: Cluster) -> None:
    cluster.server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    cluster.server.create(task())
    elsewhere = cm("shared", role="config")
    elsewhere["metadata"]["namespace"] = "other"
    cluster.server.create(elsewhere)
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "customize": {"webhook": {"url": "http://hook/customize"}}})
    cases: list[tuple[dict[str, Any], list[str] | str]] = [
        ({"names": ["shared"]}, ["other/shared"]),
        ({"labelSelector": {"matchLabels": {"role": "config"}}}, []),
        ({"namespace": "other", "names": ["shared"]}, "error")]
    for rule, found in cases:
        cluster.calls.clear()
        def customize(request: dict[str, Any], rule: dict[str, Any] = rule) -> dict[str, Any]:
            return {"relatedResources": [{"apiVersion": "v1", "resource": "configmaps", **rule}]}

        hooks: dict[str, Hook] = {"customize": customize, "sync": children()}
        if found == "error":  # v1 hooks of a namespaced parent: another namespace is refused
            with pytest.raises(SyncError, match="differs from parent object namespace"):
                cluster.engine(manifest, hooks).sync("default", "t")
            continue
        cluster.engine(manifest, hooks).sync("default", "t")
        related = cluster.calls[1][1]["related"]["ConfigMap.v1"]
        assert [f"{o['metadata']['namespace']}/{o['metadata']['name']}" for o in related.values()] == found


def test_v2_hooks_key_children_by_namespace_and_name_and_may_relate_other_namespaces(cluster: Cluster) -> None:
    cluster.server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}})
    cluster.server.create(task())
    elsewhere = cm("shared")
    elsewhere["metadata"]["namespace"] = "other"
    cluster.server.create(elsewhere)
    manifest = composite(hooks={"sync": {"version": "v2", "webhook": {"url": "http://hook/sync"}},
                                "customize": {"version": "v2", "webhook": {"url": "http://hook/customize"}}})
    rule = {"apiVersion": "v1", "resource": "configmaps", "namespace": "other", "names": ["shared"]}
    hooks: dict[str, Hook] = {"customize": lambda request: {"relatedResources": [rule]},
                              "sync": children(cm("a", task="t"))}
    cluster.engine(manifest, hooks).sync("default", "t")
    cluster.engine(manifest, hooks).sync("default", "t")
    request = cluster.calls[-1][1]
    assert list(request["children"]["ConfigMap.v1"]) == ["default/a"]
    assert list(request["related"]["ConfigMap.v1"]) == ["other/shared"]


@pytest.mark.parametrize("version", ["v1", "v2"])
def test_related_rules_by_namespace_selector(cluster: Cluster, version: str) -> None:
    cluster.server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a",
                                                                                  "labels": {"team": "a"}}})
    cluster.server.create(task())
    for namespace in ("default", "team-a"):
        obj = cm("settings", role="config")
        obj["metadata"]["namespace"] = namespace
        cluster.server.create(obj)
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "customize": {"version": version, "webhook": {"url": "http://hook/customize"}}})
    rule = {"apiVersion": "v1", "resource": "configmaps", "namespaceSelector": {"matchLabels": {"team": "a"}},
            "labelSelector": {"matchLabels": {"role": "config"}}}
    hooks: dict[str, Hook] = {"customize": lambda request: {"relatedResources": [rule]}, "sync": children()}
    if version == "v1":  # a namespaced parent's v1 hook may not select namespaces
        with pytest.raises(SyncError, match="namespaceSelector is not supported"):
            cluster.engine(manifest, hooks).sync("default", "t")
        return
    cluster.engine(manifest, hooks).sync("default", "t")
    related = cluster.calls[-1][1]["related"]["ConfigMap.v1"]
    assert [o["metadata"]["namespace"] for o in related.values()] == ["team-a"]


def loaded(cluster: Cluster, tmp_path: Any, code: str) -> Any:
    """A controller of ``composite()`` whose sync hook is ``code``'s ``sync``, bound to the cluster."""
    from kamera_cli.adapters.metacontroller import load_metacontroller

    (tmp_path / "hooks.py").write_text(code)
    spec, _ = parse_manifest(composite(), {"sync": "hooks.py:sync"})
    assert spec is not None
    controller = load_metacontroller(spec, composite(), {"sync": "hooks.py:sync"}, tmp_path, scenario="s",
                                     controller="c")
    controller.bind(cluster.resolve)
    return controller


def test_a_failed_sync_posts_metacontrollers_sync_error_event_and_fails(cluster: Cluster, tmp_path: Any) -> None:
    from kamera_cli.adapters.sandbox.values import Request

    controller = loaded(cluster, tmp_path,
                        "def sync(request):\n"
                        "    return {'children': [{'apiVersion': 'v1', 'kind': 'ConfigMap', "
                        "'metadata': {'name': 'x'}}]}\n")
    try:
        cluster.server.create(task())
        with pytest.raises(SyncError, match="don't match parent selector"):
            controller.step(Request("default", "t"), cluster.client)
    finally:
        controller.unload()
    (event,) = [o for o in cluster.server.snapshot.objects() if o["kind"] == "Event"]
    assert event["reason"] == "SyncError" and event["type"] == "Warning"
    assert event["involvedObject"]["name"] == "t" and event["message"].startswith("Sync error: labels on desired")


def test_a_child_adopted_in_a_sync_is_updated_only_by_the_next_one(cluster: Cluster) -> None:
    """The claimed copy is the one listed before the adoption: the in-place update that follows carries
    its old resourceVersion, gets 409 Conflict, and is dropped (metacontroller logs it)."""
    cluster.server.create(task())
    cluster.server.create(cm("o", {"k": "old"}, task="t"))
    hooks: dict[str, Hook] = {"sync": children(cm("o", {"k": "new"}, task="t"))}
    cluster.engine(strategy("InPlace"), hooks).sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "o")
    assert child is not None and child["metadata"]["ownerReferences"] and child["data"] == {"k": "old"}
    cluster.engine(strategy("InPlace"), hooks).sync("default", "t")
    child = cluster.get("v1", "ConfigMap", "o")
    assert child is not None and child["data"] == {"k": "new"}


def test_a_429_from_the_customize_hook_ends_the_sync_before_the_sync_hook(cluster: Cluster) -> None:
    from http.server import BaseHTTPRequestHandler

    class Busy(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(429)
            self.send_header("Retry-After", "12")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return None

    cluster.server.create(task())
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "customize": {"webhook": {"url": "http://hook/customize"}}})
    engine = cluster.engine(manifest, {"sync": children(cm("a", task="t")), "customize": children()})
    engine.hooks = {**engine.hooks, "customize": HookTarget("customize", "h.py:Busy", "handler", Busy, "/c")}
    outcome = engine.sync("default", "t")
    assert outcome.retry_after == 12.0 and cluster.calls == [] and cluster.kinds("ConfigMap") == []


def test_the_customize_answer_is_cached_per_parent_uid_and_generation(cluster: Cluster) -> None:
    cluster.server.create(task())
    manifest = composite(hooks={"sync": {"webhook": {"url": "http://hook/sync"}},
                                "customize": {"webhook": {"url": "http://hook/customize"}}})
    hooks: dict[str, Hook] = {"customize": lambda request: {"relatedResources": []}, "sync": children()}
    first = cluster.engine(manifest, hooks)
    first.sync("default", "t")
    second = cluster.engine(manifest, hooks)
    second.customize_cache = first.customize_cache
    second.sync("default", "t")  # same generation: the cached answer, no customize call
    assert [c[0] for c in cluster.calls] == ["customize", "sync", "sync"]
    cluster.server.patch(ObjectRef("example.com/v1", "Task", "default", "t"), "merge", {"spec": {"x": 1}})
    second.sync("default", "t")  # a new generation asks again
    assert [c[0] for c in cluster.calls][3:] == ["customize", "sync"]
    assert second.customize_cache is not None and second.customize_cache["key"]["generation"] == 2


def test_a_failed_sync_is_retried_through_the_rate_limited_work_queue(cluster: Cluster, tmp_path: Any) -> None:
    """``AddRateLimited``: 5 ms doubled per failure of the parent, up to 1000 s; ``Forget`` on success;
    a 429 (``AddAfter``) leaves the count alone.  The count is the step's memory (explored state)."""
    from kamera_cli.adapters.metacontroller.controller import rate_limited_delay
    from kamera_cli.adapters.sandbox.values import Request, failure_retry

    controller = loaded(cluster, tmp_path,
                        "def sync(request):\n"
                        "    mode = request['parent']['spec'].get('mode')\n"
                        "    if mode == 'broken':\n"
                        "        raise ValueError('no template')\n"
                        "    return {'status': {'mode': mode}}\n")
    ref = ObjectRef("example.com/v1", "Task", "default", "t")

    def mode(value: str) -> None:
        cluster.server.patch(ref, "merge", {"spec": {"mode": value}})

    try:
        cluster.server.create(task(mode="broken"))
        remembered, delays = "", []
        for _ in range(3):
            with pytest.raises(ValueError, match="no template") as info:
                controller.step(Request("default", "t", remembered=remembered), cluster.client)
            retry = failure_retry(info.value)
            assert retry is not None and retry.retry
            delays.append(retry.requeue_after)
            remembered = getattr(retry, "memory", None) or remembered
        assert delays == [0.005, 0.01, 0.02] and json.loads(remembered) == {"requeues": 3}
        mode("ok")
        result = controller.step(Request("default", "t", remembered=remembered), cluster.client)
        assert getattr(result, "memory", None) == "" and not result.retry  # forgotten: the entry is dropped
    finally:
        controller.unload()
    assert rate_limited_delay(0) == 0.005 and rate_limited_delay(17) == pytest.approx(655.36)
    assert rate_limited_delay(18) == rate_limited_delay(40) == 1000.0
