"""The ``scale`` subresource: an autoscaling/v1 Scale view of a workload's replica count.

Why simulated: ``kubectl scale``-style controllers and autoscalers read and write replicas through it,
and the real server bumps the parent's generation exactly as a spec write would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kamera_cli.apiserver.registry.kinds import ResourceInfo

#: Where built-ins keep their replica counts and selectors.
_BUILTIN = {"spec": ".spec.replicas", "status": ".status.replicas", "selector": ".spec.selector"}


def _paths(info: ResourceInfo) -> tuple[str, str, str]:
    if info.scale is not None:
        return (info.scale["specReplicasPath"], info.scale["statusReplicasPath"],
                info.scale.get("labelSelectorPath", ""))
    return _BUILTIN["spec"], _BUILTIN["status"], _BUILTIN["selector"]


def _get(obj: Any, path: str) -> Any:
    for part in path.strip(".").split("."):
        if not isinstance(obj, Mapping):
            return None
        obj = obj.get(part)
    return obj


def _set(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with ``path`` set, copying only the dicts along the path."""
    head, _, rest = path.strip(".").partition(".")
    out = dict(obj)
    if rest:
        child = out.get(head)
        out[head] = _set(dict(child) if isinstance(child, Mapping) else {}, rest, value)
    else:
        out[head] = value
    return out


def selector_string(selector: Any) -> str:
    """``metav1.LabelSelector`` (or an RC's map) as the canonical selector string, sorted by key."""
    if not isinstance(selector, Mapping):
        return str(selector) if isinstance(selector, str) else ""
    if "matchLabels" not in selector and "matchExpressions" not in selector:
        return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))  # ReplicationController
    parts: list[tuple[str, str]] = []
    for key, value in (selector.get("matchLabels") or {}).items():
        parts.append((key, f"{key}={value}"))
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key", ""), expr.get("operator", ""), sorted(expr.get("values") or [])
        text = {"In": f"{key} in ({','.join(values)})", "NotIn": f"{key} notin ({','.join(values)})",
                "Exists": key, "DoesNotExist": f"!{key}"}.get(op, "")
        parts.append((key, text))
    return ",".join(text for _, text in sorted(parts))


def scale_of(info: ResourceInfo, obj: Mapping[str, Any]) -> dict[str, Any]:
    spec_path, status_path, selector_path = _paths(info)
    meta = obj.get("metadata") or {}
    out_meta = {k: meta[k] for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
                if k in meta}
    status: dict[str, Any] = {"replicas": _get(obj, status_path) or 0}
    selector = _get(obj, selector_path) if selector_path else None
    if selector is not None:
        text = selector_string(selector)
        if text:
            status["selector"] = text
    spec_replicas = _get(obj, spec_path)
    return {"kind": "Scale", "apiVersion": "autoscaling/v1", "metadata": out_meta,
            "spec": {"replicas": spec_replicas if spec_replicas is not None else 0}, "status": status}


def with_replicas(info: ResourceInfo, obj: Mapping[str, Any], replicas: Any) -> dict[str, Any]:
    return _set(dict(obj), _paths(info)[0], replicas)
