"""The symmetry of generated names: states one renaming of generateName'd objects apart are one state.

Why these tests: the reduction merges states, so it is only allowed where nothing kamera reports can
tell the merged states apart. The unit tests pin the canonical form (a renaming merges, a difference
in content does not, a name the scenario spells out is never renamed); the differential test explores
generated families of built-in workloads (Jobs whose pods may fail, ReplicaSets over one or two
nodes) with and without the reduction and asserts the same verdicts, the same outcomes up to renaming
and the same findings, with fewer states.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli import runner
from kamera_cli.apiserver.storage.snapshot import Snapshot
from kamera_cli.model.objects import ObjectRef
from kamera_cli.runner import Exploration, explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.state import PendingItem, SimState
from kamera_cli.sim.symmetry import Symmetry, for_scenario, lookalikes, state_notes

A, B = "web-bcdfg", "web-hjklm"


def _pod(name: str, phase: str, ip: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if ip:
        status["podIP"] = ip
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "generateName": "web-", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}, "status": status}


def _snapshot(*objects: dict[str, Any]) -> Snapshot:
    snap = Snapshot.empty()
    for obj in objects:
        meta = obj["metadata"]
        snap = snap.with_object(ObjectRef(obj["apiVersion"], obj["kind"], meta.get("namespace", ""), meta["name"]), obj)
    return snap


def _endpoints(*names: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ready-pods", "namespace": "default"},
            "data": {"ready": ",".join(names)}}


def test_states_one_renaming_apart_have_one_canonical_fingerprint() -> None:
    sym = Symmetry()
    one = _snapshot(_pod(A, "Running", "10.244.1.1"), _pod(B, "Pending"), _endpoints(A))
    other = _snapshot(_pod(A, "Pending"), _pod(B, "Running", "10.244.7.7"), _endpoints(B))
    assert one.fingerprint() != other.fingerprint()
    assert sym.canon(one).fingerprint == sym.canon(other).fingerprint
    # the reference in another object is renamed with its pod: pointing at the pending one differs
    wrong = _snapshot(_pod(A, "Pending"), _pod(B, "Running", "10.244.7.7"), _endpoints(A))
    assert sym.canon(wrong).fingerprint != sym.canon(one).fingerprint
    # content differences are never merged
    both = _snapshot(_pod(A, "Running"), _pod(B, "Running"), _endpoints(A))
    assert sym.canon(both).fingerprint != sym.canon(one).fingerprint


def test_a_snapshot_without_generated_names_keeps_its_fingerprint() -> None:
    fixed = {**_pod("fixed", "Running"), "metadata": {"name": "fixed", "namespace": "default"}}
    plain = _snapshot(_endpoints("x"), fixed)
    assert Symmetry().canon(plain).fingerprint == plain.fingerprint()
    assert Symmetry().canon(plain).names == {}


def test_a_pinned_name_is_not_interchangeable() -> None:
    one = _snapshot(_pod(A, "Running"), _pod(B, "Pending"))
    other = _snapshot(_pod(A, "Pending"), _pod(B, "Running"))
    assert Symmetry().canon(one).fingerprint == Symmetry().canon(other).fingerprint
    pinned = Symmetry(frozenset({A}))
    assert pinned.canon(one).fingerprint != pinned.canon(other).fingerprint


def test_pending_work_tells_interchangeable_pods_apart_by_what_it_is() -> None:
    """Two identical pods, one with a request pending: which one has it is a renaming, whether it
    is there is not."""
    sym = Symmetry()
    snap = _snapshot(_pod(A, "Running"), _pod(B, "Running"))

    def fp(*pending: str) -> str:
        state = SimState(snap, tuple(PendingItem("kubelet", "default", n) for n in pending), 0)
        return state.fingerprint(False, sym.canon(snap, state_notes(state, sym.generated(snap))))

    assert fp(A) == fp(B)
    assert fp(A) != fp()
    assert fp(A, B) != fp(A)


def test_names_spelled_out_by_the_scenario_are_pinned_and_noted(tmp_path: Path) -> None:
    assert lookalikes(["x: web-7d9f-x2kqp, y: web-nginx, z: http2"]) == {"web-7d9f-x2kqp"}
    scenario = _write(tmp_path, kind="job", size=2, nodes=1, fates=False, backoff=0,
                      invariant_name="web-7d9f-x2kqp")
    symmetry, notes = for_scenario(load_scenario(scenario))
    assert symmetry.pinned == {"web-7d9f-x2kqp"}
    assert len(notes) == 1 and "web-7d9f-x2kqp" in notes[0] and "not treated as interchangeable" in notes[0]


# -- differential: the reduced search against the unreduced one


def _write(tmp_path: Path, *, kind: str, size: int, nodes: int, fates: bool, backoff: int,
           invariant_name: str = "") -> Path:
    folder = tmp_path / f"{kind}-{size}-{nodes}-{int(fates)}-{backoff}"
    folder.mkdir(exist_ok=True)
    (folder / "ctrl.py").write_text("def reconcile(request):\n    return None\n")
    template = {"metadata": {"labels": {"app": "w"}},
                "spec": {"restartPolicy": "Never" if kind == "job" else "Always",
                         "containers": [{"name": "c", "image": "busybox"}]}}
    if kind == "job":
        workload = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "work", "namespace": "default"},
                    "spec": {"parallelism": size, "completions": size, "backoffLimit": backoff,
                             "template": template}}
    else:
        workload = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"replicas": size, "selector": {"matchLabels": {"app": "w"}}, "template": template}}
    cluster: dict[str, Any] = {"builtins": ["job", "kubelet"] if kind == "job" else ["replicaset", "kubelet"],
                               "nodes": nodes}
    if fates:
        cluster["pods"] = {"rules": [{"selector": {"matchLabels": {"app": "w"}}, "outcomes": ["succeeded", "failed"]}]}
    spec: dict[str, Any] = {
        "explore": {"maxDepth": 30, "maxStates": 20000, "timeout": "120s"},
        "cluster": cluster,
        "controllers": [{"name": "noop", "entrypoint": "ctrl.py:reconcile", "for": "v1/ConfigMap"}],
        "seed": [workload],
    }
    if invariant_name:
        spec["invariants"] = [{"name": f"pod {invariant_name} is not failed",
                               "select": f"$.items[?@.metadata.name == '{invariant_name}'].status.phase",
                               "expect": {"matches": "^(Pending|Running|Succeeded)$"}, "vacuous": "allowed"}]
    (folder / "scenario.yaml").write_text(json.dumps(
        {"apiVersion": "kamera.dev/v1alpha1", "kind": "Scenario", "metadata": {"name": "family"}, "spec": spec}))
    return folder / "scenario.yaml"


def _run(path: Path, reduction: str) -> Exploration:
    scenario = load_scenario(path)
    return explore(replace(scenario, explore=replace(scenario.explore, reduction=reduction)))  # type: ignore[arg-type]


def _outcomes(exploration: Exploration, path: Path) -> set[str]:
    search = exploration.search
    symmetry = for_scenario(load_scenario(path))[0]
    return {runner.outcome_key(search.state(n).snapshot, symmetry) for n in search.converged}


def _agree(path: Path) -> tuple[int, int]:
    full, reduced = _run(path, "none"), _run(path, "persistent")
    assert full.search.complete and reduced.search.complete
    assert ({c.name: c.verdict for c in reduced.result.checks} == {c.name: c.verdict for c in full.result.checks})
    assert _outcomes(reduced, path) == _outcomes(full, path)
    assert {f.key for f in reduced.search.findings} == {f.key for f in full.search.findings}
    assert bool(reduced.search.livelocks) == bool(full.search.livelocks)
    assert bool(reduced.search.deadlocks) == bool(full.search.deadlocks)
    assert reduced.search.stats.states <= full.search.stats.states
    return full.search.stats.states, reduced.search.stats.states


@settings(max_examples=4, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(["job", "replicaset"]), nodes=st.integers(1, 2), fates=st.booleans(),
       backoff=st.integers(0, 1))
def test_reduced_and_full_search_agree_on_generated_families(tmp_path: Path, kind: str, nodes: int, fates: bool,
                                                             backoff: int) -> None:
    _agree(_write(tmp_path, kind=kind, size=2, nodes=nodes, fates=fates, backoff=backoff))


def test_three_replicas_over_two_nodes_agree_with_the_full_search(tmp_path: Path) -> None:
    """The scheduler picks a node by a hash of the pod's name (docs/semantics.md, "Symmetry"): with
    two nodes and pods that may fail, the merged search still finds every outcome up to renaming."""
    full, reduced = _agree(_write(tmp_path, kind="replicaset", size=3, nodes=2, fates=True, backoff=0))
    assert reduced < full


def test_symmetry_merges_what_partial_order_reduction_alone_does_not(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three pods of a Job that may each fail: the fates' orders are one state each up to renaming."""
    path = _write(tmp_path, kind="job", size=3, nodes=1, fates=True, backoff=1)
    with_symmetry = _run(path, "persistent")
    assert with_symmetry.search.complete
    monkeypatch.setattr(runner, "symmetry_for", lambda scenario: (None, []))
    # the search without symmetry only has to pass three times the states: cut it there (a state
    # bound, not the clock, so a loaded machine cannot make it stop short)
    bound = with_symmetry.search.stats.states * 3 + 1
    scenario = load_scenario(path)
    without = explore(replace(scenario, explore=replace(scenario.explore, max_states=bound, timeout_seconds=1800.0)))
    assert without.search.stats.states >= bound


def test_a_pinned_invariant_keeps_the_reduced_search_exact(tmp_path: Path) -> None:
    """An invariant naming one generated pod: that pod is kept apart, and both searches agree."""
    path = _write(tmp_path, kind="job", size=2, nodes=1, fates=True, backoff=0, invariant_name="work-fz5lf")
    _agree(path)
    assert any("work-fz5lf" in note for note in _run(path, "persistent").result.notes)


def test_a_path_through_a_merged_state_replays_with_the_names_it_meets(tmp_path: Path) -> None:
    """An edge into a state merged with its renaming leads, replayed, to the renamed cluster; the next
    recorded step names the stored state's pod, so the replay translates it to the pod that plays its
    part there. Without the translation the replay diverges (or runs the wrong pod)."""
    import kamera_cli.explore as ex
    from kamera_cli.judging.story import replay_path
    from kamera_cli.sim.bootstrap import Simulation

    scenario = load_scenario(_write(tmp_path, kind="job", size=2, nodes=1, fates=True, backoff=0))
    with Simulation(scenario) as sim:
        model = sim.model
        model.symmetry = Symmetry()
        search = ex.search(model, reduction="none", max_depth=30)
        graph = search.graph
        checked = 0
        for e in (graph.edge(i) for i in range(graph.num_edges)):
            parent = graph.parent_edge(e.dst)
            if parent is None or parent.id == e.id:
                continue  # the edge that discovered its target: nothing merged
            concrete = model.successor(search.state(e.src), e.action).state
            if concrete.snapshot.fingerprint() == search.state(e.dst).snapshot.fingerprint():
                continue  # the same cluster: no renaming to translate
            onward = [n for n in graph.out_edges(e.dst) if n.action.kind == "reconcile"
                      and n.action.name.startswith("work-")]
            if not onward:
                continue
            path = [*search.path_to(e.src), e, onward[0]]
            actions = [p.action for p in path]
            fps = [graph.fingerprint(p.dst) for p in path]
            at, labels = replay_path(model, actions, fps, [search.state(p.src) for p in path])
            assert at is None
            # the replay's own pod, by its real name: one the replayed cluster holds, not the stored one's
            assert labels[-1].request != onward[0].label.request
            checked += 1
            if checked == 3:
                break
        assert checked, "the family has no edge into a state merged by renaming"
