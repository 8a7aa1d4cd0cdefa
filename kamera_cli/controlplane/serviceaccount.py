"""``serviceaccount``: the ``default`` ServiceAccount of every namespace.

Follows pkg/controller/serviceaccount/serviceaccounts_controller.go (``syncNamespace``): for a
namespace that exists and is not terminating, each managed ServiceAccount (upstream's default list
is just ``default``) is created when missing; a deleted ``default`` comes back, because its deletion
enqueues its namespace. No token Secret is made (upstream stopped in 1.24).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Outcome, Watch
from kamera_cli.controlplane.objects import deleting, meta, status

MANAGED = ("default",)


def _namespace_of(account: Mapping[str, Any]) -> Iterable[tuple[str | None, str]]:
    """A ServiceAccount event enqueues its namespace (upstream's serviceAccountDeleted)."""
    namespace = meta(account).get("namespace")
    return [(None, str(namespace))] if namespace else []


@dataclass
class ServiceAccountController:
    name: str = "serviceaccount"
    api_version: str = "v1"
    kind: str = "Namespace"
    owns: Sequence[tuple[str, str]] = ()
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "ServiceAccount", _namespace_of),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        ns = cluster.get("v1", "Namespace", "", name)
        if ns is None or deleting(ns) or status(ns).get("phase") == "Terminating":
            return NO_REQUEUE
        for account in MANAGED:
            if cluster.get("v1", "ServiceAccount", name, account) is not None:
                continue
            try:
                cluster.create({"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {"name": account, "namespace": name}})
            except ClusterError as exc:
                if exc.status not in (409, 403):  # already there, or the namespace began terminating
                    raise
        return NO_REQUEUE
