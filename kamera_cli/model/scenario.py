"""A validated scenario, as frozen values.

Why a separate model: the YAML loader validates once (schema, files, kinds, expressions) and then
hands the runner this plain description, so nothing downstream re-validates or touches YAML.
Positions are kept so that reports can point at the line of the failing check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kamera_cli.model.objects import KindRef, Manifest, ObjectRef


@dataclass(frozen=True, slots=True)
class Position:
    """Where a node sits in its file (1-based line and column; 0 when unknown)."""

    file: str
    line: int = 0
    column: int = 0


@dataclass(frozen=True, slots=True)
class WatchSpec:
    kind: KindRef
    #: owner | sameName | namespace | all | module:function (a mapper entry point)
    map: str
    position: Position = Position("")


@dataclass(frozen=True, slots=True)
class ControllerSpec:
    name: str
    #: ``package.module:attr`` or ``relative/path.py:attr`` (relative to ``Scenario.base_dir``)
    entrypoint: str
    #: None only for a kopf operator whose ``for`` is derived from its handlers when it is loaded, and for a
    #: metacontroller manifest (its parent resource gives it)
    for_kind: KindRef | None
    owns: tuple[KindRef, ...] = ()
    watches: tuple[WatchSpec, ...] = ()
    #: wall-clock budget for one reconcile, in seconds
    timeout: float = 10.0
    position: Position = Position("")
    #: a kopf operator module (``operator.py`` or ``package.module``) instead of ``entrypoint``
    kopf: str | None = None
    #: environment variables set while the controller's code runs (its import included)
    env: tuple[tuple[str, str], ...] = ()
    #: a metacontroller CompositeController/DecoratorController manifest (path relative to the scenario)
    metacontroller: str | None = None
    #: the manifest as read (canonical JSON), with its hooks mapped to entry points (hook name, entry point)
    metacontroller_manifest: str = ""
    hooks: tuple[tuple[str, str], ...] = ()
    #: metacontroller's ``--apply-strategy`` (``dynamic-apply`` or ``server-side-apply``) and
    #: ``--apply-strategy-ssa-field-manager``, from the entry's ``applyStrategy`` and ``ssaFieldManager``
    apply_strategy: str = "dynamic-apply"
    ssa_field_manager: str = "metacontroller"
    #: a whole program (``main``, run until it blocks), or a sweep when ``every`` is set (docs/controllers.md)
    program: str | None = None
    #: an event handler ``handle(event_type, obj)`` called once per event of one watched object
    handler: str | None = None
    #: a sweep's period in virtual seconds: ``program``'s ``main()`` is called once per tick
    every: float | None = None
    #: the kinds a program or handler watches (its ``watches:`` list of plain kinds)
    program_kinds: tuple[KindRef, ...] = ()
    #: a program's, sweep's, handler's or metacontroller hook server's command line after its file
    #: (``sys.argv[1:]``); None for reconcilers and kopf operators, whose ``sys.argv`` is left alone
    args: tuple[str, ...] | None = None
    #: files the controller's code reads (``files:``): absolute path -> content, resolved when loaded
    files: tuple[tuple[str, bytes], ...] = ()
    #: a sweep run at the points of a cron expression (``schedule:``) instead of every ``every`` seconds
    schedule: str | None = None
    #: an ``every`` sweep's first tick: at the start (``start``) or one period later (``afterPeriod``); a
    #: ``schedule`` sweep's first tick is always its first schedule point after the start
    first_tick: Literal["start", "afterPeriod"] = "start"
    #: ``processes: allowed``: the controller's code may start processes (docs/controllers.md); else a
    #: process start is refused and is the step's finding
    processes_allowed: bool = False

    @property
    def shape(self) -> Literal["reconciler", "kopf", "metacontroller", "program", "sweep", "handler"]:
        """Which adapter runs this controller."""
        if self.kopf is not None:
            return "kopf"
        if self.metacontroller is not None:
            return "metacontroller"
        if self.handler is not None:
            return "handler"
        if self.program is not None:
            return "sweep" if self.every is not None or self.schedule is not None else "program"
        return "reconciler"


@dataclass(frozen=True, slots=True)
class ExploreBounds:
    max_depth: int = 50
    max_states: int = 100_000
    timeout_seconds: float = 600.0
    strategy: Literal["bfs", "dfs", "random"] = "bfs"
    #: memoize reconciles by what they read (turn off only to measure the baseline)
    memoize: bool = True
    #: partial-order reduction: "persistent" (one order of independent steps) or "none" (every order)
    reduction: Literal["persistent", "none"] = "persistent"
    #: strategy "random": the generator's seed and how many walks
    seed: int = 0
    walks: int = 100


@dataclass(frozen=True, slots=True)
class Expectations:
    converges: bool = True
    deterministic: bool = True
    #: True tolerates exceptions raised by controllers
    controller_errors: bool = False


@dataclass(frozen=True, slots=True)
class ExpectSpec:
    """Operators over the node list ``select`` returns; every key given must hold."""

    count: int | None = None
    min: int | None = None
    max: int | None = None
    exists: bool | None = None
    has_equals: bool = False
    equals: Any = None
    unique: bool | None = None
    matches: str | None = None


@dataclass(frozen=True, slots=True)
class InvariantSpec:
    name: str
    select: str
    expect: ExpectSpec
    when: Literal["converged", "always"] = "converged"
    for_each: str | None = None
    position: Position = Position("")
    #: "fail": selecting nothing in every evaluated state fails the check; "allowed": it may
    vacuous: Literal["fail", "allowed"] = "fail"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """An external write (a user acting on the cluster)."""

    name: str
    verb: Literal["apply", "replace", "delete", "patch"]
    #: converged | any | an int: after exactly that many steps
    at: Literal["converged", "any"] | int = "converged"
    #: apply / replace: the objects to apply or put whole; patch: nothing
    objects: tuple[Manifest, ...] = ()
    #: delete / patch: the target
    target: ObjectRef | None = None
    patch_type: Literal["merge", "json", "strategic", "apply"] = "merge"
    patch: Any = None
    position: Position = Position("")
    #: patch: "status" or "scale" to patch that subresource; "" for the object itself
    subresource: str = ""
    #: patch: the field manager the write is recorded under ("" = kamera's default for users)
    field_manager: str = ""
    #: patch type apply: take over conflicting fields
    force: bool = False
    #: ``mayFail``: a refusal is an acceptable outcome (the execution goes on): True for any code, or the codes
    may_fail: bool = False
    may_fail_codes: tuple[int, ...] = ()

    def refusal_allowed(self, status: int) -> bool:
        """Whether the API server refusing this action with ``status`` is one of its acceptable outcomes."""
        return self.may_fail and (not self.may_fail_codes or status in self.may_fail_codes)


def covers(named: str, controller: str) -> bool:
    """Whether a perturbation naming ``named`` applies to the running controller ``controller``.

    ``"*"`` covers every controller; a scenario controller's name covers every part it runs as —
    a kopf operator's timers and daemons (``rmns/timer:cleanup``), a metacontroller's parents
    (``name/Kind``) — and a part's full name covers that part alone.
    """
    return named in ("*", controller) or controller.startswith(f"{named}/")


@dataclass(frozen=True, slots=True)
class StaleReadSpec:
    controller: str  # a controller's name or "*"
    kinds: tuple[KindRef, ...] = ()  # empty: every kind it reads
    max_lag: int = 1
    position: Position = Position("")


@dataclass(frozen=True, slots=True)
class CrashSpec:
    controller: str
    after_writes: tuple[int, ...] = ()  # empty: every N from 0 to the reconcile's writes minus one
    max: int = 1
    position: Position = Position("")


@dataclass(frozen=True, slots=True)
class ConflictSpec:
    controller: str
    max: int = 1
    position: Position = Position("")


@dataclass(frozen=True, slots=True)
class Perturbations:
    stale_reads: tuple[StaleReadSpec, ...] = ()
    crashes: tuple[CrashSpec, ...] = ()
    conflicts: tuple[ConflictSpec, ...] = ()

    @property
    def any(self) -> bool:
        return bool(self.stale_reads or self.crashes or self.conflicts)


@dataclass(frozen=True, slots=True)
class PodRuleSpec:
    """Pods whose labels ``selector`` matches (in ``namespaces``, if any) end in one of ``outcomes``."""

    selector: Manifest
    outcomes: tuple[str, ...]
    namespaces: tuple[str, ...] = ()
    position: Position = Position("")
    #: what a failing container of such a pod exits with (``failed`` / ``crashLoop``), for podFailurePolicy
    exit_code: int = 1


@dataclass(frozen=True, slots=True)
class ClusterSpec:
    """The built-in control plane a scenario runs (``spec.cluster``; docs/builtins.md)."""

    #: the built-in controllers, by name, sorted (``all`` already expanded)
    builtins: tuple[str, ...] = ()
    #: Node objects created with the seed (``nodes: N`` gives N fake nodes)
    nodes: tuple[Manifest, ...] = ()
    #: what a pod no rule matches ends as (``default: {ready: true}`` is ``("ready",)``)
    pod_default: tuple[str, ...] = ("ready",)
    pod_rules: tuple[PodRuleSpec, ...] = ()
    position: Position = Position("")
    #: how many scheduled runs of each CronJob the cronjob built-in explores (its state-space bound)
    cronjob_runs: int = 2
    #: seed a fresh cluster's own objects: node Leases, and kube-root-ca.crt / the default ServiceAccount in
    #: every namespace when their built-ins run (``systemObjects``)
    system_objects: bool = True


@dataclass(frozen=True, slots=True)
class FakeSpec:
    """An external system's stand-in: what ``replace`` names is ``with_`` while the scenario runs; or,
    for a fake by URL, ``with_`` answers the HTTP requests whose URL ``url`` matches."""

    #: a dotted name: a module (``boto3``) or an attribute of one (``boto3.client``, ``requests.get``); "" for
    #: a fake by URL
    replace: str
    #: ``path.py:attr`` / ``package.module:attr`` (an object), or ``path.py`` / ``package.module`` (a module)
    with_: str
    position: Position = Position("")
    #: a fake by URL: the pattern (``model.services.UrlPattern``'s syntax); "" for a ``replace`` fake
    url: str = ""


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    #: the scenario file, as given (used in reports and JUnit ``file`` attributes)
    file: str
    #: folder that relative paths resolve against; also put on the import path
    base_dir: str
    controllers: tuple[ControllerSpec, ...]
    seed: tuple[Manifest, ...]
    crds: tuple[Manifest, ...] = ()
    description: str = ""
    explore: ExploreBounds = ExploreBounds()
    expect: Expectations = Expectations()
    invariants: tuple[InvariantSpec, ...] = ()
    actions: tuple[ActionSpec, ...] = ()
    perturbations: Perturbations = Perturbations()
    cluster: ClusterSpec = ClusterSpec()
    #: stand-ins for external systems (``spec.fakes``), in the order given
    fakes: tuple[FakeSpec, ...] = ()
    #: positions of notable nodes by JSONPath (e.g. "$.spec.expect.converges") for annotations
    positions: dict[str, Position] = field(default_factory=dict)
    position: Position = Position("")
    #: what loading changed or assumed that the result should say (a v1beta1 CRD served as v1)
    notes: tuple[str, ...] = ()
