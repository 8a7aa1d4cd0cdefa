"""The Job controller's timing and policies: failure backoff, activeDeadlineSeconds, suspend,
podFailurePolicy and successPolicy (job_controller.go, backoff_utils.go, pod_failure_policy.go,
success_policy.go)."""

from __future__ import annotations

from typing import Any

from kamera_cli.controlplane import Kubelet, Outcome, PodRule
from kamera_cli.controlplane.job import INDEX, TRACKING, JobController
from kamera_cli.controlplane.jobpolicy import FAILURE_COUNT, backoff_remaining, match_success_policy
from tests.controlplane.harness import Harness, pod_template


def _job(**spec: Any) -> dict[str, Any]:
    body = {"template": pod_template({"app": "batch"}, restart="Never"), **spec}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "crunch", "namespace": "default"},
            "spec": body}


def _sync(h: Harness) -> Outcome:
    return JobController().reconcile(h.cluster, "default", "crunch", "")


def _status(h: Harness) -> dict[str, Any]:
    job = h.get("batch/v1", "Job", "crunch")
    assert job is not None
    return dict(job.get("status") or {})


def _conditions(h: Harness) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c.get("reason", ""), c.get("message", ""))
            for c in _status(h).get("conditions") or ()]


def _start(h: Harness, outcome: str) -> None:
    for p in h.pods():
        Kubelet().reconcile(h.cluster, "default", p["metadata"]["name"], outcome)


def _live(h: Harness) -> list[dict[str, Any]]:
    return [p for p in h.pods() if p["status"].get("phase") not in ("Succeeded", "Failed")]


# --------------------------------------------------------------------------- failure backoff
def test_backoff_doubles_from_ten_seconds_and_is_capped_at_ten_minutes() -> None:
    assert [backoff_remaining(n, 0, 0) for n in (0, 1, 2, 3, 4, 6, 7, 20)] == [0, 10, 20, 40, 80, 320, 600, 600]
    assert backoff_remaining(2, 100, 115) == 5  # 20 s after the last failure, 15 of them passed
    assert backoff_remaining(1, 100, 111) == 0


def test_a_replacement_waits_for_the_backoff_on_the_virtual_clock() -> None:
    h = Harness()
    h.create(_job(completions=1, backoffLimit=6))
    assert _sync(h) == Outcome()
    _start(h, "failed")
    out = _sync(h)
    assert out == Outcome(requeue_after=10, retry=True)  # a pending retry: the Job is not done
    assert _status(h)["failed"] == 1 and not _live(h)
    [failed] = h.pods()
    assert TRACKING not in (failed["metadata"].get("finalizers") or [])  # counted at once
    h.tick(4)
    assert _sync(h) == Outcome(requeue_after=6, retry=True) and not _live(h)
    h.tick(6)
    assert _sync(h) == Outcome() and len(_live(h)) == 1
    _start(h, "failed")
    assert _sync(h) == Outcome(requeue_after=20, retry=True)  # the second failure in a row doubles it
    h.tick(20)
    _sync(h)
    _start(h, "succeeded")
    _sync(h)
    assert _status(h)["succeeded"] == 1 and _status(h)["failed"] == 2
    assert [c[0] for c in _conditions(h)] == ["SuccessCriteriaMet", "Complete"]


# --------------------------------------------------------------------------- activeDeadlineSeconds
def test_the_active_deadline_is_a_timer_then_fails_the_job_and_stops_its_pods() -> None:
    h = Harness()
    h.create(_job(completions=1, activeDeadlineSeconds=30))
    assert _sync(h) == Outcome(requeue_after=30, retry=True)
    _start(h, "ready")
    h.tick(12)
    assert _sync(h) == Outcome(requeue_after=18, retry=True)
    h.tick(18)
    assert _sync(h) == Outcome()
    reason = ("DeadlineExceeded", "Job was active longer than specified deadline")
    assert _conditions(h) == [("FailureTarget", "True", *reason)]  # Failed waits for the pod to go
    # JobStatus.active is an omitempty int32: the server does not write it at 0
    assert h.pods() == [] and _status(h)["failed"] == 1 and "active" not in _status(h)
    assert _status(h)["terminating"] == 1
    _sync(h)
    assert _conditions(h) == [("FailureTarget", "True", *reason), ("Failed", "True", *reason)]
    assert _status(h)["terminating"] == 0 and "completionTime" not in _status(h)


# --------------------------------------------------------------------------- suspend
def test_a_suspended_job_runs_nothing_and_its_clock_starts_on_resume() -> None:
    h = Harness()
    h.create(_job(completions=2, parallelism=2, suspend=True, activeDeadlineSeconds=100))
    assert _sync(h) == Outcome()  # no deadline timer while suspended
    assert h.pods() == [] and "startTime" not in _status(h)
    assert _conditions(h) == [("Suspended", "True", "JobSuspended", "Job suspended")]
    h.tick(500)
    h.cluster.patch("batch/v1", "Job", "default", "crunch", {"spec": {"suspend": False}})
    assert _sync(h) == Outcome(requeue_after=100, retry=True)
    assert len(h.pods()) == 2
    assert _conditions(h) == [("Suspended", "False", "JobResumed", "Job resumed")]
    assert _status(h)["startTime"] == "2026-01-01T00:08:20Z"  # the resume, not the creation
    _start(h, "ready")
    h.cluster.patch("batch/v1", "Job", "default", "crunch", {"spec": {"suspend": True}})
    _sync(h)
    assert h.pods() == []  # deleted without being counted: the finalizer went first
    st = _status(h)
    assert "active" not in st and "failed" not in st and st["ready"] == 0  # active: omitempty; ready: *int32
    assert _conditions(h) == [("Suspended", "True", "JobSuspended", "Job suspended")]


# --------------------------------------------------------------------------- podFailurePolicy
def _policy(*rules: dict[str, Any]) -> dict[str, Any]:
    return {"rules": list(rules)}


def test_a_fail_job_rule_fails_the_job_with_the_pod_failure_policy_reason() -> None:
    h = Harness()
    h.create(_job(completions=2, parallelism=2, podFailurePolicy=_policy(
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [1, 42]}})))
    _sync(h)
    pods = sorted(h.pods(), key=lambda p: p["metadata"]["name"])
    Kubelet().reconcile(h.cluster, "default", pods[0]["metadata"]["name"], "failed")
    Kubelet().reconcile(h.cluster, "default", pods[1]["metadata"]["name"], "ready")
    _sync(h)
    message = f"Container c for pod default/{pods[0]['metadata']['name']} failed with exit code 1 " \
              "matching FailJob rule at index 1"
    assert _conditions(h) == [("FailureTarget", "True", "PodFailurePolicy", message)]
    assert _status(h)["failed"] == 2  # the failed pod and the running one it stopped
    _sync(h)
    assert _conditions(h)[-1] == ("Failed", "True", "PodFailurePolicy", message)


def test_an_ignore_rule_does_not_count_the_failure() -> None:
    h = Harness()
    h.create(_job(completions=1, backoffLimit=0, podFailurePolicy=_policy(
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1]}})))
    _sync(h)
    _start(h, "failed")
    out = _sync(h)
    assert "failed" not in _status(h) and _conditions(h) == []  # backoffLimit 0 is not reached
    assert out == Outcome(requeue_after=10, retry=True)  # ignored failures still delay (upstream's record)
    h.tick(10)
    _sync(h)
    assert len(_live(h)) == 1


def test_count_rules_and_pod_conditions_and_not_in() -> None:
    h = Harness()
    h.create(_job(completions=1, backoffLimit=0, podFailurePolicy=_policy(
        {"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "Count", "onExitCodes": {"operator": "In", "values": [1]}})))
    _sync(h)
    _start(h, "failed")
    pod = h.pods()[0]
    pod["status"]["conditions"].append({"type": "DisruptionTarget", "status": "True",
                                        "reason": "EvictionByEvictionAPI"})
    h.cluster.update(pod, subresource="status")
    _sync(h)
    assert "failed" not in _status(h)  # rule 1 (Ignore by condition) decides before rule 2
    h.tick(10)
    _sync(h)
    _start(h, "failed")
    _sync(h)
    assert _status(h)["failed"] == 1  # Count: over backoffLimit 0
    assert _conditions(h)[0][:3] == ("FailureTarget", "True", "BackoffLimitExceeded")


# --------------------------------------------------------------------------- successPolicy
def test_success_policy_rules() -> None:
    job = _job(completions=5, completionMode="Indexed", successPolicy={"rules": [
        {"succeededIndexes": "0,2-3", "succeededCount": 2}, {"succeededCount": 4}]})
    assert match_success_policy(job, {1}) is None
    assert match_success_policy(job, {0, 1}) is None
    assert match_success_policy(job, {0, 3}) == "Matched rules at index 0"
    assert match_success_policy(job, {1, 4, 0, 9}) == "Matched rules at index 1"
    assert match_success_policy(_job(completions=5, completionMode="Indexed", successPolicy={"rules": [
        {"succeededIndexes": "1-2"}]}), {1, 2}) == "Matched rules at index 0"


def test_an_indexed_job_succeeds_by_its_success_policy_and_stops_the_rest() -> None:
    h = Harness()
    h.create(_job(completions=3, parallelism=3, completionMode="Indexed",
                  successPolicy={"rules": [{"succeededIndexes": "0"}]}))
    _sync(h)
    pods = {p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]: p for p in h.pods()}
    assert pods["1"]["spec"]["hostname"] == "crunch-1"
    assert {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
        "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']", "apiVersion": "v1"}}} in \
        pods["1"]["spec"]["containers"][0]["env"]
    Kubelet().reconcile(h.cluster, "default", pods["0"]["metadata"]["name"], "succeeded")
    Kubelet().reconcile(h.cluster, "default", pods["1"]["metadata"]["name"], "ready")
    _sync(h)
    assert _conditions(h) == [("SuccessCriteriaMet", "True", "SuccessPolicy", "Matched rules at index 0")]
    st = _status(h)
    assert st["completedIndexes"] == "0" and st["succeeded"] == 1 and "failed" not in st  # stopped ≠ failed
    assert [p["metadata"]["name"] for p in h.pods()] == [pods["0"]["metadata"]["name"]]
    _sync(h)
    assert _conditions(h)[-1] == ("Complete", "True", "SuccessPolicy", "Matched rules at index 0")
    assert "completionTime" in _status(h)


# --------------------------------------------------------------------------- scale-down
def test_a_scale_down_removes_the_finalizer_before_deleting() -> None:
    h = Harness()
    h.create(_job(completions=4, parallelism=3))
    _sync(h)
    _start(h, "ready")
    h.cluster.patch("batch/v1", "Job", "default", "crunch", {"spec": {"parallelism": 1}})
    _sync(h)
    assert len(h.pods()) == 1 and "failed" not in _status(h) and _status(h)["active"] == 1


def test_the_exit_code_a_pod_rule_gives_decides_the_failure_policy() -> None:
    policy = _policy({"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}})
    for code, expected in ((42, "PodFailurePolicy"), (1, "BackoffLimitExceeded")):
        h = Harness()
        h.create(_job(completions=1, backoffLimit=0, podFailurePolicy=policy))
        _sync(h)
        kubelet = Kubelet(rules=(PodRule({}, ("failed",), exit_code=code),))
        for p in h.pods():
            kubelet.reconcile(h.cluster, "default", p["metadata"]["name"], "")
        _sync(h)
        assert _conditions(h)[0][2] == expected


# --------------------------------------------------------------------------- backoffLimitPerIndex
def _by_index(h: Harness, index: str) -> list[dict[str, Any]]:
    return sorted((p for p in h.pods() if p["metadata"]["labels"].get(INDEX) == index),
                  key=lambda p: int(p["metadata"]["annotations"][FAILURE_COUNT]))


def test_each_index_has_its_own_backoff_limit_and_delay() -> None:
    h = Harness()
    h.create(_job(completions=2, parallelism=2, completionMode="Indexed", backoffLimitPerIndex=1))
    _sync(h)
    assert all(p["metadata"]["annotations"][FAILURE_COUNT] == "0" for p in h.pods())
    [first] = _by_index(h, "0")
    [other] = _by_index(h, "1")
    Kubelet().reconcile(h.cluster, "default", first["metadata"]["name"], "failed")
    Kubelet().reconcile(h.cluster, "default", other["metadata"]["name"], "succeeded")
    assert _sync(h) == Outcome(requeue_after=10, retry=True)  # index 0 waits its own 10 s
    st = _status(h)
    assert st["completedIndexes"] == "1" and st["failedIndexes"] == "" and "failed" not in st
    assert TRACKING in h.get("v1", "Pod", first["metadata"]["name"])["metadata"]["finalizers"]  # type: ignore[index]
    h.tick(10)
    _sync(h)
    retry = _by_index(h, "0")[-1]
    assert retry["metadata"]["annotations"][FAILURE_COUNT] == "1"  # the replaced pod's failure, carried
    _sync(h)  # the replacement exists: the first failure is counted and its pod released
    assert _status(h)["failed"] == 1 and h.get("v1", "Pod", first["metadata"]["name"]) is not None
    assert TRACKING not in (h.get("v1", "Pod", first["metadata"]["name"])["metadata"].get("finalizers") or [])  # type: ignore[index]
    Kubelet().reconcile(h.cluster, "default", retry["metadata"]["name"], "failed")
    _sync(h)
    st = _status(h)
    assert st["failedIndexes"] == "0" and st["failed"] == 2
    assert _conditions(h) == [("FailureTarget", "True", "FailedIndexes", "Job has failed indexes"),
                              ("Failed", "True", "FailedIndexes", "Job has failed indexes")]


def test_max_failed_indexes_and_fail_index_rules() -> None:
    h = Harness()
    h.create(_job(completions=3, parallelism=3, completionMode="Indexed", backoffLimitPerIndex=5,
                  maxFailedIndexes=0, podFailurePolicy=_policy(
                      {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}})))
    _sync(h)
    [first] = _by_index(h, "0")
    Kubelet().reconcile(h.cluster, "default", first["metadata"]["name"], "failed")
    _sync(h)
    assert _status(h)["failedIndexes"] == "0"  # FailIndex: at once, whatever the per-index limit
    assert _conditions(h)[0][:3] == ("FailureTarget", "True", "MaxFailedIndexesExceeded")


# --------------------------------------------------------------------------- getPodsForJob
def test_an_orphan_matching_the_selector_is_adopted_with_the_tracking_finalizer() -> None:
    h = Harness()
    h.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "stray", "namespace": "default",
                                                              "labels": {"app": "batch"}},
              "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}})
    job = h.create(_job(completions=2, parallelism=2, manualSelector=True,
                        selector={"matchLabels": {"app": "batch"}}))
    _sync(h)
    stray = h.get("v1", "Pod", "stray")
    assert stray is not None and TRACKING in stray["metadata"]["finalizers"]
    [ref] = stray["metadata"]["ownerReferences"]
    assert ref["uid"] == job["metadata"]["uid"] and ref["controller"] is True
    assert len(h.pods()) == 2 and _status(h)["active"] == 2  # the adopted pod counts: one created
