"""One built-in sync at a time against a real simulated API server (no explorer).

Why: each built-in's rules (names, labels, annotations, status fields, ordering) are pinned by
calling its ``reconcile`` directly and reading what the server then holds.
"""

from __future__ import annotations

import copy
from typing import Any

from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.controlplane import node_manifests
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.builtins import ServerCluster

EPOCH = 1_767_225_600


class Harness:
    def __init__(self, nodes: int = 2) -> None:
        self.clock = EPOCH
        # each test runs the kubelet by hand, if at all: pods go at once, as without graceful deletion
        self.server = ApiServer(Registry.builtin().without_graceful_deletion(), Snapshot.empty(),
                                now=lambda: self.clock)
        for ns in ("default", "kube-system"):
            self.server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        for node in node_manifests(nodes):
            self.server.create(node)

    @property
    def cluster(self) -> ServerCluster:
        return ServerCluster(self.server, self.clock)

    def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.server.create(copy.deepcopy(obj))

    # reads return deep copies: a test that edits what it read must not edit the stored object behind
    # the server's back (the next write would then see no change)
    def get(self, api_version: str, kind: str, name: str, namespace: str = "default") -> dict[str, Any] | None:
        found = self.server.snapshot.get(ObjectRef(api_version, kind, namespace, name))
        return copy.deepcopy(dict(found)) if found is not None else None

    def pods(self, namespace: str = "default") -> list[dict[str, Any]]:
        return [copy.deepcopy(dict(p)) for p in self.server.snapshot.objects() if p.get("kind") == "Pod"
                and p["metadata"].get("namespace") == namespace]

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        return [copy.deepcopy(dict(o)) for o in self.server.snapshot.objects() if o.get("kind") == kind]

    def tick(self, seconds: int = 1) -> None:
        self.clock += seconds

    def set_image(self, api_version: str, kind: str, name: str, image: str, **spec: Any) -> None:
        """A new pod template (the first container's image), with other spec fields, as a user edit."""
        obj = self.get(api_version, kind, name)
        assert obj is not None
        template = {**obj["spec"]["template"]}
        first = {**template["spec"]["containers"][0], "image": image}
        template["spec"] = {**template["spec"], "containers": [first]}
        self.server.update({**obj, "spec": {**obj["spec"], "template": template, **spec}})


def pod_template(labels: dict[str, str], restart: str = "Always") -> dict[str, Any]:
    return {"metadata": {"labels": dict(labels)},
            "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}}


def pod(name: str, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default",
                                                             "labels": labels or {}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}}
