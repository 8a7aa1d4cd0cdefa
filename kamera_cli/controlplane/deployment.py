"""The Deployment controller (pkg/controller/deployment: ``syncDeployment`` and its rollouts).

One step is one sync of one Deployment: claim its ReplicaSets, then — as upstream decides, in this
order — a status-only sync while it is being deleted, a scaling sync when paused or when the
replica count changed, else a Recreate or RollingUpdate rollout step, each ending with the status
(counts and the Available / Progressing / ReplicaFailure conditions) written when it changed.
Rollbacks through the deprecated ``rollbackTo`` field are not modelled (apps/v1 has no such field).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane import rollout as R
from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    controller_ref,
    deleting,
    meta,
    name_of,
    new_controller_ref,
    owned_by,
    parse_time,
    selector_is_empty,
    spec,
    status,
)
from kamera_cli.controlplane.replicaset import claim, workload_status


@dataclass
class _Sync:
    """One sync's view: the Deployment (its status updated in place) and its claimed ReplicaSets."""

    cluster: Cluster
    d: Obj
    rss: list[Obj]
    namespace: str
    requeue: float | None = None


@dataclass
class DeploymentController:
    name: str = "deployment"
    api_version: str = "apps/v1"
    kind: str = "Deployment"
    owns: Sequence[tuple[str, str]] = (("apps/v1", "ReplicaSet"),)
    #: an orphan ReplicaSet's events reach every Deployment of its namespace (a superset of upstream's
    #: selector match); pod deletions matter to Recreate, which waits for old pods to go
    watches: Sequence[Watch] = field(default_factory=lambda: (Watch("apps/v1", "ReplicaSet", "orphans"),))

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        d = cluster.get(self.api_version, self.kind, namespace, name)
        if d is None:
            return NO_REQUEUE
        selector = spec(d).get("selector")
        if not isinstance(selector, Mapping) or selector_is_empty(selector):
            # "This deployment will select all pods": upstream refuses to act, but records the generation
            if int(status(d).get("observedGeneration") or 0) < int(meta(d).get("generation") or 0):
                d["status"] = {**status(d), "observedGeneration": meta(d).get("generation")}
                cluster.update(d, subresource="status")
            return NO_REQUEUE
        uid = str(meta(d).get("uid", ""))
        candidates = cluster.claimable(self.api_version, "ReplicaSet", namespace, selector, [uid])
        rss = claim(cluster, d, candidates, selector, (self.api_version, "ReplicaSet"))
        s = _Sync(cluster, d, rss, namespace)
        if deleting(d):
            self._sync_status(s, *self._new_and_old(s, create=False))
        elif spec(d).get("paused") or self._scaling_event(s):
            self._scale_sync(s)
        elif R.is_rolling(d):
            self._rolling(s)
        else:
            self._recreate(s)
        return Outcome(requeue_after=s.requeue, retry=True) if s.requeue is not None else NO_REQUEUE

    # ------------------------------------------------------------------ getAllReplicaSetsAndSyncRevision
    def _new_and_old(self, s: _Sync, *, create: bool) -> tuple[Obj | None, list[Obj]]:
        ordered = R.by_creation(s.rss)
        template = spec(s.d).get("template") or {}
        new = next((rs for rs in ordered if R.equal_ignore_hash(spec(rs).get("template") or {}, template)), None)
        old = [rs for rs in s.rss if new is None or name_of(rs) != name_of(new)]
        new_revision = str(max((R.revision(rs) for rs in old), default=0) + 1)
        if new is not None:
            return self._sync_existing_new(s, new, new_revision), old
        if not create:
            return None, old
        return self._create_new(s, old, template, new_revision), old

    def _sync_existing_new(self, s: _Sync, new: Obj, new_revision: str) -> Obj:
        rs = copy.deepcopy(new)
        changed = R.set_new_rs_annotations(s.d, rs, new_revision, True)
        min_ready = spec(s.d).get("minReadySeconds") or 0
        if changed or (spec(rs).get("minReadySeconds") or 0) != min_ready:
            rs["spec"]["minReadySeconds"] = min_ready
            return self._write_rs(s, rs)
        needs = self._set_revision(s.d, (meta(rs).get("annotations") or {}).get(R.REVISION, ""))
        conds = list(status(s.d).get("conditions") or ())
        if R.progress_deadline(s.d) is not None and R.condition(conds, "Progressing") is None:
            s.d["status"] = {**status(s.d), "conditions": R.set_deployment_condition(conds, R.new_condition(
                "Progressing", "True", "FoundNewReplicaSet", f'Found new replica set "{name_of(rs)}"',
                s.cluster.stamp()))}
            needs = True
        if needs:
            self._update_deployment_status(s)
        return rs

    def _create_new(self, s: _Sync, old: list[Obj], template: Mapping[str, Any], new_revision: str) -> Obj | None:
        d = s.d
        collisions = status(d).get("collisionCount")
        h = R.template_hash(template, collisions)
        new_template = copy.deepcopy(dict(template))
        new_template.setdefault("metadata", {}).setdefault("labels", {})[R.HASH_LABEL] = h
        selector = copy.deepcopy(dict(spec(d).get("selector") or {}))
        selector.setdefault("matchLabels", {})[R.HASH_LABEL] = h
        rs: Obj = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": f"{name_of(d)}-{h}", "namespace": s.namespace,
                                "ownerReferences": [new_controller_ref(d)],
                                "labels": dict(new_template["metadata"]["labels"])},
                   "spec": {"replicas": 0, "minReadySeconds": spec(d).get("minReadySeconds") or 0,
                            "selector": selector, "template": new_template}}
        rs["spec"]["replicas"] = self._new_rs_replicas(d, [*old, rs], rs)
        R.set_new_rs_annotations(d, rs, new_revision, False)
        try:
            created = s.cluster.create(rs)
        except ClusterError as exc:
            if exc.status == 409 and exc.reason == "AlreadyExists":
                found = s.cluster.get("apps/v1", "ReplicaSet", s.namespace, name_of(rs))
                if found is not None and owned_by(found, d) and R.equal_ignore_hash(
                        spec(found).get("template") or {}, template):
                    return found
                # a hash collision: bump the count so the next sync names the ReplicaSet differently
                d["status"] = {**status(d), "collisionCount": int(collisions or 0) + 1}
                self._update_deployment_status(s)
                return None
            if exc.reason == "Forbidden" and "being terminated" in exc.message:
                return None
            if R.progress_deadline(d) is not None:
                conds = list(status(d).get("conditions") or ())
                d["status"] = {**status(d), "conditions": R.set_deployment_condition(conds, R.new_condition(
                    "Progressing", "False", "ReplicaSetCreateError",
                    f'Failed to create new replica set "{name_of(rs)}": {exc.message}', s.cluster.stamp()))}
                self._update_deployment_status(s)
            return None
        s.rss.append(created)
        needs = self._set_revision(d, new_revision)
        if R.progress_deadline(d) is not None:
            conds = list(status(d).get("conditions") or ())
            d["status"] = {**status(d), "conditions": R.set_deployment_condition(conds, R.new_condition(
                "Progressing", "True", "NewReplicaSetCreated", f'Created new replica set "{name_of(created)}"',
                s.cluster.stamp()))}
            needs = True
        if needs:
            self._update_deployment_status(s)
        return created

    @staticmethod
    def _set_revision(d: Obj, rev: str) -> bool:
        notes = d.setdefault("metadata", {}).setdefault("annotations", {})
        if notes.get(R.REVISION) != rev:
            notes[R.REVISION] = rev
            return True
        return False

    @staticmethod
    def _new_rs_replicas(d: Mapping[str, Any], all_rss: Sequence[Obj], new: Obj) -> int:
        """``NewRSNewReplicas``."""
        if not R.is_rolling(d):
            return R.replicas(d)
        current = R.spec_replicas(all_rss)
        most = R.replicas(d) + R.max_surge(d)
        if current >= most:
            return R.replicas(new)
        return R.replicas(new) + min(most - current, R.replicas(d) - R.replicas(new))

    # ------------------------------------------------------------------ writes
    def _write_rs(self, s: _Sync, rs: Obj) -> Obj:
        updated = s.cluster.update(rs)
        s.rss = [updated if name_of(x) == name_of(rs) else x for x in s.rss]
        return updated

    def _scale(self, s: _Sync, rs: Obj, to: int) -> bool:
        """``scaleReplicaSet``: True when the size changed (annotations may change alone)."""
        size_changed = R.replicas(rs) != to
        copy_rs = copy.deepcopy(rs)
        notes_changed = R.set_replicas_annotations(copy_rs, R.replicas(s.d), R.replicas(s.d) + R.max_surge(s.d))
        if not (size_changed or notes_changed):
            return False
        copy_rs["spec"]["replicas"] = to
        self._write_rs(s, copy_rs)
        return size_changed

    def _update_deployment_status(self, s: _Sync) -> None:
        s.d = s.cluster.update(s.d, subresource="status")

    # ------------------------------------------------------------------ scaling (sync / scale)
    def _scaling_event(self, s: _Sync) -> bool:
        new, old = self._new_and_old(s, create=False)
        for rs in R.active([*old, *([new] if new else [])]):
            desired = R.annotation_int(rs, R.DESIRED_REPLICAS)
            if desired is not None and desired != R.replicas(s.d):
                return True
        return False

    def _scale_sync(self, s: _Sync) -> None:
        new, old = self._new_and_old(s, create=False)
        self._proportional_scale(s, new, old)
        if spec(s.d).get("paused"):
            self._cleanup(s, old)
        new, old = self._current(s, new, old)
        st = self._calculate_status(s, [*old, *([new] if new else [])], new)
        if st != dict(status(s.d)):
            s.d["status"] = st
            self._update_deployment_status(s)

    def _current(self, s: _Sync, new: Obj | None, old: list[Obj]) -> tuple[Obj | None, list[Obj]]:
        """The same ReplicaSets as written during this sync."""
        by_name = {name_of(rs): rs for rs in s.rss}
        return (by_name.get(name_of(new)) if new else None), [by_name.get(name_of(rs), rs) for rs in old]

    def _proportional_scale(self, s: _Sync, new: Obj | None, old: list[Obj]) -> None:
        d = s.d
        want = R.replicas(d)
        everyone = [*old, *([new] if new else [])]
        live = R.active(everyone)
        only = live[0] if len(live) == 1 else (new if not live and new is not None else
                                               (R.by_creation(old)[-1] if not live and old else None))
        if only is not None:
            if R.replicas(only) != want:
                self._scale(s, only, want)
            return
        if new is not None and R.replicas(new) == want and int(status(new).get("availableReplicas") or 0) == want:
            for rs in R.active(old):  # IsSaturated: the old ones go to zero
                self._scale(s, rs, 0)
            return
        if not R.is_rolling(d):
            return
        allowed = want + R.max_surge(d) if want > 0 else 0
        to_add = allowed - R.spec_replicas(live)
        if to_add > 0:  # ReplicaSetsBySizeNewer: larger first, newer first on ties
            live.sort(key=lambda rs: (-R.replicas(rs), -(parse_time(meta(rs).get("creationTimestamp")) or 0.0),
                                      name_of(rs)))
        elif to_add < 0:  # ReplicaSetsBySizeOlder: larger first, older first on ties
            live.sort(key=lambda rs: (-R.replicas(rs), parse_time(meta(rs).get("creationTimestamp")) or 0.0,
                                      name_of(rs)))
        sizes: dict[str, int] = {}
        added = 0
        for rs in live:
            share = self._proportion(d, rs, to_add, added) if to_add else 0
            sizes[name_of(rs)] = R.replicas(rs) + share
            added += share
        for i, rs in enumerate(live):
            if i == 0 and to_add:
                sizes[name_of(rs)] = max(0, sizes[name_of(rs)] + to_add - added)
            self._scale(s, rs, sizes[name_of(rs)])

    @staticmethod
    def _proportion(d: Mapping[str, Any], rs: Obj, to_add: int, added: int) -> int:
        """``GetProportion`` / ``getReplicaSetFraction``."""
        if R.replicas(rs) == 0 or to_add == 0 or to_add == added:
            return 0
        if R.replicas(d) == 0:
            fraction = -R.replicas(rs)
        else:
            total = R.replicas(d) + R.max_surge(d)
            annotated = R.annotation_int(rs, R.MAX_REPLICAS)
            if annotated is None:
                annotated = int(status(d).get("replicas") or 0)
            fraction = (round(R.replicas(rs) * total / annotated) if annotated else 0) - R.replicas(rs)
        allowed = to_add - added
        return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)

    # ------------------------------------------------------------------ rollouts
    def _rolling(self, s: _Sync) -> None:
        new, old = self._new_and_old(s, create=True)
        everyone = [*old, *([new] if new else [])]
        if new is not None and self._reconcile_new(s, everyone, new):
            self._sync_rollout_status(s, *self._current(s, new, old))
            return
        new, old = self._current(s, new, old)
        if self._reconcile_old(s, [*old, *([new] if new else [])], R.active(old), new):
            self._sync_rollout_status(s, *self._current(s, new, old))
            return
        new, old = self._current(s, new, old)
        if R.deployment_complete(s.d, status(s.d)):
            self._cleanup(s, old)
        self._sync_rollout_status(s, *self._current(s, new, old))

    def _reconcile_new(self, s: _Sync, everyone: list[Obj], new: Obj) -> bool:
        want = R.replicas(s.d)
        if R.replicas(new) == want:
            return False
        if R.replicas(new) > want:
            return self._scale(s, new, want)
        return self._scale(s, new, self._new_rs_replicas(s.d, everyone, new))

    def _reconcile_old(self, s: _Sync, everyone: list[Obj], old: list[Obj], new: Obj | None) -> bool:
        if R.spec_replicas(old) == 0:
            return False
        d = s.d
        min_available = R.replicas(d) - R.max_unavailable(d)
        new_unavailable = (R.replicas(new) - int(status(new).get("availableReplicas") or 0)) if new else 0
        most_down = R.spec_replicas(everyone) - min_available - new_unavailable
        if most_down <= 0:
            return False
        cleaned = 0
        for rs in R.by_creation(old):  # cleanupUnhealthyReplicas
            if cleaned >= most_down:
                break
            unhealthy = R.replicas(rs) - int(status(rs).get("availableReplicas") or 0)
            if R.replicas(rs) == 0 or unhealthy <= 0:
                continue
            down = min(most_down - cleaned, unhealthy)
            self._scale(s, rs, R.replicas(rs) - down)
            cleaned += down
        new, old_now = self._current(s, new, old)
        everyone = [*old_now, *([new] if new else [])]
        available = R.status_count(everyone, "availableReplicas")  # scaleDownOldReplicaSetsForRollingUpdate
        scaled = 0
        if available > min_available:
            budget = available - min_available
            for rs in R.by_creation(old_now):
                if scaled >= budget:
                    break
                if R.replicas(rs) == 0:
                    continue
                down = min(R.replicas(rs), budget - scaled)
                self._scale(s, rs, R.replicas(rs) - down)
                scaled += down
        return cleaned + scaled > 0

    def _recreate(self, s: _Sync) -> None:
        new, old = self._new_and_old(s, create=False)
        scaled = False
        for rs in R.active(old):
            scaled = self._scale(s, rs, 0) or scaled
        if scaled:
            self._sync_rollout_status(s, *self._current(s, new, old))
            return
        new, old = self._current(s, new, old)
        if self._old_pods_running(s, new, old):
            self._sync_rollout_status(s, new, old)
            return
        if new is None:
            new, old = self._new_and_old(s, create=True)
        if new is not None and R.replicas(new) != R.replicas(s.d):
            self._scale(s, new, R.replicas(s.d))
        new, old = self._current(s, new, old)
        if R.deployment_complete(s.d, status(s.d)):
            self._cleanup(s, old)
        self._sync_rollout_status(s, *self._current(s, new, old))

    def _old_pods_running(self, s: _Sync, new: Obj | None, old: list[Obj]) -> bool:
        """``oldPodsRunning``: old ReplicaSets still report pods, or a pod of theirs is not finished."""
        if R.status_count(old, "replicas") > 0:
            return True
        mine = {meta(rs).get("uid") for rs in s.rss} - ({meta(new).get("uid")} if new else set())
        for pod in s.cluster.claimable("v1", "Pod", s.namespace, None, sorted(str(uid) for uid in mine if uid)):
            ref = controller_ref(pod)
            if ref is not None and ref.get("uid") in mine and status(pod).get("phase") not in ("Failed", "Succeeded"):
                return True
        return False

    def _cleanup(self, s: _Sync, old: list[Obj]) -> None:
        """``cleanupDeployment``: delete the oldest empty ReplicaSets beyond revisionHistoryLimit."""
        limit = spec(s.d).get("revisionHistoryLimit")
        if limit is None:
            return
        alive = [rs for rs in old if not deleting(rs)]
        extra = len(alive) - int(limit)
        if extra <= 0:
            return
        for rs in sorted(alive, key=lambda rs: (R.revision(rs), name_of(rs)))[:extra]:
            if (int(status(rs).get("replicas") or 0) != 0 or R.replicas(rs) != 0
                    or int(meta(rs).get("generation") or 0) > int(status(rs).get("observedGeneration") or 0)):
                continue
            try:
                s.cluster.delete("apps/v1", "ReplicaSet", s.namespace, name_of(rs))
            except ClusterError as exc:
                if not exc.not_found:
                    raise

    # ------------------------------------------------------------------ status
    def _calculate_status(self, s: _Sync, everyone: list[Obj], new: Obj | None) -> Obj:
        d = s.d
        available = R.status_count(everyone, "availableReplicas")
        total = R.spec_replicas(everyone)
        fields = {
            "observedGeneration": meta(d).get("generation"),
            "replicas": R.status_count(everyone, "replicas"),
            "updatedReplicas": R.status_count([new], "replicas") if new else 0,
            "readyReplicas": R.status_count(everyone, "readyReplicas"),
            "availableReplicas": available,
            "unavailableReplicas": max(0, total - available),
            "collisionCount": status(d).get("collisionCount"),
        }
        conds = [dict(c) for c in status(d).get("conditions") or ()]
        if available >= R.replicas(d) - R.max_unavailable(d):
            cond = R.new_condition("Available", "True", "MinimumReplicasAvailable",
                                   "Deployment has minimum availability.", s.cluster.stamp())
        else:
            cond = R.new_condition("Available", "False", "MinimumReplicasUnavailable",
                                   "Deployment does not have minimum availability.", s.cluster.stamp())
        conds = R.set_deployment_condition(conds, cond)
        out = workload_status(fields, conds)
        if not out.get("replicas"):
            out.pop("replicas", None)  # omitempty in DeploymentStatus (unlike ReplicaSetStatus)
        return out

    def _sync_status(self, s: _Sync, new: Obj | None, old: list[Obj]) -> None:
        st = self._calculate_status(s, [*old, *([new] if new else [])], new)
        if st != dict(status(s.d)):
            s.d["status"] = st
            self._update_deployment_status(s)

    def _sync_rollout_status(self, s: _Sync, new: Obj | None, old: list[Obj]) -> None:
        d = s.d
        everyone = [*old, *([new] if new else [])]
        st = self._calculate_status(s, everyone, new)
        conds = list(st.get("conditions") or ())
        deadline = R.progress_deadline(d)
        if deadline is None:
            conds = [c for c in conds if c.get("type") != "Progressing"]
        current = R.condition(conds, "Progressing")
        complete_already = (int(st.get("replicas") or 0) == int(st.get("updatedReplicas") or 0)
                            and current is not None and current.get("reason") == "NewReplicaSetAvailable")
        what = f'ReplicaSet "{name_of(new)}"' if new else f'Deployment "{name_of(d)}"'
        stamp = s.cluster.stamp()
        if deadline is not None and not complete_already:
            if R.deployment_complete(d, st):
                conds = R.set_deployment_condition(conds, R.new_condition(
                    "Progressing", "True", "NewReplicaSetAvailable", f"{what} has successfully progressed.", stamp))
            elif R.deployment_progressing(d, st):
                cond = R.new_condition("Progressing", "True", "ReplicaSetUpdated", f"{what} is progressing.", stamp)
                if current is not None:
                    if current.get("status") == "True":
                        cond["lastTransitionTime"] = current.get("lastTransitionTime")
                    conds = [c for c in conds if c.get("type") != "Progressing"]
                conds = R.set_deployment_condition(conds, cond)
            elif self._timed_out(s, conds, deadline):
                conds = R.set_deployment_condition(conds, R.new_condition(
                    "Progressing", "False", "ProgressDeadlineExceeded", f"{what} has timed out progressing.", stamp))
        failure = None
        for rs in ([new] if new else []) + old:  # getReplicaFailures: the new one first
            found = R.condition(status(rs).get("conditions") or (), "ReplicaFailure")
            if found is not None:
                failure = {"type": "ReplicaFailure", "status": found.get("status"), "reason": found.get("reason"),
                           "message": found.get("message"), "lastUpdateTime": found.get("lastTransitionTime"),
                           "lastTransitionTime": found.get("lastTransitionTime")}
                break
        if failure is not None:
            conds = R.set_deployment_condition(conds, failure)
        else:
            conds = [c for c in conds if c.get("type") != "ReplicaFailure"]
        st = {**{k: v for k, v in st.items() if k != "conditions"}, **({"conditions": conds} if conds else {})}
        if st == dict(status(d)):
            self._requeue_stuck(s, st, deadline)
            return
        d["status"] = st
        self._update_deployment_status(s)

    def _timed_out(self, s: _Sync, conds: Sequence[Mapping[str, Any]], deadline: int) -> bool:
        """``DeploymentTimedOut``: the Progressing condition is older than the deadline (reads the clock)."""
        cond = R.condition(conds, "Progressing")
        if cond is None or cond.get("reason") == "NewReplicaSetAvailable":
            return False
        if cond.get("reason") == "ProgressDeadlineExceeded":
            return True
        since = parse_time(cond.get("lastUpdateTime"))
        return since is not None and since + deadline < s.cluster.now()

    def _requeue_stuck(self, s: _Sync, st: Mapping[str, Any], deadline: int | None) -> None:
        """``requeueStuckDeployment``: come back when the progress deadline would pass."""
        cond = R.condition(st.get("conditions") or (), "Progressing")
        if deadline is None or cond is None or cond.get("reason") == "ProgressDeadlineExceeded":
            return
        if R.deployment_complete(s.d, st):
            return
        since = parse_time(cond.get("lastUpdateTime"))
        if since is None:
            return
        s.requeue = max(1.0, since + deadline - s.cluster.now() + 1)
