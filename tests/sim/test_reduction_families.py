"""Partial-order reduction against the unreduced search on generated operator-shaped scenarios (issue #26).

Why: the footprints that let steps be reordered despite ownerReferences (the garbage collector),
claim listings by selector (ReplicaSet, Deployment), built-ins that read or stamp the clock and set
timers (the clock window and horizon) each rest on an argument in docs/semantics.md. Hypothesis
draws scenario families that exercise each — owned children, dangling owners, an owner deleted by a
user, orphan pods a ReplicaSet adopts or ignores, user timers — and every one must give
the same verdicts, converged outcomes, stuck regions and findings both ways. (kopf operators, whose
steps stay global, are compared on the examples in tests/e2e/test_reduction.py: a kopf timer over the
built-in namespaces does not finish in a test's time either way.)
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.e2e.test_reduction import assert_complete_agreement

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from bench_operators import owned_children, webapps

SETTINGS = settings(max_examples=5, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def patient(path: Path) -> Path:
    """The scenario at ``path`` with a search timeout no loaded CI machine reaches: a bench family's
    120 s was hit once by an unreduced search at load 12, and a cut search cannot be compared."""
    text = path.read_text()
    assert re.search(r"timeout: \d+}", text), "the bench's explore line changed"
    path.write_text(re.sub(r"timeout: \d+}", "timeout: 1800}", text, count=1))
    return path


def fresh_folder(tmp_path: Path, tag: str) -> Path:
    folder = tmp_path / tag
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@SETTINGS
@given(k=st.integers(1, 3), dangling=st.booleans(), delete_parent=st.sampled_from(["", "background", "orphan"]))
def test_owned_children(tmp_path: Path, k: int, dangling: bool, delete_parent: str) -> None:
    """Owned creates are quiet for the collector; a dangling owner and a deleted parent give it work."""
    folder = fresh_folder(tmp_path, f"owned-{k}-{dangling}-{delete_parent}")
    path = owned_children(folder, k)
    text = path.read_text()
    if dangling:  # a child whose owner never existed: the collector deletes it, in any order
        text = text.replace("  seed:\n", "  seed:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: stray, "
                            "namespace: default, ownerReferences: [{apiVersion: v1, kind: Secret, name: gone, "
                            "uid: 00000000-0000-4000-8000-000000000000}]}}\n", 1)
    if delete_parent == "orphan":  # the collector must orphan the child before the parent goes
        text = text.replace("{name: mine, namespace: default}",
                            "{name: mine, namespace: default, finalizers: [orphan]}", 1)
    if delete_parent:
        text += ("  actions:\n    - {name: remove, delete: {apiVersion: v1, kind: Secret, namespace: default, "
                 "name: mine}}\n")
    path.write_text(text)
    assert_complete_agreement(patient(path))


@SETTINGS
@given(replicas=st.integers(1, 2), orphan=st.sampled_from(["", "matching", "foreign"]), timer=st.booleans())
def test_webapp_with_builtins(tmp_path: Path, replicas: int, orphan: str, timer: bool) -> None:
    """Claims by selector, the orphans watch, the clock window and the horizon, with a user timer."""
    folder = fresh_folder(tmp_path, f"web-{replicas}-{orphan}-{timer}")
    path = webapps(folder, 1, replicas)
    if timer:  # the operator also resyncs on a timer: its steps are global, the built-ins' are not
        operator = folder / "operator.py"
        operator.write_text(operator.read_text() + "\n\ndef resync(request):\n    reconcile(request)\n"
                            "    from kamera_cli import Result\n    return Result(requeue_after=30)\n")
        path.write_text(path.read_text().replace("entrypoint: operator.py:reconcile", "entrypoint: operator.py:resync"))
    if orphan:
        labels = "{webapp: web0}" if orphan == "matching" else "{webapp: other}"
        path.write_text(path.read_text() + (
            f"    - {{apiVersion: v1, kind: Pod, metadata: {{name: stray, namespace: default, labels: {labels}}}, "
            "spec: {containers: [{name: c, image: busybox}]}}\n"))
    assert_complete_agreement(patient(path))




@pytest.mark.parametrize("delete", [False, True])
def test_two_owned_trees(tmp_path: Path, delete: bool) -> None:
    """Two WebApps, each owning a Deployment the deployment and replicaset built-ins grow: the
    reduction weighs each tree as a unit as well as each request on its own (reduction.py) and takes
    the smaller set. With a user deleting one WebApp at any step, the action and the collector's
    cascade are processes too (docs/semantics.md): 102 states against 11,346 unreduced (10,839 when
    both were global steps). Both must agree with the full search."""
    path = webapps(tmp_path, 2, 1)
    text = path.read_text().replace("[deployment, replicaset, kubelet]", "[deployment, replicaset]")
    if delete:
        text += ("  actions:\n    - {name: remove, at: any, delete: {apiVersion: bench.kamera.dev/v1, kind: WebApp, "
                 "namespace: default, name: web1}}\n")
    path.write_text(text)
    reduced = assert_complete_agreement(patient(path))
    assert reduced.search.stats.states * 10 < 2985


@pytest.mark.parametrize("move_all", [False, True])
def test_two_owned_trees_split_across_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                move_all: bool) -> None:
    """The split search with built-ins and owned trees: the same graph as the serial one, also when
    every new node moves to another process (its inherited futures go with it). Two workers once
    crashed here (an action numbered in a result merged after one that used the number), took
    minutes (every group's future searched again at every state), and then chose differently from
    the serial search where a node inherited futures from another parent than the serial one's."""
    from kamera_cli.explore import parallel
    from kamera_cli.runner import Overrides, check_file

    monkeypatch.setattr(parallel._Coordinator, "_move_all", move_all)
    path = webapps(tmp_path, 2, 2)
    serial = check_file(path, Overrides())
    split = check_file(path, Overrides(search_workers=2))
    assert (split.stats.states, split.stats.transitions) == (serial.stats.states, serial.stats.transitions)
    assert [(c.name, c.verdict) for c in split.checks] == [(c.name, c.verdict) for c in serial.checks]


@pytest.mark.parametrize("at", ["any", "converged"])
def test_a_namespace_deleted_while_owned_children_are_made(tmp_path: Path, at: str) -> None:
    """A user deletes a namespace while controllers create owned children in it and in another: the
    namespace controller's and the collector's steps are processes whose footprints the reduction
    weighs (docs/semantics.md); every write reads its Namespace (a create in a terminating or gone
    namespace is refused), so the outcomes must be the full search's."""
    path = owned_children(tmp_path, 2)
    text = path.read_text().replace("{name: mine, namespace: default}}\n",
                                    "{name: mine, namespace: team}}\n", 1)
    text = text.replace("  seed:\n", "  seed:\n    - {apiVersion: v1, kind: Namespace, metadata: {name: team}}\n", 1)
    text += (f"  actions:\n    - {{name: remove, at: {at}, delete: {{apiVersion: v1, kind: Namespace, "
             "name: team}}\n")
    path.write_text(text)
    assert_complete_agreement(patient(path))
