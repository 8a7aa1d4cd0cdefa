"""The annotations a Pod (or pod template) carries that the API server validates: mirror pods, the pod
deletion cost, and the deprecated seccomp and AppArmor annotations -- their values, and their agreement
with the security-context fields that replaced them.

Why: controllers that scale down selectively write ``controller.kubernetes.io/pod-deletion-cost``
(a 32-bit integer, or the Pod is refused), and older manifests still carry the seccomp/AppArmor
annotations, which a real server checks against the fields.  Upstream
(pkg/apis/core/validation/validation.go): ``ValidatePodSpecificAnnotations``
(``GetDeletionCostFromPodAnnotations``, ``ValidateSeccompPodAnnotations``, ``ValidateSeccompProfile``,
``ValidateAppArmorPodAnnotations``, ``ValidateAppArmorProfileFormat``), ``validateSeccompAnnotationsAndFields``
and ``validateAppArmorAnnotationsAndFieldsMatchOnCreate``.  Annotations are visited in sorted order
(Go's map order is random).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

from kamera_cli.apiserver.errors import go_quote
from kamera_cli.apiserver.validation import field_errors as F
from kamera_cli.apiserver.validation.field_errors import Cause
from kamera_cli.model.objects import MAPPING

Obj = Mapping[str, Any]
_MIRROR = "kubernetes.io/config.mirror"
_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"
_SECCOMP_POD = "seccomp.security.alpha.kubernetes.io/pod"
_SECCOMP_CONTAINER = "container.seccomp.security.alpha.kubernetes.io/"
_APPARMOR = "container.apparmor.security.beta.kubernetes.io/"
_RELEVANT = (_MIRROR, _DELETION_COST, _SECCOMP_POD, _SECCOMP_CONTAINER, _APPARMOR)


def local_descending_path(target: str, path: str) -> list[Cause]:
    """``validateLocalDescendingPath``: relative, and no ``..`` element."""
    out = [F.invalid(path, target, "must be a relative path")] if target.startswith("/") else []
    if ".." in target.replace("\\", "/").split("/"):
        out.append(F.invalid(path, target, "must not contain '..'"))
    return out


def _seccomp_value(value: str, path: str) -> list[Cause]:
    """``ValidateSeccompProfile`` of an annotation value."""
    if value in ("runtime/default", "docker/default", "unconfined"):
        return []
    if value.startswith("localhost/"):
        return local_descending_path(value[len("localhost/"):], path)
    return [F.invalid(path, value, "must be a valid seccomp profile")]


def _containers(spec: Obj, path: str) -> Iterator[tuple[str, Obj]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from F.items(spec.get(key), f"{path}.{key}")


def _cost_valid(value: str) -> bool:
    """``GetDeletionCostFromPodAnnotations``: no '+', no leading zeros, a 32-bit integer."""
    if not value or not (value[0] == "-" or value == "0" or "1" <= value[0] <= "9"):
        return False
    if not re.fullmatch(r"-?[0-9]+", value):
        return False
    return -(2 ** 31) <= int(value) < 2 ** 31


def pod_annotations(annotations: Any, spec: Obj, path: str) -> list[Cause]:
    """``ValidatePodSpecificAnnotations`` at ``path`` (a Pod's ``metadata.annotations``, a template's
    ``…template.annotations``, as upstream's paths have it)."""
    if annotations is None or not isinstance(annotations, MAPPING) or not any(
            k.startswith(_RELEVANT) for k in annotations):
        return []
    out: list[Cause] = []
    if _MIRROR in annotations and not spec.get("nodeName"):
        out.append(F.invalid(f"{path}[{_MIRROR}]", annotations[_MIRROR],
                             "must set spec.nodeName if mirror pod annotation is set"))
    if _DELETION_COST in annotations and not _cost_valid(str(annotations[_DELETION_COST])):
        out.append(F.invalid(f"{path}[{_DELETION_COST}]", annotations[_DELETION_COST], "must be a 32bit integer"))
    if _SECCOMP_POD in annotations:
        out += _seccomp_value(str(annotations[_SECCOMP_POD]), f"{path}.{_SECCOMP_POD}")
    names = {str(c.get("name")) for _, c in _containers(spec, "")}
    for key in sorted(annotations):
        value = str(annotations[key])
        if key.startswith(_SECCOMP_CONTAINER):
            out += _seccomp_value(value, f"{path}.{key}")
        elif key.startswith(_APPARMOR):
            name = key[len(_APPARMOR):]
            if name not in names:
                out.append(F.invalid(f"{path}[{key}]", name, "container not found"))
            if value not in ("", "runtime/default", "unconfined") and not value.startswith("localhost/"):
                out.append(F.invalid(f"{path}[{key}]", value, f"invalid AppArmor profile name: {go_quote(value)}"))
    return out


def annotation_agreement(annotations: Any, spec: Obj, path: str) -> list[Cause]:
    """``validateSeccompAnnotationsAndFields`` and ``validateAppArmorAnnotationsAndFieldsMatchOnCreate``
    for the pod spec at ``path``."""
    if annotations is None or not isinstance(annotations, MAPPING) or not any(
            k.startswith(_RELEVANT) for k in annotations):
        return []
    return _seccomp_agreement(annotations, spec, path) + _apparmor_agreement(annotations, spec, path)


def _profile(context: Any, key: str) -> Obj | None:
    value = context.get(key) if isinstance(context, MAPPING) else None
    return value if isinstance(value, MAPPING) else None


def _seccomp_match(annotation: str, profile: Obj, path: str) -> Cause | None:
    """``validateSeccompAnnotationsAndFieldsMatch``."""
    kind = profile.get("type")
    if kind == "Unconfined" and annotation != "unconfined":
        return F.forbidden(f"{path}.type", "seccomp type in annotation and field must match")
    if kind == "RuntimeDefault" and annotation not in ("runtime/default", "docker/default"):
        return F.forbidden(f"{path}.type", "seccomp type in annotation and field must match")
    if kind == "Localhost":
        if not annotation.startswith("localhost/"):
            return F.forbidden(f"{path}.type", "seccomp type in annotation and field must match")
        if profile.get("localhostProfile") != annotation[len("localhost/"):]:
            return F.forbidden(f"{path}.localhostProfile", "seccomp profile in annotation and field must match")
    return None


def _seccomp_agreement(annotations: Obj, spec: Obj, path: str) -> list[Cause]:
    """``validateSeccompAnnotationsAndFields``: where a field and its annotation are both set, they agree."""
    out: list[Cause] = []
    pod = _profile(spec.get("securityContext"), "seccompProfile")
    if pod is not None and _SECCOMP_POD in annotations:
        found = _seccomp_match(str(annotations[_SECCOMP_POD]), pod, f"{path}.securityContext.seccompProfile")
        out += [found] if found else []
    for here, c in _containers(spec, path):
        own = _profile(c.get("securityContext"), "seccompProfile")
        key = _SECCOMP_CONTAINER + str(c.get("name"))
        if own is not None and key in annotations:
            found = _seccomp_match(str(annotations[key]), own, f"{here}.securityContext.seccompProfile")
            out += [found] if found else []
    return out


def _apparmor_agreement(annotations: Obj, spec: Obj, path: str) -> list[Cause]:
    """``validateAppArmorAnnotationsAndFieldsMatchOnCreate`` (Windows pods are skipped)."""
    if (spec.get("os") or {}).get("name") == "windows":
        return []
    out: list[Cause] = []
    pod = _profile(spec.get("securityContext"), "appArmorProfile")
    for here, c in _containers(spec, path):
        profile = _profile(c.get("securityContext"), "appArmorProfile") or pod
        key = _APPARMOR + str(c.get("name"))
        if profile is None or key not in annotations:
            continue
        annotation, at = str(annotations[key]), f"{here}.securityContext.appArmorProfile"
        kind = profile.get("type")
        if (kind == "Unconfined" and annotation != "unconfined") or (
                kind == "RuntimeDefault" and annotation != "runtime/default") or (
                kind == "Localhost" and not annotation.startswith("localhost/")):
            out.append(F.forbidden(f"{at}.type", "apparmor type in annotation and field must match"))
        elif kind == "Localhost" and profile.get("localhostProfile") != annotation[len("localhost/"):]:
            out.append(F.forbidden(f"{at}.localhostProfile", "apparmor profile in annotation and field must match"))
    return out
