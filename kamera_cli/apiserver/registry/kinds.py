"""Which kinds the simulated API server serves: built-ins from the shipped table, plus CRDs.

``Registry`` looks resources up by kind and by plural; the resource value and the built-in table
are ``resources.py``'s, CRD manifests are parsed by ``crd.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from kamera_cli.apiserver.registry.crd import parse_crd
from kamera_cli.apiserver.registry.resources import ResourceInfo, builtin_table, field_path, version_priority
from kamera_cli.model.objects import KindRef

__all__ = ["GroupInfo", "Registry", "ResourceInfo", "field_path", "version_priority"]


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
        #: whether Pods bound to a node are deleted gracefully (``podStrategy.CheckGracefulDelete``);
        #: always in a simulation, with or without the kubelet built-in (as upstream, whatever runs
        #: on the node); only unit harnesses that play the kubelet by hand turn it off
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
        """The same served kinds, with every Pod deleted at once: for unit harnesses that drive one
        built-in's sync by hand and play the kubelet's final delete themselves; never a simulation."""
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
    table = builtin_table()
    infos = []
    for r in table["resources"]:
        subs = tuple(r["subresources"])
        infos.append(ResourceInfo(
            group=r["group"], version=r["version"], kind=r["kind"], plural=r["plural"], singular=r["singular"],
            namespaced=r["namespaced"], verbs=tuple(r["verbs"]), subresources=subs, has_status="status" in subs,
            custom=False, list_kind=r["listKind"], definition=r["definition"],
        ))
    return Registry(infos, table["definitions"])
