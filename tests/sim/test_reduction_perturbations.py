"""Partial-order reduction with perturbations against the unreduced search (issue #26).

Why: stale reads, crashes and injected conflicts used to make every step global. Their bookkeeping
is now in each step's footprint (sim/perturbing.py, docs/semantics.md "Perturbations as
footprints"): a controller's view of a kind (its lag and the kind's kept history) is a token every
write of the kind and every step of the controller touch, the crash and conflict budgets are tokens
every such variant spends, and a crash reads what it and its restart read, forgets its operator's
memos and wakes every request its restart enqueues. Hypothesis draws operator-shaped families —
owned children of several controllers, several requests of one, a WebApp owning a Deployment the
built-ins grow, a user deleting a parent at any step — with each perturbation on or off, and every
one must give the same verdicts, failing checks, converged outcomes, stuck regions and findings both
ways (``assert_reduction_agrees``).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver import Snapshot
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import Perturbations, StaleReadSpec
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.labels import WriteRec
from kamera_cli.sim.perturbing import CRASH_BUDGET, StaleViews, stale_views, view_token
from kamera_cli.sim.runs import Fault
from kamera_cli.sim.state import FaultBook
from tests.e2e.test_reduction import assert_complete_agreement, assert_reduction_agrees
from tests.sim.test_reduction_families import fresh_folder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_operators import owned_children, owned_requests, webapps

SETTINGS = settings(max_examples=6, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def _perturbations(stale: bool, crash: bool, conflict: bool, lag: int = 1) -> str:
    lines = ["  perturbations:\n"]
    if stale:
        lines.append(f"    staleReads: [{{controller: '*', maxLag: {lag}}}]\n")
    if crash:
        lines.append("    crashes: [{controller: '*', max: 1}]\n")
    if conflict:
        lines.append("    conflicts: [{controller: '*', max: 1}]\n")
    return "".join(lines) if len(lines) > 1 else ""


CM = KindRef.parse("v1/ConfigMap")


def _views() -> StaleViews:
    """Controller "c" may read ConfigMaps one write behind; "builtin" is never perturbed."""
    spec = Perturbations(stale_reads=(StaleReadSpec("*", (CM,), 1),))
    return StaleViews(spec, ["c", "builtin"], lambda _name: (CM,), lambda name: name == "builtin")


def _write(snapshot: Snapshot, kind: str, name: str) -> tuple[Snapshot, WriteRec]:
    ref = ObjectRef("v1", kind, "default", name)
    obj = {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "default"}}
    return snapshot.with_object(ref, obj), WriteRec("create", ref, "", None, obj)


def test_a_stale_view_keeps_its_kind_history_past_the_servers_log() -> None:
    """A ConfigMap write followed by 70 Secret writes (past the server's log of 64): the view one
    ConfigMap write behind is still the cluster without it, so writes of other kinds never change
    which stale views are left (what makes them independent of stale reads)."""
    views = _views()
    start = Snapshot.empty()
    snapshot, write = _write(start, "ConfigMap", "cm")
    faults = views.age(FaultBook(), [write], start, snapshot)
    for i in range(70):
        before = snapshot
        snapshot, other = _write(snapshot, "Secret", f"s{i}")
        faults = views.age(faults, [other], before, snapshot)
    assert snapshot.recent_writes(CM, 1) == []  # the server's log no longer has it
    assert faults.lag("c", "v1/ConfigMap") == 1 and views.available(faults, CM, 1) == 1
    view = stale_views(snapshot, faults, Fault("stale", lags=(("v1/ConfigMap", 1),)))[CM]
    assert view.get(ObjectRef("v1", "ConfigMap", "default", "cm")) is None
    assert view.get(ObjectRef("v1", "Secret", "default", "s69")) is not None


def test_a_view_covered_by_two_specs_ages_once_per_write() -> None:
    """Two stale-read specs covering the same controller and kind: one write puts its view one write
    behind (the deeper maxLag bounds it), not two."""
    specs = Perturbations(stale_reads=(StaleReadSpec("c", (CM,), 1), StaleReadSpec("*", (CM,), 3)))
    views = StaleViews(specs, ["c"], lambda _name: (CM,), lambda _name: False)
    assert views.aging == (("c", "v1/ConfigMap", 3),)
    start = Snapshot.empty()
    snapshot, write = _write(start, "ConfigMap", "cm")
    faults = views.age(FaultBook(), [write], start, snapshot)
    assert faults.lag("c", "v1/ConfigMap") == 1


def test_footprint_tokens_of_the_bookkeeping() -> None:
    """Who touches a view and a budget: a write of the kind writes every lagging view of it (the
    built-in's too); the viewing controller reads its view and writes it only when its lag moves;
    a crash spends the budget; a step of another kind touches none of it."""
    views = _views()
    _snapshot, cm = _write(Snapshot.empty(), "ConfigMap", "cm")
    _snapshot, secret = _write(Snapshot.empty(), "Secret", "s")
    behind = FaultBook().with_lag("c", "v1/ConfigMap", 1)
    token = view_token("c", "v1/ConfigMap")
    assert views.tokens("builtin", FaultBook(), FaultBook(), [cm], None) == (frozenset(), frozenset({token}))
    assert views.tokens("builtin", FaultBook(), FaultBook(), [secret], None) == (frozenset(), frozenset())
    assert views.tokens("c", FaultBook(), FaultBook(), [secret], None) == (frozenset({token}), frozenset())
    assert views.tokens("c", behind, FaultBook(), [], None) == (frozenset({token}), frozenset({token}))
    reads, writes = views.tokens("c", FaultBook(), FaultBook(), [], Fault("crash", 0))
    assert CRASH_BUDGET in reads and CRASH_BUDGET in writes


@SETTINGS
@given(k=st.integers(1, 3), stale=st.booleans(), crash=st.booleans(), lag=st.integers(1, 2),
       delete=st.booleans())
def test_owned_children_perturbed(tmp_path: Path, k: int, stale: bool, crash: bool, lag: int, delete: bool) -> None:
    """Controllers of their own kinds, each creating an owned ConfigMap (a kind they all watch, so
    every child's creation ages every view of it), stale and crashing; a user may delete the first
    parent at any step (the action and the collector's cascade write ConfigMaps too)."""
    path = owned_children(fresh_folder(tmp_path, f"owned-{k}-{stale}-{crash}-{lag}-{delete}"), k)
    text = path.read_text() + _perturbations(stale, crash, False, lag)
    if delete:
        text += ("  actions:\n    - {name: remove, at: any, delete: {apiVersion: v1, kind: Secret, "
                 "namespace: default, name: mine}}\n")
    path.write_text(text)
    assert_complete_agreement(path)


@SETTINGS
@given(n=st.integers(2, 3), stale=st.booleans(), crash=st.booleans())
def test_requests_of_one_controller_perturbed(tmp_path: Path, n: int, stale: bool, crash: bool) -> None:
    """Several requests of one controller share its view of each kind and the crash budget; a crash
    restarts it and re-enqueues every one of them."""
    path = owned_requests(fresh_folder(tmp_path, f"requests-{n}-{stale}-{crash}"), n)
    path.write_text(path.read_text() + _perturbations(stale, crash, False))
    assert_complete_agreement(path)


@pytest.mark.parametrize(("stale", "crash", "conflict"), [(True, True, True), (True, False, False),
                                                          (False, True, True)])
def test_webapp_with_builtins_perturbed(tmp_path: Path, stale: bool, crash: bool, conflict: bool) -> None:
    """A WebApp owning a Deployment the deployment and replicaset built-ins grow: the operator's view
    of Deployments lags behind the built-ins' status writes, its status patch may be answered 409, it
    may crash between its create and its patch."""
    path = webapps(tmp_path, 1, 1)
    text = path.read_text().replace("[deployment, replicaset, kubelet]", "[deployment, replicaset]")
    path.write_text(text + _perturbations(stale, crash, conflict))
    reduced = assert_complete_agreement(path)
    assert reduced.search.stats.reduced > 0


KOPF_EXAMPLES = ["kopf/namespace-cleanup", "kopf/restart-settings", "kopf/restart-settings/fixed",
                 "kopf/conflict-forever", "kopf/duplicate-child"]


@pytest.mark.parametrize("rel", KOPF_EXAMPLES)
def test_kopf_examples_with_perturbations(rel: str) -> None:
    """kopf operators under stale reads (a cleanup timer over namespaces, a Pod created at any step),
    crashes (a restart whose startup then fails, and one that succeeds) and crashes between writes: a
    kopf step's footprint adds its memo, which a crash of its operator forgets. (tests/e2e/test_reduction.py
    runs these too, but CI installs kopf only for its kopf stage, which names this file.)"""
    kopf_events = pytest.importorskip("kamera_cli.adapters.kopf.events")
    if (reason := kopf_events.supported()) is not None:
        pytest.skip(reason)
    assert_reduction_agrees(load_scenario(Path(__file__).resolve().parents[2] / "scenarios" / rel / "scenario.yaml"))


def test_kopf_create_and_timer_perturbed(tmp_path: Path) -> None:
    """A kopf create handler that makes an owned ConfigMap and labels its Widget, which starts a timer:
    stale reads of both kinds and a crash after any write (kopf's own progress annotations are writes)."""
    kopf_events = pytest.importorskip("kamera_cli.adapters.kopf.events")
    if (reason := kopf_events.supported()) is not None:
        pytest.skip(reason)
    from bench_operators import KOPF_CREATE_TIMER, kopf_widgets

    path = kopf_widgets(KOPF_CREATE_TIMER)(tmp_path, 1, 0)
    path.write_text(path.read_text() + _perturbations(True, True, False))
    assert_complete_agreement(path)


def test_a_shipped_state_keeps_its_stale_history() -> None:
    """The split search ships states between processes: the kept history travels with the state, so
    a worker builds the same stale views and the same fingerprint."""
    from kamera_cli.sim.shipping import Shipping
    from kamera_cli.sim.state import SimState

    views = _views()
    start = Snapshot.empty()
    snapshot, write = _write(start, "ConfigMap", "cm")
    faults = views.age(FaultBook(), [write], start, snapshot)
    state = SimState(snapshot, (), 0, faults=faults, extra=views.extra(faults))
    back, _ = Shipping().loads(Shipping().dumps(state))
    assert back.faults == state.faults and back.faults.written("v1/ConfigMap")
    again = SimState(snapshot, (), 0, faults=faults, extra=views.extra(faults))
    assert back.fingerprint(False) == again.fingerprint(False)
