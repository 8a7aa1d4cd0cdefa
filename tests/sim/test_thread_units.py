"""A program's threads as processes of the partial-order reduction (issue 26): a step the explorer chose
for one thread is reordered past another thread's when no thread ran in both, they touched no common
synchronisation object and the log stays a trace (docs/semantics.md, "Threads as processes"). Checked
against the search that keeps every log exactly and explores every order (``reduction: none``): same
verdicts, failing checks, converged outcomes and findings, over generated families of worker threads
that write objects of their own or one shared object, with or without a shared counter under a lock
(or, breaking the trace's assumption, without one); and shown to fail when the footprint is too small."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim import traces
from kamera_cli.sim.model import reconciling as sim_reconciling
from tests.sim.test_program_positions import assert_agrees

pytest.importorskip("greenlet")

PROGRAM = """
import threading
from kubernetes import client, config, watch

order = []
guard = threading.Lock()

def work(v1, i):
    n = 0
    if {counted}:
        if {locked}:
            with guard:
                order.append(i)
                n = len(order)
        else:
            order.append(i)
            n = len(order)
    name = "shared" if i in {shared} else f"out-{{i}}"
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={{"worker": str(i), "n": str(n)}})
    try:
        v1.create_namespaced_config_map("default", body)
    except client.ApiException:
        pass
    threading.Event().wait()  # done: an event of its own that no one sets

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    for i in range({workers}):
        threading.Thread(target=work, args=(v1, i), name=f"worker-{{i}}", daemon=True).start()
    for _event in watch.Watch().stream(v1.list_namespaced_secret, "default"):
        pass
"""

SCENARIO = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  controllers:
    - {name: p, program: prog.py:main, watches: [v1/Secret], timeout: 60s}
  seed: []
  invariants:
    - name: worker-0 counted first
      select: "$.items[?@.kind == 'ConfigMap' && @.data.worker == '0'].data.n"
      expect: {equals: ["%s"]}
"""


def _family(tmp_path: Path, workers: int, counted: bool, locked: bool, shared: tuple[int, ...]) -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM.format(workers=workers, counted=counted, locked=locked,
                                                     shared=list(shared)))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO % ("1" if counted else "0"))
    return path


def _states(path: Path, threads: bool) -> int:
    saved = traces.THREADS
    traces.THREADS = threads
    try:
        return explore(load_scenario(path)).search.stats.states
    finally:
        traces.THREADS = saved


def test_independent_workers_are_reordered(tmp_path: Path) -> None:
    """Three workers, each creating a ConfigMap of its own: one order of their steps stands for all."""
    path = _family(tmp_path, 3, False, False, ())
    before, after = assert_agrees(load_scenario(path))
    assert after < _states(path, threads=False) < before


def test_workers_counting_under_one_lock_keep_every_order(tmp_path: Path) -> None:
    """Each worker takes its place in a list under a shared lock: which one counted first is decided by
    the order of their segments that took the lock, so both orders stay (the invariant fails in one)."""
    path = _family(tmp_path, 2, True, True, ())
    assert_agrees(load_scenario(path))
    found = explore(load_scenario(path))
    assert [c.verdict.value for c in found.result.checks if c.name == "invariant: worker-0 counted first"] == ["failed"]


def test_workers_writing_one_object_keep_every_order(tmp_path: Path) -> None:
    """Both create the same ConfigMap: the first wins, so their requests' order is kept (cluster tokens)."""
    assert_agrees(load_scenario(_family(tmp_path, 2, False, False, (0, 1))))


def test_a_counter_without_a_lock_keeps_the_log_order(tmp_path: Path) -> None:
    """A module-level list changed with no lock held: the log is no longer a trace, its steps write the
    program token and are never reordered."""
    path = _family(tmp_path, 2, True, False, ())
    found = explore(load_scenario(path))
    assert any("changed the module-level prog.order with no lock held" in note for note in found.result.notes)
    assert_agrees(load_scenario(path))


@settings(max_examples=4, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(workers=st.integers(2, 3), counted=st.booleans(), locked=st.booleans(),
       shared=st.sets(st.integers(0, 2), max_size=2))
def test_generated_worker_families_agree(tmp_path_factory: pytest.TempPathFactory, workers: int, counted: bool,
                                         locked: bool, shared: set[int]) -> None:
    if counted and workers == 3:
        workers = 2  # three counting workers: over a thousand states unreduced
    _agrees_in(tmp_path_factory.mktemp("family"), workers, counted, locked, tuple(sorted(shared)))


def _agrees_in(tmp_path: Path, workers: int, counted: bool, locked: bool, shared: tuple[int, ...]) -> None:
    assert_agrees(load_scenario(_family(tmp_path, workers, counted, locked, shared)))


def _without(monkeypatch: pytest.MonkeyPatch, dropped: set[str]) -> None:
    """Thread footprints without some of their tokens: what the differential must catch."""
    real = traces.thread_tokens

    def tokens(program: Hashable, trace: Any, traced: bool) -> tuple[frozenset[Hashable], frozenset[Hashable]]:
        reads, writes = real(program, trace, traced)
        return (frozenset(t for t in reads if not (isinstance(t, tuple) and t[0] in dropped)),
                frozenset(t for t in writes if not (isinstance(t, tuple) and t[0] in dropped)))

    monkeypatch.setattr(sim_reconciling, "thread_tokens", tokens)


@pytest.mark.parametrize(("dropped", "locked"), [({"run", "sync"}, True), ({"program"}, False)])
def test_a_footprint_too_small_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dropped: set[str],
                                         locked: bool) -> None:
    """Without the threads and locks a step touched, the two workers counting under one lock are
    reordered and one order of the counting is lost; without the program token, so are two workers
    counting with no lock (a log that is not a trace). The differential fails either way."""
    _without(monkeypatch, dropped)
    with pytest.raises(AssertionError):
        assert_agrees(load_scenario(_family(tmp_path, 2, True, locked, ())))
