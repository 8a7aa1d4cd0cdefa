"""The Job controller (pkg/controller/job/job_controller.go, ``syncJob``), pod tracking with finalizers.

One step is one sync of one Job: count the pods that finished since the last sync (removing their
``batch.kubernetes.io/job-tracking`` finalizer, which is what marks them counted), decide success
or failure (``SuccessCriteriaMet`` / ``FailureTarget`` first, ``Complete`` / ``Failed`` once no pod
is left running, as releases since 1.31 write them), else create or delete pods to keep
``min(parallelism, remaining)`` running (Indexed Jobs by lowest missing index). What is not
modelled: the failure backoff delay before replacements, ``activeDeadlineSeconds``,
``podFailurePolicy``, ``successPolicy``, ``suspend`` and ``podReplacementPolicy`` (see docs/builtins.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    delete_quietly,
    deleting,
    meta,
    name_of,
    owned_by,
    pod_ready,
    spec,
    status,
    write_status,
)
from kamera_cli.controlplane.pods import deletion_order, pod_from_template, slow_start_batches

TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
_DONE_REASON = ("CompletionsReached", "Reached expected number of succeeded pods")
_FAILED_REASON = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")


def _condition(job: Mapping[str, Any], kind: str) -> bool:
    return any(c.get("type") == kind and c.get("status") == "True" for c in status(job).get("conditions") or ())


def finished(job: Mapping[str, Any]) -> bool:
    return _condition(job, "Complete") or _condition(job, "Failed")


def _index(pod: Mapping[str, Any]) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _ranges(indexes: Sequence[int]) -> str:
    """``completedIndexes`` as the API spells it: ``0-2,5``."""
    out: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        out.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


def _parse_ranges(text: str) -> set[int]:
    out: set[int] = set()
    for part in filter(None, (text or "").split(",")):
        lo, _, hi = part.partition("-")
        try:
            out.update(range(int(lo), int(hi or lo) + 1))
        except ValueError:
            continue
    return out


@dataclass
class JobController:
    name: str = "job"
    api_version: str = "batch/v1"
    kind: str = "Job"
    owns: Sequence[tuple[str, str]] = (("v1", "Pod"),)
    watches: Sequence[Watch] = field(default_factory=tuple)

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        job = cluster.get(self.api_version, self.kind, namespace, name)
        if job is None:
            return NO_REQUEUE
        pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, job)]
        st: Obj = {k: v for k, v in status(job).items()}
        counted_ok, _counted_failed = self._count_finished(cluster, pods, st)
        if finished(job):
            return self._write(cluster, job, st)
        spec_ = spec(job)
        indexed = spec_.get("completionMode") == "Indexed"
        completions = spec_.get("completions")
        parallelism = int(spec_.get("parallelism", 1) or 0)
        active = [p for p in pods if status(p).get("phase") not in ("Succeeded", "Failed") and not deleting(p)]
        terminating = [p for p in pods if deleting(p) and status(p).get("phase") not in ("Succeeded", "Failed")]
        succeeded = int(st.get("succeeded") or 0)
        failed = int(st.get("failed") or 0)
        restarts = sum(int(c.get("restartCount") or 0) for p in active
                       for c in status(p).get("containerStatuses") or ())
        done_indexes = _parse_ranges(str(st.get("completedIndexes") or ""))
        if indexed:
            done_indexes |= {i for p in counted_ok if (i := _index(p)) is not None}
            if done_indexes:
                st["completedIndexes"] = _ranges(sorted(done_indexes))
        st.setdefault("startTime", cluster.stamp())
        conds = [dict(c) for c in st.get("conditions") or ()]
        limit = int(spec_.get("backoffLimit", 6) if spec_.get("backoffLimit") is not None else 6)
        target_failed = any(c.get("type") == "FailureTarget" and c.get("status") == "True" for c in conds)
        target_met = any(c.get("type") == "SuccessCriteriaMet" and c.get("status") == "True" for c in conds)
        if not target_failed and not target_met and (failed + restarts > limit):
            conds.append(self._cond("FailureTarget", *_FAILED_REASON, cluster.stamp()))
            target_failed = True
        complete = (len(done_indexes) >= int(completions) if indexed and completions is not None
                    else succeeded >= int(completions) if completions is not None
                    else succeeded > 0 and not active)
        if not target_failed and not target_met and complete:
            conds.append(self._cond("SuccessCriteriaMet", *_DONE_REASON, cluster.stamp()))
            target_met = True
        if target_failed or target_met:
            for pod in active:  # a finished Job stops what still runs
                self._delete(cluster, pod)
            active = []
            if not terminating:
                if target_failed:
                    conds.append(self._cond("Failed", *_FAILED_REASON, cluster.stamp()))
                else:
                    conds.append(self._cond("Complete", *_DONE_REASON, cluster.stamp()))
                    st["completionTime"] = cluster.stamp()
        else:
            active = self._manage(cluster, job, active, succeeded, done_indexes, parallelism, completions, indexed)
        st["active"] = len(active)
        st["ready"] = sum(1 for p in active if pod_ready(p))
        st["terminating"] = len(terminating)
        if conds:
            st["conditions"] = conds
        return self._write(cluster, job, st)

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _cond(kind: str, reason: str, message: str, stamp: str) -> Obj:
        return {"type": kind, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp,
                "reason": reason, "message": message}

    def _count_finished(self, cluster: Cluster, pods: list[Obj], st: Obj) -> tuple[list[Obj], list[Obj]]:
        """Finished pods still carrying the tracking finalizer are counted now, and the finalizer removed."""
        ok: list[Obj] = []
        bad: list[Obj] = []
        for pod in pods:
            phase = status(pod).get("phase")
            # a pod being deleted counts as finished too (as failed unless it succeeded first)
            if (phase not in ("Succeeded", "Failed") and not deleting(pod)) or \
                    TRACKING not in (meta(pod).get("finalizers") or ()):
                continue
            finalizers = [f for f in meta(pod).get("finalizers") or () if f != TRACKING]
            try:
                cluster.patch("v1", "Pod", str(meta(pod).get("namespace", "")), name_of(pod),
                              {"metadata": {"finalizers": finalizers or None}})
            except ClusterError as exc:
                if not exc.not_found:
                    raise
            (ok if phase == "Succeeded" else bad).append(pod)
        if ok:
            st["succeeded"] = int(st.get("succeeded") or 0) + len(ok)
        if bad:
            st["failed"] = int(st.get("failed") or 0) + len(bad)
        st.setdefault("uncountedTerminatedPods", {})
        return ok, bad

    def _manage(self, cluster: Cluster, job: Obj, active: list[Obj], succeeded: int, done: set[int],
                parallelism: int, completions: Any, indexed: bool) -> list[Obj]:
        if completions is None:
            want = len(active) if succeeded > 0 else parallelism
        else:
            remaining = int(completions) - (len(done) if indexed else succeeded)
            want = max(0, min(parallelism, remaining))
        if len(active) > want:
            extra = deletion_order(active, active)[:len(active) - want]
            for pod in extra:
                self._delete(cluster, pod)
            gone = {name_of(p) for p in extra}
            return [p for p in active if name_of(p) not in gone]
        missing = want - len(active)
        if missing <= 0:
            return active
        indexes: list[int | None] = [None] * missing
        if indexed:
            taken = done | {i for p in active if (i := _index(p)) is not None}
            free = [i for i in range(int(completions or 0)) if i not in taken]
            indexes = list(free[:missing])
        created = list(active)
        queue = list(indexes)
        for batch in slow_start_batches(len(queue)):
            for _ in range(batch):
                index = queue.pop(0)
                try:
                    created.append(cluster.create(self._pod(job, index)))
                except ClusterError as exc:
                    if exc.reason == "Forbidden" and "being terminated" in exc.message:
                        return created
                    raise
        return created

    @staticmethod
    def _pod(job: Obj, index: int | None) -> Obj:
        """The pod ``newPod`` builds: the template, the Job's labels, the tracking finalizer, and for
        Indexed Jobs the completion index (annotation, label, ``<job>-<index>-`` prefix)."""
        template = dict(spec(job).get("template") or {})
        tmeta = dict(template.get("metadata") or {})
        uid = str(meta(job).get("uid", ""))
        labels = {**(tmeta.get("labels") or {}), "batch.kubernetes.io/controller-uid": uid,
                  "batch.kubernetes.io/job-name": name_of(job), "controller-uid": uid, "job-name": name_of(job)}
        tmeta["labels"] = labels
        tmeta["finalizers"] = [*(tmeta.get("finalizers") or ()), TRACKING]
        prefix = f"{name_of(job)}-"
        if index is not None:
            tmeta["annotations"] = {**(tmeta.get("annotations") or {}), INDEX: str(index)}
            labels[INDEX] = str(index)
            prefix = f"{name_of(job)}-{index}-"
        template["metadata"] = tmeta
        return pod_from_template(template, job, str(meta(job).get("namespace", "")), generate_name=prefix)

    @staticmethod
    def _delete(cluster: Cluster, pod: Obj) -> None:
        delete_quietly(cluster, "v1", "Pod", pod)

    @staticmethod
    def _write(cluster: Cluster, job: Obj, st: Obj) -> Outcome:
        write_status(cluster, job, st)
        return NO_REQUEUE
