"""Built-in controllers as explored actors: the glue between ``controlplane`` and the simulation.

Why they run as ``ControllerRuntime``s like users' controllers: that gives them, for free, the
watch-driven queue, memoisation by what they read, footprints for the search, and a place in every
counterexample's story.  What differs: they are trusted code, so they are called directly (no
sandbox, no HTTP client, no determinism re-run), and they are never perturbed by the scenario's
``"*"`` crashes, conflicts or stale reads (the control plane is not the code under test).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.adapters import ReconcileOutcome, Result
from kamera_cli.adapters.reconcile.running import ErrorInfo
from kamera_cli.apiserver import ApiError, ApiServer, Registry
from kamera_cli.apiserver.defaulting.metadata import format_time
from kamera_cli.controlplane import BuiltinController, ClusterError, Obj
from kamera_cli.controlplane.objects import controller_ref, labels, selector_is_empty, selector_matches
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.instants import ClockLog, Instant


@dataclass(frozen=True, slots=True)
class Claim:
    """One ``Cluster.claimable`` listing: what it matched by label, and whose controlled objects."""

    selector: Mapping[str, Any] | None
    controllers: tuple[str, ...]


class ServerCluster:
    """``controlplane.Cluster`` over one step's API server session: every call is an ordinary request."""

    def __init__(self, server: ApiServer, clock: int) -> None:
        self.server = server
        self._clock = clock
        #: the step asked for the time, to decide or to stamp (it is memoised per instant)
        self.read_clock = False
        #: the step asked for the time to decide something (``now``): its outcome may depend on
        #: when it runs; a stamp alone writes a timestamp, which fingerprints leave out
        self.compared_clock = False
        #: the listings the step made, per (kind, namespace): ``None`` when it listed everything,
        #: else the claims (selector, controller uids) it listed for (``Cluster.claimable``)
        self.listings: dict[tuple[KindRef, str], list[Claim] | None] = {}
        #: what the step compared the time with (sim/instants.py)
        self.clock_log = ClockLog()

    def _ref(self, api_version: str, kind: str, namespace: str, name: str) -> ObjectRef:
        return ObjectRef(api_version, kind, namespace, name)

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        try:
            return self.server.get(self._ref(api_version, kind, namespace, name))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise _refused(exc) from None

    def claimable(self, api_version: str, kind: str, namespace: str, selector: Mapping[str, Any] | None,
                  controllers: Sequence[str]) -> list[Obj]:
        key = (KindRef.of(api_version, kind), namespace)
        claims = self.listings.get(key, [])
        if claims is not None:  # a whole listing of the kind already covers this one
            self.listings[key] = [*claims, Claim(selector, tuple(controllers))]
        live = selector is not None and not selector_is_empty(selector)
        uids = set(controllers)
        return [o for o in self._list(api_version, kind, namespace)
                if (live and selector_matches(selector, labels(o))) or (controller_ref(o) or {}).get("uid") in uids]

    def _list(self, api_version: str, kind: str, namespace: str) -> list[Obj]:
        try:
            items = self.server.list_objects(KindRef.of(api_version, kind), namespace).get("items") or []
        except ApiError as exc:
            raise _refused(exc) from None
        out = []
        for obj in items:  # list items carry no kind on the wire; the controllers compare kinds
            obj.setdefault("apiVersion", api_version)
            obj.setdefault("kind", kind)
            out.append(obj)
        return out

    def list(self, api_version: str, kind: str, namespace: str = "") -> list[Obj]:
        self.listings[(KindRef.of(api_version, kind), namespace)] = None
        return self._list(api_version, kind, namespace)

    def create(self, obj: Mapping[str, Any]) -> Obj:
        try:
            if obj.get("kind") == "Binding":
                meta = obj.get("metadata") or {}
                ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
                resp = self.server.handle("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding", [],
                                          {"Content-Type": "application/json", "User-Agent": "kamera-scheduler"},
                                          _json(obj))
                if resp.status >= 400:
                    raise ApiError(resp.status, json.loads(resp.body))
                return dict(obj)
            return self.server.create(dict(obj))
        except ApiError as exc:
            raise _refused(exc) from None

    def update(self, obj: Mapping[str, Any], *, subresource: str = "") -> Obj:
        try:
            return self.server.update(dict(obj), subresource=subresource)
        except ApiError as exc:
            raise _refused(exc) from None

    def patch(self, api_version: str, kind: str, namespace: str, name: str, body: Any, *,
              patch_type: str = "merge", subresource: str = "") -> Obj:
        try:
            return self.server.patch(self._ref(api_version, kind, namespace, name), patch_type, body,
                                     subresource=subresource)
        except ApiError as exc:
            raise _refused(exc) from None

    def delete(self, api_version: str, kind: str, namespace: str, name: str, *,
               grace_period_seconds: int | None = None, preconditions_uid: str = "") -> None:
        ref = self._ref(api_version, kind, namespace, name)
        info = self.server.registry.lookup(api_version, kind)
        if info is None:
            raise ClusterError(404, "NotFound", f"no resource type for {api_version}/{kind}")
        body: dict[str, Any] = {"kind": "DeleteOptions", "apiVersion": "v1"}
        if grace_period_seconds is not None:
            body["gracePeriodSeconds"] = grace_period_seconds
        if preconditions_uid:
            body["preconditions"] = {"uid": preconditions_uid}
        base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        scope = f"/namespaces/{namespace}" if info.namespaced else ""
        resp = self.server.handle("DELETE", f"{base}{scope}/{info.plural}/{ref.name}", [],
                                  {"Content-Type": "application/json", "User-Agent": "kamera"}, _json(body))
        if resp.status >= 400:
            raise _refused(ApiError(resp.status, json.loads(resp.body)))

    def now(self) -> int:
        self.read_clock = True
        self.compared_clock = True
        return Instant.now(self._clock, self.clock_log)  # type: ignore[return-value]  # compares as the int

    def stamp(self) -> str:
        self.read_clock = True
        return format_time(self._clock)


def _json(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _refused(exc: ApiError) -> ClusterError:
    body = exc.body if isinstance(exc.body, Mapping) else {}
    return ClusterError(exc.status, str(body.get("reason", "")), str(body.get("message", exc)))


@dataclass
class BuiltinFactory:
    """Stands where a user's ``ReconcilerFactory`` stands in a ``ControllerRuntime``."""

    controller: BuiltinController
    builtin: bool = True
    relists: bool = False
    time_dependent: bool = False
    #: set by the last :meth:`invoke_native`: whether it read the clock (to stamp or to decide)
    read_clock: bool = field(default=False, init=False)
    #: set by the last :meth:`invoke_native`: whether it compared the clock (``Cluster.now``)
    compared_clock: bool = field(default=False, init=False)
    #: set by the last :meth:`invoke_native`: its listings (``ServerCluster.listings``)
    listings: Mapping[tuple[KindRef, str], Sequence[Claim] | None] = field(default_factory=dict, init=False)
    #: set by the last :meth:`invoke_native`: for how many later instants its outcome is certainly the
    #: same (None: unknown; sim/instants.py)
    stable_for: int | None = field(default=None, init=False)

    @property
    def for_kind(self) -> KindRef:
        return KindRef.of(self.controller.api_version, self.controller.kind)

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        return self.controller.choices(obj)

    def invoke_native(self, server: ApiServer, namespace: str, name: str, clock: int,
                      choice: str) -> ReconcileOutcome:
        cluster = ServerCluster(server, clock)
        try:
            outcome = self.controller.reconcile(cluster, namespace, name, choice)
        except ClusterError as exc:
            # a request the server refused that the controller does not handle: it retries (requeue)
            self.read_clock, self.compared_clock = cluster.read_clock, cluster.compared_clock
            self.listings = cluster.listings
            self.stable_for = cluster.clock_log.stable_for(clock, None)
            return ReconcileOutcome("api-error", result=Result(requeue=True),
                                    error=ErrorInfo("ApiException", exc.message, "", exc.status))
        self.read_clock, self.compared_clock = cluster.read_clock, cluster.compared_clock
        self.listings = cluster.listings
        after = outcome.requeue_after
        self.stable_for = cluster.clock_log.stable_for(clock, after)
        if isinstance(after, Instant):
            after = after.plain()
        return ReconcileOutcome("ok", result=Result(requeue_after=after, retry=outcome.retry))

    # what the simulation calls on every factory
    def reload(self) -> None:
        return None

    def unload(self) -> None:
        return None


def builtin_wiring(controller: BuiltinController, registry: Registry) -> tuple[
        KindRef, bool, frozenset[KindRef], tuple[tuple[KindRef, Any], ...]]:
    """(for kind, namespaced, owned kinds, watches) for the trigger table."""
    for_kind = KindRef.of(controller.api_version, controller.kind)
    info = registry.lookup(controller.api_version, controller.kind)
    namespaced = bool(info.namespaced) if info is not None else True
    owns = frozenset(KindRef.of(a, k) for a, k in controller.owns)
    watches = tuple((KindRef.of(w.api_version, w.kind), w.map) for w in controller.watches)
    return for_kind, namespaced, owns, watches


def sorted_builtins(controllers: Sequence[BuiltinController]) -> list[BuiltinController]:
    return sorted(controllers, key=lambda c: c.name)
