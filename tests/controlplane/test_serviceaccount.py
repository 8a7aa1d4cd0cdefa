"""``serviceaccount``: every active namespace has its ``default`` ServiceAccount (serviceaccounts_controller.go)."""

from __future__ import annotations

from kamera_cli.controlplane.serviceaccount import ServiceAccountController, _namespace_of
from tests.controlplane.harness import Harness


def test_a_namespace_gets_its_default_account_and_gets_it_back_after_a_delete() -> None:
    h = Harness()
    h.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    ServiceAccountController().reconcile(h.cluster, "", "team", "")
    assert h.get("v1", "ServiceAccount", "default", namespace="team") is not None
    h.cluster.delete("v1", "ServiceAccount", "team", "default")
    assert h.get("v1", "ServiceAccount", "default", namespace="team") is None
    assert list(_namespace_of({"metadata": {"namespace": "team", "name": "default"}})) == [(None, "team")]
    ServiceAccountController().reconcile(h.cluster, "", "team", "")
    assert h.get("v1", "ServiceAccount", "default", namespace="team") is not None


def test_a_terminating_namespace_gets_nothing() -> None:
    h = Harness()
    h.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone", "finalizers": ["x/y"]},
              "spec": {"finalizers": ["kubernetes"]}})
    h.cluster.delete("v1", "Namespace", "", "gone")
    ServiceAccountController().reconcile(h.cluster, "", "gone", "")
    assert h.get("v1", "ServiceAccount", "default", namespace="gone") is None
