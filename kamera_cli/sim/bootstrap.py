"""Turning a validated scenario into a running simulation: registry, initial cluster, controllers.

Why a context manager: the containment that routes every Kubernetes client in the process to the
simulated API server must be in place before any controller module is imported (controllers often
build clients at import time), and must be removed — and the controllers' modules unloaded — when
the scenario is done, whatever happened.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import Any

from kamera_cli.adapters import VirtualClock, load_mapper, load_reconciler, run_mapper
from kamera_cli.adapters.kopf.events import load_kopf_operator
from kamera_cli.adapters.kopf.spawning import KopfDaemon, KopfTimer
from kamera_cli.adapters.metacontroller import ParentView, ResInfo, load_metacontroller, parse_manifest
from kamera_cli.adapters.program.factory import PROGRAM_KEY, load_program
from kamera_cli.adapters.sandbox.addresses import resolve_faked_hosts
from kamera_cli.adapters.sandbox.fakes import FakeSet, install_fakes
from kamera_cli.adapters.sandbox.fence import note_network_attempt
from kamera_cli.adapters.sandbox.loading import own_package
from kamera_cli.adapters.sandbox.process import ProcessView
from kamera_cli.adapters.sandbox.threads import refuse_thread_request
from kamera_cli.apiserver import ApiError, ApiServer, Registry, Snapshot
from kamera_cli.apiserver.storage.external import EXTERNAL_CRD, with_entries
from kamera_cli.apiserver.transports.containment import Containment, observe_refusals
from kamera_cli.apiserver.transports.services import install_routes
from kamera_cli.apiserver.transports.urllib3 import guard_requests
from kamera_cli.apiserver.validation.field_validation import dropped_fields
from kamera_cli.controlplane import PodRule, make_builtins
from kamera_cli.controlplane.cronjob import schedule_times
from kamera_cli.controlplane.volumes import default_storage_class
from kamera_cli.errors import EntrypointError, Problem, ScenarioError
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ConflictSpec, ControllerSpec, CrashSpec, Position, Scenario, StaleReadSpec
from kamera_cli.model.services import parse_url_pattern
from kamera_cli.sim.builtins import BuiltinFactory, builtin_wiring
from kamera_cli.sim.labels import Finding
from kamera_cli.sim.memo_keys import IndexReads
from kamera_cli.sim.model import KubeModel, object_names
from kamera_cli.sim.runtime import ControllerRuntime
from kamera_cli.sim.system_objects import seed_system_objects
from kamera_cli.sim.triggers import MapperError, MapperFailed, Triggers, Wiring

#: The namespaces every simulated cluster starts with.
BUILTIN_NAMESPACES = ("default", "kube-node-lease", "kube-public", "kube-system")
#: The virtual clock starts at 2026-01-01T00:00:00Z.
EPOCH = 1_767_225_600
#: The ``for`` kind of programs, sweeps and handlers: no object has it (their keys come from their mappers).
PROGRAM_KIND = KindRef("kamera.dev", "v1", "Program")

# a thread a reconcile started never reaches the simulated cluster (adapters/sandbox/threads.py says why)
guard_requests(refuse_thread_request)
# a connection the containment refuses is the running step's network attempt, even when it is caught
observe_refusals(note_network_attempt)


def _view(spec: ControllerSpec) -> ProcessView:
    """What the controller's code sees around it: its ``env``, its ``args`` and its files."""
    return ProcessView.in_pod(spec.env, spec.args, spec.files, processes_allowed=spec.processes_allowed)


def initial_snapshot(scenario: Scenario, registry: Registry, warnings: list[str] | None = None) -> Snapshot:
    """The cluster before any step: namespaces, CRDs and seed objects, created through the API.

    ``warnings`` receives one located line per field the API server dropped from a seed object
    (an unknown field: the real server's default ``fieldValidation=Warn`` answers with a warning too).
    """
    server = ApiServer(registry, Snapshot.empty(), now=lambda: EPOCH)
    problems: list[Problem] = []
    warnings = warnings if warnings is not None else []
    for ns in BUILTIN_NAMESPACES:
        server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for node in scenario.cluster.nodes:
        _create(server, node, scenario, "$.spec.cluster.nodes", problems)
    if "pvc-binder" in scenario.cluster.builtins and not any(o.get("kind") == "StorageClass" for o in scenario.seed):
        server.create(default_storage_class())  # what a cluster's installer provides
    for crd in scenario.crds:
        _create(server, crd, scenario, "$.spec.crds", problems)
    ordered = sorted(enumerate(scenario.seed), key=lambda e: (0 if e[1].get("kind") == "Namespace" else 1, e[0]))
    for i, obj in ordered:
        stored = _create(server, obj, scenario, f"seed[{i}]", problems)
        if stored is not None:
            pos = scenario.positions.get(f"seed[{i}]") or scenario.positions.get("$.spec.seed") or scenario.position
            where = f"{pos.file or scenario.file}:{pos.line}:{pos.column}"
            info = registry.lookup(str(obj.get("apiVersion", "")), str(obj.get("kind", "")))
            root = info.definition if info is not None and not info.custom else None
            for field_path in dropped_fields(registry.definitions, root, obj, stored):
                at = scenario.positions.get(f"seed[{i}]:{field_path}")
                here = f"{at.file or scenario.file}:{at.line}:{at.column}" if at else where
                warnings.append(f"{here}: {ObjectRef.of(obj)}: unknown field {field_path!r} was dropped by the "
                                "API server (a real one warns: fieldValidation=Warn); check its spelling")
    if problems:
        raise ScenarioError(problems)
    seed_system_objects(server, scenario.cluster, EPOCH)
    return server.snapshot


def _create(server: ApiServer, obj: Any, scenario: Scenario, path: str, problems: list[Problem]) -> Any:
    try:
        return server.create(dict(obj))
    except ApiError as exc:
        ref = ObjectRef.of(obj)
        pos = scenario.positions.get(path) or scenario.positions.get("$.spec.seed") or scenario.position
        json_path = "$.spec.seed" if path.startswith("seed[") else path
        problems.append(Problem(pos.file or scenario.file, pos.line, pos.column, json_path,
                                f"cannot create {ref}: {exc}",
                                "seed objects must be valid for the API server, as kubectl create would require"))
        return None


@dataclass
class Simulation:
    scenario: Scenario
    memoize: bool = True
    registry: Registry = field(init=False)
    model: KubeModel = field(init=False)
    runtimes: list[ControllerRuntime] = field(init=False, default_factory=list)
    _containment: Containment | None = field(init=False, default=None)
    _factories: list[Any] = field(init=False, default_factory=list)
    _fakes: FakeSet | None = field(init=False, default=None)
    #: takes the fakes by URL out of the transports' routes and the fence's names (sandbox/addresses.py)
    _unroute: Callable[[], None] | None = field(init=False, default=None)
    #: located warnings found while building the initial cluster (fields the server dropped)
    warnings: list[str] = field(init=False, default_factory=list)
    #: programs and sweeps start with the simulation (one request each)
    _program_seeds: list[tuple[str, str, str]] = field(init=False, default_factory=list)
    #: sweeps whose first tick comes some seconds after the start (``schedule``, ``firstTick: afterPeriod``)
    _first_ticks: dict[str, int] = field(init=False, default_factory=dict)
    #: the kopf operators' index reads (sim/memo_keys.py), shared by their controllers and the model
    _indices: IndexReads | None = field(init=False, default=None)

    def __enter__(self) -> Simulation:
        scenario = self.scenario
        # the external store's kind is served only where fakes keep state in it
        crds = (*scenario.crds, EXTERNAL_CRD) if scenario.fakes else scenario.crds
        # Pods are deleted gracefully whatever runs on their node (podStrategy.CheckGracefulDelete): without
        # the kubelet built-in a bound pod then stays Terminating, as on a cluster whose kubelet is gone
        self.registry = Registry.builtin().with_crds(crds)
        self.warnings.extend(scenario.notes)
        snapshot = initial_snapshot(scenario, self.registry, self.warnings)
        self._containment = Containment()
        self._containment.__enter__()
        try:
            self._build(snapshot)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _build(self, snapshot: Snapshot) -> None:
        scenario = self.scenario
        containment = self._containment
        assert containment is not None
        client = containment.api_client()
        base = Path(scenario.base_dir)
        wirings: list[Wiring] = []
        self._indices = IndexReads(self.registry, containment.bind)
        try:
            if scenario.fakes:
                # before the controllers: they bind what they call when they are imported.  What the
                # fakes store while imported is the external systems' state when the scenario starts.
                setup = ApiServer(self.registry, snapshot, now=lambda: EPOCH)
                containment.bind(setup)
                self._fakes = install_fakes(
                    ((f.replace, f.with_) for f in scenario.fakes if not f.url), base, scenario=scenario.name,
                    services=((f.url, f.with_, _where(f.position, scenario.file)) for f in scenario.fakes if f.url),
                    own_packages=_own_packages(scenario.controllers, base),
                    located={f.replace: _where(f.position, scenario.file) for f in scenario.fakes if not f.url})
                routes = [(parse_url_pattern(url), handler) for url, handler in self._fakes.services]
                self._unroute = _both(install_routes(routes), resolve_faked_hosts(p for p, _ in routes))
                snapshot = with_entries(snapshot, setup.snapshot)
            # Controllers' top-level code may call the API at import (discovery for a DynamicClient, a
            # lookup), and a kopf operator's start (login, then @kopf.on.startup) runs before its first
            # watch, as `kopf run` does: what they write is in the cluster the search starts from (a
            # startup handler that creates its CRDs, a namespace, a ConfigMap), each controller's start
            # seeing the writes of those listed before it.
            loading = ApiServer(self.registry, snapshot, now=lambda: EPOCH)
            containment.bind(loading)
            self._load(snapshot, client, base, wirings)
            snapshot = loading.snapshot
        finally:
            containment.bind(None)
        self._load_builtins(wirings)
        self._check_parts()
        self._finish(snapshot, wirings)

    def _check_parts(self) -> None:
        """A perturbation naming one part of a controller (``rmns/timer:cleanup``) names one that runs."""
        scenario = self.scenario
        names = [r.name for r in self.runtimes]
        p = scenario.perturbations
        problems = []
        specs: list[StaleReadSpec | CrashSpec | ConflictSpec] = [*p.stale_reads, *p.crashes, *p.conflicts]
        for spec in specs:
            if "/" in spec.controller and spec.controller not in names:
                owner = spec.controller.partition("/")[0]
                parts = ", ".join(repr(n) for n in names if n == owner or n.startswith(f"{owner}/"))
                pos = spec.position
                problems.append(Problem(pos.file or scenario.file, pos.line, pos.column, "$.spec.perturbations",
                                        f"controller {owner!r} has no part named {spec.controller!r}",
                                        f"it runs as {parts}" if parts else "it has no timers, daemons or parts"))
        if problems:
            raise ScenarioError(problems)

    def _load(self, snapshot: Snapshot, client: Any, base: Path, wirings: list[Wiring]) -> None:
        scenario = self.scenario
        containment = self._containment
        assert containment is not None
        for spec in scenario.controllers:
            if spec.metacontroller is not None:
                self._metacontroller(spec, client, base, wirings)
                continue
            factory: Any = None
            if spec.shape in ("program", "sweep", "handler"):
                self._load_program(spec, client, base, wirings)
                continue
            if spec.kopf is not None:
                factory = load_kopf_operator(spec.kopf, base, scenario=scenario.name, controller=spec.name,
                                             host=containment.host, env=_view(spec))
                if spec.for_kind is None:
                    kinds = self._kopf_resources(factory, spec)
                    if len(kinds) > 1:
                        self._kopf_parts(spec, factory, kinds, client, base, wirings)
                        continue
                    spec = replace(spec, for_kind=kinds[0])
            self._wire(spec, factory, client, base, wirings)

    def _kopf_parts(self, spec: Any, factory: Any, kinds: list[KindRef], client: Any, base: Path,
                    wirings: list[Wiring]) -> None:
        """A kopf operator whose handlers select several resources, without ``for:``: one controller per
        resource, named ``<name>/<Kind>`` as a metacontroller's parents are, each with its own copy of
        the operator's modules — what one entry per resource written by hand gives (docs/controllers.md)."""
        assert self._containment is not None
        host = self._containment.host
        counts = Counter(kind.kind for kind in kinds)
        labels = [kind.kind if counts[kind.kind] == 1 else f"{kind.kind}.{kind.group or 'core'}" for kind in kinds]
        names = [f"{spec.name}/{label}" for label in labels]
        for i, (kind, name) in enumerate(zip(kinds, names, strict=True)):
            part = replace(spec, name=name, for_kind=kind)
            own = factory if i == 0 else load_kopf_operator(
                spec.kopf, base, scenario=self.scenario.name, controller=part.name, host=host, env=_view(spec))
            own.other_parts = tuple(n for n in names if n != name)
            self._wire(part, own, client, base, wirings)

    def _wire(self, spec: Any, factory: Any, client: Any, base: Path, wirings: list[Wiring]) -> None:
        """One loaded controller (``factory`` is its kopf operator, or None for a reconciler) wired in."""
        scenario = self.scenario
        containment = self._containment
        assert containment is not None
        if spec.kopf is not None:
            self._factories.append(factory)
            factory.memory_owner = spec.name  # its objects' memos are kept in the explored state
        assert spec.for_kind is not None
        info = self.registry.lookup(spec.for_kind.api_version, spec.for_kind.kind)
        if info is None:
            raise ScenarioError([Problem(scenario.file, spec.position.line, spec.position.column,
                                         "$.spec.controllers", f"unknown kind {spec.for_kind}")])
        if spec.kopf is not None:
            if not factory.handles(info.group, info.version, info.plural, info.kind):
                raise EntrypointError(f"kopf operator {spec.kopf!r} has no handler for {spec.for_kind}",
                                      scenario=scenario.name, controller=spec.name,
                                      hint="'for' names the resource whose events the operator handles")
            candidates = [(i.group, i.version, i.plural, i.kind, i.namespaced) for i in self.registry.resources()
                          if "watch" in i.verbs or i.custom]
            factory.bind_resource(info.group, info.version, info.plural, info.kind, info.namespaced, candidates)
            assert self._indices is not None
            self._indices.add(spec.name, factory, spec.timeout)
        else:
            factory = load_reconciler(spec.entrypoint, base, scenario=scenario.name, controller=spec.name,
                                      env=_view(spec))
            self._factories.append(factory)
        watches = self._watches(spec, base)
        wirings.append(Wiring(spec.name, spec.for_kind, info.namespaced, frozenset(spec.owns), tuple(watches),
                              timer=factory.events if spec.kopf is not None else None))
        self.runtimes.append(ControllerRuntime(
            name=spec.name, for_kind=spec.for_kind, namespaced=info.namespaced,
            watched_kinds=tuple(sorted({*spec.owns, *(w.kind for w in spec.watches)})), factory=factory,
            registry=self.registry, bind=containment.bind, client=client,
            budget_seconds=spec.timeout, memoize=self.memoize and scenario.explore.memoize,
            **self._index_reader(spec),
        ))
        if spec.kopf is not None:
            self._kopf_timers(spec, factory, info.namespaced, client, wirings)

    def _watches(self, spec: Any, base: Path) -> list[tuple[KindRef, Any]]:
        watches: list[tuple[KindRef, Any]] = []
        for w in spec.watches:
            mapping: Any = w.map
            if w.map not in ("owner", "sameName", "namespace", "orphans", "all"):
                mapping = _sandboxed(load_mapper(w.map, base, scenario=self.scenario.name, controller=spec.name),
                                     spec.timeout)
            watches.append((w.kind, mapping))
        return watches

    def _metacontroller(self, spec: Any, client: Any, base: Path, wirings: list[Wiring]) -> None:
        """A metacontroller manifest: one controller per parent resource (a Decorator may have several),
        named ``<name>/<Kind>`` when there are several; its children's kinds are owned (docs/controllers.md)."""
        containment = self._containment
        assert containment is not None
        manifest = json.loads(spec.metacontroller_manifest)
        meta, _problems = parse_manifest(manifest, dict(spec.hooks))
        assert meta is not None, "the scenario loader checked the manifest"
        controller = load_metacontroller(meta, manifest, dict(spec.hooks), base, scenario=self.scenario.name,
                                         controller=spec.name, env=_view(spec), apply_strategy=spec.apply_strategy,
                                         field_manager=spec.ssa_field_manager)
        self._factories.append(controller)
        parents = controller.bind(_resolver(self.registry))
        owns = frozenset(KindRef(info.group, info.version, info.kind) for info in
                         (controller.resolve(c.api_version, c.resource) for c in meta.children) if info is not None)
        watches = self._watches(spec, base)
        for index, info in enumerate(parents):
            name = spec.name if len(parents) == 1 else f"{spec.name}/{info.kind}"
            factory: Any = controller if len(parents) == 1 else ParentView(controller, index)
            # the customize cache and the work queue's failure count per parent are explored state
            factory.memory_owner = name
            kind = KindRef(info.group, info.version, info.kind)
            # the parent's own events pass metacontroller's filter (selectors, ignoreStatusChanges)
            orphans = [(k, controller.orphan_parents(index)) for k in sorted(owns)]
            wirings.append(Wiring(name, kind, info.namespaced, owns | frozenset(spec.owns), (*watches, *orphans),
                                  timer=controller.parent_events(index)))
            self.runtimes.append(ControllerRuntime(
                name=name, for_kind=kind, namespaced=info.namespaced,
                watched_kinds=tuple(sorted({*owns, *spec.owns, *(w.kind for w in spec.watches)})),
                factory=factory,
                registry=self.registry, bind=containment.bind, client=client, budget_seconds=spec.timeout,
                memoize=self.memoize and self.scenario.explore.memoize,
            ))

    def _load_program(self, spec: Any, client: Any, base: Path, wirings: list[Wiring]) -> None:
        """A program, sweep or event handler: a controller of its own keys, woken by its watched kinds."""
        containment = self._containment
        assert containment is not None
        factory = load_program(spec.program or spec.handler, str(base), shape=spec.shape, every=spec.every,
                               scenario=self.scenario.name, controller=spec.name, env=_view(spec))
        self._factories.append(factory)
        factory.attach(containment, self.registry, spec.program_kinds)
        # a program memoises its own steps (adapters/program/memo.py): the runtime's memo replays a
        # reconcile's writes, not a program's new inputs
        factory.memoize = self.memoize and self.scenario.explore.memoize
        wirings.append(Wiring(spec.name, PROGRAM_KIND, False, frozenset(),
                              tuple((kind, factory.mapper(kind)) for kind in spec.program_kinds)))
        self.runtimes.append(ControllerRuntime(
            name=spec.name, for_kind=PROGRAM_KIND, namespaced=False, watched_kinds=tuple(spec.program_kinds),
            factory=factory, registry=self.registry, bind=containment.bind, client=client,
            budget_seconds=spec.timeout,
            memoize=self.memoize and self.scenario.explore.memoize and spec.shape != "program",
        ))
        if spec.shape != "handler":
            self._program_seeds.append((spec.name, "", PROGRAM_KEY))
        if spec.schedule is not None:
            schedule = spec.schedule

            def next_tick(after: float) -> float:
                return next(schedule_times(schedule, after, datetime.timezone.utc))

            factory.next_tick = next_tick
            self._first_ticks[spec.name] = math.ceil(next_tick(EPOCH) - EPOCH)
        elif spec.shape == "sweep" and spec.first_tick == "afterPeriod" and spec.every is not None:
            self._first_ticks[spec.name] = max(1, math.ceil(spec.every))

    def _kopf_timers(self, spec: Any, operator: Any, namespaced: bool, client: Any, wirings: list[Wiring]) -> None:
        """Each ``@kopf.timer`` and ``@kopf.daemon`` of the resource is a controller of its own,
        ``<name>/timer:<handler id>`` or ``<name>/daemon:<handler id>`` (docs/controllers.md)."""
        containment = self._containment
        assert containment is not None and spec.for_kind is not None
        for kind, cls in (("timer", KopfTimer), ("daemon", KopfDaemon)):
            for handler_id in operator.spawning_handlers(kind):
                factory = cls(operator, handler_id)
                name = f"{spec.name}/{kind}:{handler_id}"
                wirings.append(Wiring(name, spec.for_kind, namespaced, frozenset(), (), timer=factory.events))
                self.runtimes.append(ControllerRuntime(
                    name=name, for_kind=spec.for_kind, namespaced=namespaced, watched_kinds=(), factory=factory,
                    registry=self.registry, bind=containment.bind, client=client, budget_seconds=spec.timeout,
                    memoize=self.memoize and self.scenario.explore.memoize, **self._index_reader(spec),
                ))

    def _index_reader(self, spec: Any) -> dict[str, Any]:
        """A kopf controller's (or its timers') index reads: its steps index as its operator does."""
        if spec.kopf is None or self._indices is None or spec.name not in self._indices.readers:
            return {}
        return {"indices": self._indices, "index_owner": spec.name}

    def _load_builtins(self, wirings: list[Wiring]) -> None:
        """The scenario's built-in controllers, after its own (their names are reserved)."""
        cluster = self.scenario.cluster
        containment = self._containment
        assert containment is not None
        rules = [PodRule(r.selector, r.outcomes, r.namespaces, r.exit_code) for r in cluster.pod_rules]
        for ctrl in make_builtins(cluster.builtins, rules=rules, default_outcomes=cluster.pod_default,
                                  cronjob_runs=cluster.cronjob_runs):
            for_kind, namespaced, owns, watches = builtin_wiring(ctrl, self.registry)
            wirings.append(Wiring(ctrl.name, for_kind, namespaced, owns, watches))
            self.runtimes.append(ControllerRuntime(
                name=ctrl.name, for_kind=for_kind, namespaced=namespaced,
                watched_kinds=tuple(sorted({*owns, *(k for k, _ in watches)})), factory=BuiltinFactory(ctrl),
                registry=self.registry, bind=containment.bind, client=None,
                memoize=self.memoize and self.scenario.explore.memoize,
            ))

    def _kopf_resources(self, factory: Any, spec: Any) -> list[KindRef]:
        """The resources a kopf operator's handlers select, when the scenario does not name one."""
        infos = [i for i in self.registry.resources() if "watch" in i.verbs or i.custom]
        found = factory.handled_resources([(i.group, i.version, i.plural, i.kind, i.namespaced) for i in infos])
        # a versionless handler selects every served version: take the preferred (first) one per kind
        kinds: dict[tuple[str, str], KindRef] = {}
        for i in found:
            kinds.setdefault((infos[i].group, infos[i].kind), infos[i].kind_ref)
        if not kinds:
            # kopf would start, log that it cannot serve an unresolved resource, and handle nothing
            wanted = ", ".join(factory.selectors()) or "nothing"
            served = ", ".join(sorted(f"{i.group}/{i.version} {i.plural!r} ({i.kind})" for i in infos if i.custom))
            raise EntrypointError(
                f"kopf operator {spec.kopf!r} handles no resource of this scenario: its handlers select {wanted}; "
                f"the scenario's custom resources are {served or 'none'}",
                scenario=self.scenario.name, controller=spec.name,
                hint="kopf would run and handle nothing: compare the handlers' group and version with the CRDs "
                     "(or add the CRD that serves them)")
        return sorted(kinds.values(), key=lambda k: (k.group, k.kind))

    def _finish(self, snapshot: Snapshot, wirings: list[Wiring]) -> None:
        scenario = self.scenario
        triggers = Triggers(wirings)
        seed_requests: list[tuple[str, str, str]] = list(self._program_seeds)
        findings: list[Finding] = []
        for factory in self._factories:  # a kopf operator whose login or startup failed never starts
            failed = getattr(factory, "start_failure", None)
            if failed is not None:
                findings.append(Finding("controller-error", factory.controller, failed[0], failed[1]))
        for obj in snapshot.objects():
            try:
                requests = triggers.requests(None, obj, lambda kind, ns: object_names(snapshot, kind, ns))
            except MapperFailed as exc:  # a user's mapper failing on the initial list is a finding
                findings.append(Finding("controller-error", exc.controller,
                                        f"{exc} (on the initial list)"))
                continue
            for req in requests:
                if req not in seed_requests:
                    seed_requests.append(req)
        self.model = KubeModel(
            registry=self.registry, initial=snapshot, controllers=self.runtimes, triggers=triggers,
            actions=scenario.actions, perturbations=scenario.perturbations, seed_requests=seed_requests,
            start_clock=EPOCH, initial_findings=tuple(findings), first_ticks=self._first_ticks,
        )

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for factory in self._factories:
            with contextlib.suppress(Exception):  # unloading is best effort; never mask the real outcome
                factory.unload()
        self._factories.clear()
        if self._unroute is not None:
            self._unroute()
            self._unroute = None
        if self._fakes is not None:
            with contextlib.suppress(Exception):
                self._fakes.restore()
            self._fakes = None
        if self._containment is not None:
            self._containment.__exit__(exc_type, exc, tb)
            self._containment = None


def _both(first: Callable[[], None], second: Callable[[], None]) -> Callable[[], None]:
    def undo() -> None:
        first()
        second()

    return undo


def _own_packages(controllers: tuple[ControllerSpec, ...], base: Path) -> frozenset[str]:
    """The packages controllers named by module are loaded from, each a copy per controller."""
    return frozenset(filter(None, (own_package(entry, base) for c in controllers
                                   for entry in (c.kopf, c.program, c.entrypoint) if entry)))


def _where(position: Position, file: str) -> str:
    """``file:line`` of a scenario entry, for errors found when it is loaded."""
    return f"{position.file or file}:{position.line}" if position.line else (position.file or file)


def _resolver(registry: Registry) -> Any:
    """metacontroller's discovery: (apiVersion, Kind) or (apiVersion, plural resource) to a resource."""

    def resolve(api_version: str, name: str) -> ResInfo | None:
        group, _, version = api_version.rpartition("/")
        info = registry.lookup(api_version, name) or registry.lookup_plural(group, version, name)
        if info is None:
            return None
        return ResInfo(api_version, info.kind, info.plural, info.namespaced, info.has_status)

    return resolve


def _sandboxed(mapper: Any, budget: float) -> Any:
    """Run a user's watch mapper under the same sandbox and budget as a reconcile."""

    def call(obj: Any) -> list[tuple[str | None, str]]:
        out = run_mapper(mapper, dict(obj), budget_seconds=budget, clock=VirtualClock(float(EPOCH)),
                         seed=b"kamera-watch-mapper")
        if out.kind != "ok":
            err = out.error
            raise MapperError(f"{_mapper_site(mapper, err.traceback if err else '')}, called with "
                              f"{_object_label(obj)}: " + (f"{err.type_name}: {err.message}" if err else out.kind))
        return [(r.namespace, r.name) for r in out.requests]

    return call


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _mapper_site(mapper: Any, traceback_text: str) -> str:
    """``mapper maps.py:owner_of (at maps.py:12)``: the entry point, and where in it things went wrong."""
    frames = _FRAME.findall(traceback_text)
    at = f" (at {frames[-1][0]}:{frames[-1][1]})" if frames else ""
    return f"mapper {getattr(mapper, 'entrypoint', '?')}{at}"


def _object_label(obj: Any) -> str:
    try:
        return str(ObjectRef.of(obj))
    except Exception:  # an object the mapper was given is the cluster's: this is only for a message
        return "an object"
