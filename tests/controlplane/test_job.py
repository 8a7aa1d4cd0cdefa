"""The Job controller: pod labels and the tracking finalizer, counting, terminal conditions, Indexed."""

from __future__ import annotations

from kamera_cli.controlplane import Kubelet
from kamera_cli.controlplane.job import INDEX, TRACKING, JobController
from kamera_cli.controlplane.jobpolicy import format_indexes as _ranges
from kamera_cli.controlplane.jobpolicy import parse_indexes as _parse_ranges
from tests.controlplane.harness import Harness, pod_template


def _job(**spec: object) -> dict:
    body = {"template": pod_template({"app": "batch"}, restart="Never"), **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "crunch", "namespace": "default"},
            "spec": body}


def _conditions(h: Harness) -> list[tuple[str, str]]:
    job = h.get("batch/v1", "Job", "crunch")
    assert job is not None
    return [(c["type"], c["reason"]) for c in job["status"].get("conditions") or ()]


def _run_pods(h: Harness, outcome: str) -> None:
    for p in h.pods():
        Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], outcome)


def test_pods_carry_the_job_labels_and_the_tracking_finalizer() -> None:
    h = Harness()
    job = h.create(_job(completions=3, parallelism=2))
    JobController().reconcile(h.cluster, "default", "crunch", "")
    pods = h.pods()
    assert len(pods) == 2  # min(parallelism, completions - succeeded)
    uid = job["metadata"]["uid"]
    for p in pods:
        assert p["metadata"]["generateName"] == "crunch-"
        assert TRACKING in p["metadata"]["finalizers"]
        labels = p["metadata"]["labels"]
        assert labels["batch.kubernetes.io/job-name"] == "crunch" and labels["job-name"] == "crunch"
        assert labels["batch.kubernetes.io/controller-uid"] == uid and labels["controller-uid"] == uid
    status = h.get("batch/v1", "Job", "crunch")["status"]  # type: ignore[index]
    assert status["active"] == 2 and status["ready"] == 0 and "startTime" in status


def test_success_counts_removes_the_finalizer_then_completes() -> None:
    h = Harness()
    h.create(_job(completions=1))
    JobController().reconcile(h.cluster, "default", "crunch", "")
    _run_pods(h, "succeeded")
    JobController().reconcile(h.cluster, "default", "crunch", "")
    [p] = h.pods()
    assert TRACKING not in (p["metadata"].get("finalizers") or [])
    job = h.get("batch/v1", "Job", "crunch")
    # JobStatus.Active is an omitempty int32: the server does not write it at 0
    assert job is not None and job["status"]["succeeded"] == 1 and "active" not in job["status"]
    assert _conditions(h) == [("SuccessCriteriaMet", "CompletionsReached"), ("Complete", "CompletionsReached")]
    assert "completionTime" in job["status"]


def test_failures_beyond_the_backoff_limit_fail_the_job() -> None:
    h = Harness()
    h.create(_job(completions=1, backoffLimit=1))
    for _ in range(2):
        JobController().reconcile(h.cluster, "default", "crunch", "")
        _run_pods(h, "failed")
        h.tick(600)  # past the failure backoff (tests/controlplane/test_job_policies.py pins it)
    JobController().reconcile(h.cluster, "default", "crunch", "")
    job = h.get("batch/v1", "Job", "crunch")
    assert job is not None and job["status"]["failed"] == 2
    assert _conditions(h) == [("FailureTarget", "BackoffLimitExceeded"), ("Failed", "BackoffLimitExceeded")]
    JobController().reconcile(h.cluster, "default", "crunch", "")  # finished: nothing new is created
    assert len(h.pods()) == 2


def test_indexed_jobs_name_pods_by_index_and_report_completed_indexes() -> None:
    h = Harness()
    h.create(_job(completions=3, parallelism=3, completionMode="Indexed"))
    JobController().reconcile(h.cluster, "default", "crunch", "")
    pods = sorted(h.pods(), key=lambda p: p["metadata"]["annotations"][INDEX])
    assert [p["metadata"]["annotations"][INDEX] for p in pods] == ["0", "1", "2"]
    assert [p["metadata"]["generateName"] for p in pods] == ["crunch-0-", "crunch-1-", "crunch-2-"]
    assert all(p["metadata"]["labels"][INDEX] == p["metadata"]["annotations"][INDEX] for p in pods)
    _run_pods(h, "succeeded")
    JobController().reconcile(h.cluster, "default", "crunch", "")
    job = h.get("batch/v1", "Job", "crunch")
    assert job is not None and job["status"]["completedIndexes"] == "0-2"
    assert ("Complete", "CompletionsReached") in _conditions(h)


def test_completed_indexes_spelling() -> None:
    assert _ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7,8"  # two neighbours are not a range upstream
    assert _parse_ranges("0-2,5,7-8") == {0, 1, 2, 5, 7, 8}
    assert _ranges([]) == ""
