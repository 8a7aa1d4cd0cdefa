"""RBAC validation: names, rules, role references and subjects.

Why: operators ship Roles, ClusterRoles and their bindings, and two mistakes are common and refused by
a real server -- a ClusterRoleBinding to a ServiceAccount without its namespace, and a rule with no
verbs or no API group -- while RBAC names such as ``my-operator:leader-election`` are *accepted*
(they are path segments, not DNS subdomains).  Upstream: pkg/apis/rbac/validation/validation.go
(``ValidateRBACName`` = ``path.IsValidPathSegmentName``, ``ValidatePolicyRule``,
``ValidateRoleBinding``/``ValidateClusterRoleBinding``, ``ValidateRoleBindingSubject``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause, GoRepr
from kamera_cli.apiserver.validation.pod_fields import label_selector

GROUP = "rbac.authorization.k8s.io"
KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")


def path_segment_name(name: str) -> list[str]:
    """``IsPathSegmentName``: anything but ``.``/``..``, without ``/`` or ``%``."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _strings(values: Any) -> GoRepr:
    return GoRepr("[]string{" + ", ".join(f'"{v}"' for v in values) + "}")


def role(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateRole``/``ValidateClusterRole``: each rule (``ValidatePolicyRule``), then a ClusterRole's
    aggregation rule (at least one selector, each a valid label selector)."""
    namespaced = obj.get("kind") == "Role"
    out: list[Cause] = []
    for here, rule in F.items(obj.get("rules"), "rules"):
        if not rule.get("verbs"):
            out.append(F.required(f"{here}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs") or []
        if urls:
            if namespaced:
                out.append(F.invalid(f"{here}.nonResourceURLs", _strings(urls),
                                     "namespaced rules cannot apply to non-resource URLs"))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                out.append(F.invalid(f"{here}.nonResourceURLs", _strings(urls),
                                     "rules cannot apply to both regular resources and non-resource URLs"))
            continue
        if not rule.get("apiGroups"):
            out.append(F.required(f"{here}.apiGroups", "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            out.append(F.required(f"{here}.resources", "resource rules must supply at least one resource"))
    aggregation = obj.get("aggregationRule")
    if not namespaced and isinstance(aggregation, Mapping):  # ValidateClusterRole
        selectors = aggregation.get("clusterRoleSelectors") or []
        if not selectors:
            out.append(F.required("aggregationRule.clusterRoleSelectors",
                                  "at least one clusterRoleSelector required if aggregationRule is non-nil"))
        for here, selector in F.items(selectors, "aggregationRule.clusterRoleSelectors"):
            out += label_selector(selector, here)
    return out


def binding(obj: Mapping[str, Any]) -> list[Cause]:
    """``ValidateRoleBinding``/``ValidateClusterRoleBinding``: the roleRef, then each subject."""
    found = obj.get("roleRef")
    ref: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    namespaced = obj.get("kind") == "RoleBinding"
    out: list[Cause] = []
    allowed = ("ClusterRole", "Role") if namespaced else ("ClusterRole",)
    if ref.get("apiGroup") != GROUP:
        out.append(F.not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), (GROUP,)))
    if ref.get("kind") not in allowed:
        out.append(F.not_supported("roleRef.kind", ref.get("kind", ""), allowed))
    name = str(ref.get("name") or "")
    out += [F.required("roleRef.name")] if not name else F.each_invalid("roleRef.name", name, path_segment_name(name))
    for here, subject in F.items(obj.get("subjects"), "subjects"):
        out += _subject(subject, here, namespaced)
    return out


def _subject(subject: Mapping[str, Any], path: str, namespaced: bool) -> list[Cause]:
    """``ValidateRoleBindingSubject``."""
    out: list[Cause] = []
    name, kind, group = (str(subject.get(k) or "") for k in ("name", "kind", "apiGroup"))
    if not name:
        out.append(F.required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            out += F.each_invalid(f"{path}.name", name, F.dns1123_subdomain(name))
        if group:
            out.append(F.not_supported(f"{path}.apiGroup", group, ("",)))
        if not namespaced and not subject.get("namespace"):
            out.append(F.required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != GROUP:
            out.append(F.not_supported(f"{path}.apiGroup", group, (GROUP,)))
    else:
        out.append(F.not_supported(f"{path}.kind", kind, ("ServiceAccount", "User", "Group")))
    return out
