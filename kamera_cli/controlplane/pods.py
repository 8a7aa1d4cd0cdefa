"""Creating pods from templates and choosing which to delete: the workload controllers' shared half.

Follows pkg/controller/controller_utils.go: ``GetPodFromTemplate`` (what a created pod carries over
from its template) and ``ActivePodsWithRanks`` (the order in which a scale-down picks victims).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from kamera_cli.controlplane.api import Obj
from kamera_cli.controlplane.objects import (
    meta,
    name_of,
    new_controller_ref,
    parse_time,
    pod_condition,
    pod_ready,
    spec,
    status,
)

#: ``burstReplicas``: the most pods one ReplicaSet sync creates or deletes
BURST_REPLICAS = 500


def pod_from_template(template: Mapping[str, Any], owner: Mapping[str, Any], namespace: str,
                      *, generate_name: str | None = None, name: str | None = None) -> Obj:
    """``GetPodFromTemplate``: labels, annotations and finalizers from the template, a controller ref,
    ``generateName`` ``<owner>-`` unless a fixed name is given, the template's spec."""
    found = template.get("metadata")
    tmeta: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    pod_meta: Obj = {"namespace": namespace}
    if name:
        pod_meta["name"] = name
    else:
        pod_meta["generateName"] = generate_name if generate_name is not None else name_of(owner) + "-"
    for key in ("labels", "annotations"):
        if tmeta.get(key):
            pod_meta[key] = dict(tmeta[key])
    if tmeta.get("finalizers"):
        pod_meta["finalizers"] = list(tmeta["finalizers"])
    pod_meta["ownerReferences"] = [new_controller_ref(owner)]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta,
            "spec": copy.deepcopy(dict(template.get("spec") or {}))}


def slow_start_batches(count: int, initial: int = 1) -> list[int]:
    """``slowStartBatch``'s batch sizes: 1, 2, 4, ... until ``count`` calls are made."""
    sizes, remaining, batch = [], count, min(count, initial)
    while remaining > 0 and batch > 0:
        sizes.append(batch)
        remaining -= batch
        batch = min(2 * batch, remaining)
    return sizes


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    value = (meta(pod).get("annotations") or {}).get("controller.kubernetes.io/pod-deletion-cost")
    try:
        return int(value) if value is not None else 0
    except (TypeError, ValueError):
        return 0


def _restarts(pod: Mapping[str, Any]) -> int:
    return max((int(c.get("restartCount") or 0) for c in status(pod).get("containerStatuses") or ()), default=0)


def deletion_order(pods: Sequence[Obj], related: Sequence[Obj]) -> list[Obj]:
    """``ActivePodsWithRanks`` sorted: the pods a scale-down deletes first come first.

    Rank (earlier = deleted first): unassigned before assigned; Pending, then Unknown, then Running;
    not ready before ready; lower ``pod-deletion-cost``; more pods of the same owner family on its
    node; ready for less time; more restarts; newer. Ties are broken by name (the real sort is not
    stable; kamera must be deterministic).
    """
    per_node: dict[str, int] = {}
    for pod in related:
        node = str(spec(pod).get("nodeName") or "")
        if node:
            per_node[node] = per_node.get(node, 0) + 1
    phase_rank = {"Pending": 0, "Unknown": 1, "Running": 2}

    def key(pod: Obj) -> tuple[Any, ...]:
        node = str(spec(pod).get("nodeName") or "")
        ready = pod_ready(pod)
        since = parse_time((pod_condition(pod, "Ready") or {}).get("lastTransitionTime")) or 0.0
        created = parse_time(meta(pod).get("creationTimestamp")) or 0.0
        return (
            1 if node else 0,
            phase_rank.get(str(status(pod).get("phase") or "Pending"), 3),
            1 if ready else 0,
            _deletion_cost(pod),
            -(per_node.get(node, 0) if node else 0),
            -since if ready else 0.0,
            -_restarts(pod),
            -created,
            name_of(pod),
        )

    return sorted(pods, key=key)
