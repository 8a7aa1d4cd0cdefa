"""RBAC validation, each case naming its upstream function (pkg/apis/rbac/validation/validation.go).

``ValidateRBACName`` (``path.IsValidPathSegmentName``), ``ValidatePolicyRule``,
``ValidateClusterRoleBinding``/``ValidateRoleBinding`` and ``ValidateRoleBindingSubject``.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from kubernetes import client

from kamera_cli.apiserver import ApiError

RBAC = "rbac.authorization.k8s.io/v1"


def _causes(server, obj: dict[str, Any]) -> list[tuple[str, str, str]]:
    with pytest.raises(ApiError) as exc:
        server.create(copy.deepcopy(obj))
    assert exc.value.status == 422
    return [(c["reason"], c["field"], c["message"]) for c in exc.value.body["details"]["causes"]]


def _binding(binding_kind: str = "ClusterRoleBinding", **subject: str) -> dict[str, Any]:
    meta = {"name": "b"} if binding_kind == "ClusterRoleBinding" else {"name": "b", "namespace": "default"}
    return {"apiVersion": RBAC, "kind": binding_kind, "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "r"},
            "subjects": [subject]}


def test_rbac_names_are_path_segments_not_dns_subdomains(api_client):
    rbac = client.RbacAuthorizationV1Api(api_client)
    created = rbac.create_cluster_role({"metadata": {"name": "my-operator:leader-election"}, "rules": [
        {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "update"]}]})
    assert created.metadata.name == "my-operator:leader-election"
    rbac.create_cluster_role_binding({"metadata": {"name": "system:my-operator"}, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "my-operator:leader-election"}})


def test_a_name_with_a_slash_is_refused(server):
    role = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "a/b"}}
    assert _causes(server, role) == [("FieldValueInvalid", "metadata.name", 'Invalid value: "a/b": may not contain '
                                                                            "'/'")]


def test_policy_rules(server):
    role = {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": "r", "namespace": "default"}, "rules": [
        {"apiGroups": [""], "resources": ["pods"], "verbs": []},
        {"resources": ["pods"], "verbs": ["get"]},
        {"apiGroups": ["apps"], "verbs": ["get"]},
        {"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}
    assert _causes(server, role) == [
        ("FieldValueRequired", "rules[0].verbs", "Required value: verbs must contain at least one value"),
        ("FieldValueRequired", "rules[1].apiGroups", "Required value: resource rules must supply at least one api "
                                                     "group"),
        ("FieldValueRequired", "rules[2].resources", "Required value: resource rules must supply at least one "
                                                     "resource"),
        ("FieldValueInvalid", "rules[3].nonResourceURLs", 'Invalid value: []string{"/healthz"}: namespaced rules '
                                                          "cannot apply to non-resource URLs")]


def test_cluster_roles_may_name_non_resource_urls_but_not_beside_resources(server):
    ok = {"apiVersion": RBAC, "kind": "ClusterRole", "metadata": {"name": "ok"},
          "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]}
    server.create(ok)
    both = {**ok, "metadata": {"name": "both"}, "rules": [{"nonResourceURLs": ["/metrics"], "resources": ["pods"],
                                                           "verbs": ["get"]}]}
    assert _causes(server, both) == [("FieldValueInvalid", "rules[0].nonResourceURLs",
                                      'Invalid value: []string{"/metrics"}: rules cannot apply to both regular '
                                      "resources and non-resource URLs")]


def test_a_cluster_role_binding_to_a_service_account_needs_its_namespace(server):
    assert _causes(server, _binding(kind="ServiceAccount", name="controller")) == [
        ("FieldValueRequired", "subjects[0].namespace", "Required value")]
    server.create(_binding("RoleBinding", kind="ServiceAccount", name="controller"))  # a RoleBinding's own


@pytest.mark.parametrize(("subject", "expected"), [
    # (an empty apiGroup of a User would be defaulted first: SetDefaults_Subject)
    ({"kind": "User", "name": "jane", "apiGroup": "example.com"},
     ("FieldValueNotSupported", "subjects[0].apiGroup",
      'Unsupported value: "example.com": supported values: "rbac.authorization.k8s.io"')),
    ({"kind": "ServiceAccount", "name": "Bad_Name", "namespace": "default"},
     ("FieldValueInvalid", "subjects[0].name", 'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must '
      "consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric "
      "character (e.g. 'example.com', regex used for validation is "
      "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')")),
    ({"kind": "Robot", "name": "r2"}, ("FieldValueNotSupported", "subjects[0].kind",
                                       'Unsupported value: "Robot": supported values: "ServiceAccount", "User", '
                                       '"Group"')),
])
def test_subjects(server, subject, expected):
    assert _causes(server, _binding(**subject)) == [expected]


def test_a_cluster_role_aggregation_rule_needs_valid_selectors(server):
    # ValidateClusterRole: at least one clusterRoleSelector, each a valid label selector
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "agg"},
            "aggregationRule": {"clusterRoleSelectors": []}}
    with pytest.raises(ApiError) as exc:
        server.create(role)
    assert [(c["field"], c["message"]) for c in exc.value.body["details"]["causes"]] == [
        ("aggregationRule.clusterRoleSelectors",
         "Required value: at least one clusterRoleSelector required if aggregationRule is non-nil")]
    role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "bad value"}}]}
    with pytest.raises(ApiError) as exc:
        server.create(role)
    assert exc.value.body["details"]["causes"][0]["field"] == "aggregationRule.clusterRoleSelectors[0].matchLabels"
    role["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/aggregate": "true"}}]}
    assert server.create(role)["aggregationRule"]["clusterRoleSelectors"][0]["matchLabels"]
