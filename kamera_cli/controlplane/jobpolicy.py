"""The Job controller's rule books: pod failure policy, success policy, failure backoff, conditions.

Why apart from ``job.py``: these are pure functions of a Job and its pods (no requests), each the
counterpart of one upstream file in pkg/controller/job — ``pod_failure_policy.go``
(``matchPodFailurePolicy``), ``success_policy.go`` (``matchSuccessPolicy``), ``backoff_utils.go``
(``getFinishedTime``, ``getRemainingTimeForFailuresCount``) and the condition helpers of
``job_controller.go`` (``newCondition``, ``ensureJobConditionStatus``) — so each can be pinned by
its own tests and the sync stays readable.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kamera_cli.controlplane.api import Obj
from kamera_cli.controlplane.objects import deleting, meta, name_of, parse_time, pod_condition, spec, status

#: ``DefaultJobPodFailureBackOff`` and ``MaxJobPodFailureBackOff`` (job_controller.go, 1.34: ten minutes;
#: the user documentation's "six minutes" is older)
BACKOFF_BASE = 10
BACKOFF_MAX = 600


# --------------------------------------------------------------------------- completion indexes
def parse_indexes(text: Any, completions: int | None = None) -> set[int]:
    """``parseIndexesFromString``: ``0-2,5`` → {0, 1, 2, 5}; indexes at or past ``completions`` dropped,
    malformed parts skipped."""
    out: set[int] = set()
    for part in filter(None, str(text or "").split(",")):
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            continue
        if completions is not None:
            last = min(last, completions - 1)
        out.update(range(first, last + 1))
    return out


def format_indexes(indexes: Iterable[int]) -> str:
    """``orderedIntervals.String``: the API's spelling of a set of indexes (``0-2,5,7,8``)."""
    out: list[str] = []
    ordered = sorted(set(indexes))
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        # orderedIntervals.String: two neighbours are spelled "4,5", three or more "4-6"
        out.append(str(ordered[i]) if i == j else f"{ordered[i]},{ordered[j]}" if j == i + 1
                   else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(out)


# --------------------------------------------------------------------------- pod failure policy
def pod_failed(pod: Mapping[str, Any], job: Mapping[str, Any]) -> bool:
    """``isPodFailed``: phase Failed, or (unless only failed pods are replaced) being deleted before
    succeeding — an orphan never gets a chance to reach Failed."""
    phase = status(pod).get("phase")
    if phase == "Failed":
        return True
    if spec(job).get("podReplacementPolicy") == "Failed":
        return False
    return deleting(pod) and phase != "Succeeded"


def _exit_code_matches(code: int, requirement: Mapping[str, Any]) -> bool:
    """``isOnExitCodesOperatorMatching``: In / NotIn over the listed values; another operator never matches."""
    values = {int(v) for v in requirement.get("values") or () if isinstance(v, int)}
    if requirement.get("operator") == "In":
        return code in values
    if requirement.get("operator") == "NotIn":
        return code not in values
    return False


def _matching_container(pod: Mapping[str, Any], requirement: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``matchOnExitCodes``: the first terminated container (then init container) with a non-zero exit
    code that the requirement matches; ``containerName`` narrows it to one container."""
    wanted = requirement.get("containerName")
    for key in ("containerStatuses", "initContainerStatuses"):
        for cs in status(pod).get(key) or ():
            terminated = (cs.get("state") or {}).get("terminated")
            if not isinstance(terminated, Mapping):
                continue  # still running or terminating: no exit code yet
            if wanted and wanted != cs.get("name"):
                continue
            code = int(terminated.get("exitCode") or 0)
            if code != 0 and _exit_code_matches(code, requirement):
                found: Mapping[str, Any] = cs
                return found
    return None


def _matching_condition(pod: Mapping[str, Any], patterns: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """``matchOnPodConditions``: the first pod condition equal to a pattern in type and status."""
    for cond in status(pod).get("conditions") or ():
        for pattern in patterns:
            if cond.get("type") == pattern.get("type") and cond.get("status") == (pattern.get("status") or "True"):
                found: Mapping[str, Any] = cond
                return found
    return None


def match_pod_failure_policy(job: Mapping[str, Any], pod: Mapping[str, Any]) -> tuple[str | None, bool, str | None]:
    """``matchPodFailurePolicy``: (the FailJob message, whether the failure counts, the action matched).

    The first rule that matches decides. ``FailIndex`` counts the failure (and fails the index, see
    ``index_failed``); no rule matching counts it too.
    """
    policy = spec(job).get("podFailurePolicy")
    if not isinstance(policy, Mapping):
        return None, True, None
    where = f"{meta(pod).get('namespace', '')}/{name_of(pod)}"
    for index, rule in enumerate(policy.get("rules") or ()):
        action = str(rule.get("action") or "")
        if isinstance(rule.get("onExitCodes"), Mapping):
            container = _matching_container(pod, rule["onExitCodes"])
            if container is None:
                continue
            code = int(((container.get("state") or {}).get("terminated") or {}).get("exitCode") or 0)
            message = f"Container {container.get('name')} for pod {where} failed with exit code {code} " \
                      f"matching {action} rule at index {index}"
        elif rule.get("onPodConditions") is not None:
            cond = _matching_condition(pod, [c for c in rule["onPodConditions"] or () if isinstance(c, Mapping)])
            if cond is None:
                continue
            message = f"Pod {where} has condition {cond.get('type')} matching {action} rule at index {index}"
        else:
            continue
        if action == "Ignore":
            return None, False, action
        if action in ("Count", "FailIndex"):
            return None, True, action
        if action == "FailJob":
            return message, True, action
    return None, True, None


def fail_job_message(job: Mapping[str, Any], pods: Iterable[Mapping[str, Any]]) -> str | None:
    """``getFailJobMessage``: the message of the first failed pod that matches a FailJob rule."""
    if not isinstance(spec(job).get("podFailurePolicy"), Mapping):
        return None
    for pod in pods:
        if pod_failed(pod, job):
            message, _, _ = match_pod_failure_policy(job, pod)
            if message is not None:
                return message
    return None


# --------------------------------------------------------------------------- success policy
def match_success_policy(job: Mapping[str, Any], succeeded: set[int]) -> str | None:
    """``matchSuccessPolicy``: "Matched rules at index N" for the first rule the succeeded indexes meet.

    A rule with ``succeededIndexes`` is met when all of them succeeded, or (with ``succeededCount``)
    when that many of them did; a rule with only ``succeededCount`` when that many indexes did.
    """
    policy = spec(job).get("successPolicy")
    if not isinstance(policy, Mapping) or not succeeded:
        return None
    completions = int(spec(job).get("completions") or 0)
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_indexes(rule["succeededIndexes"], completions)
            if not required:
                continue  # unparsable: upstream skips the rule
            have = len(required & succeeded)
            if have == len(required) or (count is not None and have >= int(count)):
                return f"Matched rules at index {index}"
        elif count is not None and len(succeeded) >= int(count):
            return f"Matched rules at index {index}"
    return None


# --------------------------------------------------------------------------- failure backoff
def finish_time(pod: Mapping[str, Any]) -> float:
    """``getFinishedTime``: the latest container ``finishedAt`` when every container terminated, else
    the Ready=False transition, else the deletion time less its grace period, else the creation time."""
    latest: float | None = None
    statuses = list(status(pod).get("containerStatuses") or ())
    for cs in statuses:
        at = parse_time(((cs.get("state") or {}).get("terminated") or {}).get("finishedAt"))
        if at is None:
            latest = None
            break
        latest = at if latest is None else max(latest, at)
    if latest is not None:
        return latest
    ready = pod_condition(pod, "Ready")
    if ready is not None and ready.get("status") == "False":
        since = parse_time(ready.get("lastTransitionTime"))
        if since is not None:
            return since
    deleted = parse_time(meta(pod).get("deletionTimestamp"))
    if deleted is not None:
        return deleted - float(meta(pod).get("deletionGracePeriodSeconds") or 0)
    return parse_time(meta(pod).get("creationTimestamp")) or 0.0


def failures_after_last_success(job: Mapping[str, Any], pods: Sequence[Mapping[str, Any]]) -> tuple[int, float]:
    """What upstream's in-memory ``backoffRecord`` holds, recomputed from the Job's finished pods:
    how many failed after the last success, and when the last of them finished.

    Upstream folds each sync's newly finished pods into a record it keeps in memory
    (``newBackoffRecord``); kamera keeps no controller memory, so it reads the same facts off the
    pods that are still there (a counted pod keeps its status until someone deletes it).
    """
    finished = [(finish_time(p), status(p).get("phase") == "Succeeded") for p in pods
                if status(p).get("phase") == "Succeeded" or pod_failed(p, job)]
    last_success = max((t for t, ok in finished if ok), default=None)
    failures = [t for t, ok in finished if not ok and (last_success is None or t > last_success)]
    return len(failures), max(failures, default=0.0)


def backoff_remaining(failures: int, last_failure: float, now: float) -> float:
    """``getRemainingTimeForFailuresCount``: 10 s doubled per further failure, capped at ten minutes,
    less the time since the last failure (0 when it has passed)."""
    if failures <= 0:
        return 0.0
    delay = BACKOFF_BASE
    for _ in range(1, failures):
        delay *= 2
        if delay >= BACKOFF_MAX:
            delay = BACKOFF_MAX
            break
    elapsed = now - last_failure
    return 0.0 if delay < elapsed else delay - elapsed


# --------------------------------------------------------------------------- conditions
def new_condition(kind: str, state: str, reason: str, message: str, stamp: str) -> Obj:
    """``newCondition``: both probe and transition times are now."""
    return {"type": kind, "status": state, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def find_condition(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    return next((c for c in conditions if c.get("type") == kind), None)


def true_condition(conditions: Sequence[Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    found = find_condition(conditions, kind)
    return found if found is not None and found.get("status") == "True" else None


def ensure_condition(conditions: list[Obj], kind: str, state: str, reason: str, message: str,
                     stamp: str) -> bool:
    """``ensureJobConditionStatus``: replace the condition when its status, reason or message differ;
    append it when missing, unless it would be False (nothing → False says nothing). True if changed."""
    for i, cond in enumerate(conditions):
        if cond.get("type") == kind:
            if (cond.get("status"), cond.get("reason"), cond.get("message")) != (state, reason, message):
                conditions[i] = new_condition(kind, state, reason, message, stamp)
                return True
            return False
    if state != "False":
        conditions.append(new_condition(kind, state, reason, message, stamp))
        return True
    return False


# --------------------------------------------------------------------------- backoffLimitPerIndex
#: how many counted (and ignored) failures an index had before this pod (indexed_job_utils.go)
FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
IGNORED_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"


def _count_annotation(pod: Mapping[str, Any], key: str) -> int:
    """``parseInt32``: 0 when missing, unparsable, negative or beyond int32 (a user may have set it)."""
    try:
        value = int((meta(pod).get("annotations") or {}).get(key, 0))
    except (TypeError, ValueError):
        return 0
    return value if 0 <= value <= 2**31 - 1 else 0


def absolute_failures(pod: Mapping[str, Any]) -> int:
    """``getIndexAbsoluteFailureCount``: counted plus ignored failures of the index before this pod."""
    return _count_annotation(pod, FAILURE_COUNT) + _count_annotation(pod, IGNORED_COUNT)


def index_failed(job: Mapping[str, Any], pod: Mapping[str, Any]) -> bool:
    """``isIndexFailed``: a failed pod matching a ``FailIndex`` rule, or a counted failure of an index
    that had already failed ``backoffLimitPerIndex`` times."""
    if not pod_failed(pod, job):
        return False
    _, counted, action = match_pod_failure_policy(job, pod)
    if action == "FailIndex":
        return True
    return counted and _count_annotation(pod, FAILURE_COUNT) >= int(spec(job).get("backoffLimitPerIndex") or 0)


def replacement_counts(job: Mapping[str, Any], replaced: Mapping[str, Any] | None) -> tuple[int, int]:
    """``getNewIndexFailureCounts``: the counts a replacement pod carries — the replaced pod's, plus
    its own failure (as counted or as ignored)."""
    if replaced is None:
        return 0, 0
    failures, ignored = _count_annotation(replaced, FAILURE_COUNT), _count_annotation(replaced, IGNORED_COUNT)
    if match_pod_failure_policy(job, replaced)[1]:
        return failures + 1, ignored
    return failures, ignored + 1


def index_backoff_remaining(last_failed: Mapping[str, Any] | None, now: float) -> float:
    """``getRemainingTimePerIndex``: the backoff of one index, from its last failed pod's counts."""
    if last_failed is None:
        return 0.0
    return backoff_remaining(absolute_failures(last_failed) + 1, finish_time(last_failed), now)
