"""The discovery endpoints: ``/version``, ``/api``, ``/apis``, ``/api/v1``, ``/apis/{g}``, ``/apis/{g}/{v}``.

Why they matter: ``kubernetes.dynamic.DynamicClient`` builds its whole resource map from them
(``/version``, ``/apis``, ``/api/v1``, ``/apis/{g}/{v}``) before it sends a single object request,
and it only picks a version as preferred when the group's ``preferredVersion`` equals one of its
``versions`` entries exactly.  The documents are derived from the registry, so a CRD added to the
scenario shows up in discovery as it would on a real cluster.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

__all__ = ["SERVER_VERSION", "respond"]

JSONDict = dict[str, Any]

#: What ``GET /version`` answers: the Kubernetes release the built-in resource table was generated for.
SERVER_VERSION: JSONDict = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": "v1.37.0",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class ResourceInfoLike(Protocol):
    """The fields of ``registry.ResourceInfo`` discovery reads."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def singular(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...
    @property
    def verbs(self) -> Sequence[str]: ...
    @property
    def subresources(self) -> Sequence[str]: ...
    @property
    def custom(self) -> bool: ...


class RegistryLike(Protocol):
    def resources(self) -> Iterable[ResourceInfoLike]: ...


# Short names and categories of built-in resources (kubectl's aliases; real discovery publishes them).
_SHORT_NAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "componentstatuses"): ("cs",),
    ("", "configmaps"): ("cm",),
    ("", "endpoints"): ("ep",),
    ("", "events"): ("ev",),
    ("", "limitranges"): ("limits",),
    ("", "namespaces"): ("ns",),
    ("", "nodes"): ("no",),
    ("", "persistentvolumeclaims"): ("pvc",),
    ("", "persistentvolumes"): ("pv",),
    ("", "pods"): ("po",),
    ("", "replicationcontrollers"): ("rc",),
    ("", "resourcequotas"): ("quota",),
    ("", "serviceaccounts"): ("sa",),
    ("", "services"): ("svc",),
    ("apiextensions.k8s.io", "customresourcedefinitions"): ("crd", "crds"),
    ("apps", "daemonsets"): ("ds",),
    ("apps", "deployments"): ("deploy",),
    ("apps", "replicasets"): ("rs",),
    ("apps", "statefulsets"): ("sts",),
    ("autoscaling", "horizontalpodautoscalers"): ("hpa",),
    ("batch", "cronjobs"): ("cj",),
    ("certificates.k8s.io", "certificatesigningrequests"): ("csr",),
    ("events.k8s.io", "events"): ("ev",),
    ("networking.k8s.io", "ingresses"): ("ing",),
    ("networking.k8s.io", "networkpolicies"): ("netpol",),
    ("policy", "poddisruptionbudgets"): ("pdb",),
    ("scheduling.k8s.io", "priorityclasses"): ("pc",),
    ("storage.k8s.io", "storageclasses"): ("sc",),
}
_CATEGORY_ALL = frozenset({
    ("", "pods"), ("", "replicationcontrollers"), ("", "services"), ("apps", "daemonsets"),
    ("apps", "deployments"), ("apps", "replicasets"), ("apps", "statefulsets"),
    ("autoscaling", "horizontalpodautoscalers"), ("batch", "cronjobs"), ("batch", "jobs"),
})

# Subresources whose kind, group or verbs differ from "same kind, get/patch/update".
_SUBRESOURCES: dict[str, tuple[str, str, str, tuple[str, ...]]] = {
    # name: (kind, group, version, verbs); kind "" means the parent's kind
    "scale": ("Scale", "autoscaling", "v1", ("get", "patch", "update")),
    "status": ("", "", "", ("get", "patch", "update")),
    "log": ("", "", "", ("get",)),
    "exec": ("PodExecOptions", "", "", ("create", "get")),
    "attach": ("PodAttachOptions", "", "", ("create", "get")),
    "portforward": ("PodPortForwardOptions", "", "", ("create", "get")),
    "binding": ("Binding", "", "", ("create",)),
    "eviction": ("Eviction", "policy", "v1", ("create",)),
    "token": ("TokenRequest", "authentication.k8s.io", "v1", ("create",)),
    "finalize": ("", "", "", ("update",)),
    "approval": ("", "", "", ("get", "patch", "update")),
    "ephemeralcontainers": ("", "", "", ("get", "patch", "update")),
    "resize": ("", "", "", ("get", "patch", "update")),
}
_PROXY_VERBS = ("create", "delete", "get", "patch", "update")
_PROXY_KINDS = {"pods": "PodProxyOptions", "services": "ServiceProxyOptions", "nodes": "NodeProxyOptions"}

_VERSION_RE = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes' version order: GA before beta before alpha, higher numbers first, others last."""
    m = _VERSION_RE.match(version)
    if m is None:
        return (3, 0, 0, version)
    major = int(m.group(1))
    stage = {None: 0, "beta": 1, "alpha": 2}[m.group(2)]
    minor = int(m.group(3) or 0)
    return (stage, -major, -minor, version)


def _status(code: int, reason: str, message: str) -> JSONDict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": message, "reason": reason, "details": {}, "code": code}


def _resource_entries(infos: Sequence[ResourceInfoLike]) -> list[JSONDict]:
    entries: list[JSONDict] = []
    for info in infos:
        entry: JSONDict = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": bool(info.namespaced),
            "kind": info.kind,
            "verbs": sorted(info.verbs),
        }
        short = tuple(getattr(info, "short_names", ()) or ()) or _SHORT_NAMES.get((info.group, info.plural), ())
        if short:
            entry["shortNames"] = list(short)
        categories = tuple(getattr(info, "categories", ()) or ())
        if not categories and (info.group, info.plural) in _CATEGORY_ALL and not info.custom:
            categories = ("all",)
        if categories:
            entry["categories"] = list(categories)
        entries.append(entry)
        for sub in sorted(info.subresources):
            verbs: tuple[str, ...]
            if sub == "proxy":
                kind, group, version, verbs = _PROXY_KINDS.get(info.plural, info.kind), "", "", _PROXY_VERBS
            else:
                kind, group, version, verbs = _SUBRESOURCES.get(sub, ("", "", "", ("get", "patch", "update")))
            sub_entry: JSONDict = {
                "name": f"{info.plural}/{sub}",
                "singularName": "",
                "namespaced": bool(info.namespaced),
                "kind": kind or info.kind,
                "verbs": list(verbs),
            }
            if group:
                sub_entry["group"] = group
                sub_entry["version"] = version
            entries.append(sub_entry)
    entries.sort(key=lambda e: e["name"])
    return entries


class _Documents:
    """Every discovery document of one registry, computed once (registries are immutable)."""

    def __init__(self, registry: RegistryLike) -> None:
        by_gv: dict[tuple[str, str], list[ResourceInfoLike]] = {}
        custom_groups: set[str] = set()
        for info in registry.resources():
            by_gv.setdefault((info.group, info.version), []).append(info)
            if info.custom:
                custom_groups.add(info.group)
        self.resource_lists: dict[tuple[str, str], JSONDict] = {}
        for (group, version), infos in by_gv.items():
            self.resource_lists[(group, version)] = {
                "kind": "APIResourceList",
                "apiVersion": "v1",
                "groupVersion": f"{group}/{version}" if group else version,
                "resources": _resource_entries(infos),
            }
        versions_of: dict[str, list[str]] = {}
        for group, version in by_gv:
            versions_of.setdefault(group, []).append(version)
        self.core_versions = sorted(versions_of.pop("", []), key=_version_priority)
        self.groups: dict[str, JSONDict] = {}
        for group, versions in versions_of.items():
            entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in sorted(versions, key=_version_priority)]
            self.groups[group] = {
                "kind": "APIGroup",
                "apiVersion": "v1",
                "name": group,
                "versions": entries,
                "preferredVersion": dict(entries[0]),
            }
        # Built-in groups first, then the custom ones, each alphabetically (deterministic).
        order = sorted(self.groups, key=lambda g: (g in custom_groups, g))
        self.group_list: JSONDict = {
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": [{k: v for k, v in self.groups[g].items() if k not in ("kind", "apiVersion")} for g in order],
        }
        self.api_versions: JSONDict = {
            "kind": "APIVersions",
            "versions": self.core_versions or ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "10.96.0.1:443"}],
        }


_lock = threading.Lock()
_cache: dict[int, tuple[RegistryLike, _Documents]] = {}
_CACHE_SIZE = 32


def _documents(registry: RegistryLike) -> _Documents:
    key = id(registry)
    hit = _cache.get(key)
    if hit is not None and hit[0] is registry:
        return hit[1]
    docs = _Documents(registry)
    with _lock:
        if len(_cache) >= _CACHE_SIZE:
            _cache.pop(next(iter(_cache)))
        _cache[key] = (registry, docs)  # keeps the registry alive, so the id cannot be reused
    return docs


def respond(registry: RegistryLike, path: str) -> tuple[int, JSONDict] | None:
    """Answer a discovery request, or ``None`` when ``path`` is not a discovery path.

    Unknown groups or versions under ``/api`` and ``/apis`` answer 404 with a ``Status``.  The
    returned documents are shared between calls: serialise them, never mutate them.
    """
    parts = [p for p in path.split("/") if p]
    n = len(parts)
    if n == 0 or n > 3:
        return None
    head = parts[0]
    if head == "version":
        return (200, SERVER_VERSION) if n == 1 else None
    if head == "api":
        if n == 3:
            return None
        docs = _documents(registry)
        if n == 1:
            return 200, docs.api_versions
        found = docs.resource_lists.get(("", parts[1]))
        return (200, found) if found is not None else _not_found(path)
    if head == "apis":
        docs = _documents(registry)
        if n == 1:
            return 200, docs.group_list
        if n == 2:
            group_doc = docs.groups.get(parts[1])
            return (200, group_doc) if group_doc is not None else _not_found(path)
        found = docs.resource_lists.get((parts[1], parts[2]))
        return (200, found) if found is not None else _not_found(path)
    return None


def _not_found(path: str) -> tuple[int, JSONDict]:
    return 404, _status(404, "NotFound", "the server could not find the requested resource")
