"""Which kinds the simulated API server serves: built-ins from the shipped table, plus CRDs.

Why a table and not the live OpenAPI document: the package must not read ``../shared`` at run time,
and the simulator only needs names, scope, verbs, subresources, and per-definition required fields
and patch metadata (see ``scripts/gen_registry.py``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kamera_cli.model.objects import KindRef

if TYPE_CHECKING:
    from collections.abc import Callable

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
    return _FIELD_ALIASES.get(label, label)


@cache
def _builtin_table() -> dict[str, Any]:
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
    definition = _builtin_table()["definitions"].get(info.definition, {})
    return "spec" in definition.get("properties", {}) and info.has_status


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """One API group as discovery shows it: versions in priority order, the first preferred."""

    name: str
    versions: tuple[str, ...]

    @property
    def preferred(self) -> str:
        return self.versions[0]


class Registry:
    """An immutable set of served resources; ``with_crds`` returns a new one."""

    __slots__ = ("_by_kind", "_by_plural", "_crds", "_definitions", "_lookups", "_resources", "graceful_deletion")

    def __init__(self, resources: Iterable[ResourceInfo], definitions: Mapping[str, Any],
                 crds: tuple[Mapping[str, Any], ...] = (), *, graceful_deletion: bool = True) -> None:
        #: whether Pods bound to a node are deleted gracefully (``podStrategy.CheckGracefulDelete``):
        #: a cluster simulated without a kubelet has nothing that would finish their termination
        self.graceful_deletion = graceful_deletion
        self._resources = tuple(sorted(resources, key=lambda r: (r.group, version_priority(r.version), r.plural)))
        self._definitions = definitions
        self._crds = crds
        self._by_kind: dict[tuple[str, str], ResourceInfo] = {}
        self._by_plural: dict[tuple[str, str, str], ResourceInfo] = {}
        self._lookups: dict[tuple[str, str, str], Callable[[tuple[str, ...]], Any]] = {}
        for r in self._resources:
            self._by_kind.setdefault((r.api_version, r.kind), r)
            self._by_plural[(r.group, r.version, r.plural)] = r

    @classmethod
    def builtin(cls) -> Registry:
        return _builtin_registry()

    def with_crds(self, manifests: Iterable[Mapping[str, Any]]) -> Registry:
        from kamera_cli.apiserver.registry.crd import parse_crd

        added: list[ResourceInfo] = []
        seen = {(r.group, r.plural) for r in self._resources}
        manifests = tuple(manifests)
        for manifest in manifests:
            infos = parse_crd(manifest)
            key = (infos[0].group, infos[0].plural)
            if key in seen:
                from kamera_cli.apiserver.errors import CRDError

                raise CRDError(f"CustomResourceDefinition {manifest.get('metadata', {}).get('name')!r}: "
                               f"resource {infos[0].plural}.{infos[0].group} is already defined")
            seen.add(key)
            added.extend(infos)
        return Registry((*self._resources, *added), self._definitions, (*self._crds, *manifests),
                        graceful_deletion=self.graceful_deletion)

    def without_graceful_deletion(self) -> Registry:
        """The same served kinds, with every Pod deleted at once (no node agent will end its grace period)."""
        return Registry(self._resources, self._definitions, self._crds, graceful_deletion=False)

    @property
    def definitions(self) -> Mapping[str, Any]:
        """The built-in schema table (``definitions`` of builtin.json)."""
        return self._definitions

    @property
    def crds(self) -> tuple[Mapping[str, Any], ...]:
        return self._crds

    def lookup(self, api_version: str, kind: str) -> ResourceInfo | None:
        return self._by_kind.get((api_version, kind))

    def lookup_plural(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        return self._by_plural.get((group, version, plural))

    def lookup_ref(self, ref: KindRef) -> ResourceInfo | None:
        return self._by_kind.get((ref.api_version, ref.kind))

    def resources(self) -> tuple[ResourceInfo, ...]:
        """Every served resource, sorted by group, version priority and plural."""
        return self._resources

    def groups(self) -> tuple[GroupInfo, ...]:
        """Every group (core "" first), each with its versions in priority order."""
        versions: dict[str, set[str]] = {}
        for r in self._resources:
            versions.setdefault(r.group, set()).add(r.version)
        return tuple(GroupInfo(g, tuple(sorted(v, key=version_priority))) for g, v in sorted(versions.items()))

    def field_lookup(self, info: ResourceInfo) -> Callable[[tuple[str, ...]], Any]:
        """Patch metadata per field path, for strategic merge patch and server-side apply."""
        key = (info.group, info.version, info.plural)
        cached = self._lookups.get(key)
        if cached is not None:
            return cached
        from kamera_cli.apiserver.patch import functions as patching  # type: ignore[attr-defined,unused-ignore]

        if info.custom or info.definition is None:
            lookup: Callable[[tuple[str, ...]], Any] = patching.openapi_field_lookup(info.schema or {})
        else:
            lookup = patching.builtin_field_lookup(self._definitions, info.definition)
        self._lookups[key] = lookup
        return lookup

    def zero_fields(self, info: ResourceInfo) -> frozenset[tuple[str, ...]]:
        """Field paths (``f:<name>`` elements) that the kind's Go zero value has, for managedFields on create.

        The apiserver computes a create's managedFields by comparing the new object with the type's
        zero value, converted to unstructured: a struct field is always there (``spec``,
        ``spec.template``, ``spec.strategy``) and so is a field without ``omitempty`` (``containers``,
        as null), so they are not "added" and get no ``.`` of their own, while an ``omitempty`` field
        (``metadata.labels``, ``spec.strategy.rollingUpdate``) is.  Custom resources have no Go type:
        empty.
        """
        if info.custom or info.definition is None:
            return frozenset()
        return _zero_fields(self._definitions, str(info.definition))


_ZERO_DEPTH = 12  # a Go struct cannot hold itself by value; the bound only guards pointer cycles


def _zero_fields(definitions: Mapping[str, Any], root: str) -> frozenset[tuple[str, ...]]:
    hit = _ZERO.get((id(definitions), root))
    if hit is not None and hit[0] is definitions:
        return hit[1]
    out: set[tuple[str, ...]] = set()

    def walk(name: str, prefix: tuple[str, ...], stack: tuple[str, ...]) -> None:
        if name in stack or len(prefix) >= _ZERO_DEPTH:
            return
        for key, spec in ((definitions.get(name) or {}).get("properties") or {}).items():
            if "omit" in spec:
                continue  # omitempty (or an omitempty pointer): not in the zero value
            path = (*prefix, "f:" + key)
            out.add(path)
            ref = spec.get("ref")
            if isinstance(ref, str):
                walk(ref, path, (*stack, name))

    walk(root, (), ())
    result = frozenset(out)
    _ZERO[(id(definitions), root)] = (definitions, result)
    return result


_ZERO: dict[tuple[int, str], tuple[Mapping[str, Any], frozenset[tuple[str, ...]]]] = {}


@cache
def _builtin_registry() -> Registry:
    table = _builtin_table()
    infos = []
    for r in table["resources"]:
        subs = tuple(r["subresources"])
        infos.append(ResourceInfo(
            group=r["group"], version=r["version"], kind=r["kind"], plural=r["plural"], singular=r["singular"],
            namespaced=r["namespaced"], verbs=tuple(r["verbs"]), subresources=subs, has_status="status" in subs,
            custom=False, list_kind=r["listKind"], definition=r["definition"],
        ))
    return Registry(infos, table["definitions"])
