"""``pvc-binder``: the PersistentVolume controller's binding of claims, with dynamic provisioning.

Follows the claim side of pkg/controller/volume/persistentvolume/pv_controller.go (``syncUnboundClaim``)
with an in-tree provisioner standing in for an external one: a Pending claim binds to the smallest
Available volume that satisfies it (same storage class, enough capacity, its access modes) or, when
its class (or the default class, annotation ``storageclass.kubernetes.io/is-default-class``) has a
provisioner, gets a new volume ``pvc-<claim uid>`` provisioned for it. Binding writes both sides:
``spec.claimRef`` and phase Bound on the volume, ``spec.volumeName``, the bind-completed annotations
and phase Bound, capacity and access modes on the claim. Binding mode WaitForFirstConsumer is
treated as Immediate, and released volumes are not reclaimed (docs/builtins.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.controlplane.api import NO_REQUEUE, Cluster, Obj, Outcome, Watch
from kamera_cli.controlplane.objects import deleting, meta, name_of, spec, status

DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
BOUND_BY_CONTROLLER = "pv.kubernetes.io/bind-completed"
PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"

_UNITS = {"": 1, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60, "m": 0.001}


def quantity(text: Any) -> float:
    """A resource quantity as a number (``1Gi`` → 1073741824); unparsable is 0."""
    value = str(text or "0").strip()
    for suffix in sorted(_UNITS, key=len, reverse=True):
        if suffix and value.endswith(suffix):
            number = value[: -len(suffix)]
            break
    else:
        suffix, number = "", value
    try:
        return float(number) * _UNITS[suffix]
    except ValueError:
        return 0.0


def default_storage_class() -> Obj:
    """The default StorageClass a scenario running ``pvc-binder`` starts with."""
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {DEFAULT_CLASS: "true"}},
            "provisioner": "kamera.dev/simulated", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}


@dataclass
class PVCBinder:
    name: str = "pvc-binder"
    api_version: str = "v1"
    kind: str = "PersistentVolumeClaim"
    owns: Sequence[tuple[str, str]] = ()
    watches: Sequence[Watch] = field(default_factory=tuple)

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return ()

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        claim = cluster.get("v1", "PersistentVolumeClaim", namespace, name)
        if claim is None or deleting(claim) or spec(claim).get("volumeName"):
            return NO_REQUEUE
        classes = cluster.list("storage.k8s.io/v1", "StorageClass")
        wanted = spec(claim).get("storageClassName")
        if wanted is None:  # the DefaultStorageClass admission plugin would have filled it in
            wanted = next((name_of(c) for c in sorted(classes, key=name_of)
                           if (meta(c).get("annotations") or {}).get(DEFAULT_CLASS) == "true"), "")
        size = quantity(((spec(claim).get("resources") or {}).get("requests") or {}).get("storage"))
        modes = set(spec(claim).get("accessModes") or ())
        candidates = [pv for pv in cluster.list("v1", "PersistentVolume")
                      if status(pv).get("phase") in (None, "Available") and not spec(pv).get("claimRef")
                      and (spec(pv).get("storageClassName") or "") == wanted
                      and quantity((spec(pv).get("capacity") or {}).get("storage")) >= size
                      and modes <= set(spec(pv).get("accessModes") or ())]
        volume = min(candidates, key=lambda pv: (quantity((spec(pv).get("capacity") or {}).get("storage")),
                                                 name_of(pv)), default=None)
        if volume is None:
            sc = next((c for c in classes if name_of(c) == wanted), None)
            if sc is None or not sc.get("provisioner"):
                return NO_REQUEUE  # stays Pending until a matching volume appears
            volume = cluster.create(self._provision(claim, sc, wanted))
        volume["spec"]["claimRef"] = {"kind": "PersistentVolumeClaim", "namespace": namespace, "name": name,
                                      "uid": meta(claim).get("uid"), "apiVersion": "v1"}
        volume = cluster.update(volume)
        volume["status"] = {"phase": "Bound"}
        cluster.update(volume, subresource="status")
        claim["spec"]["volumeName"] = name_of(volume)
        claim["metadata"].setdefault("annotations", {}).update({BOUND_BY_CONTROLLER: "yes",
                                                                "pv.kubernetes.io/bound-by-controller": "yes"})
        if "storageClassName" not in claim["spec"]:
            claim["spec"]["storageClassName"] = wanted
        claim = cluster.update(claim)
        claim["status"] = {"phase": "Bound", "accessModes": list(spec(volume).get("accessModes") or ()),
                           "capacity": dict(spec(volume).get("capacity") or {})}
        cluster.update(claim, subresource="status")
        return NO_REQUEUE

    @staticmethod
    def _provision(claim: Obj, sc: Mapping[str, Any], class_name: str) -> Obj:
        request = ((spec(claim).get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        return {"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": f"pvc-{meta(claim).get('uid')}",
                             "annotations": {PROVISIONED_BY: str(sc.get("provisioner"))}},
                "spec": {"capacity": {"storage": request},
                         "accessModes": list(spec(claim).get("accessModes") or ["ReadWriteOnce"]),
                         "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                         "storageClassName": class_name,
                         "volumeMode": spec(claim).get("volumeMode") or "Filesystem",
                         "hostPath": {"path": f"/var/lib/kamera/{meta(claim).get('uid')}"}}}
