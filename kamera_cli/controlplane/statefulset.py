"""The StatefulSet controller (pkg/controller/statefulset/stateful_set_control.go, ``updateStatefulSet``).

One step is one sync of one StatefulSet: claim its pods, create each missing ordinal's claims
(``volumeClaimTemplates`` → ``<claim>-<set>-<ordinal>``) and pod (``<set>-<ordinal>``), replace
failed pods, delete condemned ordinals from the highest down, and roll pods whose revision is not
the update revision from the highest ordinal down to the partition. ``OrderedReady`` does one thing
at a time and waits for each pod to be Running and Ready; ``Parallel`` does not wait.

Revisions are ControllerRevision objects (``getStatefulSetRevisions``, ``truncateHistory``; see
``history.py``): ``<set>-<hash>``, numbered, the pods labelled with the revision's name, a pod
created below the partition built from the current revision's stored template, history beyond
``revisionHistoryLimit`` pruned. Simplified (docs/builtins.md): ``maxUnavailable`` and
``ordinals.start`` are honoured only as their defaults (1 and 0); claims are never deleted (the
default retention policy, Retain).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane import history as H
from kamera_cli.controlplane import rollout as R
from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    delete_quietly,
    deleting,
    labels,
    meta,
    name_of,
    owned_by,
    pod_available,
    pod_ready,
    spec,
    status,
    write_status,
)
from kamera_cli.controlplane.pods import pod_from_template
from kamera_cli.controlplane.replicaset import claim, workload_status

REVISION_LABEL = "controller-revision-hash"
POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"


def ordinal_of(set_name: str, pod: Mapping[str, Any]) -> int | None:
    """``getParentNameAndOrdinal``: the ordinal of ``<set>-<n>``, None for any other name."""
    name = name_of(pod)
    prefix, _, tail = name.rpartition("-")
    if prefix != set_name or not tail.isdigit():
        return None
    return int(tail)


def revision_name(sts: Mapping[str, Any]) -> str:
    """The name a new revision of the set's template gets: ``<set>-<hash>``, the collision count
    counted from 0 (never nil) and hashed in."""
    collisions = int(status(sts).get("collisionCount") or 0)
    return f"{name_of(sts)}-{H.revision_hash(H.template_patch(sts), collisions)}"


def running_and_ready(pod: Mapping[str, Any]) -> bool:
    return status(pod).get("phase") == "Running" and pod_ready(pod)


@dataclass
class StatefulSetController:
    name: str = "statefulset"
    api_version: str = "apps/v1"
    kind: str = "StatefulSet"
    owns: Sequence[tuple[str, str]] = (("v1", "Pod"),)
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("v1", "Pod", "namespace"),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        sts = cluster.get(self.api_version, self.kind, namespace, name)
        if sts is None:
            return NO_REQUEUE
        selector = spec(sts).get("selector")
        # isMemberOf: only pods named <set>-<ordinal> are candidates for claiming
        candidates = [p for p in cluster.list("v1", "Pod", namespace) if ordinal_of(name, p) is not None]
        pods = claim(cluster, sts, candidates, selector if isinstance(selector, Mapping) else None, ("v1", "Pod"))
        collisions = int(status(sts).get("collisionCount") or 0)
        if deleting(sts):  # nothing is created for a set being deleted; the status keeps its revisions
            update_rev = str(status(sts).get("updateRevision") or revision_name(sts))
            current_rev = str(status(sts).get("currentRevision") or update_rev)
            return self._status(cluster, sts, pods, current_rev, update_rev, collisions)
        revisions = H.owned_revisions(cluster, sts)
        current, update, collisions = self._revisions(cluster, sts, revisions, collisions)
        current_rev, update_rev = name_of(current), name_of(update)
        self._update(cluster, sts, pods, namespace, current, update)
        self._truncate_history(cluster, sts, pods, revisions, current_rev, update_rev)
        # the status counts the pods this sync created, as processReplica's status.Replicas++ does
        pods = [p for p in cluster.list("v1", "Pod", namespace)
                if ordinal_of(name, p) is not None and owned_by(p, sts)]
        return self._status(cluster, sts, pods, current_rev, update_rev, collisions)

    # ------------------------------------------------------------------ revisions
    @staticmethod
    def _revisions(cluster: Cluster, sts: Obj, revisions: list[Obj], collisions: int) -> tuple[Obj, Obj, int]:
        """``getStatefulSetRevisions``: the update revision is the newest one when it holds today's
        template, an older equal one renumbered to newest (a rollback), or a new one; the current
        revision is the one the status names (the update revision when there is none)."""
        candidate = H.new_revision(sts, H.next_revision(revisions), collisions)
        equal = [r for r in revisions if H.equal_revision(r, candidate)]
        if equal and H.equal_revision(revisions[-1], equal[-1]):
            update = revisions[-1]
        elif equal:
            update = H.renumber(cluster, equal[-1], int(candidate["revision"]))
        else:
            update, collisions = H.create_revision(cluster, sts, int(candidate["revision"]), collisions)
        named = status(sts).get("currentRevision")
        current = next((r for r in revisions if name_of(r) == named), update)
        return current, update, collisions

    @staticmethod
    def _truncate_history(cluster: Cluster, sts: Obj, pods: list[Obj], revisions: list[Obj], current: str,
                          update: str) -> None:
        """``truncateHistory``: revisions no pod, nor the current or update revision, uses are history;
        the oldest go until at most ``revisionHistoryLimit`` (default 10) remain."""
        live = {current, update} | {str(labels(p).get(REVISION_LABEL) or "") for p in pods}
        history = [r for r in revisions if name_of(r) not in live]
        limit = spec(sts).get("revisionHistoryLimit")
        keep = int(limit) if limit is not None else 10
        for rev in history[:max(0, len(history) - keep)]:
            H.delete_revision(cluster, rev)

    # ------------------------------------------------------------------ updateStatefulSet
    def _update(self, cluster: Cluster, sts: Obj, pods: list[Obj], namespace: str, current: Obj,
                update: Obj) -> None:
        update_rev = name_of(update)
        want = R.replicas(sts)
        ordered = (spec(sts).get("podManagementPolicy") or "OrderedReady") == "OrderedReady"
        by_ordinal = {ordinal_of(name_of(sts), p): p for p in pods}
        strategy = spec(sts).get("updateStrategy") or {}
        rolling = (strategy.get("type") or "RollingUpdate") == "RollingUpdate"
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0) if rolling else want
        current_replicas = int(status(sts).get("currentReplicas") or 0)
        for ordinal in range(want):
            pod = by_ordinal.get(ordinal)
            if pod is not None and status(pod).get("phase") == "Failed" and not deleting(pod):
                self._delete(cluster, pod)  # a failed pod is replaced
                if ordered:
                    return
                continue
            if pod is None:
                # newVersionedStatefulSetPod: below the partition (or, without one, below the current
                # replicas) a pod is built from the current revision, else from the update revision
                use_current = rolling and ordinal < (partition if strategy.get("rollingUpdate") else current_replicas)
                self._create(cluster, sts, ordinal, namespace, current if use_current else update)
                if ordered:
                    return
                continue
            if deleting(pod) and ordered:
                return
            if ordered and not running_and_ready(pod):
                return
        condemned = sorted((o for o in by_ordinal if o is not None and o >= want), reverse=True)
        for ordinal in condemned:
            pod = by_ordinal[ordinal]
            if deleting(pod):
                if ordered:
                    return
                continue
            if ordered and any(not running_and_ready(p) for o, p in by_ordinal.items()
                               if o is not None and o < ordinal):
                return  # OrderedReady scales down only with every predecessor Running and Ready
            self._delete(cluster, pod)
            if ordered:
                return
        if not rolling:
            return  # OnDelete: pods change revision only when someone deletes them
        for ordinal in range(want - 1, partition - 1, -1):
            pod = by_ordinal.get(ordinal)
            if pod is None:
                continue
            if labels(pod).get(REVISION_LABEL) != update_rev and not deleting(pod):
                self._delete(cluster, pod)
                return  # one at a time (maxUnavailable 1)
            if not running_and_ready(pod):
                return

    def _create(self, cluster: Cluster, sts: Obj, ordinal: int, namespace: str, revision: Obj) -> None:
        """``newStatefulSetPod`` from the revision's template (``ApplyRevision``), labelled with its name."""
        set_name = name_of(sts)
        pod_name = f"{set_name}-{ordinal}"
        template = H.applied_template(revision)
        revision_label = name_of(revision)
        tmeta = template.setdefault("metadata", {})
        tmeta["labels"] = {**(tmeta.get("labels") or {}), POD_NAME_LABEL: pod_name,
                           POD_INDEX_LABEL: str(ordinal), REVISION_LABEL: revision_label}
        pod_spec = template.setdefault("spec", {})
        pod_spec["hostname"] = pod_name
        if spec(sts).get("serviceName"):
            pod_spec["subdomain"] = spec(sts)["serviceName"]
        volumes = [v for v in pod_spec.get("volumes") or () if isinstance(v, Mapping)]
        for claim_template in spec(sts).get("volumeClaimTemplates") or ():
            claim_name = f"{name_of(claim_template)}-{set_name}-{ordinal}"
            self._ensure_claim(cluster, sts, claim_template, claim_name, namespace)
            volumes = [v for v in volumes if v.get("name") != name_of(claim_template)]
            volumes.append({"name": name_of(claim_template),
                            "persistentVolumeClaim": {"claimName": claim_name}})
        if volumes:
            pod_spec["volumes"] = volumes
        try:
            cluster.create(pod_from_template(template, sts, namespace, name=pod_name))
        except ClusterError as exc:
            if exc.status == 409 or (exc.reason == "Forbidden" and "being terminated" in exc.message):
                return
            raise

    @staticmethod
    def _ensure_claim(cluster: Cluster, sts: Obj, claim_template: Mapping[str, Any], claim_name: str,
                      namespace: str) -> None:
        """``getPersistentVolumeClaims``/``createPersistentVolumeClaims``: claim labels are the set's
        selector's matchLabels; with the default retention policy (Retain) the claim has no owner."""
        if cluster.get("v1", "PersistentVolumeClaim", namespace, claim_name) is not None:
            return
        body = copy.deepcopy(dict(claim_template))
        cmeta = dict(body.get("metadata") or {})
        cmeta["name"] = claim_name
        cmeta["namespace"] = namespace
        match = ((spec(sts).get("selector") or {}).get("matchLabels") or {})
        if match:
            cmeta["labels"] = {**(cmeta.get("labels") or {}), **match}
        body.update({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": cmeta})
        body.pop("status", None)
        try:
            cluster.create(body)
        except ClusterError as exc:
            if exc.status != 409:
                raise

    @staticmethod
    def _delete(cluster: Cluster, pod: Obj) -> None:
        delete_quietly(cluster, "v1", "Pod", pod)

    # ------------------------------------------------------------------ status
    def _status(self, cluster: Cluster, sts: Obj, pods: list[Obj], current_rev: str, update_rev: str,
                collisions: int) -> Outcome:
        live = [p for p in pods if not deleting(p)]
        min_ready = int(spec(sts).get("minReadySeconds") or 0)
        updated = sum(1 for p in live if labels(p).get(REVISION_LABEL) == update_rev)
        current = sum(1 for p in live if labels(p).get(REVISION_LABEL) == current_rev)
        want = R.replicas(sts)
        if updated == want and len(live) == want:
            current_rev, current = update_rev, updated  # the update is complete
        fields = {
            "observedGeneration": meta(sts).get("generation"),
            "replicas": len(live),
            "readyReplicas": sum(1 for p in live if pod_ready(p)),
            "currentReplicas": current,
            "updatedReplicas": updated,
            "availableReplicas": sum(1 for p in live if pod_available(p, min_ready,
                                                                     cluster.now() if min_ready else 0)),
        }
        new = workload_status(fields, list(status(sts).get("conditions") or ()))
        new.update({"currentRevision": current_rev, "updateRevision": update_rev, "collisionCount": collisions})
        write_status(cluster, sts, new)
        return NO_REQUEUE
