"""Futures of built-ins kept across instants (sim/future_keys.py, the shifted view) are the ones a search gives.

Why: the cache of futures (explore/futures.py ``FutureCache``) must hand back exactly what a search
at the state would give, or the graph would depend on what each process happened to keep (the
split search gives every worker a cache of its own). A future of the deployment, replicaset and
kubelet built-ins and the collector is now keyed by the distances of the instants they compare from
the clock, not by the clock and every timestamp (docs/semantics.md, "Futures of built-ins keyed by
distances from the clock"), so it is reused at other instants; here every reuse is checked against
a search made at the same state, on a Deployment scaled down by a user at any step (Pods deleted
with a grace period, the progress deadline's requeue, the collector woken), and the reduced search
against the full one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kamera_cli.explore import futures, reduction
from kamera_cli.explore.futures import Future
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from tests.e2e.test_reduction import assert_complete_agreement

SCENARIO = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: scale-down}
spec:
  explore: {maxStates: 200000, maxDepth: 200, timeout: 1800}
  cluster: {builtins: [deployment, replicaset, kubelet], nodes: 1}
  controllers: []
  seed:
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: default}
      spec:
        replicas: %d
        selector: {matchLabels: {app: web}}
        template: {metadata: {labels: {app: web}}, spec: {containers: [{name: web, image: web}]}}
  actions:
    - name: the user scales the Deployment down
      at: any
      patch:
        target: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}
        type: merge
        patch: {spec: {replicas: 0}}
"""


#: a second Deployment whose tree moves the clock while the first one's view stays as it was
OTHER = """\
    - apiVersion: apps/v1
      kind: Deployment
      metadata: {name: other, namespace: default}
      spec:
        replicas: 1
        selector: {matchLabels: {app: other}}
        template: {metadata: {labels: {app: other}}, spec: {containers: [{name: other, image: other}]}}
"""


def _scenario(tmp_path: Path, replicas: int, other: bool = False) -> Path:
    path = tmp_path / "scenario.yaml"
    text = SCENARIO % replicas
    path.write_text(text.replace("  actions:\n", OTHER + "  actions:\n") if other else text)
    return path


def _same(kept: Future, fresh: Future) -> list[str]:
    """Where two futures differ: in what the choice at the state reads, or in the graph a successor
    inherits from (``GroupGraph.after``), node for node (docs/explorer.md, "A kept future's graph")."""
    wrong = [name for name in ("processes", "footprint", "length", "complete", "slack", "enabled")
             if getattr(kept, name) != getattr(fresh, name)]
    if _graph(kept) != _graph(fresh):
        wrong.append("graph")
    return wrong


def _graph(future: Future) -> tuple[object, ...] | None:
    """A future's graph as a value: every node's edges (action, node, footprint), its enabled
    processes, depth, and what is inherited at it (union footprint, longest path, slack)."""
    g = future.graph
    if g is None:
        return None
    return (future.node, tuple(tuple(edges) for edges in g.edges), tuple(g.enabled), tuple(g.depths),
            tuple(g.prints), tuple(g.lengths), tuple(g.slacks))


@pytest.mark.parametrize("replicas,other", [(1, False), (2, False), (1, True)])
def test_a_kept_future_is_the_one_a_search_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                replicas: int, other: bool) -> None:
    """Every future the cache finds is compared with a search made at the same state: the cache
    answers nothing (so the search runs), and what it would have answered is checked. With a second
    Deployment, the first one's tree is met again at other instants, its Pods deleted and its
    progress stamped at other distances from the clock (the reduced search only, cut at 1,500
    states: the full one of two trees takes minutes), and with the other tree's progress requeue
    waiting or not: the plain fingerprint then showed how far the clock moved in one and not the
    other, and 66 of 899 kept graphs were not the ones a search gave (``group_fingerprint``)."""
    found: dict[tuple[int, frozenset[Any]], Future] = {}
    compared: list[int] = []
    differences: list[list[str]] = []
    real_find, real_search = futures.FutureCache.find, reduction._group_future

    def find(self: futures.FutureCache, state: Any, roots: frozenset[Any]) -> Future | None:
        kept = real_find(self, state, roots)
        if kept is not None:
            found[(id(state), roots)] = kept
        return None

    def search(model: Any, roots: list[Any], state: Any, *args: Any, **kw: Any) -> Future | None:
        fresh = real_search(model, roots, state, *args, **kw)
        kept = found.pop((id(state), frozenset(roots)), None)
        if kept is not None and fresh is not None:
            compared.append(1)
            wrong = _same(kept, fresh)
            if wrong:
                differences.append(wrong)
        return fresh

    monkeypatch.setattr(futures.FutureCache, "find", find)
    monkeypatch.setattr(reduction, "_group_future", search)
    path = _scenario(tmp_path, replicas, other)
    if other:  # cut: what is compared is each kept future, not the whole search
        path.write_text(path.read_text().replace("maxStates: 200000", "maxStates: 1500"))
        explore(load_scenario(path))
    else:
        assert_complete_agreement(path)
    assert compared, "no kept future was found: the test checks nothing"
    assert not differences, f"{len(differences)} of {len(compared)} kept futures differ: {differences[:3]}"
