"""Scenario in, result model out: load, explore, judge — and never print.

Why the runner owns the verdicts: the explorer only knows graphs and the simulator only knows
Kubernetes steps.  Turning "a bottom SCC without a converged state" into "converges: ✗ livelock,
here is the loop" — replayed once to make sure it is real — is the product's judgement, made here
once for the CLI, the pytest plugin and the library API alike.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, cast

import kamera_cli.explore as ex
from kamera_cli.adapters.sandbox.budget import LOAD_FACTOR, STRETCH_SECONDS
from kamera_cli.errors import EntrypointError, KameraError, ScenarioError
from kamera_cli.judging.statemap import record_graph
from kamera_cli.judging.story import steps_of
from kamera_cli.judging.verdicts import Judge, outcome_key, properties_of, scenario_verdict
from kamera_cli.model.result import (
    Check,
    CheckName,
    CheckResult,
    ConvergedState,
    ScenarioResult,
    Stats,
    Step,
    Verdict,
)
from kamera_cli.model.scenario import Scenario
from kamera_cli.sim.bootstrap import Simulation
from kamera_cli.sim.model import KubeModel
from kamera_cli.sim.model.unseen import unclocked_notes
from kamera_cli.sim.state import SimState
from kamera_cli.sim.symmetry import for_scenario as symmetry_for

#: (scenario name, states, depth, states per second, elapsed seconds)
ProgressCallback = Callable[[str, int, int, float, float], None]


@dataclass(frozen=True, slots=True)
class Overrides:
    """Command-line overrides of a scenario's exploration bounds."""

    max_depth: int | None = None
    max_states: int | None = None
    timeout: float | None = None
    memoize: bool | None = None
    #: every controller's per-reconcile budget (seconds), overriding their ``timeout``
    reconcile_timeout: float | None = None
    #: end the search at the first controller error or invariant violation (``--fail-fast``)
    stop_on_first: bool = False
    #: record at most this many states of the explored graph in the result (``--html``); 0: none
    graph_states: int = 0
    #: processes one breadth-first search is split across (``--workers`` with fewer scenarios)
    search_workers: int = 1
    #: ``(member, size)`` of a swarm (``--swarm``): this run is one of ``size`` seeded random searches
    #: of the scenario, with seed ``spec.explore.seed + member``; ``size`` 0 is no swarm
    swarm: tuple[int, int] = (0, 0)
    #: connections to search workers serving this run elsewhere (``serve_remote``, on Ray nodes), on
    #: top of ``search_workers``; a process that inherits them is their only user
    remote_workers: tuple[Any, ...] = ()
    #: Ray search workers asked for (``--workers`` under ``--ray``); fewer in ``remote_workers`` means the
    #: cluster could not place the rest, which the run's notes say
    remote_asked: int = 0
    #: keep every explored state in the returned search (False: states are let go of once expanded
    #: and derived again when the judge or a report reads one; what ``run_scenario`` does, as it
    #: returns the result alone)
    keep_states: bool = True


def _remote_shortfall(o: Overrides, used: int, unsplit: bool, strategy: str) -> list[str]:
    """Why fewer Ray workers took part than were asked for. Why say it: the verdict is the same, but a
    user who asked for a cluster's CPUs and got one process should not have to guess from the time."""
    asked = max(o.remote_asked, len(o.remote_workers))
    if unsplit:
        return [f"the {asked} Ray search worker(s) were let go: only a breadth-first search is split, "
                f"and this one is {strategy}"]
    if asked > used:
        return [f"{asked} Ray search worker(s) were asked for and {used} could be placed on the "
                "cluster in time (no free CPU): the search ran with "
                + (f"{used} of them" if used else "none of them, in this process alone")]
    return []


#: one run: a scenario file and the overrides it runs with (a swarm is several runs of one file)
Unit = tuple[Path, Overrides]


def units(files: Sequence[Path], overrides: Overrides, swarm: int = 0) -> list[Unit]:
    """The runs of a check: each file once, or ``swarm`` times as the members of a swarm.

    Why members are separate runs: each is a complete random search of its own, with a seed that
    does not depend on how many processes run them, so a swarm's results are the same with any
    ``--workers`` (and each member runs supervised, like any scenario).
    """
    if swarm <= 0:
        return [(f, overrides) for f in files]
    return [(f, replace(overrides, swarm=(member, swarm))) for f in files for member in range(swarm)]


@dataclass(frozen=True, slots=True)
class RunHooks:
    """What a supervisor needs to watch a run from outside (all optional, all cheap).

    Why callbacks and not return values: when user code kills the process mid-step, the only
    evidence left is what was reported *before* the step ran.
    """

    #: a phase begins: ("import" | "search" | "judge", scenario name, its wall-clock budget or None,
    #: how much longer than its budget it may take: for the search, the step running at its end
    #: (``step_allowance``); for judging, the search's duration)
    on_phase: Callable[[str, str, float | None, float], None] | None = None
    #: a step is about to run (its one-line description), called before any user code of the step
    on_step: Callable[[str], None] | None = None
    #: polled by the search: a reason (non-empty string) ends it early, verdicts inconclusive
    should_stop: Callable[[], str] | None = None


class _Observed:
    """The model as the search sees it, announcing each step before it runs."""

    def __init__(self, model: KubeModel, on_step: Callable[[str], None]) -> None:
        self._model = model
        self._on_step = on_step
        self.initial_states = model.initial_states
        self.fingerprint = model.fingerprint
        self.is_converged = model.is_converged
        self.actions = model.actions
        self.process = model.process
        # the reduction's time horizon and units: without them the supervised search deferred work
        # past a pending timer and weighed requests one by one (tests/e2e/test_observed_model.py)
        self.horizon = model.horizon
        self.unit = model.unit
        self.release = model.release
        self.pack = model.pack
        self.unpack = model.unpack

    def successor(self, state: SimState, act: Any) -> Any:
        self._on_step(act.describe())
        return self._model.successor(state, act)

    def footprint(self, state: SimState, act: Any, transition: ex.Transition[SimState]) -> ex.Footprint | None:
        if transition.settle is not None:
            # working out its clock window runs that step again at later instants: a worker that dies
            # there died in that step, not in the last one announced (``Transition.settle``)
            self._on_step(act.describe())
        return self._model.footprint(state, act, transition)


# ---------------------------------------------------------------------------- public API
def check(path: str | Path, *, overrides: Overrides | None = None) -> CheckResult:
    """Check one scenario file, or every scenario under a folder (the library form of ``kamera check``)."""
    return check_paths([Path(path)], overrides=overrides)


def check_paths(
    paths: Sequence[Path],
    *,
    overrides: Overrides | None = None,
    workers: int = 1,
    fail_fast: bool = False,
    on_progress: ProgressCallback | None = None,
    swarm: int = 0,
) -> CheckResult:
    """``swarm``: run each scenario as that many seeded random searches (see :func:`units`)."""
    from kamera_cli.scenario import discover

    files = discover(list(paths))
    runs = units(files, overrides or Overrides(), swarm)
    runs = [(f, split_workers(o, workers, len(runs))) for f, o in runs]
    results: list[ScenarioResult] = []
    if workers > 1 and len(runs) > 1:
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
            futures = [pool.submit(check_file, f, o) for f, o in runs]
            for fut in futures:
                res = fut.result()
                results.append(res)
                if fail_fast and res.verdict in (Verdict.FAILED, Verdict.ERROR):
                    for other in futures:
                        other.cancel()
                    break
    else:
        for f, o in runs:
            res = check_file(f, o, on_progress)
            results.append(res)
            if fail_fast and res.verdict in (Verdict.FAILED, Verdict.ERROR):
                break
    return CheckResult(tuple(dedupe_names(results)))


def split_workers(overrides: Overrides, workers: int, scenarios: int) -> Overrides:
    """``--workers N`` over fewer than N scenarios: the spare processes split each scenario's search."""
    if scenarios and workers > scenarios:
        return replace(overrides, search_workers=max(overrides.search_workers, workers // scenarios))
    return overrides


def check_file(path: Path, overrides: Overrides | None = None,
               on_progress: ProgressCallback | None = None, hooks: RunHooks | None = None) -> ScenarioResult:
    """Load and check one scenario file; a scenario that cannot load becomes an ERROR result."""
    from kamera_cli.scenario import load_scenario

    started = _now_iso()
    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        return ScenarioResult(name=run_label(path, overrides), file=str(path), verdict=Verdict.ERROR,
                              started_at=started,
                              error=str(exc), checks=(Check(CheckName.LOAD, Verdict.ERROR, _first_line(str(exc))),))
    return run_scenario(scenario, overrides=overrides, on_progress=on_progress, hooks=hooks)


def run_scenario(scenario: Scenario, *, overrides: Overrides | None = None,
                 on_progress: ProgressCallback | None = None, hooks: RunHooks | None = None) -> ScenarioResult:
    started = _now_iso()
    try:
        dropping = replace(overrides or Overrides(), keep_states=False)
        exploration = explore(scenario, overrides=dropping, on_progress=on_progress, hooks=hooks)
        exploration.search.close()  # a parallel search's workers: the result is built
    except (ScenarioError, EntrypointError) as exc:
        return ScenarioResult(name=scenario.name, file=scenario.file, verdict=Verdict.ERROR, started_at=started,
                              error=str(exc), description=scenario.description, position=scenario.position,
                              checks=(Check(CheckName.LOAD, Verdict.ERROR, _first_line(str(exc))),))
    return replace(exploration.result, started_at=started)


@dataclass(frozen=True)
class Exploration:
    """The lower-level outcome: the judged result plus the raw search (for tools and tests)."""

    result: ScenarioResult
    search: ex.SearchResult[SimState, Any]


def explore(scenario: Scenario, *, overrides: Overrides | None = None,
            on_progress: ProgressCallback | None = None, hooks: RunHooks | None = None) -> Exploration:
    """Explore one loaded scenario and judge every check; raises only for scenarios that cannot run."""
    o = overrides or Overrides()
    scenario = _as_run(scenario, o)
    bounds = scenario.explore
    member, size = o.swarm
    remote = o.remote_workers
    unsplit = bool(remote) and bounds.strategy != "bfs"
    if unsplit:  # only a breadth-first search is split: let them go
        for conn in remote:
            conn.close()
        remote = ()
    hooks = hooks or RunHooks()
    if hooks.on_phase is not None:
        hooks.on_phase("import", scenario.name, None, 0.0)
    with Simulation(scenario, memoize=bounds.memoize) as sim:
        model = sim.model
        sim.warnings.extend(_reduce(model, scenario))
        properties, coverage = properties_of(scenario)
        progress = None
        if on_progress is not None:
            def progress(p: ex.Progress) -> None:
                rate = p.states / p.elapsed if p.elapsed > 0 else 0.0
                on_progress(scenario.name, p.states, p.depth, rate, p.elapsed)
        started = time.monotonic()
        if hooks.on_phase is not None:
            hooks.on_phase("search", scenario.name, bounds.timeout_seconds, step_allowance(scenario))
        searched: Any = model if hooks.on_step is None else _Observed(model, hooks.on_step)
        search_workers = o.search_workers + len(remote)
        settings = replace(_settings(scenario, properties, sim), max_states=bounds.max_states,
                           timeout=bounds.timeout_seconds, on_progress=progress, should_stop=hooks.should_stop,
                           stop_on_first=o.stop_on_first, workers=search_workers, remote=remote,
                           keep_states=o.keep_states, rederive_around=_quietly(sim))
        model.share_labels = not settings.drops_states
        search = ex.search_with(searched, settings)
        if hooks.on_phase is not None:
            # replaying a counterexample re-runs steps the search ran: on a machine where those were
            # slow, so is judging (a kopf operator's 50-step paths at load: 31 s, past a fixed 30 s)
            hooks.on_phase("judge", scenario.name, None, time.monotonic() - started)
        judge = Judge(scenario, model, search, sim, coverage)
        checks = judge.checks()
        sim.warnings.extend(model.trace_notes())
        sim.warnings.extend(model.part_notes())
        elapsed = time.monotonic() - started
        work = (cast(list[list[tuple[int, int]]], list(search.worker_reports)) if search.worker_reports
                else [[(r.stats.executions, r.stats.memo_hits) for r in sim.runtimes]])
        stats = Stats(
            states=search.stats.states,
            transitions=search.stats.transitions,
            # a parallel search's workers report their own (worker 0 is this process)
            reconciles=sum(e for report in work for e, _h in report),
            memo_hits=sum(h for report in work for _e, h in report),
            max_depth=search.stats.max_depth_reached,
            converged_states=len(judge.converged_nodes),
            elapsed_seconds=elapsed,
            bound_hit=search.bound_hit or "",
            global_steps=search.stats.global_causes,
        )
        graph = None if o.graph_states <= 0 else record_graph(
            search, limit=o.graph_states, outcomes=judge.converged_nodes,
            highlighted=[p for c in checks for x in c.counterexamples for p in (x.nodes, x.alternative_nodes)])
        search.graph.prefetch_paths(judge.converged_nodes)  # labels let go of: derived in one batch
        converged = tuple(
            ConvergedState(
                fingerprint=search.state(n).snapshot.fingerprint(),
                objects=tuple(search.state(n).snapshot.objects()),
                path=steps_of([e.label for e in search.path_to(n)]),
            )
            for n in judge.converged_nodes
        )
    rederived = search.graph.remote if isinstance(search.graph.remote, ex.Rederive) else None
    if rederived is not None:
        search.graph.remote = None  # the simulation is closed: nothing can be derived any more
        if rederived.diverged:
            sim.warnings.append(
                f"{len(rederived.diverged)} state(s) read after the search (the first: state "
                f"{rederived.diverged[0]}) were derived again from their paths and came out different: "
                "a controller is not a function of the state it reads; what the reports show of them is "
                "the second run's")
    if remote:
        sim.warnings.append(f"the search was split across {search_workers} processes, {len(remote)} of them "
                            "remote (Ray): the same graph as one process builds")
    sim.warnings.extend(_remote_shortfall(o, len(remote), unsplit, bounds.strategy))
    if size:
        walked = f"swarm member {member + 1} of {size}: {bounds.walks} random walks from seed {bounds.seed}"
        sim.warnings.append(f"{walked}, which expanded every state they reached: exhaustive after all"
                            if search.complete else
                            f"{walked}, not exhaustive: a pass says only that these walks found nothing")
    verdict = scenario_verdict(checks)
    result = ScenarioResult(name=scenario.name, file=scenario.file, verdict=verdict, checks=tuple(checks),
                            stats=stats, converged=converged, description=scenario.description,
                            position=scenario.position, notes=tuple(sim.warnings), graph=graph)
    return Exploration(result, search)


def step_allowance(scenario: Scenario) -> float:
    """How long past the search's deadline the step running then may still take: the longest one
    step's call may take in wall time (its controller's budget, stretched on a loaded machine up to
    ``LOAD_FACTOR`` times: adapters/sandbox/budget.py), but never longer than the search's own
    timeout, so that a run ends within about twice the time the user gave it.

    Why the supervisor needs it: the search stops by itself only between steps, and a step that
    started before the deadline runs to its own end; killed before that, the worker loses
    everything the search found (a public kopf operator whose handler spun on a busy machine
    reported "211 states, 0 transitions, 0 reconciles" and none of its overruns).
    """
    longest = max((c.timeout for c in scenario.controllers), default=0.0)
    return min(LOAD_FACTOR * longest + STRETCH_SECONDS, scenario.explore.timeout_seconds)


def _as_run(scenario: Scenario, o: Overrides) -> Scenario:
    """The scenario as this run explores it: bounds overridden, a swarm member's strategy and seed."""
    bounds = scenario.explore
    bounds = replace(
        bounds,
        max_depth=o.max_depth if o.max_depth is not None else bounds.max_depth,
        max_states=o.max_states if o.max_states is not None else bounds.max_states,
        timeout_seconds=o.timeout if o.timeout is not None else bounds.timeout_seconds,
        memoize=o.memoize if o.memoize is not None else bounds.memoize,
    )
    if o.swarm[1]:
        bounds = replace(bounds, strategy="random", seed=bounds.seed + o.swarm[0])
        scenario = replace(scenario, name=_member_name(scenario.name, o.swarm, bounds.seed))
    scenario = replace(scenario, explore=bounds)
    if o.reconcile_timeout is not None:
        scenario = replace(scenario, controllers=tuple(replace(c, timeout=o.reconcile_timeout)
                                                       for c in scenario.controllers))
    return scenario


def _reduce(model: KubeModel, scenario: Scenario) -> list[str]:
    """Turn the model's reductions on as the scenario asks (footprints for the explorer's partial-order
    reduction, the symmetry of generated names); the notes that say what was kept out of them."""
    on = scenario.explore.reduction != "none"
    model.footprints = on
    model.trace_threads(on)
    timed = unclocked_notes(scenario)
    if timed:
        model.unclocked = False
    if not on:
        return timed
    model.symmetry, notes = symmetry_for(scenario)
    return timed + notes


def serve_remote(path: Path, overrides: Overrides, conn: Any) -> None:
    """Serve as a remote worker of ``path``'s search, run with ``overrides`` and coordinated at the
    other end of ``conn``: the same scenario, loaded here, gives the same model (docs/explorer.md)."""
    from kamera_cli.scenario import load_scenario

    scenario = _as_run(load_scenario(path), overrides)
    bounds = scenario.explore
    with Simulation(scenario, memoize=bounds.memoize) as sim:
        model = sim.model
        _reduce(model, scenario)
        properties, _coverage = properties_of(scenario)
        ex.serve_search(conn, model, _settings(scenario, properties, sim))


def _quietly(sim: Simulation) -> Callable[[Callable[[], list[Any]]], list[Any]]:
    """Deriving a dropped state or label again runs its path's steps once more, taking memo hits as
    the search did: they add nothing to the memo, and they do not count in the run's reconcile and
    memo figures, which describe the search (the same with states kept or not)."""
    def around(fetch: Callable[[], list[Any]]) -> list[Any]:
        saved = [(rt.rederiving, replace(rt.stats)) for rt in sim.runtimes]
        for rt in sim.runtimes:
            rt.rederiving = True
        try:
            return fetch()
        finally:
            for rt, (flag, stats) in zip(sim.runtimes, saved, strict=True):
                rt.rederiving, rt.stats = flag, stats
    return around


def _settings(scenario: Scenario, properties: Sequence[ex.Property[SimState]],
              sim: Simulation) -> ex.SearchSettings[SimState]:
    """The search settings a coordinator and its remote workers share, built the same way on both."""
    bounds = scenario.explore
    return ex.SearchSettings(
        properties=properties, strategy=bounds.strategy, max_depth=bounds.max_depth, reduction=bounds.reduction,
        seed=bounds.seed, walks=bounds.walks,
        worker_report=lambda: [(r.stats.executions, r.stats.memo_hits) for r in sim.runtimes])


def _member_name(name: str, swarm: tuple[int, int], seed: int | None) -> str:
    """A swarm member's result name: unique in the run, and saying which seed to rerun."""
    member, size = swarm
    return f"{name} [swarm {member + 1}/{size}" + (f", seed {seed}]" if seed is not None else "]")


def run_label(path: Path, overrides: Overrides | None) -> str:
    """A run's name before its file is read (a swarm member's says which member it is)."""
    label = scenario_label(path)
    return _member_name(label, overrides.swarm, None) if overrides is not None and overrides.swarm[1] else label


def scenario_label(path: Path) -> str:
    """A scenario's name before its file is read: its folder for ``scenario.yaml``, else the file stem."""
    return path.parent.name if path.name.startswith("scenario.") else path.stem


def dedupe_names(results: list[ScenarioResult]) -> list[ScenarioResult]:
    """metadata.name must be unique in a run: later duplicates become load errors."""
    seen: dict[str, str] = {}
    out = []
    for r in results:
        if r.verdict is not Verdict.ERROR and r.name in seen:
            msg = f"{r.file}: $.metadata.name: scenario name {r.name!r} is already used by {seen[r.name]}"
            out.append(ScenarioResult(name=r.name, file=r.file, verdict=Verdict.ERROR, error=msg,
                                      checks=(Check(CheckName.LOAD, Verdict.ERROR, msg),), started_at=r.started_at))
            continue
        seen.setdefault(r.name, r.file)
        out.append(r)
    return out


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else ""


def _now_iso() -> str:
    return datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


__all__ = ["Exploration", "KameraError", "Overrides", "Step", "check", "check_file", "check_paths", "explore",
           "outcome_key", "run_label", "run_scenario", "split_workers", "units"]
