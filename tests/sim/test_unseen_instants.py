"""Instants no step can see, left out of fingerprints, against the exact fingerprint.

Why: a converged state's timers and the distance from the clock to the instant it jumps to are left
out of the fingerprint (docs/semantics.md, "Instants no step can see"). The argument says no step
can see them; these tests hold the searches to it — the same verdicts, converged outcomes, findings
and (unreduced) the same clusters reached as with every delay in the fingerprint — on a timer whose
exact due instant decides what it records.

Able to fail: the same comparison run against two rules that are too coarse — every delay over 2 s
taken as "far" (the experiment of issue #26), and delays measured from the earliest future deadline
even while work is ready — finds outcomes and clusters lost (``test_the_comparison_sees_a_rule_too_coarse``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from kamera_cli.model.scenario import ExpectSpec, InvariantSpec
from kamera_cli.runner import Exploration, explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.model import core, kube
from kamera_cli.sim.model.unseen import reads_time
from kamera_cli.sim.state import PendingItem, SimState
from tests.e2e.test_reduction import outcomes_of

#: a ticker armed by its first run (which writes elsewhere: its own object's event would run it at
#: once) whose first tick, ``DELAY`` s later, records how far a chain of ``STEPS`` steps has got;
#: the chain's requests for other ConfigMaps are steps that change nothing, so paths of different
#: lengths reach one cluster with the tick due at different distances
RACE = '''
import datetime
from kubernetes import client, config

config.load_kube_config()
core = client.CoreV1Api()


def ticker(request):
    log = core.read_namespaced_config_map("armlog", "default").data or {}
    if "armed" not in log:
        core.patch_namespaced_config_map("armlog", "default", {"data": {"armed": "yes"}})
        return {"requeue_after": DELAY}
    t = core.read_namespaced_secret("t", "default")
    if "seen" not in (t.metadata.annotations or {}):
        step = (core.read_namespaced_config_map("c", "default").data or {}).get("step", "0")
        at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        core.patch_namespaced_secret("t", "default", {"metadata": {"annotations": {"seen": step, "at": at}}})
    return {"requeue_after": 60}


def chain(request):
    if request.name != "c":
        return None
    c = core.read_namespaced_config_map("c", "default")
    step = int((c.data or {}).get("step", "0"))
    if step < STEPS:
        core.patch_namespaced_config_map("c", "default", {"data": {"step": str(step + 1)}})
        return {"requeue": True}
    return None
'''


def _race(folder: Path, delay: int = 6, steps: int = 5, invariant: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ctl.py").write_text(RACE.replace("DELAY", str(delay)).replace("STEPS", str(steps)))
    invariant = invariant or (f"{{name: the tick saw the chain done, select: \"$.items[?@.metadata.name == 't']"
                              f".metadata.annotations.seen\", expect: {{equals: '{steps}'}}}}")
    (folder / "scenario.yaml").write_text(f"""\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: race}}
spec:
  explore: {{maxStates: 20000, timeout: 120}}
  controllers:
    - {{name: ticker, entrypoint: "ctl.py:ticker", for: v1/Secret}}
    - {{name: chain, entrypoint: "ctl.py:chain", for: v1/ConfigMap}}
  seed:
    - {{apiVersion: v1, kind: Secret, metadata: {{name: t, namespace: default}}}}
    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c, namespace: default}}}}
    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: armlog, namespace: default}}}}
  invariants:
    - {invariant}
""")
    return folder / "scenario.yaml"


def _run(path: Path, reduction: str, unclocked: bool) -> Exploration:
    saved = core.UNCLOCKED
    core.UNCLOCKED = unclocked
    try:
        scenario = load_scenario(path)
        return explore(replace(scenario, explore=replace(scenario.explore, reduction=reduction)))  # type: ignore[arg-type]
    finally:
        core.UNCLOCKED = saved


def _clusters(exploration: Exploration) -> set[str]:
    search = exploration.search
    return {search.state(n).snapshot.fingerprint() for n in range(search.stats.states)}


def _differences(reference: Exploration, other: Exploration, clusters: bool) -> list[str]:
    """What ``other`` reports differently from ``reference`` ([]: nothing)."""
    out = []
    if {c.name: c.verdict for c in other.result.checks} != {c.name: c.verdict for c in reference.result.checks}:
        out.append("verdicts")
    if outcomes_of(other) != outcomes_of(reference):
        out.append("outcomes")
    if {f.key for f in other.search.findings} != {f.key for f in reference.search.findings}:
        out.append("findings")
    if bool(other.search.livelocks) != bool(reference.search.livelocks):
        out.append("livelocks")
    if clusters and _clusters(other) != _clusters(reference):
        out.append("clusters reached")
    return out


@pytest.mark.parametrize("reduction", ["none", "persistent"])
@pytest.mark.parametrize(("delay", "steps"), [(6, 5), (5, 4), (3, 3)])
def test_a_tick_whose_due_instant_decides_the_outcome(tmp_path: Path, reduction: str, delay: int, steps: int) -> None:
    """The tick records the chain's step it sees, so which outcomes there are depends on the instant
    it falls due at; the searches agree with the exact fingerprint, in fewer states."""
    path = _race(tmp_path / f"race-{delay}-{steps}", delay, steps)
    reference = _run(path, reduction, unclocked=False)
    unclocked = _run(path, reduction, unclocked=True)
    assert reference.search.complete and unclocked.search.complete
    assert len(outcomes_of(reference)) >= 2 or steps < 4  # the due instant decides something
    assert _differences(reference, unclocked, clusters=reduction == "none") == []
    assert unclocked.search.stats.states < reference.search.stats.states


def test_the_comparison_sees_a_rule_too_coarse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two coarser rules merge states whose futures differ, and the comparison above says so: every
    delay over 2 s fingerprinted as one "far" value, and every delay measured from the earliest
    future deadline while work is ready (the clock then moves with each step, so the distance is seen)."""
    path = _race(tmp_path / "race", 6, 5)
    reference = _run(path, "none", unclocked=False)
    delay = PendingItem.delay
    with monkeypatch.context() as m:
        m.setattr(PendingItem, "delay", lambda item, clock: min(delay(item, clock), 3))
        far = _run(path, "none", unclocked=True)
    assert "outcomes" in _differences(reference, far, clusters=True)

    def shifted(model: kube.KubeModel, state: SimState, converged: bool) -> int | None:
        later = [p.ready_at for p in state.pending if p.ready_at > state.clock]
        return min(later) if later and not converged else None

    with monkeypatch.context() as m:
        m.setattr(kube.KubeModel, "_seen_from", shifted)
        coarse = _run(path, "none", unclocked=True)
    assert "clusters reached" in _differences(reference, coarse, clusters=True)



_SEEN_FROM = kube.KubeModel._seen_from


def _equal_up_to_the_clock(model: kube.KubeModel, state: SimState, converged: bool) -> int | None:
    """Every instant measured from the earliest one not yet due while work is ready: states equal up
    to the clock are one (the rule two kopf objects would need to cost twice one; docs/explorer.md)."""
    later = [p.ready_at for p in state.pending if p.ready_at > state.clock]
    if later and not converged and state.ready():
        return min(later)
    return _SEEN_FROM(model, state, converged)


@pytest.mark.parametrize(("reduction", "delay", "steps", "lost"), [
    ("none", 6, 5, True), ("persistent", 6, 5, True), ("none", 10, 6, False), ("persistent", 10, 6, False)])
def test_states_equal_up_to_the_clock_differ_while_work_is_ready(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, reduction: str, delay: int, steps: int, lost: bool) -> None:
    """Merging states that differ only in how far the clock has got while work is ready changes the
    verdict when the tick falls due inside the chain's remaining steps, and nothing when it falls due
    after them: what would decide it is a bound on the ready work's length, a property of the
    state's future that its fingerprint cannot use (docs/semantics.md, *What is not merged, and why*)."""
    path = _race(tmp_path / f"race-{delay}-{steps}", delay, steps)
    reference = _run(path, reduction, unclocked=False)
    with monkeypatch.context() as m:
        m.setattr(kube.KubeModel, "_seen_from", _equal_up_to_the_clock)
        merged = _run(path, reduction, unclocked=True)
    assert merged.search.stats.states < reference.search.stats.states
    differences = _differences(reference, merged, clusters=False)
    assert (differences[:2] == ["verdicts", "outcomes"]) if lost else differences == []


def test_an_invariant_that_reads_a_timestamp_keeps_every_instant(tmp_path: Path) -> None:
    """The tick stamps the instant it ran at; an invariant comparing that stamp keeps the clocks
    apart (the run says so), so it is evaluated on as many states as with the exact fingerprint."""
    invariant = ("{name: the tick ran at 00:00:07, select: \"$.items[?@.metadata.name == 't']"
                 ".metadata.annotations.at\", expect: {equals: '2026-01-01T00:00:07Z'}}")
    path = _race(tmp_path / "stamped", 6, 5, invariant)
    reference = _run(path, "none", unclocked=False)
    stamped = _run(path, "none", unclocked=True)
    assert any("may read a timestamp" in w for w in stamped.result.notes)
    assert stamped.search.stats.states == reference.search.stats.states
    assert _differences(reference, stamped, clusters=True) == []


def _invariant(select: str, for_each: str | None = None, **expect: object) -> InvariantSpec:
    return InvariantSpec("x", select, ExpectSpec(**expect), for_each=for_each)  # type: ignore[arg-type]


@pytest.mark.parametrize(("invariant", "reads"), [
    (_invariant("$.items[?@.kind=='Pod'].status.startTime", has_equals=True, equals="2026-01-01T00:00:03Z"), True),
    (_invariant("$.items[?@.kind=='Pod'].status.startTime", exists=True), False),
    (_invariant("$.items[?@.kind=='Pod' && @.status.startTime > '2026']", count=1), True),
    (_invariant("$.items[?@.kind=='Pod' && @.metadata.deletionTimestamp]", count=1), False),
    (_invariant("$.items[?@.kind=='Pod']", unique=True), True),
    (_invariant("$.items[?@.kind=='Pod'].metadata.annotations['a/b']", has_equals=True, equals="3"), False),
    (_invariant("$.items[?@.kind=='Lease'].spec.renewTime", unique=True), True),
    (_invariant("$.items[?@.kind=='Pod'].metadata['creationTimestamp']", has_equals=True, equals=1), True),
    (_invariant("$.items[?@.name == {{ @ }}]", for_each="$.items[0].metadata.creationTimestamp", count=1), True),
    (_invariant("$.items[?@.kind=='Widget'].status.create.startedAt", matches="x"), True),
])
def test_which_invariants_read_a_timestamp(invariant: InvariantSpec, reads: bool) -> None:
    """A time field compared in a filter or by value, a date, or whole objects compared by value;
    a time field's mere existence (``deletionTimestamp``) is the same at every instant."""
    assert reads_time(invariant) is reads


@pytest.mark.parametrize("rel", ["workloads/job-deadline-unseen", "workloads/job-retry-seen-as-failure"])
def test_built_ins_comparing_stored_timestamps(rel: str) -> None:
    """The Job controller compares the clock with the Job's ``startTime`` (a timestamp, left out of
    fingerprints) and requeues itself for the deadline: the state waiting for that requeue and a state
    where the Job's request is ready at the clock must stay apart, or the deadline is missed or seen
    early (both once took one fingerprint: the verdicts differed from the exact search's)."""
    path = Path(__file__).resolve().parents[2] / "scenarios" / rel / "scenario.yaml"
    reference = _run(path, "none", unclocked=False)
    unclocked = _run(path, "none", unclocked=True)
    assert _differences(reference, unclocked, clusters=True) == []
    assert unclocked.search.stats.states <= reference.search.stats.states


@contextmanager
def _states(path: Path) -> Iterator[tuple[kube.KubeModel, SimState]]:
    from kamera_cli.sim.bootstrap import Simulation

    with Simulation(load_scenario(path)) as sim:
        yield sim.model, sim.model.initial_states()[0]


def test_which_states_are_one(tmp_path: Path) -> None:
    """Delays count from the instant the clock jumps to only when no step can run before it: no
    work ready, no work of the collector, no user action to come; a converged state's timers count
    without their delays, and only when no action is to come (one would run at the clock)."""
    def timer(at: int, stable: bool = False, name: str = "t") -> PendingItem:
        return PendingItem("ticker", "default", name, at, "timer", stable=stable)

    with _states(_race(tmp_path / "plain", 6, 5)) as (model, root):
        def fp(clock: int, *items: PendingItem) -> str:
            return model.fingerprint(replace(root, pending=items, clock=clock))

        # nothing ready: only the distances from the jump count
        assert fp(10, timer(16)) == fp(12, timer(16)) == fp(3, timer(9))
        assert fp(10, timer(16), timer(20, name="u")) == fp(12, timer(18), timer(22, name="u"))
        assert fp(10, timer(16), timer(20, name="u")) != fp(10, timer(16), timer(21, name="u"))
        # work ready: the clock moves with every step before the timer, so its distance counts
        ready = PendingItem("chain", "default", "c", 0)
        assert fp(10, ready, timer(16)) != fp(12, ready, timer(16))
        # waiting for the jump is not being ready at the clock (stored instants are compared with it)
        assert fp(10, timer(16)) != fp(16, timer(16))
        # converged: a resync's delay is not seen by anything
        assert fp(10, timer(70, stable=True)) == fp(12, timer(70, stable=True))
        model.unclocked = False
        assert fp(10, timer(16)) != fp(12, timer(16))
        assert fp(10, timer(70, stable=True)) != fp(12, timer(70, stable=True))
    action = ("  actions:\n    - {name: reset, at: converged, patch: {target: {apiVersion: v1, kind: ConfigMap, "
              "namespace: default, name: c}, type: merge, patch: {data: {step: '0'}}}}\n")
    path = _race(tmp_path / "acted", 6, 5)
    path.write_text(path.read_text() + action)
    with _states(path) as (model, root):
        stable = PendingItem("ticker", "default", "t", 70, "timer", stable=True)
        first, second = replace(root, pending=(stable,), clock=10), replace(root, pending=(stable,), clock=12)
        assert not model.is_converged(first)  # the action is still to come, at the clock
        assert model.fingerprint(first) != model.fingerprint(second)
