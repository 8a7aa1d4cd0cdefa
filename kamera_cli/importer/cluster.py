"""Objects printed by ``kubectl get -o yaml`` turned into a scenario's CRDs and seed.

Why a registry here: deciding whether a kind is namespaced, whether it exists at all, and which uid
the simulated API server will give an owner (its storage version is part of the uid) needs the
same answers the simulation will give, so the importer asks the API server layer's registry built
with the imported CRDs instead of guessing from the printed objects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.defaulting.metadata import make_uid
from kamera_cli.errors import KameraError, Problem, ScenarioError
from kamera_cli.importer.cleaning import Options, clean, is_deleting
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.scenario import BUILTIN_NAMESPACES
from kamera_cli.scenario.manifests import Located, Sources, check_manifest
from kamera_cli.scenario.yamldoc import Document

#: records of what happened, not state anything reconciles (and they carry server timestamps)
_EVENT_GROUPS = ("v1", "events.k8s.io/v1", "events.k8s.io/v1beta1")


@dataclass(frozen=True, slots=True)
class Seeded:
    """One cleaned object and where it was read (None for a Namespace the importer added)."""

    obj: dict[str, Any]
    ref: ObjectRef
    source: Located | None


@dataclass
class Imported:
    """The outcome of reading a cluster dump: CRDs, seed objects, and what was left out and why."""

    crds: list[Seeded] = field(default_factory=list)
    objects: list[Seeded] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    #: one line per kind of thing skipped or added, with counts (printed as notes)
    notes: list[str] = field(default_factory=list)
    registry: Registry = field(default_factory=Registry.builtin)

    def namespaced(self, api_version: str, kind: str, meta: Mapping[str, Any]) -> bool:
        info = self.registry.lookup(api_version, kind)
        if info is not None:
            return bool(info.namespaced)
        return bool(meta.get("namespace"))  # unknown kind: as printed

    def sim_uid(self, ref: ObjectRef) -> str | None:
        """The uid the simulated API server gives ``ref`` when the seed creates it (first incarnation).

        Mirrors ``ApiServer._ref`` (the storage version names the object) and ``semantics.make_uid``.
        """
        info = self.registry.lookup(ref.api_version, ref.kind)
        if info is None:
            return None
        version = info.storage_version or info.version
        api_version = f"{info.group}/{version}" if info.group else version
        return make_uid(api_version, info.kind, ref.namespace if info.namespaced else "", ref.name, 1)


def read_inputs(paths: Sequence[str], problems: list[Problem]) -> list[Located]:
    """Every object in the files and folders given (Lists flattened), located; problems for the rest."""
    found: list[Located] = []
    for path in paths:
        if not os.path.exists(path):
            problems.append(Problem(path, 0, 0, "$", "no such file or folder"))
            continue
        sources = Sources(Document(path, None, (0, 0)), os.getcwd(), "", problems)
        before = len(problems)
        items = sources.resolve(path, ())
        if not items and len(problems) == before:
            problems.append(Problem(path, 0, 0, "$", "holds no Kubernetes object",
                                    "give what kubectl get -o yaml prints, or a folder of manifests"))
        found.extend(items)
    return found


def _is_crd(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "CustomResourceDefinition" and str(obj.get("apiVersion", "")).startswith(
        "apiextensions.k8s.io/")


def _registry(crds: list[Seeded], problems: list[Problem]) -> Registry:
    registry = Registry.builtin()
    try:
        return registry.with_crds([c.obj for c in crds])
    except KameraError:
        pass
    for crd in crds:  # find the culprit(s) for located messages
        try:
            registry = registry.with_crds([crd.obj])
        except KameraError as exc:
            assert crd.source is not None
            problems.append(crd.source.problem((), f"invalid CustomResourceDefinition: {' '.join(str(exc).split())}"))
    return registry


def import_objects(paths: Sequence[str], namespaces: Sequence[str], options: Options) -> Imported:
    """Read, filter and clean; raises ``ScenarioError`` (exit 2) for input that cannot be read."""
    problems: list[Problem] = []
    located = read_inputs(paths, problems)
    checked = [(item, check_manifest(item, problems)) for item in located]
    if problems:
        raise ScenarioError(problems)
    result = Imported()
    crds = [Seeded(clean(i.obj, Options()), ObjectRef.of(i.obj), i) for i, _ in checked if _is_crd(i.obj)]
    result.crds = _unique(crds, result.warnings)
    result.registry = _registry(result.crds, problems)
    if problems:
        raise ScenarioError(problems)
    wanted = set(namespaces)
    skipped: dict[str, int] = {}
    kept: list[tuple[Located, ObjectRef, dict[str, Any]]] = []
    for item, kind in checked:
        if kind is None or _is_crd(item.obj):
            continue
        reason = _skip_reason(item, kind, result, wanted)
        if reason:
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        if is_deleting(item.obj):
            result.warnings.append(item.problem(("metadata", "deletionTimestamp"),
                                                "this object was being deleted; it is imported as a live object "
                                                "(a seed cannot start in deletion)"))
        kept.append((item, _ref(item.obj, kind, result), item.obj))
    objects = _unique([Seeded(clean(obj, options), ref, item) for item, ref, obj in kept], result.warnings)
    by_uid = {str(_meta(s.source.obj).get("uid")): s.ref for s in objects
              if s.source is not None and _meta(s.source.obj).get("uid")}
    for seeded in objects:
        _settle_references(seeded, objects, by_uid, result)
    result.objects = _add_namespaces(objects, result)
    unknown_kinds(result)
    for reason, count in sorted(skipped.items()):
        result.notes.append(f"skipped {count} object(s): {reason}")
    return result


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def _ref(obj: Mapping[str, Any], kind: KindRef, result: Imported) -> ObjectRef:
    meta = _meta(obj)
    namespace = ""
    if result.namespaced(kind.api_version, kind.kind, meta):
        namespace = str(meta.get("namespace") or "default")
    return ObjectRef(kind.api_version, kind.kind, namespace, str(meta.get("name") or ""))


def _skip_reason(item: Located, kind: KindRef, result: Imported, wanted: set[str]) -> str:
    meta = _meta(item.obj)
    if kind.kind == "Event" and kind.api_version in _EVENT_GROUPS:
        return "Events are records of what happened, not state to reconcile"
    if kind.api_version == "v1" and kind.kind == "Namespace":
        name = str(meta.get("name") or "")
        if name in BUILTIN_NAMESPACES:
            return f"the namespaces {', '.join(BUILTIN_NAMESPACES)} exist in every simulated cluster"
        if wanted and name not in wanted:
            return "Namespace not named by --namespace"
        return ""
    namespaced = bool(wanted) and result.namespaced(kind.api_version, kind.kind, meta)
    if namespaced and str(meta.get("namespace") or "default") not in wanted:
        return "in a namespace not named by --namespace"
    return ""


def _unique(items: list[Seeded], warnings: list[Problem]) -> list[Seeded]:
    """The first of objects printed twice (e.g. by two kubectl commands); a warning for the others."""
    first: dict[tuple[str, str, str, str], Seeded] = {}
    out: list[Seeded] = []
    for s in items:
        key = (s.ref.kind_ref.group, s.ref.kind, s.ref.namespace, s.ref.name)
        seen = first.get(key) if s.ref.name else None
        if seen is not None and seen.source is not None and s.source is not None:
            line = seen.source.doc.at(seen.source.path)[0]
            warnings.append(s.source.problem(("metadata", "name"), f"{s.ref} appears twice: the first one "
                                             f"({seen.source.doc.file}:{line}) is imported"))
            continue
        first[key] = s
        out.append(s)
    return out


def _find(objects: list[Seeded], by_uid: dict[str, ObjectRef], uid: Any, api_version: Any, kind: Any,
          namespace: str, name: Any) -> ObjectRef | None:
    if isinstance(uid, str) and uid in by_uid:
        return by_uid[uid]
    group = str(api_version or "").rpartition("/")[0]
    for s in objects:  # a hand-written reference without the live uid: by group, kind and name
        same = (s.ref.kind_ref.group, s.ref.kind, s.ref.name) == (group, kind, name)
        if same and (not s.ref.namespace or s.ref.namespace == namespace):
            return s.ref
    return None


def _settle_references(seeded: Seeded, objects: list[Seeded], by_uid: dict[str, ObjectRef],
                       result: Imported) -> None:
    """Point uids at the objects as the simulation will create them; drop references to absent ones.

    Why: the garbage collector matches owners by uid (as the real one does, garbagecollector.go
    ``attemptToDeleteItem``); a reference carrying the live cluster's uid is dangling in the
    simulation, and the collector would delete the dependent at the first step.
    """
    meta = _meta(seeded.obj)
    refs = meta.get("ownerReferences")
    if isinstance(refs, list):
        settled: list[Any] = []
        for i, owner in enumerate(refs):
            if not isinstance(owner, dict):
                settled.append(owner)
                continue
            found = _find(objects, by_uid, owner.get("uid"), owner.get("apiVersion"), owner.get("kind"),
                          seeded.ref.namespace, owner.get("name"))
            uid = result.sim_uid(found) if found is not None else None
            if uid is None:
                if seeded.source is not None:
                    result.warnings.append(seeded.source.problem(
                        ("metadata", "ownerReferences", i),
                        f"owner {owner.get('kind')} {owner.get('name')!r} is not among the imported objects: "
                        "reference dropped (a dangling one would make the garbage collector delete this object)",
                        "import the owner too to keep it"))
                continue
            settled.append({**owner, "uid": uid})
        if settled:
            meta["ownerReferences"] = settled
        else:
            meta.pop("ownerReferences", None)
    spec = seeded.obj.get("spec")
    claim = spec.get("claimRef") if isinstance(spec, dict) and seeded.ref.kind == "PersistentVolume" else None
    if isinstance(claim, dict):
        claim.pop("resourceVersion", None)
        found = _find(objects, by_uid, claim.get("uid"), "v1", "PersistentVolumeClaim",
                      str(claim.get("namespace") or ""), claim.get("name"))
        uid = result.sim_uid(found) if found is not None else None
        if uid is None:
            claim.pop("uid", None)  # pre-bound by name, as a user would write it
        else:
            claim["uid"] = uid


def _add_namespaces(objects: list[Seeded], result: Imported) -> list[Seeded]:
    """Every namespace an object lives in must exist: add the ones the dump did not include."""
    have = {s.ref.name for s in objects if s.ref.api_version == "v1" and s.ref.kind == "Namespace"}
    used = sorted({s.ref.namespace for s in objects if s.ref.namespace} - have - set(BUILTIN_NAMESPACES))
    added = [Seeded({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}},
                    ObjectRef("v1", "Namespace", "", ns), None) for ns in used]
    if used:
        result.notes.append(f"added {len(used)} Namespace(s) the objects live in: {', '.join(used)}")
    return added + objects


def unknown_kinds(result: Imported) -> None:
    """Warn once per kind neither built in nor defined by an imported CRD (kamera check refuses it)."""
    seen: set[KindRef] = set()
    for s in result.objects:
        kind = s.ref.kind_ref
        if kind in seen or result.registry.lookup(kind.api_version, kind.kind) is not None or s.source is None:
            continue
        seen.add(kind)
        result.warnings.append(s.source.problem(
            ("kind",), f"unknown kind {str(kind)!r}: not built in and no imported CustomResourceDefinition defines it",
            f"add its CRD to the inputs (kubectl get crd -o yaml), or to crds/ in the scenario; "
            f"kamera check refuses {kind.kind} objects until then"))
