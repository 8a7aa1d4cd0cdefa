"""Perturbations: stale views, crashes with restarts, injected conflicts, and coalesced events.

What users rely on: a stale view never goes backwards (except across a restart), a restart re-lists
the controller's objects, the explored space grows with the bounds and only with them, and executions
that never show a controller an intermediate state are explored without any special syntax.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from kamera_cli.apiserver.server.write_rules import has_precondition
from kamera_cli.model.objects import KindRef
from kamera_cli.model.scenario import ConflictSpec, CrashSpec, Perturbations, StaleReadSpec
from kamera_cli.runner import explore
from kamera_cli.sim.bootstrap import Simulation
from kamera_cli.sim.state import RESTART
from tests.sim.conftest import CONFIGMAP, MakeScenario

SERVICEACCOUNT = KindRef("", "v1", "ServiceAccount")

COUNTER = """
from kubernetes import client
core = client.CoreV1Api()

def writer(request):
    if request.name != "counter":
        return None
    cm = core.read_namespaced_config_map("counter", request.namespace)
    n = int((cm.data or {}).get("n", "0"))
    if n < 3:
        # built on what it read (optimistic concurrency), so it can lose a race: 409 Conflict
        core.patch_namespaced_config_map("counter", request.namespace, {
            "metadata": {"resourceVersion": cm.metadata.resource_version}, "data": {"n": str(n + 1)}})
        # poke the reader through another kind: its reconcile is not caused by the ConfigMap write,
        # so its ConfigMap cache may still lag (an event's own kind is always fresh)
        core.patch_namespaced_service_account("log", request.namespace,
                                              {"metadata": {"labels": {"poke": str(n + 1)}}})

def reader(request):
    if request.name != "log":
        return None
    n = core.read_namespaced_config_map("counter", request.namespace).data["n"]
    sa = core.read_namespaced_service_account("log", request.namespace)
    seen = (sa.metadata.annotations or {}).get("seen", "")
    if not seen.endswith(n):
        seen = f"{seen},{n}" if seen else n
        core.patch_namespaced_service_account("log", request.namespace,
                                              {"metadata": {"annotations": {"seen": seen}}})
"""
SEED = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "counter", "namespace": "default"},
     "data": {"n": "0"}},
    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "log", "namespace": "default"}},
]


def _log_of(snapshot) -> list[int]:
    sa = next(o for o in snapshot.objects() if o["kind"] == "ServiceAccount")
    seen = (sa["metadata"].get("annotations") or {}).get("seen", "")
    return [int(v) for v in seen.split(",") if v]


def _counter_of(snapshot) -> int:
    cm = next(o for o in snapshot.objects() if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "counter")
    return int(cm["data"]["n"])


def _reader_lags(exploration) -> list[int]:
    """For every reader step that logged a value: how far behind the cluster that value was."""
    graph = exploration.search.graph
    lags = []
    for edge_id in range(graph.num_edges):
        edge = graph.edge(edge_id)
        if edge.action.controller != "reader":
            continue
        before, after = _log_of(graph.state(edge.src).snapshot), _log_of(graph.state(edge.dst).snapshot)
        if after != before:
            lags.append(_counter_of(graph.state(edge.dst).snapshot) - after[-1])
    return lags


def test_stale_views_never_go_backwards(make_scenario: MakeScenario) -> None:
    base = make_scenario(COUNTER, [("writer", "writer", CONFIGMAP), ("reader", "reader", SERVICEACCOUNT)], SEED)
    assert set(_reader_lags(explore(base))) == {0}  # a fresh reader logs the current value
    stale = explore(replace(base, perturbations=Perturbations(
        stale_reads=(StaleReadSpec("reader", (CONFIGMAP,), max_lag=2),))))
    assert set(_reader_lags(stale)) == {0, 1, 2}  # stale: up to maxLag writes behind, never more
    graph = stale.search.graph
    for node in range(graph.num_states):
        values = _log_of(graph.state(node).snapshot)
        assert values == sorted(values), f"the reader's view went backwards: {values}"


def test_a_stale_view_can_lag_at_most_max_lag_writes(make_scenario: MakeScenario) -> None:
    base = make_scenario(COUNTER, [("writer", "writer", CONFIGMAP), ("reader", "reader", SERVICEACCOUNT)], SEED)
    one = explore(replace(base, perturbations=Perturbations(
        stale_reads=(StaleReadSpec("reader", (CONFIGMAP,), max_lag=1),))))
    graph = one.search.graph
    for edge_id in range(graph.num_edges):
        act = graph.edge(edge_id).action
        if act.fault is not None and act.fault.kind == "stale":
            assert all(1 <= n <= 1 for _, n in act.fault.lags)


RESTARTED = """
from kubernetes import client
core = client.CoreV1Api()
RUNS = []

def reconcile(request):
    RUNS.append(request.name)
    cm = core.read_namespaced_config_map(request.name, request.namespace)
    if not (cm.data or {}).get("done"):
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"step": "1"}})
        core.patch_namespaced_config_map(request.name, request.namespace, {"data": {"done": "yes"}})
"""


def test_a_crash_applies_the_first_writes_and_restart_relists_every_for_object(make_scenario: MakeScenario) -> None:
    seed = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "default"}}
            for n in ("a", "b")]
    scenario = make_scenario(RESTARTED, [("app", "reconcile", CONFIGMAP)], seed,
                             perturbations=Perturbations(crashes=(CrashSpec("app", (0, 1), max=2),)))
    with Simulation(scenario) as sim:
        model = sim.model
        (state,) = model.initial_states()

        def take(state, name, crash_at):
            for act in model.actions(state):
                crash = act.fault.at if act.fault is not None and act.fault.kind == "crash" else None
                if act.name == name and crash == crash_at:
                    return model.successor(state, act)
            raise AssertionError(f"no action {name} crash={crash_at}")

        state = take(state, "b", None).state  # b writes, which re-triggers it
        state = take(state, "b", None).state  # b sees itself done: nothing pending for it any more
        assert ("app", "default", "b") not in {p.key for p in state.pending if p.ready_at <= state.clock}
        _module_of().RUNS.append("marker")
        t = take(state, "a", 0)  # crash before any write
        restarted = {(p.namespace, p.name) for p in t.state.pending if p.source == RESTART}
        assert restarted == {("default", "a"), ("default", "b")}  # the informer re-list
        assert "marker" not in _module_of().RUNS  # module state re-initialised by the restart
        assert t.label.note.startswith("crashed after write 0")
        t = take(t.state, "a", 1)  # crash after the first of two writes
        cm = next(o for o in t.state.snapshot.objects() if o["metadata"]["name"] == "a")
        assert cm["data"] == {"step": "1"}  # write 1 applied, write 2 never happened
        assert t.state.faults.crashes == 2
        # the crash budget is spent: no more crash branches
        assert not [a for a in model.actions(t.state) if a.fault is not None and a.fault.kind == "crash"]


def test_a_crash_of_a_run_that_writes_nothing_still_restarts_the_process(make_scenario: MakeScenario) -> None:
    """"Crashed after write 0" of a run that makes no write: the process dies as the run ends, so its
    module is imported again (its globals start over) and every object is re-listed."""
    seed = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n, "namespace": "default"}}
            for n in ("a", "b")]
    scenario = make_scenario(RESTARTED, [("app", "reconcile", CONFIGMAP)], seed,
                             perturbations=Perturbations(crashes=(CrashSpec("app", (0,), max=1),)))
    with Simulation(scenario) as sim:
        model = sim.model
        (state,) = model.initial_states()
        first = next(a for a in model.actions(state) if a.name == "b" and a.fault is None)
        state = model.successor(state, first).state  # b writes twice, which re-triggers it
        crash = next(a for a in model.actions(state)
                     if a.name == "b" and a.fault is not None and a.fault.kind == "crash")
        _module_of().RUNS.append("marker")
        t = model.successor(state, crash)  # b reads "done" and writes nothing, then its process dies
        assert t.state.snapshot.fingerprint() == state.snapshot.fingerprint()
        assert "marker" not in _module_of().RUNS  # the module was imported again
        assert t.label.note.startswith("crashed after write 0")
        restarted = {(p.namespace, p.name) for p in t.state.pending if p.source == RESTART}
        assert ("default", "b") in restarted  # re-listed ("a" was still pending from the start)
        assert {(p.namespace, p.name) for p in t.state.pending} == {("default", "a"), ("default", "b")}


def _module_of():
    import sys

    return next(m for m in list(sys.modules.values()) if m is not None and hasattr(m, "RUNS")
                and "ctrl.py" in (getattr(m, "__file__", "") or ""))


def test_state_count_grows_with_the_crash_bound(make_scenario: MakeScenario) -> None:
    base = make_scenario(RESTARTED, [("app", "reconcile", CONFIGMAP)],
                         [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}])
    counts = [explore(replace(base, perturbations=Perturbations(crashes=(CrashSpec("app", (), max=m),)) if m
                              else Perturbations())).result.stats.states for m in (0, 1, 2)]
    assert counts[0] < counts[1] < counts[2], counts


def test_state_count_grows_with_max_lag_and_conflicts(make_scenario: MakeScenario) -> None:
    base = make_scenario(COUNTER, [("writer", "writer", CONFIGMAP), ("reader", "reader", SERVICEACCOUNT)], SEED)
    def stale(n: int) -> Perturbations:
        return Perturbations(stale_reads=(StaleReadSpec("reader", (CONFIGMAP,), max_lag=n),)) if n else Perturbations()

    lags = [explore(replace(base, perturbations=stale(n))).result.stats.states for n in (0, 1, 2)]
    assert lags[0] < lags[1] < lags[2], lags
    conflicts = [explore(replace(base, perturbations=Perturbations(
        conflicts=(ConflictSpec("*", max=n),)) if n else Perturbations())).result.stats.states for n in (0, 1, 2)]
    assert conflicts[0] < conflicts[1] <= conflicts[2], conflicts


INTERMEDIATE = """
from kubernetes import client
core = client.CoreV1Api()

def writer(request):
    if request.name != "job":
        return None
    phase = (core.read_namespaced_config_map("job", request.namespace).data or {}).get("phase", "")
    nxt = {"": "Running", "Running": "Done"}.get(phase)
    if nxt:
        core.patch_namespaced_config_map("job", request.namespace, {"data": {"phase": nxt}})

def watcher(request):
    if request.name != "job":
        return None
    phase = (core.read_namespaced_config_map("job", request.namespace).data or {}).get("phase", "")
    if phase == "Running":
        sa = core.read_namespaced_service_account("log", request.namespace)
        if not (sa.metadata.annotations or {}).get("saw-running"):
            core.patch_namespaced_service_account("log", request.namespace,
                                                  {"metadata": {"annotations": {"saw-running": "yes"}}})
"""


def test_executions_that_miss_an_intermediate_state_are_explored(make_scenario: MakeScenario) -> None:
    """No syntax needed: the queue coalesces, so the watcher may run only after both writes."""
    seed = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "job", "namespace": "default"}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "log", "namespace": "default"}}]
    s = make_scenario(INTERMEDIATE, [("writer", "writer", CONFIGMAP), ("watcher", "watcher", CONFIGMAP)], seed)
    result = explore(s).result
    saw = set()
    for state in result.converged:
        sa = next(o for o in state.objects if o["kind"] == "ServiceAccount")
        saw.add((sa["metadata"].get("annotations") or {}).get("saw-running", "no"))
    assert saw == {"yes", "no"}  # one outcome saw "Running", another never did
    assert result.stats.converged_states == 2


def test_kind_refs_for_stale_reads_default_to_watched_kinds(make_scenario: MakeScenario) -> None:
    base = make_scenario(COUNTER, [("writer", "writer", CONFIGMAP), ("reader", "reader", SERVICEACCOUNT)], SEED)
    explicit = explore(replace(base, perturbations=Perturbations(
        stale_reads=(StaleReadSpec("reader", (CONFIGMAP,), max_lag=1),)))).result.stats.states
    watched = explore(replace(base, perturbations=Perturbations(
        stale_reads=(StaleReadSpec("reader", (SERVICEACCOUNT,), max_lag=1),)))).result.stats.states
    default = explore(replace(base, perturbations=Perturbations(
        stale_reads=(StaleReadSpec("reader", (), max_lag=1),)))).result.stats.states
    assert default == watched  # the reader watches ServiceAccounts only
    assert explicit > default  # naming the ConfigMaps it reads from a cache adds staleness


COPIER = """
from kubernetes import client
core = client.CoreV1Api()

def reconcile(request):
    if request.name != "src":
        return None
    src = core.read_namespaced_config_map("src", request.namespace)
    try:
        copy = core.read_namespaced_config_map("copy", request.namespace)
    except client.ApiException as e:
        if e.status != 404:
            raise
        core.create_namespaced_config_map(request.namespace, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="copy"), data=src.data))
        return None
    if copy.data != src.data:
        core.patch_namespaced_config_map("copy", request.namespace, {"data": src.data})
"""


def test_the_write_that_enqueued_a_reconcile_is_never_hidden_by_a_stale_view(make_scenario: MakeScenario) -> None:
    """client-go updates an informer's cache before it delivers the event, so a level-triggered copier
    stays correct under stale reads of the kind it is triggered by."""
    from kamera_cli.model.objects import ObjectRef
    from kamera_cli.model.result import Verdict
    from kamera_cli.model.scenario import ActionSpec, ExpectSpec, InvariantSpec

    src = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "src", "namespace": "default"},
           "data": {"v": "1"}}
    edit = ActionSpec(name="edit", verb="patch", at="any", patch_type="merge", patch={"data": {"v": "2"}},
                      target=ObjectRef("v1", "ConfigMap", "default", "src"))
    same = InvariantSpec(name="copy follows", expect=ExpectSpec(has_equals=True, equals="2"),
                         select="$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'copy'].data.v")
    s = make_scenario(COPIER, [("copier", "reconcile", CONFIGMAP)], [src], actions=(edit,), invariants=(same,),
                      perturbations=Perturbations(stale_reads=(StaleReadSpec("copier", (CONFIGMAP,), max_lag=1),)))
    r = explore(s).result
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_a_write_without_a_resource_version_is_never_answered_conflict(make_scenario: MakeScenario) -> None:
    """A real API server answers 409 Conflict only to a write that names the resourceVersion it was
    built on; a plain merge patch is applied to the current object. Injected conflicts follow it: the
    reader (plain patches only) gets no conflict variant, the writer (its patch carries the version it
    read) does."""
    base = make_scenario(COUNTER, [("writer", "writer", CONFIGMAP), ("reader", "reader", SERVICEACCOUNT)], SEED)
    def count(controller: str) -> int:
        return explore(replace(base, perturbations=Perturbations(conflicts=(ConflictSpec(controller, max=1),))
                               )).result.stats.states
    plain = explore(base).result.stats.states
    assert count("reader") == plain
    assert count("writer") > plain


@pytest.mark.parametrize(("body", "expected"), [
    ({"metadata": {"resourceVersion": "7"}, "data": {}}, True),
    ({"metadata": {"resourceVersion": ""}}, False),
    ({"metadata": {"resourceVersion": "0"}}, False),
    ({"metadata": {"name": "a"}, "data": {"a": "b"}}, False),
    ([{"op": "replace", "path": "/metadata/resourceVersion", "value": "7"}], True),
    ([{"op": "test", "path": "/metadata/resourceVersion", "value": "7"}], False),
    ([{"op": "add", "path": "/metadata/finalizers", "value": ["x"]}], False),
    (None, False),
])
def test_which_writes_carry_a_precondition(body: object, expected: bool) -> None:
    assert has_precondition(body) is expected
