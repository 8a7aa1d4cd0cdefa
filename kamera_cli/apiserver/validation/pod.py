"""Pod spec validation, as pkg/apis/core/validation/validation.go does it for Pods and pod templates.

Why: a controller that builds pods (or templates) wrongly -- a container name with an underscore, two
containers with one name, a mount of a volume it never declared, a request above its limit, a Job
template without ``restartPolicy`` -- is refused by a real server; a fake that accepts the object
hides the bug until production.  Covered (each after the upstream function named in its docstring):
``ValidatePodSpec``'s volumes, containers, init containers, restart and DNS policy, node selector
labels, service account, node, host and subdomain and priority class names;
``validateContainerCommon`` (name, image, termination message policy, ports, volume mounts, pull
policy, resources, probes).  Runs on defaulted objects, as upstream does.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kamera_cli.apiserver.defaulting.pod import Memo
from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause
from kamera_cli.apiserver.validation.pod_annotations import annotation_agreement, pod_annotations
from kamera_cli.apiserver.validation.pod_fields import (
    container_security,
    pod_security,
    validate_env,
    validate_scheduling,
)
from kamera_cli.apiserver.validation.pod_host import validate_pod_host
from kamera_cli.apiserver.validation.quantity import QuantityError, value_of
from kamera_cli.model.objects import MAPPING

_PROTOCOLS = ("SCTP", "TCP", "UDP")
_VALID = Memo()  # templates (by identity) that passed, per (path, restart policies, owner)
_RESTART = ("Always", "OnFailure", "Never")
_DNS = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
_PULL = ("Always", "IfNotPresent", "Never")
_TERMINATION = ("File", "FallbackToLogsOnError")
_HANDLERS = ("exec", "httpGet", "tcpSocket", "grpc")
_VOLUME_NAME_FIELDS = {"configMap": "name", "secret": "secretName", "persistentVolumeClaim": "claimName"}
#: resources a container may name without a domain (IsStandardContainerResourceName)
_STANDARD_RESOURCES = ("cpu", "memory", "ephemeral-storage")
#: resources whose request may differ from the limit (IsOvercommitAllowed: the native ones, not hugepages)
_OVERCOMMIT = ("cpu", "memory", "ephemeral-storage")


def validate_pod_spec(spec: Mapping[str, Any], path: str, *, template: bool = True) -> list[Cause]:
    """``ValidatePodSpec`` (the parts listed in the module docstring, plus ``validation_pod_host``'s);
    ``template``: the spec of a pod template rather than of a Pod."""
    out: list[Cause] = []
    volumes = _volumes(spec.get("volumes") or [], f"{path}.volumes", out)
    containers = spec.get("containers") or []
    if not containers:
        out.append(F.required(f"{path}.containers"))
    names: set[str] = set()
    for key in ("containers", "initContainers"):
        for i, c in enumerate(spec.get(key) or []):
            if isinstance(c, MAPPING):
                out += _container(c, volumes, f"{path}.{key}[{i}]", names, init=key == "initContainers")
    policy = spec.get("restartPolicy") or ""
    if not policy:
        out.append(F.required(f"{path}.restartPolicy"))
    elif policy not in _RESTART:
        out.append(F.not_supported(f"{path}.restartPolicy", policy, _RESTART))
    dns = spec.get("dnsPolicy") or ""
    if dns and dns not in _DNS:
        out.append(F.not_supported(f"{path}.dnsPolicy", dns, _DNS))
    selector = spec.get("nodeSelector")
    if selector is not None and isinstance(selector, MAPPING):  # ValidateLabels: keys and values, at the map
        for key in sorted(selector):
            out += F.each_invalid(f"{path}.nodeSelector", key, F.qualified_name(str(key)))
            out += F.each_invalid(f"{path}.nodeSelector", selector[key], F.label_value(str(selector[key])))
    for key, check in (("serviceAccountName", F.dns1123_subdomain), ("nodeName", F.dns1123_subdomain)):
        value = spec.get(key)
        if value:
            out += F.each_invalid(f"{path}.{key}", value, check(str(value)))
    deadline = spec.get("activeDeadlineSeconds")
    if isinstance(deadline, int) and not 1 <= deadline <= 2147483647:
        out.append(F.invalid(f"{path}.activeDeadlineSeconds", deadline, "must be between 1 and 2147483647, inclusive"))
    for key, check in (("hostname", F.dns1123_label), ("subdomain", F.dns1123_label),
                       ("priorityClassName", F.dns1123_subdomain)):
        value = spec.get(key)
        if value:
            out += F.each_invalid(f"{path}.{key}", value, check(str(value)))
    return out + pod_security(spec, path) + validate_scheduling(spec, path) + validate_pod_host(spec, path,
                                                                                             template=template)


def _volumes(volumes: list[Any], path: str, out: list[Cause]) -> set[str]:
    """``ValidateVolumes``: names (DNS labels, unique), one source each, the sources' required names."""
    names: set[str] = set()
    for here, vol in F.items(volumes, path):
        name = vol.get("name") or ""
        errs = [F.required(f"{here}.name")] if not name else F.each_invalid(f"{here}.name", name,
                                                                             F.dns1123_label(name))
        sources = [k for k, v in vol.items() if k != "name" and v is not None]
        if not sources:
            errs.append(F.required(here, "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(F.forbidden(f"{here}.{extra}", "may not specify more than 1 volume type"))
        for source, key in _VOLUME_NAME_FIELDS.items():
            body = vol.get(source)
            if isinstance(body, MAPPING) and not body.get(key) and not (source == "configMap" and body.get("name")):
                errs.append(F.required(f"{here}.{source}.{key}"))
            mode = body.get("defaultMode") if isinstance(body, MAPPING) else None
            if isinstance(mode, int) and not 0 <= mode <= 0o777:
                errs.append(F.invalid(f"{here}.{source}.defaultMode", mode,
                                      "must be a number between 0 and 0777 (octal), both inclusive"))
        if not errs:
            if name in names:
                errs.append(F.duplicate(f"{here}.name", name))
            names.add(name)
        out += errs
    return names


def _container(c: Mapping[str, Any], volumes: set[str], path: str, names: set[str], *, init: bool) -> list[Cause]:
    """``validateContainerCommon`` and the uniqueness of names across containers and init containers."""
    out: list[Cause] = []
    name = c.get("name") or ""
    if not name:
        out.append(F.required(f"{path}.name"))
    else:
        out += F.each_invalid(f"{path}.name", name, F.dns1123_label(name))
    if not c.get("image"):
        out.append(F.required(f"{path}.image"))
    policy = c.get("terminationMessagePolicy") or ""
    if not policy:
        out.append(F.required(f"{path}.terminationMessagePolicy", "must be 'File' or 'FallbackToLogsOnError'"))
    elif policy not in _TERMINATION:
        out.append(F.not_supported(f"{path}.terminationMessagePolicy", policy, _TERMINATION))
    out += _ports(c.get("ports") or [], f"{path}.ports")
    if c.get("env") or c.get("envFrom"):
        out += validate_env(c.get("env"), c.get("envFrom"), path)
    if "securityContext" in c:
        out += container_security(c["securityContext"], path)
    out += _mounts(c.get("volumeMounts") or [], volumes, f"{path}.volumeMounts")
    pull = c.get("imagePullPolicy") or ""
    if not pull:
        out.append(F.required(f"{path}.imagePullPolicy"))
    elif pull not in _PULL:
        out.append(F.not_supported(f"{path}.imagePullPolicy", pull, _PULL))
    out += _resources(c.get("resources") or {}, f"{path}.resources")
    if not init:
        for probe in ("livenessProbe", "readinessProbe", "startupProbe"):
            value = c.get(probe)
            if value is not None and isinstance(value, MAPPING):  # mostly absent: skip the ABC's check
                out += _probe(value, f"{path}.{probe}", must_succeed_once=probe != "readinessProbe")
    if name:
        if name in names:
            out.append(F.duplicate(f"{path}.name", name))
        names.add(name)
    return out


def _ports(ports: list[Any], path: str) -> list[Cause]:
    """``validateContainerPorts``."""
    out: list[Cause] = []
    names: set[str] = set()
    for here, port in F.items(ports, path):
        if port.get("name"):
            out += F.unique_name(f"{here}.name", port["name"], names, F.port_name)
        number = port.get("containerPort")
        if not number:
            out.append(F.required(f"{here}.containerPort"))
        else:
            out += F.each_invalid(f"{here}.containerPort", number, F.port_number(number))
        if port.get("hostPort"):
            out += F.each_invalid(f"{here}.hostPort", port["hostPort"], F.port_number(port["hostPort"]))
        protocol = port.get("protocol") or ""
        if not protocol:
            out.append(F.required(f"{here}.protocol"))
        elif protocol not in _PROTOCOLS:
            out.append(F.not_supported(f"{here}.protocol", protocol, _PROTOCOLS))
    return out


def _mounts(mounts: list[Any], volumes: set[str], path: str) -> list[Cause]:
    """``ValidateVolumeMounts``: a mount names a declared volume; mount paths are unique."""
    out: list[Cause] = []
    seen: set[str] = set()
    for here, mount in F.items(mounts, path):
        name, where = mount.get("name") or "", mount.get("mountPath") or ""
        if not name:
            out.append(F.required(f"{here}.name"))
        if name not in volumes:
            out.append(F.not_found(f"{here}.name", name))
        if not where:
            out.append(F.required(f"{here}.mountPath"))
        if where in seen:
            out.append(F.invalid(f"{here}.mountPath", where, "must be unique"))
        seen.add(where)
    return out


def _resources(resources: Mapping[str, Any], path: str) -> list[Cause]:
    """``ValidateResourceRequirements``: names, non-negative values, requests <= limits."""
    out: list[Cause] = []
    limits = resources.get("limits") or {}
    requests = resources.get("requests") or {}
    parsed: dict[tuple[str, str], Fraction] = {}
    for kind, values in (("limits", limits), ("requests", requests)):
        for name in sorted(values):
            here = f"{path}.{kind}[{name}]"
            if "/" not in name and name not in _STANDARD_RESOURCES and not name.startswith("hugepages-"):
                out.append(F.invalid(here, name, "must be a standard resource for containers"))
            try:
                amount = value_of(values[name])
            except QuantityError:
                continue
            parsed[(kind, name)] = amount
            if amount < 0:
                out.append(F.invalid(here, values[name], "must be greater than or equal to 0"))
    for name in sorted(requests):
        request, limit = parsed.get(("requests", name)), parsed.get(("limits", name))
        if request is None or limit is None:
            continue
        if request != limit and name not in _OVERCOMMIT:
            out.append(F.invalid(f"{path}.requests", requests[name],
                                 f"must be equal to {name} limit of {limits[name]}"))
        elif request > limit:
            out.append(F.invalid(f"{path}.requests", requests[name],
                                 f"must be less than or equal to {name} limit of {limits[name]}"))
    return out


def _probe(probe: Mapping[str, Any], path: str, *, must_succeed_once: bool) -> list[Cause]:
    """``validateProbe`` / ``validateHandler``: exactly one handler; liveness and startup succeed once."""
    out: list[Cause] = []
    handlers = [h for h in _HANDLERS if probe.get(h) is not None]
    if not handlers:
        out.append(F.required(path, "must specify a handler type"))
    for extra in handlers[1:]:
        out.append(F.forbidden(f"{path}.{extra}", "may not specify more than 1 handler type"))
    for key in ("initialDelaySeconds", "timeoutSeconds", "periodSeconds", "successThreshold", "failureThreshold"):
        out += F.nonnegative(f"{path}.{key}", probe.get(key))
    if must_succeed_once and probe.get("successThreshold") not in (None, 1):
        out.append(F.invalid(f"{path}.successThreshold", probe["successThreshold"], "must be 1"))
    return out


def _mapping(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, MAPPING) else {}


def validate_template(template: Any, path: str, *, restart: tuple[str, ...], owner: str = "") -> list[Cause]:
    """``ValidatePodTemplateSpec`` (the template's labels and annotations, its pod spec) plus the owner's
    rules (``ValidatePodTemplateSpecForReplicaSet`` and its DaemonSet twin: restartPolicy Always, no
    activeDeadlineSeconds; a StatefulSet's template is ``validate_statefulset_template``'s)."""
    if not isinstance(template, MAPPING):
        return [F.required(path)]
    key = (path, restart, owner)
    if _VALID.has(template, key):
        return []
    spec, meta = _mapping(template, "spec"), _mapping(template, "metadata")
    annotations = meta.get("annotations")
    out = F.labels_and_annotations(meta.get("labels"), annotations, path)
    out += pod_annotations(annotations, spec, f"{path}.annotations")
    out += validate_pod_spec(spec, f"{path}.spec")
    out += annotation_agreement(annotations, spec, f"{path}.spec")
    policy = spec.get("restartPolicy")
    if policy and policy in _RESTART and policy not in restart:
        out.append(F.not_supported(f"{path}.spec.restartPolicy", policy, restart))
    if owner and spec.get("activeDeadlineSeconds") is not None:
        out.append(F.forbidden(f"{path}.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {owner} is not "
                                                                     "Supported"))
    if not out:
        _VALID.add(template, key)
    return out


def validate_statefulset_template(template: Any, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpecForStatefulSet`` and the template rules of ``ValidateStatefulSetSpec``
    (pkg/apis/apps/validation/validation.go): the template's labels and annotations (pod-specific ones
    too), restartPolicy Always and no activeDeadlineSeconds -- never the pod spec.

    Why not the spec: upstream leaves it unchecked on purpose (its TODO: the containers mount the
    ``volumeClaimTemplates``, which are volumes only in the pods the controller makes), so the canonical
    StatefulSet -- a container mounting a claim template -- must be accepted; a wrong spec shows up as
    pods the controller cannot create, as on a real cluster.  (The selector-matches-labels rule is the
    caller's, shared with the other workloads.)"""
    if not isinstance(template, MAPPING):
        return [F.required(path)]
    spec, meta = _mapping(template, "spec"), _mapping(template, "metadata")
    out = F.labels_and_annotations(meta.get("labels"), meta.get("annotations"), path)
    out += pod_annotations(meta.get("annotations"), spec, f"{path}.annotations")
    policy = spec.get("restartPolicy") or ""
    if policy != "Always":
        out.append(F.not_supported(f"{path}.spec.restartPolicy", policy, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        out.append(F.forbidden(f"{path}.spec.activeDeadlineSeconds",
                               "activeDeadlineSeconds in StatefulSet is not Supported"))
    return out
