"""What a fresh cluster holds besides its namespaces (``spec.cluster.systemObjects``, docs/builtins.md).

Why: operators act on the cluster as they find it, and a cluster is never empty. Each node's kubelet
keeps a Lease in ``kube-node-lease`` (its heartbeat), and the root CA publisher and the service-account
controller have put ``kube-root-ca.crt`` and the ``default`` ServiceAccount into every namespace long
before an operator starts. Without them a namespace-cleanup operator finds ``kube-node-lease`` empty
and deletes it (a false alarm), and an operator that reads the CA bundle finds none. They are created
with the seed, through the API server, as the built-ins would create them.
"""

from __future__ import annotations

import datetime
from typing import Any

from kamera_cli.apiserver import ApiError, ApiServer
from kamera_cli.controlplane.rootca import DESCRIPTION, DESCRIPTION_ANNOTATION, NAME, ROOT_CA
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ClusterSpec

__all__ = ["NODE_LEASE_NAMESPACE", "seed_system_objects"]

NODE_LEASE_NAMESPACE = "kube-node-lease"
#: the kubelet's default ``nodeLeaseDurationSeconds``
LEASE_SECONDS = 40
_NAMESPACE = KindRef("", "v1", "Namespace")


def seed_system_objects(server: ApiServer, cluster: ClusterSpec, now: float) -> None:
    """Create, for every node, its Lease; for every namespace, what the running built-ins would publish."""
    if not cluster.system_objects:
        return
    renewed = datetime.datetime.fromtimestamp(now, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    for node in cluster.nodes:
        name = str(node["metadata"]["name"])
        stored = server.get(ObjectRef("v1", "Node", "", name))
        owner = {"apiVersion": "v1", "kind": "Node", "name": name, "uid": stored["metadata"]["uid"]}
        _create(server, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                         "metadata": {"name": name, "namespace": NODE_LEASE_NAMESPACE, "ownerReferences": [owner]},
                         "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_SECONDS,
                                  "renewTime": renewed}})
    namespaces = sorted(str(ns["metadata"]["name"]) for ns in server.snapshot.objects_of(_NAMESPACE))
    for namespace in namespaces:
        if "root-ca-publisher" in cluster.builtins:
            _create(server, {"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": NAME, "namespace": namespace,
                                          "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                             "data": {"ca.crt": ROOT_CA}})
        if "serviceaccount" in cluster.builtins:
            _create(server, {"apiVersion": "v1", "kind": "ServiceAccount",
                             "metadata": {"name": "default", "namespace": namespace}})


def _create(server: ApiServer, obj: dict[str, Any]) -> None:
    """Create unless the seed already holds it (a seeded object of that name is the user's choice)."""
    try:
        server.create(obj)
    except ApiError as exc:
        if exc.status != 409:
            raise
