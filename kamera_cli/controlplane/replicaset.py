"""The ReplicaSet controller (pkg/controller/replicaset/replica_set.go, ``syncReplicaSet``).

One step is one sync of one ReplicaSet: list the namespace's pods, claim them (adopt matching
orphans, release owned pods that stopped matching), create or delete pods to reach
``spec.replicas`` (slow-start batches, at most ``burstReplicas`` per sync, victims ranked as
upstream), then write the status computed from the pods it started the sync with.

Expectations: upstream keeps in-memory "expectations" so that a sync does not create again before
its own creates reached its informer cache. A built-in here always reads the current cluster (it is
never given a stale view), which is exactly what satisfied expectations guarantee, so they need no
model of their own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    controller_ref,
    deleting,
    labels,
    meta,
    name_of,
    new_controller_ref,
    owned_by,
    pod_active,
    pod_available,
    pod_ready,
    selector_is_empty,
    selector_matches,
    set_condition,
    spec,
    status,
    write_status,
)
from kamera_cli.controlplane.pods import BURST_REPLICAS, deletion_order, pod_from_template, slow_start_batches


def claim(cluster: Cluster, owner: Obj, candidates: Sequence[Obj], selector: Mapping[str, Any] | None,
          kind: tuple[str, str], *, finalizers: Sequence[str] = ()) -> list[Obj]:
    """``ControllerRefManager.ClaimObject`` for each candidate: the ones ``owner`` now controls.

    Adoption and release are strategic-merge patches carrying the dependent's uid as a precondition,
    as ``ownerRefControllerPatch`` and ``GenerateDeleteOwnerRefStrategicMergeBytes`` write them; an
    adoption also adds ``finalizers`` (the Job controller's tracking finalizer,
    ``NewPodControllerRefManager(..., finalizers)``).
    """
    claimed: list[Obj] = []
    api_version, plural_kind = kind
    for obj in candidates:
        ref = controller_ref(obj)
        matches = selector is not None and not selector_is_empty(selector) and selector_matches(selector, labels(obj))
        ns, name, uid = str(meta(obj).get("namespace", "")), name_of(obj), meta(obj).get("uid")
        if ref is not None:
            if ref.get("uid") != meta(owner).get("uid"):
                continue  # someone else's
            if matches or deleting(owner):
                claimed.append(obj)
                continue
            try:
                cluster.patch(api_version, plural_kind, ns, name, {"metadata": {
                    "ownerReferences": [{"$patch": "delete", "uid": meta(owner).get("uid")}], "uid": uid}},
                    patch_type="strategic")
            except ClusterError as exc:
                if not (exc.not_found or exc.status == 422):
                    raise
            continue
        if deleting(owner) or not matches or deleting(obj):
            continue
        adoption: Obj = {"ownerReferences": [new_controller_ref(owner)], "uid": uid}
        if finalizers:
            adoption["finalizers"] = list(finalizers)
        try:
            adopted = cluster.patch(api_version, plural_kind, ns, name, {"metadata": adoption}, patch_type="strategic")
        except ClusterError as exc:
            if exc.not_found or exc.status == 422:
                continue  # gone, or its uid changed: nothing to adopt
            raise
        claimed.append(adopted)
    return claimed


@dataclass
class ReplicaSetController:
    name: str = "replicaset"
    api_version: str = "apps/v1"
    kind: str = "ReplicaSet"
    owns: Sequence[tuple[str, str]] = (("v1", "Pod"),)
    #: an orphan pod's events reach every ReplicaSet of its namespace (upstream: the ones whose
    #: selector matches it — a superset here, the sync decides)
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "Pod", "orphans"),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        rs = cluster.get(self.api_version, self.kind, namespace, name)
        if rs is None:
            return NO_REQUEUE
        selector = spec(rs).get("selector")
        selector = selector if isinstance(selector, Mapping) else None
        # upstream lists every pod of the namespace, but the claim acts only on these
        pods = [p for p in cluster.claimable("v1", "Pod", namespace, selector, [str(meta(rs).get("uid", ""))])
                if pod_active(p)]
        pods = claim(cluster, rs, pods, selector, ("v1", "Pod"))
        error = ""
        if not deleting(rs):
            error = self._manage(cluster, rs, pods, namespace)
        return self._update_status(cluster, rs, pods, error)

    # ------------------------------------------------------------------ manageReplicas
    def _manage(self, cluster: Cluster, rs: Obj, pods: list[Obj], namespace: str) -> str:
        want = int(spec(rs).get("replicas", 1) or 0)
        diff = len(pods) - want
        if diff < 0:
            template = spec(rs).get("template") or {}
            if not (template.get("metadata") or {}).get("labels"):
                return "unable to create pods, no labels"
            for batch in slow_start_batches(min(-diff, BURST_REPLICAS)):
                for _ in range(batch):
                    try:
                        cluster.create(pod_from_template(template, rs, namespace))
                    except ClusterError as exc:
                        if exc.reason == "Forbidden" and "being terminated" in exc.message:
                            return ""  # the namespace is going away: upstream drops the error
                        return exc.message  # a failed batch stops the rest (slowStartBatch)
            return ""
        if diff > 0:
            owner = controller_ref(rs)
            related = pods
            if owner is not None:  # pods of sibling ReplicaSets of the same Deployment rank "doubled up"
                related = [p for rs2 in cluster.list(self.api_version, self.kind, namespace)
                           if (controller_ref(rs2) or {}).get("uid") == owner.get("uid")
                           for p in cluster.list("v1", "Pod", namespace) if owned_by(p, rs2) and pod_active(p)]
            for victim in deletion_order(pods, related)[:min(diff, BURST_REPLICAS)]:
                try:
                    cluster.delete("v1", "Pod", namespace, name_of(victim))
                except ClusterError as exc:
                    if not exc.not_found:
                        return exc.message
        return ""

    # ------------------------------------------------------------------ calculateStatus
    def _update_status(self, cluster: Cluster, rs: Obj, pods: list[Obj], error: str) -> Outcome:
        template_labels = ((spec(rs).get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(spec(rs).get("minReadySeconds") or 0)
        fully = sum(1 for p in pods if all(labels(p).get(k) == v for k, v in template_labels.items()))
        ready = sum(1 for p in pods if pod_ready(p))
        available = sum(1 for p in pods if pod_available(p, min_ready, cluster.now() if min_ready > 0 else 0))
        old = status(rs)
        conditions = [dict(c) for c in old.get("conditions") or ()]
        failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
        want = int(spec(rs).get("replicas", 1) or 0)
        if error and failure is None:
            reason = "FailedCreate" if len(pods) < want else "FailedDelete"
            conditions = set_condition(conditions, "ReplicaFailure", "True", reason, error, cluster.stamp())
        elif not error and failure is not None:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        new = workload_status({"replicas": len(pods), "fullyLabeledReplicas": fully, "readyReplicas": ready,
                               "availableReplicas": available, "observedGeneration": meta(rs).get("generation")},
                              conditions)
        write_status(cluster, rs, new)
        if not error and min_ready > 0 and ready == want and available != want:
            return Outcome(requeue_after=float(min_ready), retry=True)
        return NO_REQUEUE


#: status fields that are ``omitempty`` integers in the Go types (a zero is not written)
_OMIT_ZERO = frozenset({"fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration",
                        "updatedReplicas", "unavailableReplicas", "collisionCount", "terminatingReplicas",
                        "numberAvailable", "numberUnavailable", "updatedNumberScheduled"})


def workload_status(fields: Mapping[str, Any], conditions: Sequence[Obj]) -> Obj:
    """A status as the Go types serialise it: zero ``omitempty`` counters and empty conditions left out."""
    out: Obj = {}
    for key, value in fields.items():
        if value is None or (key in _OMIT_ZERO and not value):
            continue
        out[key] = value
    if conditions:
        out["conditions"] = list(conditions)
    return out
