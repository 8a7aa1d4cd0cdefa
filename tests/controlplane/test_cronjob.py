"""``cronjob``: runs at schedule points on the virtual clock, per cronjob_controllerv2.go."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from kamera_cli.controlplane.cronjob import SCHEDULED_AT, CronJobController, schedule_times
from tests.controlplane.harness import EPOCH, Harness, pod_template


def _cronjob(schedule: str = "*/5 * * * *", **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "nightly", "namespace": "default"},
            "spec": {"schedule": schedule, "jobTemplate": {"metadata": {"labels": {"app": "report"}},
                                                           "spec": {"template": pod_template({}, "Never")}},
                     **spec}}


def _sync(h: Harness, runs: int = 2) -> Any:
    return CronJobController(runs=runs).reconcile(h.cluster, "default", "nightly", "")


def _finish(h: Harness, job_name: str, kind: str = "Complete") -> None:
    stored = h.get("batch/v1", "Job", job_name)
    assert stored is not None
    job = copy.deepcopy(stored)  # never edit what the server stores
    stamp = "2026-01-01T00:06:00Z"
    conditions = [{"type": kind, "status": "True", "lastProbeTime": stamp, "lastTransitionTime": stamp}]
    if kind == "Complete":
        conditions.insert(0, {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": stamp,
                              "lastTransitionTime": stamp})
    job["status"] = {"conditions": conditions, "startTime": "2026-01-01T00:05:00Z",
                     **({"completionTime": stamp} if kind == "Complete" else {})}
    h.server.update(job, subresource="status")


def test_descriptors_and_five_field_expressions() -> None:
    assert [t - EPOCH for t in _take(schedule_times("*/15 * * * *", EPOCH, _utc()), 2)] == [900, 1800]
    assert [t - EPOCH for t in _take(schedule_times("@hourly", EPOCH, _utc()), 1)] == [3600]
    with pytest.raises(ValueError):
        next(schedule_times("61 * * * *", EPOCH, _utc()))


def test_nothing_runs_before_the_first_schedule_point_and_the_next_sync_is_due_then() -> None:
    h = Harness()
    h.create(_cronjob())
    h.tick(60)
    outcome = _sync(h)
    assert h.of_kind("Job") == []
    assert outcome.retry and outcome.requeue_after == 240  # 00:05:00, the first point after creation


def test_a_due_run_creates_the_job_named_by_its_minute_and_records_it() -> None:
    h = Harness()
    cj = h.create(_cronjob())
    h.tick(301)
    outcome = _sync(h)
    (job,) = h.of_kind("Job")
    scheduled = EPOCH + 300
    assert job["metadata"]["name"] == f"nightly-{scheduled // 60}"
    assert job["metadata"]["labels"] == {"app": "report"}
    assert job["metadata"]["annotations"][SCHEDULED_AT] == "2026-01-01T00:05:00Z"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"], owner["controller"]) == ("CronJob", cj["metadata"]["uid"], True)
    status = h.get("batch/v1", "CronJob", "nightly")["status"]  # type: ignore[index]
    assert status["lastScheduleTime"] == "2026-01-01T00:05:00Z"
    assert [r["name"] for r in status["active"]] == [job["metadata"]["name"]]
    assert outcome.requeue_after == 299  # to 00:10:00


def test_a_finished_job_leaves_the_active_list_and_a_complete_one_sets_last_successful_time() -> None:
    h = Harness()
    h.create(_cronjob())
    h.tick(301)
    _sync(h)
    (job,) = h.of_kind("Job")
    _finish(h, job["metadata"]["name"])
    _sync(h)
    status = h.get("batch/v1", "CronJob", "nightly")["status"]  # type: ignore[index]
    assert "active" not in status and status["lastSuccessfulTime"] == "2026-01-01T00:06:00Z"


def test_forbid_skips_a_run_while_a_job_is_active_and_replace_deletes_it() -> None:
    for policy, expected in (("Forbid", 1), ("Replace", 1), ("Allow", 2)):
        h = Harness()
        h.create(_cronjob(concurrencyPolicy=policy))
        h.tick(301)
        _sync(h, runs=3)
        first = h.of_kind("Job")[0]["metadata"]["name"]
        h.tick(300)
        _sync(h, runs=3)
        names = sorted(j["metadata"]["name"] for j in h.of_kind("Job"))
        assert len(names) == expected, (policy, names)
        if policy == "Replace":
            assert first not in names


def test_suspended_and_past_the_starting_deadline_nothing_runs() -> None:
    h = Harness()
    h.create(_cronjob(suspend=True))
    h.tick(301)
    _sync(h)
    assert h.of_kind("Job") == []
    late = Harness()
    late.create(_cronjob(startingDeadlineSeconds=10))
    late.tick(330)  # the 00:05:00 point is 30 s past: more than the deadline
    _sync(late)
    assert late.of_kind("Job") == []


def test_the_explored_runs_are_bounded() -> None:
    h = Harness()
    h.create(_cronjob())
    h.tick(301)
    assert _sync(h, runs=1).requeue_after is None  # the one explored run is made: no next sync
    h.tick(600)
    _sync(h, runs=1)
    assert len(h.of_kind("Job")) == 1


def test_history_limits_delete_the_oldest_finished_jobs() -> None:
    h = Harness()
    h.create(_cronjob(successfulJobsHistoryLimit=1))
    for _ in range(2):
        h.tick(300)
        _sync(h, runs=5)
        for job in h.of_kind("Job"):
            if not job.get("status", {}).get("conditions"):
                _finish(h, job["metadata"]["name"])
    _sync(h, runs=5)
    assert [j["metadata"]["name"] for j in h.of_kind("Job")] == [f"nightly-{(EPOCH + 600) // 60}"]


def _utc() -> Any:
    import datetime

    return datetime.timezone.utc


def _take(it: Any, n: int) -> list[float]:
    return [next(it) for _ in range(n)]
