"""A kopf step reads its operator's indices by their content, not by the listed objects (issue #26).

Why: every step of an operator with ``@kopf.index`` handlers lists each indexed resource, so with
the lists as reads, kopf's own finalizer and annotation writes on each Namespace made every step
depend on every other (a public cloning operator: 43,053 states in 600 s, inconclusive). A write is
now seen by a step that read an index only when the object's entries differ before and after it
(docs/semantics.md, "kopf": *Index reads*), and the memo keys the read by the entries.

Each family is searched with and without reduction (and with and without the memo), which must
agree on verdicts, converged outcomes and findings: ``name`` (the index holds names: kopf's writes
leave it as it was, and the search reduces), ``body`` (the index holds whole bodies: every write is
seen) and ``label`` (a label filter: kopf's handler moves Namespaces into the index).

Able to fail: with ``IndexReads.marks`` made to mark nothing (the before/after comparison dropped),
the reduced search of ``body`` and ``label`` finds 1 of their 4 outcomes, and both agreement tests
fail; with ``IndexReads.digest`` made to skip every object, the memo replays the Widget's step of
an empty index and the memo tests of ``body`` and ``label`` fail (checked by hand when written).
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.kopf.events import supported
from kamera_cli.runner import explore, outcome_key
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.bootstrap import Simulation
from kamera_cli.sim.memo_keys import index_token
from tests.e2e.test_reduction import assert_complete_agreement

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
from kopf_index import OPERATOR, kopf_index

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")


def _family(tmp_path: Path, entry: str) -> Path:
    return kopf_index(tmp_path, 2, entry=entry, timeout=300, max_states=20_000, managed=True)


@pytest.mark.parametrize(("entry", "states", "outcomes"), [("name", 11, 1), ("body", 153, 4), ("label", 103, 4)])
def test_reduction_agrees_with_the_unreduced_search(tmp_path: Path, entry: str, states: int, outcomes: int) -> None:
    """Unreduced: 75, 153 and 153 states (the index of names is read by every step, and no write of
    kopf's changes it). When an index read was a read of the list, the benchmark's kopf-index-0
    took 1,875 states reduced; now 35 (docs/semantics.md)."""
    reduced = assert_complete_agreement(_family(tmp_path, entry))
    found = {outcome_key(reduced.search.state(n).snapshot) for n in reduced.search.converged}
    assert len(found) == outcomes  # the orders that reach the index are kept
    assert reduced.result.stats.states == states


@pytest.mark.parametrize("entry", ["name", "body", "label"])
def test_the_memo_keyed_by_the_index_finds_what_fresh_runs_find(tmp_path: Path, entry: str) -> None:
    scenario = load_scenario(_family(tmp_path, entry))
    runs = [explore(replace(scenario, explore=replace(scenario.explore, memoize=memo, reduction="none")))
            for memo in (True, False)]
    memoised, fresh = ((r.result.stats.states, r.result.verdict,
                        {outcome_key(r.search.state(n).snapshot) for n in r.search.converged},
                        {f.key for f in r.search.findings}) for r in runs)
    assert memoised == fresh
    assert runs[0].result.stats.reconciles < runs[1].result.stats.reconciles


def test_a_step_of_the_widget_and_kopf_s_writes_on_namespaces_are_independent(tmp_path: Path) -> None:
    """From the start: the Widget's step reads the index token (not the Namespaces' list), and the
    Namespaces' steps (kopf's finalizer) mark no index token, so none conflicts with it."""
    with Simulation(load_scenario(_family(tmp_path, "name"))) as sim:
        model = sim.model
        state = model.initial_states()[0]
        steps = {act.controller + ":" + act.name: model.successor(state, act).footprint
                 for act in model.actions(state)}
    widget = steps.pop("op/Widget:w")
    assert widget is not None and index_token("op/Widget", "", "Namespace") in widget.reads
    assert ("list", "", "Namespace", "*") not in widget.reads
    assert steps and all(f is not None and not f.conflicts(widget) for f in steps.values()), steps


#: index handlers whose entries are not a function of the object alone: (parameters, body)
IMPURE = {
    "clock": ("name, **_", "import time\n    return {None: time.time()}"),
    "random": ("name, **_", "import random\n    return {None: random.random()}"),
    "api": ("name, **_", "from kubernetes import client, config\n    config.load_kube_config()\n"
                         "    client.CoreV1Api().list_namespace()\n    return name"),
    "index": ("name, spaces, **_", "return {None: len(spaces)}"),  # another object's entries, in a step
    "raises": ("name, **_", "raise ValueError(name)"),
    "opaque": ("name, **_", "return {None: object()}"),
    "started": ("name, started, **_", "return {None: str(started)}"),
    "kwargs": ("name, **kwargs", "return {None: sorted(kwargs)}"),
}


def _entries(tmp_path: Path, handler: tuple[str, str], objects: list[dict[str, Any]]) -> list[str | None]:
    path = kopf_index(tmp_path, 1, managed=True)
    operator = OPERATOR.format(entry="ENTRY", filters="", managed="").replace(
        "def spaces(name, body, **_):\n    return ENTRY", f"def spaces({handler[0]}):\n    {handler[1]}")
    (tmp_path / "operator.py").write_text(operator)
    with Simulation(load_scenario(path)) as sim:
        runtime = next(r for r in sim.runtimes if r.indices is not None)
        assert runtime.indices is not None
        return [runtime.indices.entries(runtime.index_owner, obj) for obj in objects]


NS = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team0", "uid": "u"}}


@pytest.mark.parametrize("impure", sorted(IMPURE))
def test_entries_that_are_not_the_object_s_alone_are_not_told(tmp_path: Path, impure: str) -> None:
    assert _entries(tmp_path, IMPURE[impure], [NS]) == [None]


def test_entries_are_the_object_s_content_as_the_index_holds_it(tmp_path: Path) -> None:
    later = {**NS, "metadata": {**NS["metadata"], "finalizers": ["kopf.zalando.org/KopfFinalizerMarker"]}}
    other = {**NS, "metadata": {"name": "team1"}}
    first, again, moved = _entries(tmp_path, ("name, **_", "return {None: name}"), [NS, later, other])
    assert first is not None and first == again and first != moved
    # an object its filters leave out puts nothing in the index, as an absent one
    assert _entries(tmp_path, ("name, **_", "return None"), [NS]) == [""]


def test_only_the_indexing_s_one_list_of_a_collection_is_an_index_read() -> None:
    """A collection the step listed twice was also listed by a handler: its list stays a list read."""
    from types import SimpleNamespace

    from kamera_cli.apiserver import Registry
    from kamera_cli.sim.memo_keys import IndexReads

    reads = IndexReads(Registry.builtin(), lambda server: None)
    reads.paths["op"] = {"/api/v1/namespaces": ("", "Namespace")}
    namespaces = SimpleNamespace(group="", version="v1", plural="namespaces")

    def listed(query: tuple[tuple[str, str], ...] = ()) -> SimpleNamespace:
        return SimpleNamespace(resource=namespaces, verb="list", query=query, namespace="")

    region = ("list", "/api/v1/namespaces", ())
    assert reads.regions("op", (region,), [listed()]) == (("index", "/api/v1/namespaces", "op"),)
    assert reads.regions("op", (region,), [listed(), listed()]) == (region,)
    selected = ("list", "/api/v1/namespaces", (("labelSelector", "a=b"),))
    assert reads.regions("op", (region, selected), [listed(), listed(selected[2])]) == (
        ("index", "/api/v1/namespaces", "op"), selected)
    assert reads.regions("other", (region,), [listed()]) == (region,)
