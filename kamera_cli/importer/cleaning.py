"""What the API server (or a built-in controller) owns in an object read back from a cluster.

Why strip at all: ``kubectl get -o yaml`` prints the object as the server stores it, and a seed is
what a *client* sends. Creating the printed object again would either be refused (a stale
``resourceVersion`` on a create is ignored, but a ``clusterIP`` from another cluster's range is
not) or would freeze values that the simulated server assigns itself (uids, timestamps,
generation). The rule here is: remove exactly what the server fills in again on create, plus the
observed state (``status``, a pod's ``spec.nodeName``) unless the user asks to keep it. The full
list, and why each entry is there, is in docs/import.md.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

#: metadata the API server sets on every write and ignores (or refuses) from clients:
#: k8s.io/apiserver rest.BeforeCreate / FillObjectMetaSystemFields and the storage layer
SERVER_METADATA = (
    "uid", "resourceVersion", "generation", "managedFields", "creationTimestamp",
    "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink",
)  # fmt: skip
#: kubectl's client-side apply bookkeeping: a copy of the last applied manifest, not state
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass(frozen=True, slots=True)
class Options:
    """How much observed state survives the import."""

    keep_status: bool = False


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def clean(obj: Mapping[str, Any], options: Options) -> dict[str, Any]:
    """A copy of ``obj`` as a client would create it (ownerReferences are settled by the caller)."""
    out: dict[str, Any] = copy.deepcopy(dict(obj))
    meta = out.get("metadata")
    if isinstance(meta, dict):
        for key in SERVER_METADATA:
            meta.pop(key, None)
        annotations = meta.get("annotations")
        if isinstance(annotations, dict):
            annotations.pop(LAST_APPLIED, None)
            if not annotations:
                meta.pop("annotations")
    if not options.keep_status:
        out.pop("status", None)
    if out.get("apiVersion") == "v1":
        spec = out.get("spec")
        if isinstance(spec, dict):
            _core_spec(str(out.get("kind", "")), spec, options)
    return out


def _core_spec(kind: str, spec: dict[str, Any], options: Options) -> None:
    if kind == "Service" and spec.get("clusterIP") != "None":
        # allocated by the server from its service range (pkg/registry/core/service/ipallocator);
        # "None" asks for a headless service and is the client's, so it stays
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    elif kind == "Pod" and not options.keep_status:
        # the scheduler's decision (written through pods/binding), observed state like status
        spec.pop("nodeName", None)


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_dict(obj.get("metadata")).get("deletionTimestamp"))
