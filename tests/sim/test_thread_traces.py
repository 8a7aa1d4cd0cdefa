"""A program's threads placed by their trace's normal form (issue 26): orders of the threads that differ
only by swapping segments touching no common synchronisation object are one position. Checked on the
normal form itself, and against the search that keeps every log exactly and explores every order
(``reduction: none``): same verdicts, failing checks, converged outcomes and findings, over generated
families of watch-and-worker programs (queue.Queue, a Condition, a Lock with an Event; a watch thread
or the main thread; one or two workers; a user's delete at any step)."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.adapters.program.trace import Segment, StepTrace
from kamera_cli.model.result import Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.traces import normal_form
from tests.sim.test_program_positions import assert_agrees

pytest.importorskip("greenlet")


@dataclass(frozen=True)
class _E:
    kind: str
    key: str = ""
    body: bytes = b"x"


def _seg(thread: str, end: int, *sync: str) -> Segment:
    return Segment(thread, end, frozenset(sync))


def _form(entries: list[_E], *segments: Segment, untraced: str = "") -> list[tuple[str, list[str]]] | None:
    form = normal_form([(entries, StepTrace(tuple(segments), untraced))])
    return None if form is None else [(t, [e.key for e in es]) for t, es in form]


def test_independent_segments_of_two_threads_are_one_trace() -> None:
    a_first = _form([_E("http", "a1"), _E("http", "b1")], _seg("A", 1), _seg("B", 2))
    b_first = _form([_E("http", "b1"), _E("http", "a1")], _seg("B", 1), _seg("A", 2))
    assert a_first == b_first == [("A", ["a1"]), ("B", ["b1"])]


def test_segments_touching_one_object_keep_their_order() -> None:
    a_first = _form([_E("http", "a1"), _E("http", "b1")], _seg("A", 1, "main/0"), _seg("B", 2, "main/0"))
    b_first = _form([_E("http", "b1"), _E("http", "a1")], _seg("B", 1, "main/0"), _seg("A", 2, "main/0"))
    assert a_first != b_first
    assert b_first == [("B", ["b1"]), ("A", ["a1"])]


def test_a_thread_s_own_order_and_what_depends_on_it_are_kept() -> None:
    """B's second segment waits for A's (a shared lock), so A's first goes before it, though B < A
    nowhere else forces it; A's own two segments stay in their order."""
    form = _form([_E("http", k) for k in ("b1", "a1", "a2", "b2")],
                 _seg("B", 1), _seg("A", 2), _seg("A", 3, "l"), _seg("B", 4, "l"))
    assert form == [("A", ["a1"]), ("A", ["a2"]), ("B", ["b1"]), ("B", ["b2"])]


def test_scheduling_entries_and_empty_events_are_not_inputs() -> None:
    entries = [_E("pick", "A"), _E("event", "0"), _E("run", "B"), _E("event", "0", b""), _E("http", "b1"),
               _E("yield", '["A", "B"]')]
    assert _form(entries, _seg("A", 2), _seg("B", 5)) == [("A", ["0"]), ("B", ["b1"])]


def test_what_the_log_s_order_must_decide() -> None:
    entries = [_E("http", "a1"), _E("http", "b1")]
    assert _form(entries, _seg("A", 1), _seg("A", 2)) is None  # one thread: nothing to reorder
    assert _form(entries, _seg("A", 1), _seg("B", 2), untraced="a library's lock") is None
    assert _form(entries, _seg("A", 1)) is None  # an input outside every segment
    assert normal_form([(entries, None)]) is None


# -- the differential ------------------------------------------------------------------------------------------
CHANNELS = {
    "queue": """
        def channel():
            return queue.Queue()
        """,
    "condition": """
        class channel:
            def __init__(self):
                self.cond = threading.Condition(threading.Lock())
                self.items = []

            def put(self, key):
                with self.cond:
                    if key not in self.items:
                        self.items.append(key)
                        self.cond.notify()

            def get(self):
                with self.cond:
                    while not self.items:
                        self.cond.wait()
                    return self.items.pop(0)
        """,
    "event": """
        class channel:
            def __init__(self):
                self.lock = threading.Lock()
                self.ready = threading.Event()
                self.items = []

            def put(self, key):
                with self.lock:
                    self.items.append(key)
                    self.ready.set()

            def get(self):
                while True:
                    self.ready.wait()
                    with self.lock:
                        if self.items:
                            return self.items.pop(0)
                        self.ready.clear()
        """,
}

PROGRAM = """
import queue
import threading
from kubernetes import client, config, watch

{channel}

def work(v1, keys):
    while True:
        name = keys.get()
        src = True
        if {reads}:
            try:
                v1.read_namespaced_config_map(name, "default")
            except client.ApiException:
                src = None
        if src is None:
            try:
                v1.delete_namespaced_config_map(name + "-copy", "default")
            except client.ApiException:
                pass
        else:
            body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name + "-copy", labels={{"source": name}}))
            try:
                v1.create_namespaced_config_map("default", body)
            except client.ApiException:
                pass

def feed(v1, keys):
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        if not event["object"].metadata.name.endswith("-copy"):
            keys.put(event["object"].metadata.name)

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    keys = channel()
    for i in range({workers}):
        threading.Thread(target=work, args=(v1, keys), name=f"worker-{{i}}", daemon=True).start()
    if {watch_thread}:
        watcher = threading.Thread(target=feed, args=(v1, keys), name="watcher")
        watcher.start()
        watcher.join()
    else:
        feed(v1, keys)
"""

SCENARIO = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: t}}
spec:
  explore: {{{explore}}}
  controllers:
    - {{name: p, program: prog.py:main, watches: [v1/ConfigMap], timeout: 60s}}
  seed:
{seed}
{actions}
  invariants:
    - name: no copy outlives its source
      forEach: "$.items[?@.kind == 'ConfigMap' && @.metadata.labels.source]"
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.name == {{{{ @.metadata.labels.source }}}}]"
      expect: {{count: 1}}
"""


def _family(tmp_path: Path, channel: str, workers: int, watch_thread: bool, reads: bool, delete: bool,
            sources: int = 1, explore: str = "timeout: 600s") -> Path:
    (tmp_path / "prog.py").write_text(PROGRAM.format(channel=textwrap.dedent(CHANNELS[channel]), reads=reads,
                                                     workers=workers, watch_thread=watch_thread))
    seed = "\n".join(f"    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: {n}, namespace: default}}}}"
                     for n in "ab"[:sources])
    actions = ("  actions:\n    - name: a user deletes a\n      at: any\n"
               "      delete: {apiVersion: v1, kind: ConfigMap, namespace: default, name: a}") if delete else ""
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(seed=seed, actions=actions, explore=explore))
    return path


def _agrees(path: Path) -> tuple[int, int]:
    return assert_agrees(load_scenario(path))


@pytest.mark.parametrize(("channel", "workers", "watch_thread", "reads", "delete"), [
    ("queue", 1, True, True, True),
    ("condition", 1, True, False, True),
    ("event", 1, False, True, True),
    ("queue", 2, False, False, False),
])
def test_thread_families_agree_with_every_order(tmp_path: Path, channel: str, workers: int, watch_thread: bool,
                                                reads: bool, delete: bool) -> None:
    before, after = _agrees(_family(tmp_path, channel, workers, watch_thread, reads, delete))
    assert after < before


@settings(max_examples=2, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(channel=st.sampled_from(sorted(CHANNELS)), workers=st.integers(1, 2), watch_thread=st.booleans(),
       reads=st.booleans(), delete=st.booleans(), sources=st.integers(1, 2))
def test_generated_thread_families_agree(tmp_path_factory: pytest.TempPathFactory, channel: str, workers: int,
                                         watch_thread: bool, reads: bool, delete: bool, sources: int) -> None:
    # the exact, unreduced search of the larger members takes minutes (two workers with a watch thread
    # over a Lock and an Event: 5,672 states, 170 s), so a member has one of: a second worker, a second
    # source, a watch thread, a delete (the parametrized cases above take two of them)
    if channel == "event":
        workers = 1  # two workers on one Event: thousands of states unreduced (the bounded case is below)
    if workers + sources + watch_thread + delete > 3:
        sources = 1
    if workers + sources + watch_thread + delete > 3:
        watch_thread = False
    if workers + sources + watch_thread + delete > 3:
        delete = False
    _agrees(_family(tmp_path_factory.mktemp("family"), channel, workers, watch_thread, reads, delete, sources))


def test_two_workers_on_one_event_with_a_watch_thread_and_a_delete_agree(tmp_path: Path) -> None:
    """The case one loaded run once saw disagree (issue 26): two workers woken by one Event, a watch
    thread, a user's delete at any step. Unbounded, neither search finishes in 25 minutes on a loaded
    2-core machine (reduced: 15,357 states, unreduced: 22,326 when cut) — an incomplete search's
    verdict is not a verdict, which is what that run compared. Bounded by depth, both finish and agree:
    at depth 8, 299 states against 832 (the same checks, one outcome, no finding); here depth 6, where
    the copy outlives its source in both (a depth-cut path), 77 states against 192."""
    before, after = _agrees(_family(tmp_path, "event", 2, True, False, True, explore="timeout: 600s, maxDepth: 6"))
    assert after < before


def test_a_worker_that_forgets_the_deleted_source_fails_both_ways(tmp_path: Path) -> None:
    """The copy of a deleted source is recreated by a worker that does not read the source first."""
    found = explore(load_scenario(_family(tmp_path, "condition", 1, True, False, True)))
    assert found.result.verdict == Verdict.FAILED


RACY = """
import queue
import threading
from kubernetes import client, config, watch

latest = {}  # written by the watch thread, read by the worker: no lock

def work(v1, wake):
    while True:
        wake.get()
        names = sorted(latest)
        v1.list_namespaced_config_map("default")
        for name in names:
            body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name + "-copy", labels={"source": name}))
            try:
                v1.create_namespaced_config_map("default", body)
            except client.ApiException:
                pass

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    wake = queue.Queue()
    threading.Thread(target=work, args=(v1, wake), name="worker", daemon=True).start()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        name = event["object"].metadata.name
        if not name.endswith("-copy"):
            latest[name] = event["type"]
            wake.put(None)
"""


def test_a_module_level_value_changed_without_a_lock_keeps_the_threads_orders(tmp_path: Path) -> None:
    """The watch thread fills a module-level dict with no lock while the worker runs: the trace's
    assumption is broken, so the log's order counts again, and the result says so."""
    path = _family(tmp_path, "queue", 1, False, False, False, sources=2)
    (tmp_path / "prog.py").write_text(RACY)
    found = explore(load_scenario(path))
    assert any("changed the module-level prog.latest with no lock held" in note for note in found.result.notes)
    _agrees(path)
