"""Threads in programs (issue #12): green threads scheduled by kamera, which of them runs next an
explored choice; deadlocks, thread crashes, joins, events, timeouts and restarts as Python has them."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.program import parking as program_parking
from kamera_cli.errors import EntrypointError
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
  controllers:
    - {name: p, program: prog.py:main, watches: [v1/ConfigMap], timeout: 5s}
  seed:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: counter, namespace: default}, data: {n: "0"}}
"""

# two threads read, increment and write back one counter (no resourceVersion: a lost update is possible)
BUMPS = """
import threading
import time
from kubernetes import client, config

def bump(v1):
    n = int(v1.read_namespaced_config_map("counter", "default").data["n"])
    v1.patch_namespaced_config_map("counter", "default", {"data": {"n": str(n + 1)}})

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    threads = [threading.Thread(target=bump, args=(v1,)) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    v1.patch_namespaced_config_map("counter", "default", {"data": {"joined": "yes"}})
    while True:
        time.sleep(3600)
"""


def _run(tmp_path: Path, code: str, tail: str = "") -> Any:
    (tmp_path / "prog.py").write_text(textwrap.dedent(code))
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(tail), "  "))
    return explore(load_scenario(path)).result


def _check(result: Any, name: str) -> Any:
    return next(c for c in result.checks if c.name == name)


def test_which_thread_runs_next_is_explored_and_join_waits_for_both(tmp_path: Path) -> None:
    """Both orders of the threads' requests are reached: the lost update (n = 1) and n = 2; the write
    after join() never sees a thread still running."""
    r = _run(tmp_path, BUMPS, """
        invariants:
          - name: joined after both bumps
            when: always
            forEach: "$.items[?@.metadata.name == 'counter' && @.data.joined == 'yes']"
            select: "$.items[?@.metadata.name == 'counter'].data.n"
            expect: {matches: "^[12]$"}
          - name: both bumps counted
            select: "$.items[?@.metadata.name == 'counter'].data.n"
            expect: {equals: "2"}
        """)
    assert _check(r, "invariant: joined after both bumps").verdict is Verdict.PASSED
    lost = _check(r, "invariant: both bumps counted")
    assert lost.verdict is Verdict.FAILED  # one interleaving loses an update
    assert _check(r, CheckName.DETERMINISTIC).verdict is Verdict.FAILED  # and another does not
    story = " ".join(s.note for s in lost.counterexamples[0].steps)
    assert "Thread-1 (bump) runs" in story and "Thread-2 (bump) runs" in story


@pytest.mark.parametrize("fast", [True, False])
def test_suspended_and_replayed_threads_explore_the_same_graph(tmp_path: Path, fast: bool,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_parking, "ENABLED", fast)
    r = _run(tmp_path, BUMPS)
    # 105 states before issue 26: converged states whose programs wait at different points of their
    # logs are one state now (72 states, 104 transitions); and the orders of the two threads that give
    # them the same answers are one trace (25, 36: sim/traces.py), the same two outcomes
    assert (r.stats.states, r.stats.transitions) == (25, 36)


DEADLOCK = """
import threading
from kubernetes import client, config, watch

first, second = threading.Lock(), threading.Lock()

def one():
    with first:
        with second:
            pass

def other():
    with second:
        with first:
            pass

def main():
    threads = [threading.Thread(target=one, name="one"), threading.Thread(target=other, name="other")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    config.load_kube_config()
    for _event in watch.Watch().stream(client.CoreV1Api().list_namespaced_config_map, "default"):
        pass
"""


def test_locks_taken_in_opposite_orders_deadlock_in_one_interleaving(tmp_path: Path) -> None:
    r = _run(tmp_path, DEADLOCK)
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.FAILED
    summary = errors.counterexamples[0].summary
    assert ("raised ProgramDeadlocked: deadlock: MainThread waits in Thread.join at prog.py:22 (t.join()); "
            "one waits in Lock.__enter__ at prog.py:9 (with second:); other waits in Lock.__enter__ at prog.py:14 "
            "(with first:); its threads wait for what no thread will give") in summary
    assert r.stats.states > 2  # the orders that do not deadlock are explored too


def test_events_conditions_queues_and_timeouts_block_cooperatively(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        import json
        import queue
        import threading
        from kubernetes import client, config

        def main():
            config.load_kube_config()
            v1 = client.CoreV1Api()
            ready, items, cond = threading.Event(), queue.Queue(maxsize=1), threading.Condition()
            state = []

            def producer():
                for i in range(3):
                    items.put(i)  # blocks while the queue is full
                ready.wait()
                with cond:
                    state.append("notified")
                    cond.notify_all()

            threading.Thread(target=producer, daemon=True).start()
            got = [items.get() for _ in range(3)]
            v1.patch_namespaced_config_map("counter", "default", {"data": {"got": "waiting"}})
            try:
                items.get(timeout=30)  # nobody puts a fourth: a timeout kamera wakes at its virtual time
            except queue.Empty:
                got.append("empty")
            ready.set()
            with cond:
                cond.wait_for(lambda: state)
            v1.patch_namespaced_config_map("counter", "default", {"data": {"got": json.dumps(got + state)}})
            threading.Event().wait(timeout=60)  # and then a wait with a timeout, in a loop of its own
            while True:
                threading.Event().wait(timeout=60)
        """, """
        invariants:
          - name: everything arrived in order
            select: "$.items[?@.metadata.name == 'counter'].data.got"
            expect: {equals: '[0, 1, 2, "empty", "notified"]'}
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # threading.excepthook is told
def test_a_thread_that_raises_is_printed_and_ends_and_the_program_runs_on(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        import threading
        import time
        from kubernetes import client, config

        def fails():
            raise ValueError("worker gave up")

        def main():
            config.load_kube_config()
            v1 = client.CoreV1Api()
            t = threading.Thread(target=fails, name="doomed")
            t.start()
            t.join()
            v1.patch_namespaced_config_map("counter", "default", {"data": {"alive": str(t.is_alive())}})
            while True:
                time.sleep(60)
        """, """
        invariants:
          - name: the thread ended
            select: "$.items[?@.metadata.name == 'counter'].data.alive"
            expect: {equals: "False"}
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


@pytest.mark.parametrize(("daemon", "ended"), [(False, False), (True, True)])
def test_main_returning_leaves_non_daemon_threads_running(tmp_path: Path, daemon: bool, ended: bool) -> None:
    r = _run(tmp_path, f"""
        import threading
        from kubernetes import client, config, watch

        def watch_all():
            for _event in watch.Watch().stream(client.CoreV1Api().list_namespaced_config_map, "default"):
                pass

        def main():
            config.load_kube_config()
            threading.Thread(target=watch_all, daemon={daemon}).start()
        """)
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert (errors.verdict is Verdict.FAILED) is ended
    if ended:
        assert "ProgramEnded" in errors.counterexamples[0].summary


@pytest.mark.parametrize("fast", [True, False])
def test_a_crash_restarts_the_program_with_all_its_threads_gone(tmp_path: Path, fast: bool,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import greenlet

    monkeypatch.setattr(program_parking, "ENABLED", fast)

    def suspended() -> set[int]:
        gc.collect()
        return {id(g) for g in gc.get_objects()
                if isinstance(g, greenlet.greenlet) and not g.dead and g.parent is not None}

    before = suspended()
    r = _run(tmp_path, BUMPS, """
        perturbations:
          crashes: [{controller: p, max: 1}]
        invariants:
          - name: every start bumps twice and joins
            select: "$.items[?@.metadata.name == 'counter'].data.joined"
            expect: {equals: "yes"}
        """)
    assert r.verdict is Verdict.FAILED  # lost updates, as without crashes
    assert _check(r, "invariant: every start bumps twice and joins").verdict is Verdict.PASSED
    assert _check(r, CheckName.NO_CONTROLLER_ERRORS).verdict is Verdict.PASSED
    assert suspended() - before == set()  # no thread of a crashed (or finished) program survives


def test_thread_schedules_are_the_same_in_any_process(tmp_path: Path) -> None:
    """Thread names, choices and counts do not depend on the process (hash seeds, thread counters)."""
    (tmp_path / "prog.py").write_text(textwrap.dedent(BUMPS))
    (tmp_path / "scenario.yaml").write_text(HEAD)
    script = ("import sys, threading\n"
              "for _ in range(int(sys.argv[2])): threading.Thread(target=len, args=((),)).start()\n"
              "from kamera_cli.runner import explore\nfrom kamera_cli.scenario import load_scenario\n"
              "r = explore(load_scenario(sys.argv[1])).result\n"
              "print(r.stats.states, r.stats.transitions, sorted(c.message for c in r.checks))\n")
    outs = set()
    for seed, threads in (("1", "0"), ("2", "5")):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", script, str(tmp_path / "scenario.yaml"), threads], env=env,
                             capture_output=True, text=True, check=True, timeout=300)
        outs.add(out.stdout)
    assert len(outs) == 1, outs
    assert json.dumps(sorted(outs)).count("25 36") == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a parallel search forks its workers")
def test_a_split_search_ships_thread_choices_with_the_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The choices of a program's next step are read from its log: a state shipped to another search
    process brings the log, so that process offers the same threads (every successor is shipped)."""
    from kamera_cli.explore import parallel
    from kamera_cli.runner import Overrides, check_file

    monkeypatch.setattr(parallel._Coordinator, "_move_all", True)
    (tmp_path / "prog.py").write_text(textwrap.dedent(BUMPS))
    (tmp_path / "scenario.yaml").write_text(HEAD)
    serial = check_file(tmp_path / "scenario.yaml", Overrides())
    split = check_file(tmp_path / "scenario.yaml", Overrides(search_workers=2))
    counts = (split.stats.states, split.stats.transitions)
    assert counts == (serial.stats.states, serial.stats.transitions) == (25, 36)
    assert [(c.name, c.verdict) for c in split.checks] == [(c.name, c.verdict) for c in serial.checks]


def test_a_thread_in_a_busy_loop_is_stopped_by_the_step_budget(tmp_path: Path) -> None:
    """The threads share the step's budget: one that never reaches a scheduling point is a timeout,
    reported with its own stack, and the program's other threads are unwound."""
    (tmp_path / "prog.py").write_text(textwrap.dedent("""
        import threading

        def spin():
            while True:
                pass

        def main():
            worker = threading.Thread(target=spin, name="spinner")
            worker.start()
            worker.join()
        """))
    (tmp_path / "scenario.yaml").write_text(HEAD.replace("timeout: 5s", "timeout: 1s"))
    r = explore(load_scenario(tmp_path / "scenario.yaml")).result
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.FAILED
    summary = errors.counterexamples[0].summary
    assert "controller 'p' blocked on something kamera does not control" in summary, summary
    assert "prog.py" in errors.counterexamples[0].details or "spin" in str(errors.counterexamples[0]), summary


def test_the_official_client_s_shared_informer_runs_in_a_program(tmp_path: Path) -> None:
    """kubernetes.informer.SharedInformer (the official client's, v37+): its daemon thread lists,
    watches from the list's resourceVersion and fires the handlers, which feed the main thread's queue;
    the locks it guards its cache with are the library's (they block, and do not preempt)."""
    pytest.importorskip("kubernetes.informer", reason="this kubernetes client has no informer (v37+)")
    r = _run(tmp_path, """
        import queue
        from kubernetes import client, config
        from kubernetes.informer import ADDED, MODIFIED, SharedInformer

        def main():
            config.load_kube_config()
            v1 = client.CoreV1Api()
            names = queue.Queue()
            informer = SharedInformer(v1.list_namespaced_config_map, namespace="default")
            for kind in (ADDED, MODIFIED):
                informer.add_event_handler(kind, lambda cm: names.put(cm.metadata.name))
            informer.start()
            while True:
                cm = informer.cache.get_by_key("default/" + names.get())
                if cm is not None and not (cm.metadata.labels or {}).get("seen"):
                    v1.patch_namespaced_config_map(cm.metadata.name, "default", {"metadata": {"labels": {"seen": "y"}}})
        """, """
        invariants:
          - name: seen from the informer's cache
            select: "$.items[?@.metadata.name == 'counter'].metadata.labels.seen"
            expect: {equals: "y"}
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]
    assert r.stats.states == 7  # 9 before issue 26 merged converged states whatever their programs' positions


def test_without_greenlet_a_program_is_refused_not_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without greenlet a program's threads would be real OS threads racing the explorer (the same
    scenario failed or passed from run to run, issue #28): greenlet is a dependency, and where it is
    missing a program is a load error naming it (exit 2), even a single-threaded one."""
    monkeypatch.setattr(program_parking, "_greenlet", None)
    with pytest.raises(EntrypointError, match=r"controller 'p': a program needs greenlet.*\n  hint: pip install gre"):
        _run(tmp_path, BUMPS)
