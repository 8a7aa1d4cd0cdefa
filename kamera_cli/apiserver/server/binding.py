"""``pods/binding``: how the scheduler (and the simulated one) assigns a pod to a node.

Follows ``BindingREST.Create`` / ``setPodHostAndAnnotations`` in
pkg/registry/core/pod/storage/storage.go: the binding's name must be the pod's, its target must be
a Node, a pod already assigned to a node is a 409 Conflict, and a successful binding sets
``spec.nodeName``, copies the binding's annotations onto the pod and sets the ``PodScheduled``
condition to True — all in one write, answered with a ``Status`` of Success.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver import errors as E
from kamera_cli.model.objects import Manifest


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def bound_pod(pod: Manifest, binding: Any, name: str) -> dict[str, Any]:
    """The pod after ``binding`` (raises the server's errors for a refused binding)."""
    if not isinstance(binding, Mapping):
        raise E.bad_request("the body of the request must be a JSON object (a Binding)")
    meta = _mapping(binding.get("metadata"))
    if meta.get("name") not in (None, "", name):
        raise E.bad_request(f"the name of the object ({meta.get('name')}) does not match the name on the URL "
                            f"({name})")
    target = _mapping(binding.get("target"))
    node = target.get("name")
    if target.get("kind") not in (None, "", "Node") or not isinstance(node, str) or not node:
        raise E.invalid("Binding", "", name, [E.cause("FieldValueInvalid", "target",
                                                      "must be a Node with a name")])
    spec = _mapping(pod.get("spec"))
    if spec.get("nodeName"):
        raise E.error(409, "Conflict", f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is '
                                       f'already assigned to node "{spec.get("nodeName")}"',
                      name=name, kind="pods/binding")
    out = copy.deepcopy(dict(pod))
    out.setdefault("spec", {})["nodeName"] = node
    annotations = _mapping(meta.get("annotations"))
    if annotations:
        out["metadata"].setdefault("annotations", {}).update({str(k): str(v) for k, v in annotations.items()})
    status = out.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or () if c.get("type") != "PodScheduled"]
    old = next((c for c in status.get("conditions") or () if c.get("type") == "PodScheduled"), None)
    scheduled: dict[str, Any] = {"type": "PodScheduled", "status": "True"}
    if old is not None and old.get("status") == "True" and old.get("lastTransitionTime"):
        scheduled["lastTransitionTime"] = old["lastTransitionTime"]
    status["conditions"] = [*conditions, scheduled]
    return out


SUCCESS = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
