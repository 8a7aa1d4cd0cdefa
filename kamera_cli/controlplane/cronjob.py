"""``cronjob``: Jobs from a CronJob's schedule, on the virtual clock.

Follows pkg/controller/cronjob/cronjob_controllerv2.go (``sync``, ``syncCronJob``,
``cleanupFinishedJobs``) and utils.go (``mostRecentScheduleTime``, ``getJobFromTemplate2``): the
active list is reconciled with the Jobs the CronJob controls (finished ones leave it, a Complete one
moves ``lastSuccessfulTime``, a missing one is dropped), finished Jobs beyond the history limits are
deleted oldest first, then — unless the CronJob is suspended or being deleted — the most recent
schedule time not yet run (after ``lastScheduleTime``, or the creation time, and within
``startingDeadlineSeconds``) gets a Job named ``<cronjob>-<scheduled minute since the epoch>``,
subject to ``concurrencyPolicy`` (Forbid skips while a Job is active, Replace deletes the active
ones first). The next sync is due at the next schedule time.

Why a bound: every run creates a Job under a new name, so a CronJob alone never lets the cluster
repeat a state. kamera explores the first ``runs`` scheduled runs of each CronJob (``spec.cluster
.cronJobRuns``, default 2) and then treats it as quiet; the count is derived from the CronJob itself
(schedule points from its creation to ``lastScheduleTime``), so no extra state is kept.
Cron syntax is read by ``cronsim`` (standard five fields; the ``@hourly``-style descriptors are
expanded here as robfig/cron's ``ParseStandard`` does).
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import (
    deleting,
    meta,
    name_of,
    new_controller_ref,
    owned_by,
    parse_time,
    rfc3339,
    spec,
    status,
    write_status,
)

SCHEDULED_AT = "batch.kubernetes.io/cronjob-scheduled-timestamp"
_DESCRIPTORS = {"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
                "@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *"}
_MAX_MISSED = 100  # upstream gives up listing missed start times beyond this many


def _zone(cronjob: Mapping[str, Any]) -> _dt.tzinfo | None:
    name = spec(cronjob).get("timeZone")
    if not name:
        return _dt.timezone.utc
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        return None


def schedule_times(expression: str, after: float, zone: _dt.tzinfo) -> Iterator[float]:
    """Schedule points strictly after ``after`` (seconds since the epoch), in order; ValueError when
    the expression does not parse."""
    from cronsim import CronSim, CronSimError

    text = _DESCRIPTORS.get(expression.strip(), expression.strip())
    start = _dt.datetime.fromtimestamp(after, zone).replace(microsecond=0)
    try:
        for moment in CronSim(text, start):
            yield moment.timestamp()
    except CronSimError as exc:
        raise ValueError(str(exc)) from exc


def _job_finished(job: Mapping[str, Any]) -> str:
    for c in status(job).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return str(c["type"])
    return ""


def _reference(job: Mapping[str, Any]) -> Obj:
    return {"apiVersion": "batch/v1", "kind": "Job", "namespace": meta(job).get("namespace"), "name": name_of(job),
            "uid": meta(job).get("uid"), "resourceVersion": meta(job).get("resourceVersion")}


@dataclass
class CronJobController:
    #: how many scheduled runs of each CronJob are explored (the state-space bound above)
    runs: int = 2
    name: str = "cronjob"
    api_version: str = "batch/v1"
    kind: str = "CronJob"
    owns: Sequence[tuple[str, str]] = (("batch/v1", "Job"),)
    watches: Sequence[Watch] = field(default_factory=tuple)

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        cronjob = cluster.get("batch/v1", "CronJob", namespace, name)
        if cronjob is None:
            return NO_REQUEUE
        jobs = sorted((j for j in cluster.list("batch/v1", "Job", namespace) if owned_by(j, cronjob)), key=name_of)
        new_status = dict(status(cronjob))
        active = [dict(r) for r in new_status.get("active") or ()]
        self._reconcile_active(cluster, new_status, active, jobs)
        self._clean_up(cluster, cronjob, jobs, active)
        outcome = NO_REQUEUE
        if not deleting(cronjob) and not spec(cronjob).get("suspend"):
            outcome = self._schedule(cluster, cronjob, new_status, active)
        if active:
            new_status["active"] = active
        else:
            new_status.pop("active", None)
        write_status(cluster, cronjob, new_status)
        return outcome

    # -- syncCronJob, first half: the active list against the Jobs -------------------------------------
    @staticmethod
    def _reconcile_active(cluster: Cluster, new_status: dict[str, Any], active: list[Obj], jobs: list[Obj]) -> None:
        uids = {meta(j).get("uid") for j in jobs}
        for job in jobs:
            ended = _job_finished(job)
            if not ended:
                continue  # an unfinished Job not in the list is only reported upstream (UnexpectedJob)
            active[:] = [r for r in active if r.get("uid") != meta(job).get("uid")]
            done = status(job).get("completionTime")
            last = new_status.get("lastSuccessfulTime")
            if ended == "Complete" and done and (last is None or (parse_time(done) or 0) > (parse_time(last) or 0)):
                new_status["lastSuccessfulTime"] = done
        for ref in list(active):
            if ref.get("uid") not in uids and cluster.get("batch/v1", "Job", str(ref.get("namespace") or ""),
                                                           str(ref.get("name") or "")) is None:
                active.remove(ref)  # MissingJob: the Job went away

    # -- cleanupFinishedJobs -----------------------------------------------------------------------------------
    @staticmethod
    def _clean_up(cluster: Cluster, cronjob: Mapping[str, Any], jobs: list[Obj], active: list[Obj]) -> None:
        for ended, limit_field in (("Complete", "successfulJobsHistoryLimit"), ("Failed", "failedJobsHistoryLimit")):
            limit = spec(cronjob).get(limit_field)
            if limit is None:
                continue
            finished = [j for j in jobs if _job_finished(j) == ended]
            # byJobStartTime: started ones first, by start time, names breaking ties
            finished.sort(key=lambda j: (status(j).get("startTime") is None,
                                         parse_time(status(j).get("startTime")) or 0, name_of(j)))
            for job in finished[:max(0, len(finished) - int(limit))]:
                try:
                    cluster.delete("batch/v1", "Job", str(meta(job).get("namespace") or ""), name_of(job))
                except ClusterError as exc:
                    if not exc.not_found:
                        raise
                active[:] = [r for r in active if r.get("uid") != meta(job).get("uid")]

    # -- syncCronJob, second half: the next run --------------------------------------------------------------
    def _schedule(self, cluster: Cluster, cronjob: Obj, new_status: dict[str, Any], active: list[Obj]) -> Outcome:
        zone = _zone(cronjob)
        if zone is None:
            return NO_REQUEUE  # UnknownTimeZone: not reconciled until the spec changes
        expression = str(spec(cronjob).get("schedule") or "")
        created = parse_time(meta(cronjob).get("creationTimestamp")) or 0.0
        last = parse_time(new_status.get("lastScheduleTime"))
        try:
            done = sum(1 for _ in self._points(expression, created, last, zone)) if last is not None else 0
        except ValueError:
            return NO_REQUEUE  # UnparseableSchedule: an event upstream, nothing scheduled
        if done >= self.runs:
            return NO_REQUEUE  # the explored runs are over (module doc)
        now = float(cluster.now())
        earliest = last if last is not None else created
        deadline = spec(cronjob).get("startingDeadlineSeconds")
        if deadline is not None:
            earliest = max(earliest, now - float(deadline))
        missed = list(self._points(expression, earliest, now, zone))[-_MAX_MISSED:]
        following = self._next(expression, now, zone)
        if not missed:
            return following
        scheduled = missed[-1]
        if deadline is not None and scheduled + float(deadline) < now:
            return following  # MissSchedule
        job_name = f"{name_of(cronjob)}-{int(scheduled) // 60}"
        if any(r.get("name") == job_name for r in active) or last == scheduled:
            return following
        policy = spec(cronjob).get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and active:
            return following  # JobAlreadyActive
        if policy == "Replace":
            for ref in list(active):
                try:
                    cluster.delete("batch/v1", "Job", str(ref.get("namespace") or ""), str(ref.get("name") or ""))
                except ClusterError as exc:
                    if not exc.not_found:
                        raise
                active.remove(ref)
        job = self._create(cluster, cronjob, job_name, scheduled, zone)
        if job is None:
            return NO_REQUEUE
        if not any(r.get("uid") == meta(job).get("uid") for r in active):
            active.append(_reference(job))
        new_status["lastScheduleTime"] = rfc3339(scheduled)
        return following if done + 1 < self.runs else NO_REQUEUE

    @staticmethod
    def _points(expression: str, after: float, until: float, zone: _dt.tzinfo) -> Iterator[float]:
        for moment in schedule_times(expression, after, zone):
            if moment > until:
                return
            yield moment

    @staticmethod
    def _next(expression: str, now: float, zone: _dt.tzinfo) -> Outcome:
        nxt = next(schedule_times(expression, now, zone), None)
        # the next run is work the cluster still has to do: it keeps the state from counting as converged
        return NO_REQUEUE if nxt is None else Outcome(requeue_after=max(1.0, nxt - now), retry=True)

    @staticmethod
    def _create(cluster: Cluster, cronjob: Obj, job_name: str, scheduled: float, zone: _dt.tzinfo) -> Obj | None:
        """``getJobFromTemplate2``: the template's labels and annotations, the scheduled-time annotation,
        the controller reference; an existing Job of that name counts only if this CronJob controls it."""
        template = spec(cronjob).get("jobTemplate") or {}
        template_meta = template.get("metadata") or {}
        annotations = dict(template_meta.get("annotations") or {})
        annotations[SCHEDULED_AT] = _dt.datetime.fromtimestamp(scheduled, zone).isoformat().replace("+00:00", "Z")
        body: Obj = {
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": job_name, "namespace": meta(cronjob).get("namespace"),
                         "labels": dict(template_meta.get("labels") or {}), "annotations": annotations,
                         "ownerReferences": [new_controller_ref(cronjob)]},
            "spec": dict(template.get("spec") or {}),
        }
        if not body["metadata"]["labels"]:
            del body["metadata"]["labels"]
        try:
            return cluster.create(body)
        except ClusterError as exc:
            if exc.status != 409:
                raise
        existing = cluster.get("batch/v1", "Job", str(meta(cronjob).get("namespace") or ""), job_name)
        return existing if existing is not None and owned_by(existing, cronjob) else None
