"""More of ``ValidatePodSpec``: environment variables, tolerations, affinity, topology spread.

Why: these are the pod-spec fields operators most often assemble from user input (an env var set
from both ``value`` and ``valueFrom``, a toleration with ``operator: Exists`` and a value, a node
affinity term with an ``In`` and no values, a spread constraint without a topology key), and a real
server refuses each with a 422 that a fake accepting them would hide.  Upstream,
pkg/apis/core/validation/validation.go: ``ValidateEnv``/``validateEnvVarValueFrom`` and their key
selectors, ``ValidateEnvFrom``, ``ValidateTolerations``/``validateTaintEffect``,
``validateAffinity`` (``ValidateNodeSelector``, ``ValidateNodeSelectorRequirement``,
``ValidateNodeFieldSelectorRequirement``, ``ValidatePreferredSchedulingTerms``,
``validatePodAffinityTerm``), ``ValidateTopologySpreadConstraints``; label selectors as
apimachinery's ``ValidateLabelSelectorRequirement``.  Environment variable names follow
``IsRelaxedEnvVarName`` (the RelaxedEnvironmentVariableValidation gate is on by default).  Security
contexts as ``ValidateSecurityContext``/``ValidatePodSecurityContext`` (user and group ids,
``allowPrivilegeEscalation`` against ``privileged`` and CAP_SYS_ADMIN, seccomp profiles,
``shareProcessNamespace`` with ``hostPID``) and ``validateHostNetwork``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause, GoRepr
from kamera_cli.apiserver.validation.pod_annotations import local_descending_path
from kamera_cli.model.objects import MAPPING

_ENV_NAME = "a valid environment variable name must consist only of printable ASCII characters other than '='"
_ENV_FIELDS = ("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName",
               "status.hostIP", "status.podIP", "status.podIPs")
_ENV_RESOURCES = ("limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                  "requests.ephemeral-storage", "requests.memory")
_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
_NODE_FIELDS = ("metadata.name",)
_WHEN = ("DoNotSchedule", "ScheduleAnyway")


def env_name(value: str) -> list[str]:
    """``IsRelaxedEnvVarName``."""
    if not value:
        return ["environment variable name must be non-empty"]
    if any(not (32 <= ord(c) < 127) or c == "=" for c in value):
        return [_ENV_NAME]
    return []


def validate_env(env: Any, env_from: Any, path: str) -> list[Cause]:
    """``ValidateEnv`` and ``ValidateEnvFrom`` for one container."""
    out: list[Cause] = []
    for here, var in F.items(env, f"{path}.env"):
        name = var.get("name") or ""
        out += [F.required(f"{here}.name")] if not name else F.each_invalid(f"{here}.name", name, env_name(name))
        source = var.get("valueFrom")
        if isinstance(source, MAPPING):
            out += _value_from(source, bool(var.get("value")), f"{here}.valueFrom")
    for i, ref in enumerate(env_from or ()):
        if not isinstance(ref, MAPPING):
            continue
        here = f"{path}.envFrom[{i}]"
        prefix = ref.get("prefix") or ""
        if prefix:
            out += F.each_invalid(f"{here}.prefix", prefix, env_name(prefix))
        sources = [k for k in ("configMapRef", "secretRef") if isinstance(ref.get(k), Mapping)]
        for key in sources:
            name = ref[key].get("name") or ""
            out += [F.required(f"{here}.{key}.name")] if not name else F.each_invalid(
                f"{here}.{key}.name", name, F.dns1123_subdomain(name))
        if not sources:
            out.append(F.invalid(f"{path}.envFrom", "", "must specify one of: `configMapRef` or `secretRef`"))
        elif len(sources) > 1:
            out.append(F.invalid(f"{path}.envFrom", "", "may not have more than one field specified at a time"))
    return out


def _value_from(source: Mapping[str, Any], has_value: bool, path: str) -> list[Cause]:
    """``validateEnvVarValueFrom``: exactly one source, not beside a ``value``, each source complete."""
    out: list[Cause] = []
    sources = [k for k in ("fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef")
               if isinstance(source.get(k), Mapping)]
    for key in sources:
        body, here = source[key], f"{path}.{key}"
        if key == "fieldRef":
            field_path = body.get("fieldPath") or ""
            if not body.get("apiVersion"):
                out.append(F.required(f"{here}.apiVersion"))
            elif not field_path:
                out.append(F.required(f"{here}.fieldPath"))
            elif "[" in field_path:
                base, _, rest = field_path.partition("[")
                if base not in ("metadata.annotations", "metadata.labels"):
                    out.append(F.invalid(here, base, "does not support subscript"))
                elif base == "metadata.labels":
                    key_name = rest.rstrip("]").strip("'")
                    out += F.each_invalid(here, key_name, F.qualified_name(key_name))
            elif field_path not in _ENV_FIELDS and field_path not in ("metadata.labels", "metadata.annotations"):
                out.append(F.not_supported(f"{here}.fieldPath", field_path, _ENV_FIELDS))
        elif key == "resourceFieldRef":
            resource = body.get("resource") or ""
            if not resource:
                out.append(F.required(f"{here}.resource"))
            elif resource not in _ENV_RESOURCES:
                out.append(F.not_supported(f"{here}.resource", resource, _ENV_RESOURCES))
        else:
            name, item = body.get("name") or "", body.get("key") or ""
            out += F.each_invalid(f"{here}.name", name, F.dns1123_subdomain(name))  # even when empty
            out += [F.required(f"{here}.key")] if not item else F.each_invalid(f"{here}.key", item,
                                                                              F.config_key(item))
    if not sources:
        out.append(F.invalid(path, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or "
                                       "`secretKeyRef`"))
    elif has_value:
        out.append(F.invalid(path, "", "may not be specified when `value` is not empty"))
    elif len(sources) > 1:
        out.append(F.invalid(path, "", "may not have more than one field specified at a time"))
    return out


_ID_RANGE = "must be between 0 and 2147483647, inclusive"
_SECCOMP = ("Localhost", "RuntimeDefault", "Unconfined")


def _ids(context: Mapping[str, Any], path: str, keys: tuple[str, ...]) -> list[Cause]:
    """``IsValidUserID``/``IsValidGroupID`` of the ids a security context sets."""
    out: list[Cause] = []
    for key in keys:
        value = context.get(key)
        if isinstance(value, int) and not 0 <= value <= 2147483647:
            out.append(F.invalid(f"{path}.{key}", value, _ID_RANGE))
    return out


def _seccomp(context: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateSeccompProfileField``."""
    profile = context.get("seccompProfile")
    if profile is None or not isinstance(profile, MAPPING):
        return []
    kind, local = str(profile.get("type") or ""), profile.get("localhostProfile")
    out: list[Cause] = []
    if kind and kind not in _SECCOMP:
        out.append(F.not_supported(f"{path}.seccompProfile.type", kind, _SECCOMP))
    if kind == "Localhost" and local is None:
        out.append(F.required(f"{path}.seccompProfile.localhostProfile", "must be set when seccomp type is Localhost"))
    elif kind == "Localhost":
        out += local_descending_path(str(local), f"{path}.seccompProfile.localhostProfile")
    elif kind != "Localhost" and local is not None:
        out.append(F.invalid(f"{path}.seccompProfile.localhostProfile", GoRepr(
            f'&core.SeccompProfile{{Type:"{kind}", LocalhostProfile:(*string)(…)}}'),
            "can only be set when seccomp type is Localhost"))
    return out


def container_security(context: Any, path: str) -> list[Cause]:
    """``ValidateSecurityContext`` of one container."""
    if not isinstance(context, MAPPING):
        return []
    here = f"{path}.securityContext"
    out = _ids(context, here, ("runAsUser", "runAsGroup"))
    if context.get("allowPrivilegeEscalation") is False:
        shown = GoRepr("&core.SecurityContext{…}")  # Go prints the struct with pointer addresses
        if context.get("privileged") is True:
            out.append(F.invalid(here, shown, "cannot set `allowPrivilegeEscalation` to false and `privileged` to "
                                              "true"))
        if "CAP_SYS_ADMIN" in ((context.get("capabilities") or {}).get("add") or ()):
            out.append(F.invalid(here, shown, "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` "
                                              "CAP_SYS_ADMIN"))
    return out + _seccomp(context, here)


def pod_security(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidatePodSecurityContext`` (ids, process namespace sharing, seccomp) and ``validateHostNetwork``."""
    out: list[Cause] = []
    if spec.get("hostNetwork"):
        for i, c in enumerate(spec.get("containers") or ()):
            for here, port in F.items(c.get("ports") if isinstance(c, MAPPING) else None,
                                      f"{path}.containers[{i}].ports"):
                if port.get("hostPort") != port.get("containerPort"):
                    out.append(F.invalid(f"{here}.containerPort", port.get("containerPort"),
                                         "must match `hostPort` when `hostNetwork` is true"))
    here = f"{path}.securityContext"
    context = spec.get("securityContext")
    if isinstance(context, MAPPING) and context:
        out += _ids(context, here, ("fsGroup", "runAsUser", "runAsGroup"))
        for i, gid in enumerate(context.get("supplementalGroups") or ()):
            if isinstance(gid, int) and not 0 <= gid <= 2147483647:
                out.append(F.invalid(f"{here}.supplementalGroups[{i}]", gid, _ID_RANGE))
    if spec.get("shareProcessNamespace") is True and spec.get("hostPID"):
        # both live in the internal PodSecurityContext, hence upstream's path
        out.append(F.invalid(f"{here}.shareProcessNamespace", True,
                             "ShareProcessNamespace and HostPID cannot both be enabled"))
    return out + (_seccomp(context, here) if isinstance(context, MAPPING) else [])


def validate_scheduling(spec: Mapping[str, Any], path: str) -> list[Cause]:
    """Tolerations, affinity and topology spread constraints of a pod spec (each only when present)."""
    out: list[Cause] = []
    if "tolerations" in spec:
        out += _tolerations(spec["tolerations"], f"{path}.tolerations")
    affinity = spec.get("affinity")
    if affinity is not None and isinstance(affinity, MAPPING):
        out += _affinity(affinity, f"{path}.affinity")
    if "topologySpreadConstraints" in spec:
        out += _spread(spec["topologySpreadConstraints"], f"{path}.topologySpreadConstraints")
    return out


def _toleration_repr(t: Mapping[str, Any]) -> GoRepr:
    seconds = "(*int64)(nil)" if t.get("tolerationSeconds") is None else "(*int64)(…)"
    return GoRepr(f'core.Toleration{{Key:"{t.get("key") or ""}", Operator:"{t.get("operator") or ""}", '
                  f'Value:"{t.get("value") or ""}", Effect:"{t.get("effect") or ""}", TolerationSeconds:{seconds}}}')


def _tolerations(tolerations: Any, path: str) -> list[Cause]:
    """``ValidateTolerations``."""
    out: list[Cause] = []
    for here, t in F.items(tolerations, path):
        key, op, value, effect = (str(t.get(k) or "") for k in ("key", "operator", "value", "effect"))
        if key:
            out += F.each_invalid(f"{here}.key", key, F.qualified_name(key))
        if not key and op != "Exists":
            out.append(F.invalid(f"{here}.operator", op, 'operator must be Exists when `key` is empty, which means '
                                                         '"match all values and all keys"'))
        if t.get("tolerationSeconds") is not None and effect != "NoExecute":
            out.append(F.invalid(f"{here}.effect", effect,
                                 "effect must be 'NoExecute' when `tolerationSeconds` is set"))
        if op in ("Equal", ""):
            errs = F.label_value(value)
            if errs:
                out.append(F.invalid(f"{here}.operator", value, ";".join(errs)))
        elif op == "Exists":
            if value:
                out.append(F.invalid(f"{here}.operator", _toleration_repr(t),
                                     "value must be empty when `operator` is 'Exists'"))
        else:
            out.append(F.not_supported(f"{here}.operator", op, ("Equal", "Exists")))
        if effect and effect not in _EFFECTS:
            out.append(F.not_supported(f"{here}.effect", effect, _EFFECTS))
    return out


def _affinity(affinity: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateAffinity``: node affinity terms, pod (anti-)affinity terms."""
    out: list[Cause] = []
    node = affinity.get("nodeAffinity")
    if isinstance(node, MAPPING):
        here = f"{path}.nodeAffinity"
        required = node.get("requiredDuringSchedulingIgnoredDuringExecution")
        if isinstance(required, MAPPING):
            terms = required.get("nodeSelectorTerms") or []
            where = f"{here}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
            if not terms:
                out.append(F.required(where, "must have at least one node selector term"))
            for term_path, term in F.items(terms, where):
                out += _node_term(term, term_path)
        out += _weighted(node, here, "preference", _node_term)
    for kind in ("podAffinity", "podAntiAffinity"):
        pods = affinity.get(kind)
        if not isinstance(pods, MAPPING):
            continue
        here = f"{path}.{kind}"
        for term_path, term in F.items(pods.get("requiredDuringSchedulingIgnoredDuringExecution"),
                                       f"{here}.requiredDuringSchedulingIgnoredDuringExecution"):
            out += _pod_term(term, term_path)
        out += _weighted(pods, here, "podAffinityTerm", _pod_term)
    return out


def _weighted(parent: Mapping[str, Any], path: str, key: str, check: Callable[[Mapping[str, Any], str], list[Cause]]
              ) -> list[Cause]:
    """Preferred terms (``ValidatePreferredSchedulingTerms``, ``validateWeightedPodAffinityTerms``):
    a weight in 1-100 and a valid term."""
    out: list[Cause] = []
    for here, term in F.items(parent.get("preferredDuringSchedulingIgnoredDuringExecution"),
                              f"{path}.preferredDuringSchedulingIgnoredDuringExecution"):
        weight = term.get("weight")
        if isinstance(weight, int) and not 1 <= weight <= 100:
            out.append(F.invalid(f"{here}.weight", weight, "must be in the range 1-100"))
        if isinstance(term.get(key), Mapping):
            out += check(term[key], f"{here}.{key}")
    return out


def _node_term(term: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateNodeSelectorTerm``: label expressions and field expressions."""
    out: list[Cause] = []
    for here, rq in F.items(term.get("matchExpressions"), f"{path}.matchExpressions"):
        out += _requirement(rq, here, node=True)
    for here, rq in F.items(term.get("matchFields"), f"{path}.matchFields"):
        op, values = str(rq.get("operator") or ""), rq.get("values") or []
        if op in ("In", "NotIn"):
            if len(values) != 1:
                out.append(F.required(f"{here}.values", "must be only one value when `operator` is 'In' or 'NotIn' "
                                                        "for node field selector"))
        else:
            out.append(F.invalid(f"{here}.operator", op, "not a valid selector operator"))
        if rq.get("key") not in _NODE_FIELDS:
            out.append(F.invalid(f"{here}.key", str(rq.get("key") or ""), "not a valid field selector key"))
        else:
            for i, v in enumerate(values):
                out += F.each_invalid(f"{here}.values[{i}]", v, F.dns1123_subdomain(str(v)))
    return out


def _pod_term(term: Mapping[str, Any], path: str) -> list[Cause]:
    """``validatePodAffinityTerm``: selectors, namespaces, a topology key."""
    out: list[Cause] = []
    for key in ("labelSelector", "namespaceSelector"):
        if isinstance(term.get(key), Mapping):
            out += label_selector(term[key], f"{path}.{key}")
    for ns in term.get("namespaces") or ():
        out += F.each_invalid(f"{path}.namespace", ns, F.dns1123_label(str(ns)))  # upstream's path: no index
    out += _label_keys(term, path)
    topology = str(term.get("topologyKey") or "")
    if not topology:
        out.append(F.required(f"{path}.topologyKey", "can not be empty"))
    return out + F.each_invalid(f"{path}.topologyKey", topology, F.qualified_name(topology))


def _requirement(rq: Mapping[str, Any], here: str, *, node: bool) -> list[Cause]:
    """``ValidateNodeSelectorRequirement`` (``node``: Gt/Lt allowed) or ``ValidateLabelSelectorRequirement``
    (values must be label values)."""
    out: list[Cause] = []
    op, values = str(rq.get("operator") or ""), rq.get("values") or []
    if op in ("In", "NotIn"):
        if not values:
            out.append(F.required(f"{here}.values", "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            out.append(F.forbidden(f"{here}.values", "may not be specified when `operator` is 'Exists' or "
                                                     "'DoesNotExist'"))
    elif node and op in ("Gt", "Lt"):
        if len(values) != 1:
            out.append(F.required(f"{here}.values", "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        out.append(F.invalid(f"{here}.operator", op, "not a valid selector operator"))
    key = str(rq.get("key") or "")
    out += F.each_invalid(f"{here}.key", key, F.qualified_name(key))
    if not node:
        for i, v in enumerate(values):
            out += F.each_invalid(f"{here}.values[{i}]", v, F.label_value(str(v)))
    return out


def label_selector(selector: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateLabelSelector``: expression operators and values, label keys and values."""
    out: list[Cause] = []
    for here, rq in F.items(selector.get("matchExpressions"), f"{path}.matchExpressions"):
        out += _requirement(rq, here, node=False)
    labels = selector.get("matchLabels")
    for key, value in sorted(labels.items()) if isinstance(labels, MAPPING) else ():
        out += F.each_invalid(f"{path}.matchLabels", key, F.qualified_name(str(key)))
        out += F.each_invalid(f"{path}.matchLabels", value, F.label_value(str(value)))
    return out


def _spread(constraints: Any, path: str) -> list[Cause]:
    """``ValidateTopologySpreadConstraints``."""
    out: list[Cause] = []
    listed = F.items(constraints, path)
    for n, (here, c) in enumerate(listed):
        skew = c.get("maxSkew")
        if isinstance(skew, int) and skew <= 0:
            out.append(F.invalid(f"{here}.maxSkew", skew, "must be greater than zero"))
        key, when = str(c.get("topologyKey") or ""), str(c.get("whenUnsatisfiable") or "")
        if not key:
            out.append(F.required(f"{here}.topologyKey", "can not be empty"))
        if when not in _WHEN:
            out.append(F.not_supported(f"{here}.whenUnsatisfiable", when, _WHEN))
        if any(str(o.get("topologyKey") or "") == key and str(o.get("whenUnsatisfiable") or "") == when
               for _, o in listed[n + 1:]):
            out.append(F.duplicate(f"{here}.{{topologyKey, whenUnsatisfiable}}", f"{{{key}, {when}}}"))
        domains = c.get("minDomains")
        if isinstance(domains, int):  # validateMinDomains
            if domains <= 0:
                out.append(F.invalid(f"{here}.minDomains", domains, "must be greater than zero"))
            if when != "DoNotSchedule":
                out.append(F.invalid(f"{here}.minDomains", domains,
                                     f"can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"))
        keys = c.get("matchLabelKeys") or []
        if keys:  # validateMatchLabelKeysInTopologySpread
            selector = c.get("labelSelector")
            taken = _selector_keys(selector) if isinstance(selector, MAPPING) else set()
            if not isinstance(selector, MAPPING):
                out.append(F.forbidden(f"{here}.matchLabelKeys", "must not be specified when labelSelector is not set"))
            for i, key_ in enumerate(keys):
                out += F.each_invalid(f"{here}.matchLabelKeys[{i}]", key_, F.qualified_name(str(key_)))
                if key_ in taken:
                    out.append(F.invalid(f"{here}.matchLabelKeys[{i}]", key_,
                                         "exists in both matchLabelKeys and labelSelector"))
        if isinstance(c.get("labelSelector"), Mapping):
            out += label_selector(c["labelSelector"], f"{here}.labelSelector")
    return out


def _selector_keys(selector: Mapping[str, Any]) -> set[str]:
    return {str(k) for k in selector.get("matchLabels") or {}} | {
        str(e.get("key")) for e in selector.get("matchExpressions") or () if isinstance(e, MAPPING)}


def _label_keys(term: Mapping[str, Any], path: str) -> list[Cause]:
    """``validateMatchLabelKeysAndMismatchLabelKeys`` of a pod (anti-)affinity term: label-name keys, only
    beside a label selector, no key in both lists.  (Its check of keys also in the selector looks at the
    selector after ``PrepareForCreate`` merged the keys in, which kamera does not do: not reproduced.)"""
    match, mismatch = term.get("matchLabelKeys") or [], term.get("mismatchLabelKeys") or []
    if not match and not mismatch:
        return []
    out: list[Cause] = []
    for name, keys in (("matchLabelKeys", match), ("mismatchLabelKeys", mismatch)):
        if not keys:
            continue
        if not isinstance(term.get("labelSelector"), Mapping):
            out.append(F.forbidden(f"{path}.{name}", "must not be specified when labelSelector is not set"))
            continue
        for i, key in enumerate(keys):
            out += F.each_invalid(f"{path}.{name}[{i}]", key, F.qualified_name(str(key)))
    both = set(mismatch)
    out += [F.invalid(f"{path}.matchLabelKeys[{i}]", key, "exists in both matchLabelKeys and mismatchLabelKeys")
            for i, key in enumerate(match) if key in both]
    return out
