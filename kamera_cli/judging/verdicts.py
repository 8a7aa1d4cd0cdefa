"""The verdicts: what the explored graph says about each check of a scenario.

Why apart from the runner: the runner drives a run (load, explore, report progress); judging turns
"a bottom SCC without a converged state" into "converges: ✗ livelock, here is the loop" — replayed
once to make sure it is real — and that is the product's judgement, large enough to be its own module.
"""


from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import kamera_cli.explore as ex
from kamera_cli.apiserver.storage.snapshot import digest_text, is_record, object_digest
from kamera_cli.invariants import compile_invariant, state_document, vacuity_hint
from kamera_cli.judging.diffs import created, diff
from kamera_cli.judging.statemap import node_ids
from kamera_cli.judging.story import replay_path, steps_of
from kamera_cli.model.result import (
    Check,
    CheckName,
    Counterexample,
    DiffEntry,
    SelectedNode,
    Verdict,
)
from kamera_cli.model.scenario import InvariantSpec, Position, Scenario
from kamera_cli.sim.bootstrap import Simulation
from kamera_cli.sim.labels import Finding
from kamera_cli.sim.model import KubeModel
from kamera_cli.sim.state import SimState
from kamera_cli.sim.stopping import FailedStop, GracefulStops
from kamera_cli.sim.symmetry import Symmetry, state_notes
from kamera_cli.sim.symmetry import for_scenario as symmetry_for


class Judge:
    def __init__(self, scenario: Scenario, model: KubeModel, search: ex.SearchResult[SimState, Any],
                 sim: Simulation, coverage: dict[str, _Coverage]) -> None:
        self.coverage = coverage
        self.scenario = scenario
        self.model = model
        self.search = search
        self.sim = sim
        #: outcomes are compared up to a renaming of generated names whether or not the search reduced
        #: by it (``reduction: none`` must report the same outcomes)
        self.symmetry = model.symmetry or symmetry_for(scenario)[0]
        # Distinct outcomes are distinct *clusters*: two converged states that differ only in
        # bookkeeping (perturbations used, timers) are one outcome.
        # Nor does metadata.generation make an outcome: like resourceVersion it counts history (created
        # with the final spec, or created and then updated), not what the cluster holds.
        self.converged_nodes: list[int] = []
        self.halted = sum(1 for n in search.converged if search.state(n).halted)
        seen: set[str] = set()
        for n in search.converged:
            state = search.state(n)
            if state.halted:
                continue
            key = outcome_key(state.snapshot, self.symmetry)
            if key in seen:
                continue
            seen.add(key)
            self.converged_nodes.append(n)
        self.incomplete = not search.complete
        self._replay_failures: list[Counterexample] = []

    def checks(self) -> list[Check]:
        s = self.scenario
        out: list[Check] = []
        if s.expect.converges:
            out.append(self._converges())
        if not s.expect.controller_errors:
            out.append(self._controller_errors())
        if s.actions:
            out.append(self._actions())
        for inv in s.invariants:
            out.append(self._invariant(inv))
        if s.expect.deterministic:
            # last, so that replay divergences seen while verifying the other checks are included
            out.insert(1 if s.expect.converges else 0, self._deterministic())
        return out

    def _pos(self, path: str) -> Position:
        return self.scenario.positions.get(path) or self.scenario.position

    # -- converges
    def _converges(self) -> Check:
        search, bound = self.search, self.scenario.explore.max_depth
        cexs: list[Counterexample] = []
        for ll in search.livelocks:
            labels = self._replayed([*ll.path, *ll.cycle])
            path, loop = labels[:len(ll.path)], labels[len(ll.path):]
            cexs.append(Counterexample(
                kind="livelock",
                summary=f"{len(ll.nodes)} state(s) that execution can never leave, none of them converged",
                steps=steps_of(path), loop=steps_of(loop, start=len(path) + 1),
                nodes=node_ids([*ll.path, *ll.cycle], ll.entry),
            ))
        for node in search.depth_cuts[:3]:
            edges = search.path_to(node)
            cexs.append(self._verified(Counterexample(
                kind="not-converged", summary=f"not converged within {bound} steps" + _retried(edges),
                steps=steps_of([e.label for e in edges]), nodes=node_ids(edges, node),
                details=self._pending_text(search.state(node)),
            ), edges))
        for node in search.deadlocks[:3]:
            edges = search.path_to(node)
            cexs.append(self._verified(Counterexample(
                kind="not-converged", summary="stuck: work is pending but nothing can run",
                steps=steps_of([e.label for e in edges]), details=self._pending_text(search.state(node)),
                nodes=node_ids(edges, node),
            ), edges))
        pos = self._pos("$.spec.expect.converges")
        if (cexs and not self.scenario.expect.controller_errors and not search.depth_cuts and not search.deadlocks
                and all(any(getattr(e.label, "error", "") for e in ll.cycle) for ll in search.livelocks)):
            # one exception, one finding: a controller that raises on every run never lets its
            # execution settle, and that is the error's story, told by 'no controller errors'
            return Check(CheckName.CONVERGES, Verdict.INCONCLUSIVE,
                         f"not checked: the only execution(s) that do not converge loop on a controller error "
                         f"({len(search.livelocks)} loop(s); see '{CheckName.NO_CONTROLLER_ERRORS}')", position=pos)
        if cexs:
            parts = []
            if search.livelocks:
                parts.append(f"{len(search.livelocks)} livelock(s)")
            if search.depth_cuts:
                parts.append(f"{len(search.depth_cuts)} execution(s) not converged within {bound} steps")
            if search.deadlocks:
                parts.append(f"{len(search.deadlocks)} stuck state(s)")
            return Check(CheckName.CONVERGES, Verdict.FAILED, ", ".join(parts), tuple(cexs), pos)
        if self.incomplete:
            return Check(CheckName.CONVERGES, Verdict.INCONCLUSIVE, f"search incomplete: {self.search.bound_hit}",
                         position=pos)
        if not self.converged_nodes and self.halted:
            return Check(CheckName.CONVERGES, Verdict.PASSED,
                         "every execution stops at a refused action (see actions apply)", position=pos)
        return Check(CheckName.CONVERGES, Verdict.PASSED,
                     f"every execution converges ({len(self.converged_nodes)} converged state(s))", position=pos)

    def _pending_text(self, state: SimState) -> str:
        items = [f"{p.controller} {p.request_text}" + (" (timer)" if p.ready_at > state.clock else "")
                 for p in state.pending]
        return "still pending: " + (", ".join(items) if items else "built-in actors' work")

    # -- deterministic
    def _deterministic(self) -> Check:
        pos = self._pos("$.spec.expect.deterministic")
        cexs: list[Counterexample] = []
        nodes = self.converged_nodes
        # outcomes the environment chose (a pod's fate) make different experiments: compare within each
        groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
        for n in nodes:
            groups.setdefault(self._fates(self.search.state(n)), []).append(n)
        split = next((g for g in groups.values() if len(g) > 1), None)
        if split is not None:
            a, b = split[0], split[1]
            pa, pb = self.search.path_to(a), self.search.path_to(b)
            sa, sb = self.search.state(a).snapshot, self.search.state(b).snapshot
            cexs.append(self._verified(Counterexample(
                kind="nondeterministic",
                summary=f"{len(split)} distinct converged states: the outcome depends on the order of steps"
                + (" (with the same pod outcomes)" if len(groups) > 1 else "")
                + (" and on when perturbations strike" if self.scenario.perturbations.any else "")
                + (" and on when actions are applied" if any(a.at != "converged" for a in self.scenario.actions)
                   else ""),
                steps=steps_of([e.label for e in pa]), alternative=steps_of([e.label for e in pb]),
                state_diff=_state_diff(sa, sb), nodes=node_ids(pa, a), alternative_nodes=node_ids(pb, b),
            ), pa, pb))
        for rec in self.search.findings:
            f = rec.finding
            if isinstance(f, Finding) and f.kind == "nondeterministic-controller":
                cexs.append(self._finding_cex(rec, "nondeterministic-controller"))
        cexs.extend(self._replay_failures)
        if cexs:
            msg = cexs[0].summary if len(cexs) == 1 else f"{len(cexs)} problems: " + cexs[0].summary
            return Check(CheckName.DETERMINISTIC, Verdict.FAILED, msg, tuple(cexs), pos)
        if self.incomplete:
            return Check(CheckName.DETERMINISTIC, Verdict.INCONCLUSIVE, f"search incomplete: {self.search.bound_hit}",
                         position=pos)
        if not nodes:
            return Check(CheckName.DETERMINISTIC, Verdict.PASSED,
                         "no execution converged, so no two outcomes differ (see converges)", position=pos)
        if len(groups) > 1:
            return Check(CheckName.DETERMINISTIC, Verdict.PASSED,
                         f"every execution converges to the same state for the same pod outcomes "
                         f"({len(groups)} outcome combinations)", position=pos)
        return Check(CheckName.DETERMINISTIC, Verdict.PASSED, "every execution converges to the same state",
                     position=pos)

    def _fates(self, state: SimState) -> tuple[tuple[str, str], ...]:
        """The pod fates the environment chose, up to a renaming of generated names (which pod failed
        is not the experiment; how many of which template did is)."""
        if not state.outcomes:
            return ()
        sym = self.symmetry
        canon = sym.canon(state.snapshot, state_notes(state, sym.generated(state.snapshot)))
        return tuple(sorted((canon.rename(k), v) for k, v in state.outcomes))

    # -- controller errors
    def _controller_errors(self) -> Check:
        pos = self._pos("$.spec.expect.controllerErrors")
        cexs = [Counterexample(kind="controller-error", summary=f.message, details=f.detail)
                for f in self.model.initial_findings]
        cexs += [self._finding_cex(rec, "controller-error") for rec in self.search.findings
                 if isinstance(rec.finding, Finding) and rec.finding.kind == "controller-error"]
        cexs += self._stop_cexs()
        if cexs:
            return Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.FAILED, cexs[0].summary, tuple(cexs), pos)
        if self.incomplete:
            return Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.INCONCLUSIVE,
                         f"search incomplete: {self.search.bound_hit}", position=pos)
        return Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.PASSED, "no reconcile raised", position=pos)

    def _actions(self) -> Check:
        pos = self._pos("$.spec.actions")
        cexs = [self._finding_cex(rec, "action-failed") for rec in self.search.findings
                if isinstance(rec.finding, Finding) and rec.finding.kind == "action-failed"]
        if cexs:
            return Check("actions apply", Verdict.FAILED, cexs[0].summary, tuple(cexs), pos)
        total = len(self.scenario.actions)
        # an action step is the only one that moves a state's next_action on, by one: the furthest an
        # execution got is the furthest action step recorded (read off the edges, not every state)
        applied = max((a.index + 1 for a in self.search.graph.e_action if a.kind == "action"), default=0)
        if applied < total:
            pending = self.scenario.actions[applied]
            return Check("actions apply", Verdict.INCONCLUSIVE,
                         f"action {pending.name!r} was never reached: no execution got there "
                         f"({'the search stopped early' if self.incomplete else 'see converges'})", position=pos)
        if self.incomplete:
            return Check("actions apply", Verdict.INCONCLUSIVE, f"search incomplete: {self.search.bound_hit}",
                         position=pos)
        if any(a.may_fail for a in self.scenario.actions):  # some executions may have had an allowed refusal
            return Check("actions apply", Verdict.PASSED, f"all {total} action(s) applied, or were refused as "
                         "their mayFail allows", position=pos)
        return Check("actions apply", Verdict.PASSED, f"all {total} action(s) applied without an error", position=pos)

    def _stop_cexs(self) -> list[Counterexample]:
        """Operators whose cleanup handlers fail when they stop where an execution converged
        (sim/stopping.py): one counterexample per distinct failure, at the first such state found."""
        stops = GracefulStops(self.model)
        if not stops.any:
            return []
        first: dict[tuple[str, str, str], tuple[int, FailedStop]] = {}
        counts: dict[tuple[str, str, str], int] = {}
        for node in self.search.converged:
            state = self.search.state(node)
            if state.halted:
                continue
            for failed in stops.failures(state):
                key = failed.finding.key
                first.setdefault(key, (node, failed))
                counts[key] = counts.get(key, 0) + 1
        out = []
        for key, (node, failed) in first.items():
            edges = self.search.path_to(node)
            more = f" (at {counts[key]} converged states)" if counts[key] > 1 else ""
            out.append(Counterexample(kind="controller-error", summary=failed.finding.message.splitlines()[0] + more,
                                      steps=steps_of([*(e.label for e in edges), failed.label]),
                                      nodes=node_ids(edges, node)))
        return out

    def _finding_cex(self, rec: ex.FindingRecord[Any], kind: str) -> Counterexample:
        f = rec.finding
        assert isinstance(f, Finding)
        edges = [*self.search.path_to(rec.node), rec.edge]
        more = f" (seen {rec.count} times)" if rec.count > 1 else ""
        steps = steps_of([e.label for e in edges])
        # the failing step carries the traceback; repeat details only when the step does not show them
        details = "" if steps and f.detail and steps[-1].error == f.detail else f.detail
        return Counterexample(kind=kind, summary=f.message.splitlines()[0] + more, steps=steps, details=details,
                              nodes=node_ids(edges))

    # -- invariants
    def _invariant(self, spec: InvariantSpec) -> Check:
        name, position = spec.name, spec.position
        check_name = CheckName.invariant(name)
        for v in self.search.violations:
            if v.property == name:
                edges = self.search.path_to(v.node)
                where = "at a converged state" if v.kind == ex.CONVERGED else "at a reachable state"
                detail = v.detail if isinstance(v.detail, str) else "\n".join(str(d) for d in v.detail)  # type: ignore[attr-defined]
                lines = detail.splitlines() if detail else [""]
                cex = self._verified(Counterexample(
                    kind="invariant", summary=f"violated {where}: {lines[0]}",
                    steps=steps_of([e.label for e in edges]), details=detail if len(lines) > 1 else "",
                    nodes=node_ids(edges, v.node), selected=self._selected(spec, v.node),
                ), edges)
                more = f" ({v.count} states violate it)" if v.count > 1 else ""
                return Check(check_name, Verdict.FAILED, cex.summary + more, (cex,), position)
        if self.incomplete:
            return Check(check_name, Verdict.INCONCLUSIVE, f"search incomplete: {self.search.bound_hit}",
                         position=position)
        cov = self.coverage[name]
        where = "converged state" if spec.when == "converged" else "state"
        if cov.states == 0:
            why = "no execution converged" if spec.when == "converged" else "no state was reached"
            return Check(check_name, Verdict.INCONCLUSIVE, f"not checked: {why}", position=position)
        counted = f"{cov.states} {where}{'s' if cov.states != 1 else ''}, {cov.selected} node(s) selected"
        outcomes = len(self.converged_nodes)
        if spec.when == "converged" and outcomes != cov.states:
            # search states, which differ in bookkeeping too (timers, perturbations used): say how many
            # distinct outcomes they are, the figure the stats and the converged list give
            counted = (f"{cov.states} converged states, {outcomes} distinct outcome{'s' if outcomes != 1 else ''}, "
                       f"{cov.selected} node(s) selected")
        query = "forEach" if spec.for_each is not None else "select"
        if cov.selected == 0 and spec.vacuous != "allowed" and cov.somewhere:
            # a clean-up invariant (count: 0) whose objects existed mid-run: the select is no typo
            return Check(check_name, Verdict.PASSED, f"holds ({counted}; its {query} selected something in an "
                         "explored state, so it is not vacuous)", position=position)
        if cov.selected == 0 and spec.vacuous != "allowed":
            hint = vacuity_hint([spec.for_each or "", spec.select], self._judged_objects(spec))
            allow = ("; if nothing is the point (count: 0, exists: false), say so with vacuous: allowed"
                     if spec.expect.count == 0 or spec.expect.exists is False else "")
            return Check(check_name, Verdict.FAILED,
                         f"vacuous: its {query} selected nothing in any of the {counted.split(',')[0]} it was "
                         f"evaluated on, nor in any other explored state" + (f" ({hint})" if hint else "") + allow,
                         position=position)
        return Check(check_name, Verdict.PASSED, f"holds ({counted})", position=position)

    def _selected(self, spec: InvariantSpec, node: int) -> tuple[SelectedNode, ...]:
        document = state_document(self.search.state(node).snapshot.objects())
        return tuple(SelectedNode(*item) for item in compile_invariant(spec).selected(document))

    def _judged_objects(self, spec: InvariantSpec) -> list[Any]:
        """Objects of (up to 50 of) the states the invariant was judged on — the converged ones, or every
        state for ``when: always`` —: what its hint may say is present."""
        graph = self.search.graph
        nodes = self.search.converged[:50] if spec.when == "converged" else range(min(graph.num_states, 50))
        graph.prefetch(nodes)
        return [obj for n in nodes for obj in self.search.state(n).snapshot.objects()]

    # -- replay
    def _verified(self, cex: Counterexample, *paths: Sequence[ex.Edge[Any]]) -> Counterexample:
        """Replay each path once; a divergence is reported as a non-deterministic controller."""
        for path in paths:
            self._replayed(path)
        return cex

    def _replayed(self, path: Sequence[ex.Edge[Any]]) -> list[Any]:
        """The path's step labels as a replay gives them, with the names of the states it meets (under
        the symmetry reduction a path may pass through a state merged with the one it reaches: its
        steps then name that state's pods); a divergence is recorded as a non-deterministic controller
        and the recorded labels are returned."""
        actions = [e.action for e in path]
        fps = [self.search.graph.fingerprint(e.dst) for e in path]
        recorded = [self.search.state(e.src) for e in path] if self.model.symmetry is not None else None
        for rt in self.sim.runtimes:
            rt.replaying = True
        try:
            at, labels = replay_path(self.model, actions, fps, recorded)
        finally:
            for rt in self.sim.runtimes:
                rt.replaying = False
        if at is None:
            return labels if recorded is not None else [e.label for e in path]
        fakes = ", a fake's state outside its ExternalStore" if self.scenario.fakes else ""
        self._replay_failures.append(Counterexample(
            kind="nondeterministic-controller",
            summary=f"replaying a counterexample diverged at step {at}: a controller is not a function "
                    f"of what it reads (wall-clock time, randomness, module state{fakes}?)",
            steps=steps_of([e.label for e in path[:at]]), nodes=node_ids(path[:at]),
        ))
        return [e.label for e in path]


#: how many explored states a vacuous-looking invariant's query is tried on, in search order


@dataclass
class _Coverage:
    """How much an invariant actually looked at: states evaluated, nodes its first query selected."""

    states: int = 0
    selected: int = 0
    #: whether the first query selected a node in some explored state (``when: converged`` only)
    somewhere: bool = False

    def add(self, selected: object) -> None:
        self.states += 1
        self.selected += int(selected)  # type: ignore[call-overload]

    def saw(self, selected: object) -> None:
        self.somewhere = self.somewhere or bool(selected)


def properties_of(scenario: Scenario) -> tuple[list[ex.Property[SimState]], dict[str, _Coverage]]:
    props: list[ex.Property[SimState]] = []
    coverage: dict[str, _Coverage] = {}
    cache: dict[str, dict[str, Any]] = {}

    def document(state: SimState) -> dict[str, Any]:
        fp = state.snapshot.fingerprint()
        doc = cache.get(fp)
        if doc is None:
            if len(cache) > 10_000:
                cache.clear()
            doc = cache[fp] = state_document(state.snapshot.objects())
        return doc

    for inv in scenario.invariants:
        compiled = compile_invariant(inv)
        cov = coverage[inv.name] = _Coverage()

        def predicate(state: SimState, compiled: Any = compiled) -> object:
            if state.halted:
                return None
            violations, selected = compiled.evaluate_counting(document(state))
            detail = "\n".join(str(getattr(v, "message", v)) for v in violations) if violations else None
            return ex.Tallied(detail, selected)

        kind = ex.ALWAYS if inv.when == "always" else ex.CONVERGED
        props.append(ex.Property(inv.name, kind, predicate, tally=cov.add))
        if inv.when != "always" and inv.vacuous != "allowed":
            props.append(_witness(inv.name, compiled, document, cov))
    return props, coverage


def _witness(name: str, compiled: Any, document: Callable[[SimState], dict[str, Any]],
             cov: _Coverage) -> ex.Property[SimState]:
    """Whether a ``converged`` invariant's first query selects something in any explored state, told
    while the search holds the states: vacuity means "selected nothing anywhere" (a typo), not "nothing
    is left" (a clean-up, issue #28). Asked of every state until one selects (each of a split search's
    processes stops at its own first), so the answer costs one evaluation when the seed already has
    the objects. It never fails and observes no write: the reduction ignores it."""
    found = [False]

    def predicate(state: SimState) -> object:
        if found[0] or state.halted:
            return None
        selected = compiled.evaluate_counting(document(state))[1]
        found[0] = bool(selected)
        return ex.Tallied(None, selected)

    return ex.Property(f"{name} (selects somewhere)", ex.ALWAYS, predicate, observes=lambda _token: False,
                       tally=cov.saw)


def outcome_key(snapshot: Any, symmetry: Symmetry | None = None) -> str:
    """What makes two converged clusters different outcomes: the fingerprint's content, less generation
    (and status.observedGeneration, which controllers set to it). With ``symmetry``, generated names
    are taken by their canonical tokens: two clusters one renaming of generated names apart (pod
    ``-x2kqp`` failed and ``-7fzbn`` succeeded, or the other way round) are one outcome, as they are
    one state of the reduced search (docs/semantics.md, "Symmetry")."""
    canon = symmetry.canon(snapshot) if symmetry is not None else None
    rename = canon.rename if canon is not None and canon.names else None
    keyed: list[tuple[str, str]] = []
    for obj in snapshot.objects():
        if is_record(str(obj.get("apiVersion", "")), str(obj.get("kind", ""))):
            continue  # Events record how an outcome was reached; they are not the outcome
        meta = obj.get("metadata") or {}
        if "generation" in meta:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "generation"}}
        status = obj.get("status")
        if isinstance(status, dict) and "observedGeneration" in status:  # the usual echo of generation
            obj = {**obj, "status": {k: v for k, v in status.items() if k != "observedGeneration"}}
        if rename is None:
            keyed.append(("", object_digest(obj)))
        else:
            text = rename(digest_text(obj))
            keyed.append((text, hashlib.sha256(text.encode()).hexdigest()))
    if rename is not None:
        keyed.sort()  # renamed objects sort by their canonical text, not by the names they had
    h = hashlib.sha256()
    for _text, digest in keyed:
        h.update(digest.encode())
    return h.hexdigest()


_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$")


def _noise(entry: DiffEntry) -> bool:
    """Differences the outcome comparison ignores: generation and timestamps."""
    if entry.path in ("/metadata/generation", "/status/observedGeneration"):
        return True
    values = [v for v in (entry.old, entry.new) if v is not None]
    return bool(values) and all(isinstance(v, str) and _TIME.match(v) for v in values)


def _state_diff(a: Any, b: Any) -> tuple[Any, ...]:
    from kamera_cli.model.objects import ObjectRef

    objs_a = {ObjectRef.of(o): o for o in a.objects()}
    objs_b = {ObjectRef.of(o): o for o in b.objects()}
    out = []
    for ref in sorted(set(objs_a) | set(objs_b)):
        if is_record(ref.api_version, ref.kind):
            continue
        if ref not in objs_a:
            d = created(objs_b[ref])
        elif ref not in objs_b:
            d = tuple(DiffEntry("remove", e.path, old=e.new) for e in created(objs_a[ref]))
        else:
            d = tuple(e for e in diff(objs_a[ref], objs_b[ref]) if not _noise(e))
        if d:
            out.append((ref, d))
    return tuple(out)


def scenario_verdict(checks: Iterable[Check]) -> Verdict:
    verdicts = {c.verdict for c in checks}
    if Verdict.FAILED in verdicts:
        return Verdict.FAILED
    if Verdict.INCONCLUSIVE in verdicts:
        return Verdict.INCONCLUSIVE
    return Verdict.PASSED


def _retried(edges: Sequence[Any]) -> str:
    """Why a path that ran out of steps did: one controller failing the same way again and again.

    Why say it: a handler retried after every failure (kopf's default: no limit) never settles, and
    its retries never repeat a state (the retry count and times change), so the search meets the depth
    bound rather than a loop; "not converged within 50 steps" alone reads like a bound set too low.
    """
    seen: dict[tuple[str, str], int] = {}
    for e in edges:
        error = str(getattr(e.label, "error", "") or "")
        if error:
            first = _error_line(error, str(getattr(e.label, "note", "") or ""))
            key = (str(getattr(e.label, "actor", "")), first)
            seen[key] = seen.get(key, 0) + 1
    if not seen:
        return ""
    (actor, error), count = max(seen.items(), key=lambda kv: (kv[1], kv[0]))
    if count < 3:
        return ""
    return (f": '{actor}' failed {count} times on this path with the same error and was retried after each "
            f"failure, which never settles ({_short(error)})")


def _error_line(error: str, note: str) -> str:
    """The line of a step's error text that names the error: the text's first line, unless that is a
    stack's header ("Traceback (most recent call last):", "Where the thread was started …"); then the
    exception's line under the stack, or the step's note ("opened a network connection of its own")."""
    lines = [line for line in error.splitlines() if line.strip()]
    first = lines[0]
    if first.endswith("(most recent call last):"):
        last = lines[-1]
        first = last if not last.startswith((" ", "\t")) and last != first else (note or first)
    if first.startswith("kamera_cli.") and ": " in first:  # kamera's wrapper: what it wraps says more
        first = first.split(": ", 1)[1]
    return first


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
