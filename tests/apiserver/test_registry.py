"""Registry: built-ins from the shipped table, lookups, sorted resources and groups, field labels."""

from __future__ import annotations

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.registry.kinds import version_priority


def test_builtin_is_cached_and_knows_core_kinds():
    reg = Registry.builtin()
    assert Registry.builtin() is reg
    cm = reg.lookup("v1", "ConfigMap")
    assert cm is not None and cm.plural == "configmaps" and cm.namespaced and not cm.custom
    assert cm.list_kind == "ConfigMapList" and str(cm.kind_ref) == "v1/ConfigMap"
    deploy = reg.lookup_plural("apps", "v1", "deployments")
    assert deploy is not None and deploy.has_status and "status" in deploy.subresources
    assert reg.lookup("v1", "Nope") is None


def test_generation_tracking_rule():
    reg = Registry.builtin()
    assert not reg.lookup("v1", "ConfigMap").tracks_generation
    assert not reg.lookup("v1", "Secret").tracks_generation
    assert not reg.lookup("v1", "Namespace").tracks_generation
    assert reg.lookup("apps/v1", "Deployment").tracks_generation
    assert reg.lookup("batch/v1", "Job").tracks_generation


def test_resources_sorted_and_groups_in_priority_order():
    reg = Registry.builtin()
    res = reg.resources()
    keys = [(r.group, version_priority(r.version), r.plural) for r in res]
    assert keys == sorted(keys)
    groups = {g.name: g for g in reg.groups()}
    assert groups[""].versions == ("v1",)
    assert groups["apps"].preferred == "v1"
    assert list(groups) == sorted(groups)


def test_version_priority():
    assert sorted(["v1alpha1", "v2", "v1beta1", "v1", "v1beta2", "foo"], key=version_priority) == [
        "v2", "v1", "v1beta2", "v1beta1", "v1alpha1", "foo"]


def test_field_labels_per_kind():
    reg = Registry.builtin()
    pods = reg.lookup("v1", "Pod").field_labels()
    assert {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"} <= pods
    assert reg.lookup("v1", "ConfigMap").field_labels() == {"metadata.name", "metadata.namespace"}
    assert "type" in reg.lookup("v1", "Secret").field_labels()
