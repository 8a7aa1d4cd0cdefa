"""``root-ca-publisher``: the ``kube-root-ca.crt`` ConfigMap in every namespace.

Follows pkg/controller/certificates/rootcacertpublisher/publisher.go (``syncNamespace``): a namespace
without the ConfigMap gets one holding the cluster's CA bundle under ``ca.crt`` and the
``kubernetes.io/description`` annotation; a ConfigMap whose data or annotation was changed is put
back (data replaced, annotation set, other metadata kept); deleting it brings it back, because a
ConfigMap event of that name enqueues its namespace. A namespace that is gone or terminating refuses
the create, which upstream does not retry. Why a fixed certificate: the simulated API server has no
TLS, but operators that mount or read the bundle (and parse it) need a real PEM certificate; this one
is self-signed for ``CN=kamera-simulated-ca`` and its key was never kept.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Outcome, Watch
from kamera_cli.controlplane.objects import meta, name_of

NAME = "kube-root-ca.crt"
DESCRIPTION_ANNOTATION = "kubernetes.io/description"
DESCRIPTION = ("Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints "
               "such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across "
               "distributions of Kubernetes clusters.")
#: the simulated cluster's root CA (a P-256 self-signed certificate, valid for a century)
ROOT_CA = """-----BEGIN CERTIFICATE-----
MIIBgDCCASagAwIBAgIBATAKBggqhkjOPQQDAjAeMRwwGgYDVQQDDBNrYW1lcmEt
c2ltdWxhdGVkLWNhMCAXDTI2MTEyNTA5MDYyM1oYDzIxMjYxMTAxMDkwNjIzWjAe
MRwwGgYDVQQDDBNrYW1lcmEtc2ltdWxhdGVkLWNhMFkwEwYHKoZIzj0CAQYIKoZI
zj0DAQcDQgAEiM2aR0uUTmEJDoyBB+kZMZGv6VFNnd3vfEeSJAN7l2/WLyERHIEM
YsoJTPujNjd7uMPHgynOD2wx2m+24vda4KNTMFEwHQYDVR0OBBYEFKqInFx30+Me
DJnV49kq9QbJhxWhMB8GA1UdIwQYMBaAFKqInFx30+MeDJnV49kq9QbJhxWhMA8G
A1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIgfNQsApyxaFyiSlI7EKWx
3J0Raaq76RCZWbywyBSmrQYCIQCwi55HrqQkOFiaQDIMcsJOvc2e7SxVoxM9Tlk4
3fXmxQ==
-----END CERTIFICATE-----
"""


def _namespace_of(config_map: Mapping[str, Any]) -> Iterable[tuple[str | None, str]]:
    """Only the ConfigMap of that name matters (``configMapUpdated`` / ``configMapDeleted``)."""
    namespace = meta(config_map).get("namespace")
    return [(None, str(namespace))] if namespace and name_of(config_map) == NAME else []


@dataclass
class RootCAPublisher:
    name: str = "root-ca-publisher"
    api_version: str = "v1"
    kind: str = "Namespace"
    owns: Sequence[tuple[str, str]] = ()
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "ConfigMap", _namespace_of),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        data = {"ca.crt": ROOT_CA}
        found = cluster.get("v1", "ConfigMap", name, NAME)
        if found is None:
            try:
                cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": NAME, "namespace": name,
                                             "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
                                "data": data})
            except ClusterError as exc:
                # gone or terminating: not retried, as upstream; a conflict means someone made it meanwhile
                if not (exc.not_found or exc.status in (403, 409)):
                    raise
            return NO_REQUEUE
        annotations = dict(meta(found).get("annotations") or {})
        if found.get("data") == data and annotations.get(DESCRIPTION_ANNOTATION):
            return NO_REQUEUE
        annotations[DESCRIPTION_ANNOTATION] = DESCRIPTION
        found["metadata"] = {**meta(found), "annotations": annotations}
        found["data"] = data
        try:
            cluster.update(found)
        except ClusterError as exc:
            if not (exc.not_found or exc.conflict):
                raise
        return NO_REQUEUE
