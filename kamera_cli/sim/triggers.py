"""Which reconcile requests a write enqueues — the watch wiring of each controller.

Why a precomputed table: triggers run on every write of every step, so the per-kind lookups are
built once per scenario, and each write costs a couple of dict lookups.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.model.objects import KindRef

#: A mapper entry point: object -> (namespace, name) pairs.
Mapper = Callable[[Mapping[str, Any]], Iterable[tuple[str | None, str]]]
#: Lists the names of every object of a kind (in a namespace, or everywhere when None).
Lister = Callable[[KindRef, str | None], list[tuple[str, str]]]
#: How a change to an object reaches a timer-shaped controller: "reset" (re-arm it now), "spawn"
#: (start it only if it is not running), "stop" (end it now: its pending tick goes) or "" (not at all).
TimerEvents = Callable[[Mapping[str, Any] | None, Mapping[str, Any] | None], str]


@dataclass(frozen=True, slots=True)
class Wiring:
    controller: str
    for_kind: KindRef
    for_namespaced: bool
    owns: frozenset[KindRef]
    #: (kind, mapping) with mapping in owner | sameName | namespace | all | a mapper callable
    watches: tuple[tuple[KindRef, str | Mapper], ...]
    #: set for a timer-shaped controller (a kopf timer): which changes to its object reach it, and how
    timer: TimerEvents | None = None


class MapperError(Exception):
    """Raised by a sandboxed mapper call whose outcome was not a clean return (message says why)."""


class MapperFailed(Exception):
    """A user mapper raised or returned something that is not (namespace, name) pairs."""

    def __init__(self, controller: str, message: str) -> None:
        super().__init__(message)
        self.controller = controller


def _kind_of(obj: Mapping[str, Any]) -> KindRef:
    return KindRef.of(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))


def _owner_refs(obj: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    if not obj:
        return []
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return [r for r in refs if isinstance(r, Mapping)]


class Triggers:
    def __init__(self, wirings: Iterable[Wiring]) -> None:
        self._wirings = tuple(wirings)
        self._for: dict[KindRef, list[Wiring]] = {}
        self._owns: dict[KindRef, list[Wiring]] = {}
        self._watch: dict[KindRef, list[tuple[Wiring, str | Mapper]]] = {}
        for w in self._wirings:
            self._for.setdefault(w.for_kind, []).append(w)
            for k in w.owns:
                self._owns.setdefault(k, []).append(w)
            for k, mapping in w.watches:
                self._watch.setdefault(k, []).append((w, mapping))

    def requests(self, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                 lister: Lister, spawns: set[tuple[str, str, str]] | None = None,
                 stops: set[tuple[str, str, str]] | None = None) -> list[tuple[str, str, str]]:
        """(controller, namespace, name) requests one change to one object enqueues, deduplicated, in order.

        ``spawns`` collects the requests that only start a timer-shaped controller that is not
        running (they must not replace its pending tick); ``stops`` the ones that end it (its pending
        tick is dropped: they enqueue nothing).  Without ``stops`` a stop is left out.
        """
        obj = after if after is not None else before
        if obj is None:
            return []
        kind = _kind_of(obj)
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "")
        name = str(meta.get("name") or "")
        out = self._own_kind(kind, before, after, ns, name, spawns, stops)
        for w in self._owns.get(kind, ()):
            for version in (before, after):
                for ref in _owner_refs(version):
                    if ref.get("controller") and self._is_for(w, ref):
                        out.append((w.controller, ns if w.for_namespaced else "", str(ref.get("name", ""))))
        for w, mapping in self._watch.get(kind, ()):
            out.extend(self._mapped(w, mapping, before, after, ns, name, lister))
        seen: set[tuple[str, str, str]] = set()
        unique = []
        for r in out:
            if r not in seen and r[2]:
                seen.add(r)
                unique.append(r)
        return unique

    def listed(self, controller: str, snapshot_objects: Iterable[Mapping[str, Any]]) -> list[tuple[str, str]]:
        """(namespace, name) of the objects a restarted ``controller`` enqueues from its first list: its
        own kind's, each passed through its event filter as an added object (a metacontroller parent
        outside its selector is never enqueued, as at the start), sorted."""
        out: set[tuple[str, str]] = set()
        for obj in snapshot_objects:
            meta = obj.get("metadata") or {}
            ns, name = str(meta.get("namespace") or ""), str(meta.get("name") or "")
            requests = self._own_kind(_kind_of(obj), None, obj, ns, name)
            out.update((ns, name) for c, _ns, _n in requests if c == controller)
        return sorted(out)

    def _own_kind(self, kind: KindRef, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None,
                  ns: str, name: str, spawns: set[tuple[str, str, str]] | None = None,
                  stops: set[tuple[str, str, str]] | None = None) -> list[tuple[str, str, str]]:
        """The requests of the controllers *for* the object's kind, through their event filters
        (``requests`` says what ``spawns`` and ``stops`` collect)."""
        out: list[tuple[str, str, str]] = []
        for w in self._for.get(kind, ()):
            if w.timer is not None:
                mode = w.timer(before, after)
                if not mode:
                    continue
                if mode == "spawn" and spawns is not None:
                    spawns.add((w.controller, ns, name))
                elif mode == "stop":
                    if stops is None:
                        continue
                    stops.add((w.controller, ns, name))
            out.append((w.controller, ns, name))
        return out

    @staticmethod
    def _is_for(w: Wiring, ref: Mapping[str, Any]) -> bool:
        owner = KindRef.of(str(ref.get("apiVersion", "")), str(ref.get("kind", "")))
        return owner.kind == w.for_kind.kind and owner.group == w.for_kind.group

    def _mapped(self, w: Wiring, mapping: str | Mapper, before: Mapping[str, Any] | None,
                after: Mapping[str, Any] | None, ns: str, name: str, lister: Lister) -> list[tuple[str, str, str]]:
        target_ns = ns if w.for_namespaced else ""
        if mapping == "sameName":
            return [(w.controller, target_ns, name)]
        if mapping == "owner":
            return [
                (w.controller, target_ns, str(ref.get("name", "")))
                for version in (before, after)
                for ref in _owner_refs(version)
                if self._is_for(w, ref)
            ]
        if mapping == "orphans":
            # upstream's pod/ReplicaSet handlers: a controlled object goes to its controller only (the
            # ``owns`` wiring does that); an orphan to the controllers that could adopt it, here every
            # one in its namespace (a superset of those whose selector matches); a deleted orphan to none
            if after is None or any(r.get("controller") is True for r in _owner_refs(after)):
                return []
            return [(w.controller, n, m) for n, m in lister(w.for_kind, ns if w.for_namespaced else None)]
        if mapping == "namespace":
            return [(w.controller, n, m) for n, m in lister(w.for_kind, ns if w.for_namespaced else None)]
        if mapping == "all":
            return [(w.controller, n, m) for n, m in lister(w.for_kind, None)]
        assert callable(mapping)
        out = []
        for version in (before, after):
            if version is None:
                continue
            try:  # a framework's own mapper may ask for the lister too (metacontroller's orphans)
                lists: Any = mapping if getattr(mapping, "lists", False) else None
                pairs = list(lists(version, lister) if lists is not None else mapping(version))
            except Exception as exc:  # a user mapper's bug is a finding, not a kamera crash
                why = str(exc) if isinstance(exc, MapperError) else f"{type(exc).__name__}: {exc}"
                raise MapperFailed(w.controller, f"watch mapper of controller {w.controller!r} failed: {why}") from exc
            for pair in pairs:
                if (not isinstance(pair, (tuple, list)) or len(pair) != 2 or not isinstance(pair[1], str)
                        or not (pair[0] is None or isinstance(pair[0], str))):
                    raise MapperFailed(w.controller,
                                       f"watch mapper returned {pair!r}; expected (namespace, name) pairs")
                out.append((w.controller, pair[0] or "", pair[1]))
        return out
