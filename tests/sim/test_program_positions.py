"""A program's position up to renaming (issue 26): states whose programs consumed the same inputs up to
resourceVersions, timestamps and the times they came at are one state, and such a program's steps
are reordered with independent ones — checked against the search that keeps every log exactly and
explores every order (same verdicts, same converged outcomes, same findings)."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from kamera_cli.apiserver import Snapshot
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import Verdict
from kamera_cli.model.scenario import Scenario
from kamera_cli.runner import Exploration, explore, outcome_key
from kamera_cli.scenario import load_scenario
from kamera_cli.sim import positions
from tests.sim.test_program_threads import HEAD  # one ConfigMap, counter, that the program copies

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class _E:
    kind: str
    key: str
    clock: float = 0.0
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""


class _Logs:
    def __init__(self, entries: list[_E], exact: bool = False) -> None:
        self.entries = entries
        self.exact = exact

    def exact_position(self, digest: str) -> bool:
        return self.exact

    def segments(self, digest: str) -> list[tuple[str, list[_E]]]:
        return [(digest, self.entries)]


def _cm(name: str, rv: str, data: str = "x", stamp: str = "2026-01-01T00:00:05Z") -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "data": {"v": data},
            "metadata": {"name": name, "namespace": "default", "resourceVersion": rv, "creationTimestamp": stamp}}


def _cluster(*objs: dict[str, object], rv: int) -> Snapshot:
    snap = Snapshot.empty()
    for obj in objs:
        meta = obj["metadata"]
        assert isinstance(meta, dict)
        snap = snap.with_object(ObjectRef.of(obj), obj, rv=int(meta["resourceVersion"]))
    while snap.resource_version < rv:  # other objects written since, up to the cluster's latest version
        n = snap.resource_version + 1
        snap = snap.with_object(ObjectRef("v1", "Secret", "default", f"s{n}"),
                                {"apiVersion": "v1", "kind": "Secret",
                                 "metadata": {"name": f"s{n}", "namespace": "default", "resourceVersion": str(n)}},
                                rv=n)
    return snap


def _got(obj: dict[str, object], clock: float = 0.0) -> _E:
    meta = obj["metadata"]
    assert isinstance(meta, dict)
    return _E("http", f"GET /api/v1/namespaces/default/configmaps/{meta['name']}? ", clock, 200,
              (("Content-Type", "application/json"),), json.dumps(obj).encode())


def _key(entries: list[_E], snapshot: Snapshot, exact: bool = False) -> str:
    return positions.Positions().key(_Logs(entries, exact), "d" * 64, snapshot)


def test_equal_up_to_resource_versions_timestamps_and_times_is_one_position() -> None:
    a = _key([_E("start", "", 3.0), _got(_cm("a", "5"), 4.0)], _cluster(_cm("a", "5"), rv=9))
    b = _key([_E("start", "", 8.0), _got(_cm("a", "7", stamp="2026-01-01T00:01:00Z"), 11.0)],
             _cluster(_cm("a", "7"), rv=12))
    assert a == b
    assert a.startswith("p:")


def test_a_held_version_that_went_stale_is_another_position() -> None:
    """The program holds a's version: current in one state, stale in the other (a was written since):
    a replace with it succeeds in one and conflicts in the other."""
    fresh = _key([_got(_cm("a", "5"))], _cluster(_cm("a", "5"), rv=9))
    stale = _key([_got(_cm("a", "5"))], _cluster(_cm("a", "8"), rv=9))
    assert fresh != stale


def test_equalities_between_held_versions_are_kept() -> None:
    """Two stale values that are equal in one log and different in the other are not renamed alike."""
    cluster = _cluster(_cm("a", "9"), rv=9)
    same = _key([_got(_cm("a", "5")), _got(_cm("a", "5"))], cluster)
    different = _key([_got(_cm("a", "5")), _got(_cm("a", "6"))], cluster)
    assert same != different


def test_the_latest_version_of_the_cluster_is_told_apart() -> None:
    last = _key([_got(_cm("a", "5"))], _cluster(_cm("a", "5"), rv=5))
    not_last = _key([_got(_cm("a", "5"))], _cluster(_cm("a", "5"), rv=6))
    assert last != not_last


def test_versions_a_request_sends_back_are_renamed_with_the_answers() -> None:
    def log(rv: str) -> list[_E]:
        put = ("PUT /api/v1/namespaces/default/configmaps/a? "
               + json.dumps({"metadata": {"name": "a", "resourceVersion": rv}}))
        return [_got(_cm("a", rv)), _E("http", put, 0.0, 200, (), json.dumps(_cm("a", str(int(rv) + 1))).encode())]

    assert _key(log("5"), _cluster(_cm("a", "6"), rv=6)) == _key(log("7"), _cluster(_cm("a", "8"), rv=8))


def test_content_and_order_still_count() -> None:
    cluster = _cluster(_cm("a", "5"), _cm("b", "6"), rv=6)
    assert _key([_got(_cm("a", "5", "x"))], cluster) != _key([_got(_cm("a", "5", "y"))], cluster)
    assert (_key([_got(_cm("a", "5")), _got(_cm("b", "6"))], cluster)
            != _key([_got(_cm("b", "6")), _got(_cm("a", "5"))], cluster))


def test_an_exact_position_is_the_log_digest() -> None:
    assert _key([_got(_cm("a", "5"))], _cluster(_cm("a", "5"), rv=5), exact=True) == "d" * 64


# -- what makes a program's position exact -------------------------------------------------------------------
MIRROR = """
from kubernetes import client, config, watch

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        obj = event["object"]
        if obj.metadata.name == "counter" and event["type"] != "DELETED":
            {extra}
            body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="copy"), data=obj.data)
            try:
                v1.create_namespaced_config_map("default", body)
            except client.ApiException:
                v1.replace_namespaced_config_map("copy", "default", body)
"""


def _scenario(tmp_path: Path, extra: str = "pass", tail: str = "") -> Scenario:
    (tmp_path / "prog.py").write_text(textwrap.dedent(MIRROR).replace("{extra}", extra))
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(tail), "  "))
    return load_scenario(path)


USER_EDITS = """
actions:
  - name: a user edits the source
    at: any
    patch:
      target: {apiVersion: v1, kind: ConfigMap, namespace: default, name: counter}
      patch: {data: {n: "1"}}
  - name: a user adds another config map
    at: any
    apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: other, namespace: default}, data: {n: "2"}}
"""


def _global_causes(exploration: Exploration) -> dict[str, int]:
    return dict(exploration.search.stats.global_causes)


def test_a_program_blind_to_the_clock_is_reordered(tmp_path: Path) -> None:
    found = explore(_scenario(tmp_path, tail=USER_EDITS))
    assert not any("program" in cause or "time-dependent" in cause for cause in _global_causes(found))


@pytest.mark.parametrize("extra", ["import time; time.time()", "import random; random.random()",
                                   "v1.list_namespaced_config_map('default', resource_version='1', "
                                   "resource_version_match='NotOlderThan')"])
def test_a_program_that_reads_the_clock_its_seed_or_the_history_keeps_its_log_exactly(
        tmp_path: Path, extra: str) -> None:
    found = explore(_scenario(tmp_path, extra, USER_EDITS))
    assert any("observed the clock" in cause for cause in _global_causes(found))


def test_a_program_that_only_logs_is_blind_to_the_clock(tmp_path: Path) -> None:
    found = explore(_scenario(tmp_path, "import logging; logging.getLogger('p').warning('copying')", USER_EDITS))
    assert not any("observed the clock" in cause for cause in _global_causes(found))


# -- the differential: against the search that keeps every log and explores every order -----------------------
@pytest.fixture
def exact_positions() -> Iterator[None]:
    saved = positions.ENABLED
    positions.ENABLED = False
    try:
        yield
    finally:
        positions.ENABLED = saved


def _baseline(scenario: Scenario) -> Exploration:
    saved = positions.ENABLED
    positions.ENABLED = False
    try:
        return explore(replace(scenario, explore=replace(scenario.explore, reduction="none")))
    finally:
        positions.ENABLED = saved


def _outcomes(exploration: Exploration) -> set[str]:
    search = exploration.search
    return {outcome_key(search.state(n).snapshot) for n in search.converged if not search.state(n).halted}


def assert_agrees(scenario: Scenario) -> tuple[int, int]:
    """Verdicts, failing checks, converged outcomes, stuck regions and findings as the exact, unreduced
    search gives them; returns (states before, states now)."""
    full = _baseline(scenario)
    now = explore(scenario)
    assert now.result.verdict == full.result.verdict
    assert {c.name: c.verdict for c in now.result.checks} == {c.name: c.verdict for c in full.result.checks}
    assert _outcomes(now) == _outcomes(full)
    assert bool(now.search.livelocks) == bool(full.search.livelocks)
    assert bool(now.search.deadlocks) == bool(full.search.deadlocks)
    assert {f.key for f in now.search.findings} == {f.key for f in full.search.findings}
    assert now.search.stats.states <= full.search.stats.states
    return full.search.stats.states, now.search.stats.states


def test_user_edits_around_a_watch_loop_agree_and_merge(tmp_path: Path) -> None:
    before, after = assert_agrees(_scenario(tmp_path, tail=USER_EDITS))
    assert after < before


BUGGY_TAIL = USER_EDITS + """
invariants:
  - name: the copy is never behind the source
    when: always
    forEach: "$.items[?@.metadata.name == 'copy']"
    select: "$.items[?@.metadata.name == 'counter' && @.data.n == {{ @.data.n }}]"
    expect: {count: 1}
"""


def test_a_finding_is_kept(tmp_path: Path) -> None:
    """The copy lags the source between the user's edit and the program's next event: the same failing
    invariant both ways."""
    assert_agrees(_scenario(tmp_path, tail=BUGGY_TAIL))
    found = explore(_scenario(tmp_path, tail=BUGGY_TAIL))
    assert {c.name for c in found.result.checks if c.verdict == Verdict.FAILED} == {
        "invariant: the copy is never behind the source"}


@pytest.mark.parametrize("rel", ["scenarios/shapes/program/mirror", "scenarios/shapes/program/mirror/fixed",
                                 "scenarios/shapes/program/cleanup/race", "scenarios/shapes/program/argv",
                                 "bench/scenarios/program-watch-worker"])
def test_examples_agree(rel: str) -> None:
    assert_agrees(load_scenario(ROOT / rel / "scenario.yaml"))


THREADED = """
import queue
import threading
from kubernetes import client, config, watch

def work(v1, keys):
    while True:
        name = keys.get()
        try:
            src = v1.read_namespaced_config_map(name, "default")
        except client.ApiException:
            continue
        body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name + "-copy"), data=src.data)
        try:
            v1.create_namespaced_config_map("default", body)
        except client.ApiException:
            v1.replace_namespaced_config_map(name + "-copy", "default", body)

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    keys = queue.Queue()
    threading.Thread(target=work, args=(v1, keys), name="worker", daemon=True).start()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        if not event["object"].metadata.name.endswith("-copy"):
            keys.put(event["object"].metadata.name)
"""


def test_a_watch_thread_and_a_worker_agree(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(textwrap.dedent(THREADED))
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(USER_EDITS.split("  - name: a user adds")[0]), "  "))
    before, after = assert_agrees(load_scenario(path))
    assert after < before


@dataclass(frozen=True)
class _Renaming:
    names: dict[str, str]

    def rename(self, text: str) -> str:
        for name, token in self.names.items():
            text = text.replace(name, token)
        return text


def test_generated_names_the_program_was_told_are_renamed_with_the_cluster() -> None:
    """States the symmetry merges (generated names swapped) merge only when what the program was told
    names the same objects under the renaming; an exact position carries the renaming itself."""
    told_a = [_got(_cm("web-aaaaa", "5"))]
    cluster = _cluster(_cm("web-aaaaa", "5"), _cm("web-bbbbb", "6"), rv=6)
    logs = positions.Positions()
    a_first = _Renaming({"web-aaaaa": "<0>", "web-bbbbb": "<1>"})
    b_first = _Renaming({"web-aaaaa": "<1>", "web-bbbbb": "<0>"})
    swapped = _cluster(_cm("web-bbbbb", "5"), _cm("web-aaaaa", "6"), rv=6)
    told_b = [_got(_cm("web-bbbbb", "5"))]
    assert logs.key(_Logs(told_a), "d" * 64, cluster, a_first) == logs.key(_Logs(told_b), "e" * 64, swapped, b_first)
    assert logs.key(_Logs(told_a), "d" * 64, cluster, a_first) != logs.key(_Logs(told_a), "d" * 64, swapped, b_first)
    exact = _Logs(told_a, exact=True)
    assert logs.key(exact, "d" * 64, cluster, a_first) != logs.key(exact, "d" * 64, cluster, b_first)
