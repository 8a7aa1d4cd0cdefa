"""The Job controller (pkg/controller/job/job_controller.go, ``syncJob``), pod tracking with finalizers.

One step is one sync of one Job, in upstream's order: count what finished since the last sync (a
pod still carrying ``batch.kubernetes.io/job-tracking`` is not counted yet), decide whether the Job
is finished — an earlier ``SuccessCriteriaMet`` / ``FailureTarget``, a pod matching a ``FailJob``
rule of the ``podFailurePolicy``, failures beyond ``backoffLimit``, ``activeDeadlineSeconds`` passed
on the virtual clock, an Indexed Job's ``successPolicy`` or failed indexes (``backoffLimitPerIndex``)
— and if so delete what still runs;
otherwise ``manageJob``: delete everything when suspended, else keep ``min(parallelism, remaining)``
pods running (Indexed Jobs by lowest missing index), waiting out the failure backoff before
replacements. Then the counted pods lose their finalizer, the counters and interim conditions are
written, and ``Complete`` / ``Failed`` follow once no pod is left terminating. The rule books are in
``jobpolicy.py``; docs/builtins.md lists what is simplified.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane import jobpolicy as P
from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    delete_quietly,
    deleting,
    meta,
    name_of,
    owned_by,
    parse_time,
    pod_active,
    pod_ready,
    spec,
    status,
    write_status,
)
from kamera_cli.controlplane.pods import deletion_order, pod_from_template, slow_start_batches
from kamera_cli.controlplane.replicaset import claim

TRACKING = "batch.kubernetes.io/job-tracking"
INDEX = "batch.kubernetes.io/job-completion-index"
_DONE = ("CompletionsReached", "Reached expected number of succeeded pods")
_BACKOFF = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
_DEADLINE = ("DeadlineExceeded", "Job was active longer than specified deadline")


def finished(job: Mapping[str, Any]) -> bool:
    """``IsJobFinished``: Complete or Failed is True."""
    conds = list(status(job).get("conditions") or ())
    return P.true_condition(conds, "Complete") is not None or P.true_condition(conds, "Failed") is not None


def _index(pod: Mapping[str, Any]) -> int | None:
    value = (meta(pod).get("annotations") or {}).get(INDEX)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _tracked(pod: Mapping[str, Any]) -> bool:
    return TRACKING in (meta(pod).get("finalizers") or ())


@dataclass
class _Sync:
    """What one sync has worked out so far (upstream's ``syncJobCtx``)."""

    job: Obj
    pods: list[Obj]
    st: Obj
    conds: list[Obj]
    active: list[Obj]
    ready: int
    terminating: int
    succeeded: int
    failed: int
    indexes: set[int] = field(default_factory=set)
    #: backoffLimitPerIndex only: the failed indexes, and per pending index the failed pod kept until
    #: its replacement exists (``podsWithDelayedDeletionPerIndex``)
    failed_indexes: set[int] | None = None
    delayed: dict[int, Obj] = field(default_factory=dict)
    #: (type, reason, message) of the condition that ends the Job, once decided
    finish: tuple[str, str, str] | None = None
    #: seconds until the active deadline, and until the failure backoff lets a replacement start
    deadline_in: float | None = None
    backoff_in: float | None = None


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
        if finished(job):
            pods = [p for p in cluster.list("v1", "Pod", namespace) if owned_by(p, job)]
            # syncJob returns at once; the orphan worker (cleanupPodFinalizers) frees what is left
            for pod in pods:
                if _tracked(pod):
                    self._drop_finalizer(cluster, pod)
            return NO_REQUEUE
        # getPodsForJob: claim by selector; an adopted orphan gets the tracking finalizer too
        selector = spec(job).get("selector")
        pods = claim(cluster, job, cluster.list("v1", "Pod", namespace),
                     selector if isinstance(selector, Mapping) else None, ("v1", "Pod"), finalizers=(TRACKING,))
        s = self._start(cluster, job, pods)
        self._decide(cluster, s)
        if s.finish is not None:
            # deleteActivePods: the finalizers stay, so each deleted pod is counted below
            for pod in s.active:
                self._delete(cluster, pod)
                s.ready -= 1 if pod_ready(pod) else 0
                s.terminating += 1
            remaining: list[Obj] = []
        else:
            remaining = s.active
            managed = not deleting(job)
            if managed:
                remaining = self._manage(cluster, s)
            self._after_manage(cluster, s, remaining, managed)
        st = s.st
        st["active"] = len(remaining)
        st["ready"] = max(0, s.ready)
        st["terminating"] = s.terminating
        self._track(cluster, s)
        if s.conds:
            st["conditions"] = s.conds
        write_status(cluster, job, st)
        waits = [w for w in (s.deadline_in, s.backoff_in) if w is not None]
        if waits:
            # pending work on the virtual clock (a retry, never a resync): the Job is not done yet
            return Outcome(requeue_after=max(1.0, min(waits)), retry=True)
        return NO_REQUEUE

    # ------------------------------------------------------------------ counting
    def _start(self, cluster: Cluster, job: Obj, pods: list[Obj]) -> _Sync:
        spec_ = spec(job)
        st: Obj = dict(status(job))
        st.setdefault("uncountedTerminatedPods", {})
        active = [p for p in pods if pod_active(p)]
        tracked = [p for p in pods if _tracked(p) and self._valid_index(job, p)]
        new_ok = [p for p in tracked if status(p).get("phase") == "Succeeded"]
        new_failed = [p for p in tracked if P.pod_failed(p, job)]
        s = _Sync(job=job, pods=pods, st=st, conds=[dict(c) for c in st.get("conditions") or ()], active=active,
                  ready=sum(1 for p in active if pod_ready(p)),
                  # CountTerminatingPods: being deleted and not finished
                  terminating=sum(1 for p in pods if deleting(p) and status(p).get("phase") not in
                                  ("Succeeded", "Failed")),
                  succeeded=int(st.get("succeeded") or 0) + len(new_ok),
                  failed=int(st.get("failed") or 0) + sum(1 for p in new_failed
                                                          if P.match_pod_failure_policy(job, p)[1]))
        if not st.get("startTime") and not spec_.get("suspend"):
            st["startTime"] = cluster.stamp()
        return s

    def _decide(self, cluster: Cluster, s: _Sync) -> None:
        """The finished condition, in syncJob's order of precedence."""
        job, spec_ = s.job, spec(s.job)
        met = P.true_condition(s.conds, "SuccessCriteriaMet")
        if met is not None:
            s.finish = ("SuccessCriteriaMet", str(met.get("reason") or ""), str(met.get("message") or ""))
        else:
            target = P.true_condition(s.conds, "FailureTarget")
            if target is not None:
                s.finish = ("Failed", str(target.get("reason") or ""), str(target.get("message") or ""))
            elif (message := P.fail_job_message(job, s.pods)) is not None:
                s.finish = ("FailureTarget", "PodFailurePolicy", message)
        if s.finish is None:
            given = spec_.get("backoffLimit")
            limit = int(given) if given is not None else 6
            deadline = spec_.get("activeDeadlineSeconds")
            if s.failed > limit or self._past_backoff_limit_on_failure(s, limit):
                s.finish = ("FailureTarget", *_BACKOFF)
            elif deadline is not None and not spec_.get("suspend") and s.st.get("startTime"):
                # pastActiveDeadline, else a sync again when the deadline comes (a timer, not a resync)
                elapsed = cluster.now() - (parse_time(s.st.get("startTime")) or 0.0)
                if elapsed >= int(deadline):
                    s.finish = ("FailureTarget", *_DEADLINE)
                else:
                    s.deadline_in = int(deadline) - elapsed
        if spec_.get("completionMode") == "Indexed":
            completions = int(spec_.get("completions") or 0)
            s.indexes = P.parse_indexes(s.st.get("completedIndexes"), completions) | {
                i for p in s.pods if status(p).get("phase") == "Succeeded" and _tracked(p)
                and (i := _index(p)) is not None and 0 <= i < completions}
            s.succeeded = len(s.indexes)
            if spec_.get("backoffLimitPerIndex") is not None:
                self._failed_indexes(s, completions)
            if s.finish is None and (message := P.match_success_policy(job, s.indexes)) is not None:
                s.finish = ("SuccessCriteriaMet", "SuccessPolicy", message)

    def _failed_indexes(self, s: _Sync, completions: int) -> None:
        """``calculateFailedIndexes``, the two failure verdicts they lead to, and which failed pod of each
        pending index is kept (its finalizer stays) until a replacement carries its failure count."""
        job, spec_ = s.job, spec(s.job)
        tracked = [p for p in s.pods if _tracked(p) and self._valid_index(job, p)]
        s.failed_indexes = P.parse_indexes(s.st.get("failedIndexes"), completions) | {
            i for p in tracked if P.index_failed(job, p) and (i := _index(p)) is not None}
        most = spec_.get("maxFailedIndexes")
        if s.finish is None and most is not None and len(s.failed_indexes) > int(most):
            s.finish = ("FailureTarget", "MaxFailedIndexesExceeded",
                        "Job has exceeded the specified maximal number of failed indexes")
        elif s.finish is None and s.failed_indexes and len(s.failed_indexes) + len(s.indexes) >= completions:
            s.finish = ("FailureTarget", "FailedIndexes", "Job has failed indexes")
        busy = s.indexes | s.failed_indexes | {i for p in s.active if (i := _index(p)) is not None}
        for pod in tracked:
            index = _index(pod)
            if index is None or index in busy or not P.pod_failed(pod, job):
                continue
            last = s.delayed.get(index)
            if last is None or (P.absolute_failures(last) <= P.absolute_failures(pod)
                                and P.finish_time(pod) >= P.finish_time(last)):
                s.delayed[index] = pod

    @staticmethod
    def _past_backoff_limit_on_failure(s: _Sync, limit: int) -> bool:
        """``pastBackoffLimitOnFailure``: with restartPolicy OnFailure, container restarts of running and
        pending pods count against the limit (any restart when it is 0)."""
        template = spec(s.job).get("template") or {}
        if (template.get("spec") or {}).get("restartPolicy") != "OnFailure":
            return False
        restarts = sum(int(c.get("restartCount") or 0) for p in s.pods
                       if status(p).get("phase") in ("Running", "Pending")
                       for key in ("initContainerStatuses", "containerStatuses")
                       for c in status(p).get(key) or ())
        return restarts > 0 if limit == 0 else restarts >= limit

    @staticmethod
    def _valid_index(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
        if spec(job).get("completionMode") != "Indexed":
            return True
        index = _index(pod)
        return index is not None and 0 <= index < int(spec(job).get("completions") or 0)

    # ------------------------------------------------------------------ manageJob
    def _manage(self, cluster: Cluster, s: _Sync) -> list[Obj]:
        job, spec_ = s.job, spec(s.job)
        active = list(s.active)
        if spec_.get("suspend"):
            for pod in deletion_order(active, active):
                self._delete_job_pod(cluster, pod)
                s.ready -= 1 if pod_ready(pod) else 0
            return []
        completions = spec_.get("completions")
        parallelism = int(spec_.get("parallelism", 1) or 0)
        if completions is None:
            want = len(active) if s.succeeded > 0 else parallelism
        else:
            want = max(0, min(parallelism, int(completions) - s.succeeded))
        if len(active) > want:
            extra = deletion_order(active, active)[:len(active) - want]
            for pod in extra:
                self._delete_job_pod(cluster, pod)
                s.ready -= 1 if pod_ready(pod) else 0
            gone = {name_of(p) for p in extra}
            return [p for p in active if name_of(p) not in gone]
        terminating = s.terminating if spec_.get("podReplacementPolicy") == "Failed" else 0
        missing = want - terminating - len(active)
        if missing <= 0:
            return active
        per_index = s.failed_indexes is not None
        failures, last = P.failures_after_last_success(job, s.pods)
        if failures and not per_index:
            wait = P.backoff_remaining(failures, last, cluster.now())
            if wait > 0:
                s.backoff_in = wait  # enqueueSyncJobWithDelay: the replacement waits its turn
                return active
        indexes: list[int | None] = [None] * missing
        if spec_.get("completionMode") == "Indexed":
            # firstPendingIndexes: not succeeded, not failed, not running
            taken = s.indexes | (s.failed_indexes or set()) | {i for p in active if (i := _index(p)) is not None}
            indexes = list[int | None](i for i in range(int(completions or 0)) if i not in taken)[:missing]
        if per_index and any(i in s.delayed for i in indexes if i is not None):
            # getPodCreationInfoForIndependentIndexes: each index waits out its own backoff
            now = cluster.now()
            waits = {i: P.index_backoff_remaining(s.delayed.get(i), now) for i in indexes if i is not None}
            ready = [i for i in indexes if i is not None and waits[i] <= 0]
            if not ready:
                s.backoff_in = min(waits.values())
                return active
            indexes = list[int | None](ready)
        created = list(active)
        for batch in slow_start_batches(len(indexes)):
            for _ in range(batch):
                index = indexes.pop(0)
                try:
                    created.append(cluster.create(self._pod(job, index, s.delayed.get(index) if per_index and
                                                            index is not None else None, per_index)))
                except ClusterError as exc:
                    if exc.reason == "Forbidden" and "being terminated" in exc.message:
                        return created
                    raise
        return created

    @staticmethod
    def _after_manage(cluster: Cluster, s: _Sync, active: list[Obj], managed: bool) -> None:
        """After manageJob: Complete when enough succeeded; else, when manageJob ran, the Suspended
        condition (a resumed Job restarts its clock: ``startTime`` becomes now, so
        ``activeDeadlineSeconds`` counts from the resume)."""
        completions = spec(s.job).get("completions")
        complete = (s.succeeded > 0 and not active) if completions is None else \
            (s.succeeded >= int(completions) and not active)
        if complete:
            s.finish = ("SuccessCriteriaMet", *_DONE)
            return
        if not managed:
            return
        stamp = cluster.stamp()
        if spec(s.job).get("suspend"):
            P.ensure_condition(s.conds, "Suspended", "True", "JobSuspended", "Job suspended", stamp)
        elif P.ensure_condition(s.conds, "Suspended", "False", "JobResumed", "Job resumed", stamp):
            s.st["startTime"] = stamp
            deadline = spec(s.job).get("activeDeadlineSeconds")
            if deadline is not None:
                s.deadline_in = float(deadline)

    # ------------------------------------------------------------------ trackJobStatusAndRemoveFinalizers
    def _track(self, cluster: Cluster, s: _Sync) -> None:
        """Count every finished pod still carrying the finalizer and remove it; write the interim
        condition (FailureTarget / SuccessCriteriaMet), then the final one once nothing terminates."""
        job, st = s.job, s.st
        indexed = spec(job).get("completionMode") == "Indexed"
        failing = s.finish is not None and s.finish[0] in ("FailureTarget", "Failed")
        ok = bad = 0
        for pod in s.pods:
            if not _tracked(pod):
                continue  # counted by an earlier sync
            considered_failed = P.pod_failed(pod, job)
            if not (s.finish is not None or status(pod).get("phase") == "Succeeded" or considered_failed
                    or deleting(job)):
                continue  # canRemoveFinalizer: still running
            if s.finish is None and not deleting(job) and status(pod).get("phase") != "Succeeded" and \
                    any(kept is pod for kept in s.delayed.values()):
                continue  # kept until its replacement carries the index's failure count
            self._drop_finalizer(cluster, pod)
            if not self._valid_index(job, pod):
                continue
            if status(pod).get("phase") == "Succeeded":
                ok += 1
            elif (considered_failed or failing) and P.match_pod_failure_policy(job, pod)[1]:
                bad += 1  # when the Job fails, every pod that had not finished is a failure too
        if indexed:
            st["succeeded"] = len(s.indexes)
            if s.indexes or st.get("completedIndexes") is not None:
                st["completedIndexes"] = P.format_indexes(s.indexes)
        elif ok:
            st["succeeded"] = int(st.get("succeeded") or 0) + ok
        if bad:
            st["failed"] = int(st.get("failed") or 0) + bad
        if s.failed_indexes is not None:
            st["failedIndexes"] = P.format_indexes(s.failed_indexes)
        if s.finish is None:
            return
        kind, reason, message = s.finish
        stamp = cluster.stamp()
        if kind == "FailureTarget":
            s.conds.append(P.new_condition("FailureTarget", "True", reason, message, stamp))
            kind = "Failed"
        elif kind == "SuccessCriteriaMet":
            if P.true_condition(s.conds, "SuccessCriteriaMet") is None:
                s.conds.append(P.new_condition("SuccessCriteriaMet", "True", reason, message, stamp))
            kind = "Complete"
        if s.terminating > 0:
            return  # enactJobFinished waits until no pod is left terminating
        P.ensure_condition(s.conds, kind, "True", reason, message, stamp)
        if kind == "Complete":
            st["completionTime"] = stamp
        s.deadline_in = s.backoff_in = None  # a finished Job has nothing left to wait for

    # ------------------------------------------------------------------ pieces
    @staticmethod
    def _pod(job: Obj, index: int | None, replaced: Obj | None = None, per_index: bool = False) -> Obj:
        """The pod ``manageJob`` builds: the template, the Job's labels, the tracking finalizer, and for
        Indexed Jobs the completion index (annotation, label, ``JOB_COMPLETION_INDEX``, hostname
        ``<job>-<index>``, generateName ``<job>-<index>-``)."""
        template = dict(spec(job).get("template") or {})
        tmeta = dict(template.get("metadata") or {})
        uid = str(meta(job).get("uid", ""))
        labels = {**(tmeta.get("labels") or {}), "batch.kubernetes.io/controller-uid": uid,
                  "batch.kubernetes.io/job-name": name_of(job), "controller-uid": uid, "job-name": name_of(job)}
        tmeta["labels"] = labels
        finalizers = list(tmeta.get("finalizers") or ())
        tmeta["finalizers"] = finalizers if TRACKING in finalizers else [*finalizers, TRACKING]
        prefix = f"{name_of(job)}-"
        if index is not None:
            tmeta["annotations"] = {**(tmeta.get("annotations") or {}), INDEX: str(index)}
            labels[INDEX] = str(index)
            prefix = f"{name_of(job)}-{index}-"
            if per_index:  # addIndexFailureCountAnnotation
                failures, ignored = P.replacement_counts(job, replaced)
                tmeta["annotations"][P.FAILURE_COUNT] = str(failures)
                if ignored:
                    tmeta["annotations"][P.IGNORED_COUNT] = str(ignored)
            pod_spec = dict(template.get("spec") or {})
            pod_spec["hostname"] = f"{name_of(job)}-{index}"
            env = {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": f"metadata.labels['{INDEX}']"}}}  # the label, since PodIndexLabel (GA in 1.32)
            pod_spec["containers"] = [  # addCompletionIndexEnvVariables
                {**c, "env": [*(c.get("env") or ()), env]}
                if not any(e.get("name") == "JOB_COMPLETION_INDEX" for e in c.get("env") or ()) else c
                for c in pod_spec.get("containers") or () if isinstance(c, Mapping)]
            template["spec"] = pod_spec
        template["metadata"] = tmeta
        return pod_from_template(template, job, str(meta(job).get("namespace", "")), generate_name=prefix)

    @staticmethod
    def _drop_finalizer(cluster: Cluster, pod: Obj) -> None:
        finalizers = [f for f in meta(pod).get("finalizers") or () if f != TRACKING]
        try:
            cluster.patch("v1", "Pod", str(meta(pod).get("namespace", "")), name_of(pod),
                          {"metadata": {"finalizers": finalizers or None}})
        except ClusterError as exc:
            if not exc.not_found:
                raise

    def _delete_job_pod(self, cluster: Cluster, pod: Obj) -> None:
        """``deleteJobPods``: the finalizer goes first, so a pod removed for a scale-down or a
        suspension is never counted as failed."""
        if _tracked(pod):
            self._drop_finalizer(cluster, pod)
        self._delete(cluster, pod)

    @staticmethod
    def _delete(cluster: Cluster, pod: Obj) -> None:
        delete_quietly(cluster, "v1", "Pod", pod)
