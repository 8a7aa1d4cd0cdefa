"""``root-ca-publisher``: ``kube-root-ca.crt`` in every namespace (rootcacertpublisher/publisher.go)."""

from __future__ import annotations

import copy

import pytest

from kamera_cli.controlplane.rootca import DESCRIPTION, NAME, ROOT_CA, RootCAPublisher, _namespace_of
from tests.controlplane.harness import Harness


def _sync(h: Harness, namespace: str) -> None:
    RootCAPublisher().reconcile(h.cluster, "", namespace, "")


def test_each_namespace_gets_the_bundle_and_gets_it_back() -> None:
    h = Harness()
    h.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    _sync(h, "team")
    cm = h.get("v1", "ConfigMap", NAME, namespace="team")
    assert cm is not None and cm["data"] == {"ca.crt": ROOT_CA}
    assert cm["metadata"]["annotations"] == {"kubernetes.io/description": DESCRIPTION}
    assert DESCRIPTION.startswith("Contains a CA bundle that can be used to verify the kube-apiserver")
    h.cluster.delete("v1", "ConfigMap", "team", NAME)
    assert list(_namespace_of({"metadata": {"namespace": "team", "name": NAME}})) == [(None, "team")]
    assert list(_namespace_of({"metadata": {"namespace": "team", "name": "other"}})) == []
    _sync(h, "team")
    assert h.get("v1", "ConfigMap", NAME, namespace="team") is not None


def test_an_edited_bundle_is_put_back_keeping_other_metadata() -> None:
    h = Harness()
    _sync(h, "default")
    cm = copy.deepcopy(h.get("v1", "ConfigMap", NAME))
    assert cm is not None
    cm["data"] = {"ca.crt": "tampered"}
    cm["metadata"]["annotations"] = {"owner": "me"}
    cm["metadata"]["labels"] = {"keep": "yes"}
    h.cluster.update(cm)
    _sync(h, "default")
    fixed = h.get("v1", "ConfigMap", NAME)
    assert fixed is not None and fixed["data"] == {"ca.crt": ROOT_CA}
    assert fixed["metadata"]["annotations"] == {"owner": "me", "kubernetes.io/description": DESCRIPTION}
    assert fixed["metadata"]["labels"] == {"keep": "yes"}
    before = fixed["metadata"]["resourceVersion"]
    _sync(h, "default")  # nothing to do: no write
    assert h.get("v1", "ConfigMap", NAME)["metadata"]["resourceVersion"] == before  # type: ignore[index]


def test_a_terminating_or_missing_namespace_is_not_retried() -> None:
    h = Harness()
    h.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gone"},
              "spec": {"finalizers": ["kubernetes"]}})
    h.cluster.delete("v1", "Namespace", "", "gone")
    _sync(h, "gone")
    _sync(h, "never-was")
    assert h.get("v1", "ConfigMap", NAME, namespace="gone") is None


def test_the_bundle_is_a_real_certificate() -> None:
    x509 = pytest.importorskip("cryptography.x509")
    cert = x509.load_pem_x509_certificate(ROOT_CA.encode())
    assert cert.subject.rfc4514_string() == "CN=kamera-simulated-ca"
