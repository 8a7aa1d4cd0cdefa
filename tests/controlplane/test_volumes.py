"""``pvc-binder``: binding to an existing volume, dynamic provisioning through the default class."""

from __future__ import annotations

from kamera_cli.controlplane.volumes import BOUND_BY_CONTROLLER, PVCBinder, default_storage_class, quantity
from tests.controlplane.harness import Harness


def _claim(size: str = "1Gi", **spec: object) -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}, **spec}}


def _pv(name: str, size: str, cls: str = "") -> dict:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": ["ReadWriteOnce"], "storageClassName": cls,
                     "hostPath": {"path": f"/mnt/{name}"}}}


def _bind(h: Harness) -> dict:
    PVCBinder().reconcile(h.cluster, "default", "data", "")
    claim = h.get("v1", "PersistentVolumeClaim", "data")
    assert claim is not None
    return claim


def test_the_default_class_provisions_a_volume_and_both_sides_are_bound() -> None:
    h = Harness()
    h.create(default_storage_class())
    created = h.create(_claim("2Gi"))
    claim = _bind(h)
    volume_name = f"pvc-{created['metadata']['uid']}"
    assert claim["spec"]["volumeName"] == volume_name and claim["spec"]["storageClassName"] == "standard"
    assert claim["status"] == {"phase": "Bound", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "2Gi"}}
    assert claim["metadata"]["annotations"][BOUND_BY_CONTROLLER] == "yes"
    pv = h.get("v1", "PersistentVolume", volume_name, namespace="")
    assert pv is not None and pv["status"]["phase"] == "Bound"
    assert pv["spec"]["claimRef"]["name"] == "data" and pv["spec"]["claimRef"]["uid"] == created["metadata"]["uid"]


def test_the_smallest_fitting_available_volume_is_chosen() -> None:
    h = Harness()
    for name, size in (("big", "10Gi"), ("small", "512Mi"), ("fits", "2Gi")):
        h.create(_pv(name, size))
    h.create(_claim("1Gi", storageClassName=""))
    assert _bind(h)["spec"]["volumeName"] == "fits"


def test_without_a_class_or_volume_the_claim_stays_pending() -> None:
    h = Harness()
    h.create(_claim())
    assert "volumeName" not in _bind(h)["spec"]


def test_quantities() -> None:
    assert quantity("1Gi") == 2**30 and quantity("500M") == 5 * 10**8 and quantity("100m") == 0.1
    assert quantity("junk") == 0.0
