"""One served resource (``ResourceInfo``) and the shipped table of built-ins it is read from.

Why apart from ``kinds.py``: the ``Registry`` there parses CRDs (``crd.py``) into ``ResourceInfo``
values, so the value and the table live below both and neither imports the other in a circle.

Why a table and not the live OpenAPI document: the package must not read ``../shared`` at run time,
and the simulator only needs names, scope, verbs, subresources, and per-definition required fields
and patch metadata (see ``scripts/gen_registry.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from kamera_cli.model.objects import KindRef

_DATA = Path(__file__).resolve().parents[1] / "data" / "builtin.json"
_OMITEMPTY = _DATA.with_name("omitempty.json")

#: Field selectors the real apiserver supports per (group, plural), besides metadata.name/namespace.
_FIELD_LABELS: dict[tuple[str, str], frozenset[str]] = {
    ("", "pods"): frozenset({
        "spec.nodeName", "spec.restartPolicy", "spec.schedulerName", "spec.serviceAccountName",
        "spec.hostNetwork", "status.phase", "status.podIP", "status.nominatedNodeName",
    }),
    ("", "secrets"): frozenset({"type"}),
    ("", "namespaces"): frozenset({"status.phase"}),
    ("", "nodes"): frozenset({"spec.unschedulable"}),
    ("", "events"): frozenset({
        "involvedObject.kind", "involvedObject.namespace", "involvedObject.name", "involvedObject.uid",
        "involvedObject.apiVersion", "involvedObject.resourceVersion", "involvedObject.fieldPath",
        "reason", "reportingComponent", "source", "type",
    }),
    ("", "replicationcontrollers"): frozenset({"status.replicas"}),
    ("apps", "replicasets"): frozenset({"status.replicas"}),
    ("batch", "jobs"): frozenset({"status.successful"}),
    ("", "services"): frozenset({"spec.clusterIP", "spec.type"}),
    ("certificates.k8s.io", "certificatesigningrequests"): frozenset({"spec.signerName"}),
}
_BASE_FIELDS = frozenset({"metadata.name", "metadata.namespace"})
#: Field-selector labels whose value lives somewhere else in the object.
_FIELD_ALIASES = {"source": "source.component"}

#: Built-ins that keep metadata.generation although the rule below would not give it to them, and
#: those that do not although they have a spec and a status subresource (per the real strategies).
_NO_GENERATION = frozenset({("", "Namespace"), ("", "Node"), ("", "Service"), ("", "PersistentVolume"),
                            ("", "PersistentVolumeClaim"), ("", "ResourceQuota")})
_GENERATION = frozenset({("networking.k8s.io", "NetworkPolicy"), ("scheduling.k8s.io", "PriorityClass")})

_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """Sort key giving the Kubernetes version order: v2 > v1 > v1beta2 > v1beta1 > v1alpha1 > others."""
    m = _VERSION.match(version)
    if not m:
        return (3, 0, 0, version)
    major = int(m.group(1))
    level = {"": 0, "beta": 1, "alpha": 2}[m.group(2) or ""]
    minor = int(m.group(3) or 0)
    return (level, -major, -minor, version)


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    """One served resource (one group/version/plural)."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    namespaced: bool
    verbs: tuple[str, ...]
    subresources: tuple[str, ...]
    has_status: bool
    custom: bool
    list_kind: str
    definition: str | None = None  # built-ins: the schema definition name in builtin.json
    schema: Mapping[str, Any] | None = field(default=None, compare=False)  # CRDs: openAPIV3Schema
    storage_version: str = ""  # CRDs: the version objects are stored in ("" = this version)
    scale: Mapping[str, str] | None = field(default=None, compare=False)  # CRDs: subresources.scale paths
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    # Derived once (every write reads them several times): see the properties of the same names.
    _api_version: str = field(default="", init=False, repr=False, compare=False)
    _tracks_generation: bool = field(default=False, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_api_version", f"{self.group}/{self.version}" if self.group else self.version)
        object.__setattr__(self, "_tracks_generation", _tracks_generation(self))

    @property
    def kind_ref(self) -> KindRef:
        return KindRef(self.group, self.version, self.kind)

    @property
    def api_version(self) -> str:
        return self._api_version

    @property
    def tracks_generation(self) -> bool:
        """Custom resources, and built-ins with a spec (see docs/apiserver.md for the exact rule)."""
        return self._tracks_generation

    def field_labels(self) -> frozenset[str]:
        return _BASE_FIELDS | _FIELD_LABELS.get((self.group, self.plural), frozenset())


def field_path(label: str) -> str:
    """Where a field-selector label's value lives in the object."""
    return _FIELD_ALIASES.get(label, label)


@cache
def builtin_table() -> dict[str, Any]:
    """builtin.json, each property whose Go field is ``omitempty`` (and not a pointer) marked
    ``"omit": <category>`` from omitempty.json (scripts/gen_omitempty.py): the server never writes
    such a field at its zero value (``validation._prune`` drops it)."""
    with _DATA.open(encoding="utf-8") as fh:
        data: dict[str, Any] = json.load(fh)
    with _OMITEMPTY.open(encoding="utf-8") as fh:
        omitted: dict[str, dict[str, str]] = json.load(fh)["definitions"]
    definitions = data["definitions"]
    for name, fields in omitted.items():
        props = (definitions.get(name) or {}).get("properties") or {}
        for key, category in fields.items():
            if key in props:
                props[key] = {**props[key], "omit": category}
    return data


def _tracks_generation(info: ResourceInfo) -> bool:
    if info.custom:
        return True
    key = (info.group, info.kind)
    if key in _GENERATION:
        return True
    if key in _NO_GENERATION or info.definition is None:
        return False
    definition = builtin_table()["definitions"].get(info.definition, {})
    return "spec" in definition.get("properties", {}) and info.has_status
