"""Programs, sweeps and event handlers (issue #12): one step from one blocking point to the next,
replayed from the input log; findings for programs that end, block or diverge; located load errors."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.program import parking as program_parking
from kamera_cli.errors import EntrypointError, ScenarioError
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: t}
spec:
"""


def _scenario(tmp_path: Path, body: str, code: str = "") -> Path:
    (tmp_path / "prog.py").write_text(textwrap.dedent(code))
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(body), "  "))
    return path


def _run(tmp_path: Path, body: str, code: str) -> Any:
    return explore(load_scenario(_scenario(tmp_path, body, code))).result


def _check(result: Any, name: str) -> Any:
    return next(c for c in result.checks if c.name == name)


def _watching(tmp_path: Path, name: str, rest: str, code: str) -> Any:
    """Run the program ``code`` as controller ``name`` (watching ConfigMaps) on SEED, plus ``rest``."""
    return _run(tmp_path, f"""
        controllers:
          - {{name: {name}, program: prog.py:main, watches: [v1/ConfigMap]}}
        """ + SEED + rest, code)


SEED = """seed:
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}, data: {v: "1"}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: default}, data: {v: "2"}}
"""

UPSERT = """
def upsert(v1, name, data):
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data=data)
    try:
        v1.replace_namespaced_config_map(name, "default", body)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        v1.create_namespaced_config_map("default", body)
"""

# a watch loop that records, per event, what it saw; each event is one step
RECORDER = """
from kubernetes import client, config, watch

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    seen = []
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        cm = event["object"]
        if cm.metadata.name == "log":
            continue
        seen.append(f"{event['type']}:{cm.metadata.name}:{type(cm).__name__}")
        upsert(v1, "log", {"seen": ",".join(seen)})
""" + UPSERT


# the same loop keeping what it saw in a module global, as real programs do
RECORDER_GLOBAL = RECORDER.replace("    seen = []\n", "").replace("def main():", "seen = []\n\ndef main():")


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("code", [RECORDER, RECORDER_GLOBAL], ids=["locals", "module-global"])
def test_a_watch_loop_gets_typed_events_one_per_step_and_keeps_its_state(
        tmp_path: Path, code: str, fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """Locals survive from step to step; so do module globals, which a replay rebuilds from a fresh import."""
    monkeypatch.setattr(program_parking, "ENABLED", fast)
    r = _run(tmp_path, """
        controllers:
          - {name: rec, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED + """
        actions:
          - delete: {apiVersion: v1, kind: ConfigMap, name: a, namespace: default}
        invariants:
          - name: everything seen, in order
            select: "$.items[?@.metadata.name == 'log'].data.seen"
            expect: {equals: "ADDED:a:V1ConfigMap,ADDED:b:V1ConfigMap,DELETED:a:V1ConfigMap"}
        """, code)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]
    assert r.stats.states > 4  # start, one step per event, the log's own events, the action


def test_each_event_is_a_step_other_steps_interleave_between(tmp_path: Path) -> None:
    """The 'half-delivered listing' interleaving exists only because events arrive one at a time."""
    r = _run(tmp_path, """
        controllers:
          - {name: rec, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED + """
        invariants:
          - name: never half a listing
            when: always
            select: "$.items[?@.metadata.name == 'log'].data.seen"
            expect: {matches: "^ADDED:a:V1ConfigMap,ADDED:b:V1ConfigMap$"}
        """, RECORDER)
    inv = _check(r, "invariant: never half a listing")
    assert inv.verdict is Verdict.FAILED  # the state after a's event, before b's, is reachable


@pytest.mark.parametrize(("code", "message"), [
    # ends: the process would exit, and nothing would handle later events
    ("""
     from kubernetes import client, config
     def main():
         config.load_kube_config()
         client.CoreV1Api().list_namespaced_config_map("default")
     """, "controller 'p' ended: ProgramEnded: main() returned"),
    # waits on an event nobody will set: a deadlock, found at once, where it waits
    pytest.param("""
     import threading
     def main():
         threading.Event().wait()
     """, "controller 'p' raised ProgramDeadlocked: deadlock: MainThread waits in Event.wait at prog.py:4 "
          "(threading.Event().wait()); its only thread waits for what no thread will give"),
    # blocks on something kamera does not control: the step's budget stops it, with its stack
    ("""
     import _thread
     def main():
         held = _thread.allocate_lock()
         held.acquire()
         held.acquire()
     """, "controller 'p' blocked on something kamera does not control (no watch read or time.sleep"),
    # a thread started below threading (not scheduled by kamera) reaches the API
    pytest.param("""
     import _thread
     from kubernetes import client, config, watch
     def main():
         config.load_kube_config()
         v1 = client.CoreV1Api()
         done = _thread.allocate_lock()
         done.acquire()
         def use():
             try:
                 v1.list_config_map_for_all_namespaces()
             finally:
                 done.release()
         _thread.start_new_thread(use, ())
         done.acquire()
         for _event in watch.Watch().stream(v1.list_config_map_for_all_namespaces):
             pass
     """, "raised ProgramThreaded: a thread the program started outside kamera's scheduling reached GET "
          "/api/v1/configmaps"),
    # an API error escaping main() is the program's crash (a finding), not a reconcile's requeue
    ("""
     from kubernetes import client, config
     def main():
         config.load_kube_config()
         client.CoreV1Api().read_namespaced_config_map("missing", "default")
     """, "raised ProgramCrashed: main() raised NotFoundException: (404)"),
    # waits on a kind it does not list in its watches: nothing would ever wake it
    ("""
     from kubernetes import client, config, watch
     def main():
         config.load_kube_config()
         for _event in watch.Watch().stream(client.CoreV1Api().list_namespaced_secret, "default"):
             pass
     """, "raised ProgramUnwatched: the program waits on a watch of /api/v1/namespaces/default/secrets, but "
          "v1/Secret is not in its watches"),
])
@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the program's thread dies
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # ... started with _thread
def test_a_program_that_ends_or_blocks_elsewhere_is_a_finding(tmp_path: Path, code: str, message: str) -> None:
    r = _run(tmp_path, """
        controllers:
          - {name: p, program: prog.py:main, watches: [v1/ConfigMap], timeout: 3s}
        """ + SEED, code)
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.FAILED
    assert message in errors.counterexamples[0].summary


DRIFT = """
from pathlib import Path
from kubernetes import client, config, watch
STARTS = Path(__file__).with_name("starts.txt")
def main():
    # a file the program writes survives a restart, and every replay: not a function of its inputs
    starts = int(STARTS.read_text()) + 1 if STARTS.exists() else 1
    STARTS.write_text(str(starts))
    config.load_kube_config()
    v1 = client.CoreV1Api()
    v1.list_namespaced_config_map("default", label_selector=f"run!={starts}")
    for _event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        pass
"""


def test_a_program_that_differs_on_replay_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_parking, "ENABLED", False)  # every step replays
    r = _run(tmp_path, """
        controllers:
          - {name: drift, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED, DRIFT)
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.FAILED
    summary = errors.counterexamples[0].summary
    assert "ProgramDiverged" in summary and "not deterministic" in summary and "run!=1" in summary


def test_a_replayed_program_sees_the_clock_it_saw_the_first_time(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Times read before the first input, and between inputs, are the logged ones: no false divergence."""
    monkeypatch.setattr(program_parking, "ENABLED", False)
    r = _run(tmp_path, """
        controllers:
          - {name: stamp, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED, """
        import time
        from kubernetes import client, config, watch
        def main():
            started = time.time()
            config.load_kube_config()
            v1 = client.CoreV1Api()
            for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
                cm = event["object"]
                if not (cm.metadata.annotations or {}).get("seen-at"):
                    stamp = {"started": str(started), "seen-at": str(time.time())}
                    v1.patch_namespaced_config_map(cm.metadata.name, "default", {"metadata": {"annotations": stamp}})
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_a_watch_from_a_lists_resource_version_delivers_what_changed_since_the_list(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        controllers:
          - {name: rec, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED + """
        actions:
          - at: {afterSteps: 1}
            apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
        invariants:
          - name: the object created between the list and the watch is delivered
            select: "$.items[?@.metadata.name == 'log'].data.seen"
            expect: {equals: "listed:a,b;ADDED:c"}
        """, textwrap.dedent("""
        import time
        from kubernetes import client, config, watch

        def main():
            config.load_kube_config()
            v1 = client.CoreV1Api()
            listed = v1.list_namespaced_config_map("default")
            seen = ["listed:" + ",".join(cm.metadata.name for cm in listed.items)]
            time.sleep(5)  # a step ends here: the action creates c
            stream = watch.Watch().stream(v1.list_namespaced_config_map, "default",
                                          resource_version=listed.metadata.resource_version)
            for event in stream:
                if event["object"].metadata.name != "log":
                    seen.append(f"{event['type']}:{event['object'].metadata.name}")
                    upsert(v1, "log", {"seen": ";".join(seen)})
        """) + UPSERT)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_a_program_not_deterministic_is_found_with_the_fast_path_too(tmp_path: Path) -> None:
    """Its first step runs twice from the same state, as every controller's first reconcile does."""
    r = _run(tmp_path, """
        controllers:
          - {name: drift, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED, DRIFT)
    det = _check(r, CheckName.DETERMINISTIC)
    assert det.verdict is Verdict.FAILED
    assert "controller 'drift' is not deterministic" in det.counterexamples[0].summary


@pytest.mark.skipif(not program_parking.available(), reason="greenlet is not installed (kamera-cli[programs])")
@pytest.mark.parametrize("rel", ["mirror", "mirror/fixed", "sweep", "handler"])
def test_suspended_programs_and_replays_explore_the_same_graph(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The fast path (a program suspended at its blocking point) is an optimisation only."""
    path = Path(__file__).resolve().parents[2] / "scenarios" / "shapes" / "program" / rel / "scenario.yaml"
    fast = explore(load_scenario(path)).result
    monkeypatch.setattr(program_parking, "ENABLED", False)
    replayed = explore(load_scenario(path)).result
    assert (fast.stats.states, fast.stats.transitions, fast.verdict) == (
        replayed.stats.states, replayed.stats.transitions, replayed.verdict)
    assert [(c.name, c.verdict, c.message) for c in fast.checks] == [
        (c.name, c.verdict, c.message) for c in replayed.checks]


SLEEPER = """
import time
from kubernetes import client, config

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    ticks = 0
    while True:
        ticks += 1
        for cm in v1.list_namespaced_config_map("default").items:
            if (cm.metadata.labels or {}).get("seen") is None:
                v1.patch_namespaced_config_map(cm.metadata.name, "default",
                                               {"metadata": {"labels": {"seen": str(ticks)}}})
        time.sleep(60)
"""


def test_a_sleep_loop_program_ticks_on_the_virtual_clock_and_converges(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        controllers:
          - {name: sleeper, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED + """
        actions:
          - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
        invariants:
          - name: all seen
            select: "$.items[?@.kind == 'ConfigMap' && @.metadata.namespace == 'default'].metadata.labels.seen"
            expect: {count: 3}
          # tick 1 labels the seed, tick 2 finds nothing (a resync: converged), the action's write
          # ends the third sleep early; the loop's own counter survives from step to step
          - name: the third tick saw the action's object
            select: "$.items[?@.metadata.name == 'c'].metadata.labels.seen"
            expect: {equals: "3"}
        """, SLEEPER)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


@pytest.mark.parametrize("fast", [True, False])
def test_a_crash_restarts_the_program_from_main_with_a_fresh_listing(tmp_path: Path, fast: bool,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(program_parking, "ENABLED", fast)
    r = _run(tmp_path, """
        controllers:
          - {name: rec, program: prog.py:main, watches: [v1/ConfigMap]}
        """ + SEED + """
        perturbations:
          crashes: [{controller: rec, max: 1}]
        invariants:
          - name: after a restart the log starts again from the listing
            select: "$.items[?@.metadata.name == 'log'].data.seen"
            expect: {equals: "ADDED:a:V1ConfigMap,ADDED:b:V1ConfigMap"}
        """, RECORDER)
    # the restarted program re-lists and rewrites the whole log: the same outcome, more executions
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]
    # the same graph with and without the fast path (15 states before issue 26 merged converged states
    # whose programs wait at different points of their logs)
    assert (r.stats.states, r.stats.transitions) == (14, 14)


HANDLER = """
from kubernetes import client, config

config.load_kube_config()
v1 = client.CoreV1Api()

def handle(event_type, obj):
    if obj.metadata.name.startswith("audit-"):
        return
    upsert(v1, "audit-" + obj.metadata.name,
           {"event": event_type, "type": type(obj).__name__, "v": (obj.data or {}).get("v", "")})
""" + UPSERT


def test_an_event_handler_is_told_added_modified_and_deleted_with_typed_objects(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        controllers:
          - {name: audit, handler: prog.py:handle, watches: [v1/ConfigMap]}
        """ + SEED + """
        actions:
          - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}, data: {v: "9"}}
          - delete: {apiVersion: v1, kind: ConfigMap, name: b, namespace: default}
        invariants:
          - name: a modified
            select: "$.items[?@.metadata.name == 'audit-a'].data"
            expect: {equals: {event: MODIFIED, type: V1ConfigMap, v: "9"}}
          - name: b deleted, told with its last content
            select: "$.items[?@.metadata.name == 'audit-b'].data"
            expect: {equals: {event: DELETED, type: V1ConfigMap, v: "2"}}
        """, HANDLER)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_a_sweep_runs_main_per_tick_and_a_change_brings_the_tick_forward(tmp_path: Path) -> None:
    r = _run(tmp_path, """
        controllers:
          - {name: sweep, program: prog.py:main, every: 45s, watches: [v1/ConfigMap]}
        """ + SEED + """
        actions:
          - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
        invariants:
          - name: all swept
            select: "$.items[?@.kind == 'ConfigMap' && @.metadata.namespace == 'default'].metadata.labels.swept"
            expect: {count: 3, equals: "yes"}
        """, """
        from kubernetes import client, config
        def main():
            config.load_kube_config()
            v1 = client.CoreV1Api()
            for cm in v1.list_namespaced_config_map("default").items:
                if not (cm.metadata.labels or {}).get("swept"):
                    v1.patch_namespaced_config_map(cm.metadata.name, "default",
                                                   {"metadata": {"labels": {"swept": "yes"}}})
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


@pytest.mark.parametrize(("body", "field", "message"), [
    ("- {name: p, program: prog.py:main, for: v1/ConfigMap}", "for", "'for' cannot be combined with 'program'"),
    ("- {name: p, handler: prog.py:main, every: 5s}", "every", "'every' is a sweep's period"),
    ("- {name: p, program: prog.py:main, watches: [{kind: v1/ConfigMap, map: all}]}", "watches",
     "a program or handler watches plain kinds"),
    ("- {name: p, entrypoint: prog.py:main, for: v1/ConfigMap, watches: [v1/Secret]}", "watches",
     "a plain kind ('v1/Secret') in watches is for a program or a handler"),
    ("- {name: p, program: prog.py:main, watches: [v1/Widgett]}", "watches", "unknown kind"),
    ("- {name: p, program: prog.py:main, watches: [ConfigMap]}", "watches", "is not a valid kind reference"),
    ("- {name: p, entrypoint: prog.py:main, for: v1/ConfigMap, watches: [{kind: v1/Secret}]}", "watches",
     "missing required field 'map'"),
])
def test_program_keys_are_checked_with_their_location(tmp_path: Path, body: str, field: str, message: str) -> None:
    path = _scenario(tmp_path, "controllers:\n  " + body + "\n", "def main():\n    pass\n")
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    text = str(info.value)
    assert message in text and "scenario.yaml:5:" in text and field in text, text


@pytest.mark.parametrize(("shape", "code", "message"), [
    ("program", "def main(request):\n    pass\n", "takes (request); kamera calls it as main()"),
    ("handler", "def main(obj):\n    pass\n", "takes (obj); kamera calls it as main(event_type, obj)"),
    ("handler", "async def main(event_type, obj):\n    pass\n", "is async; sweeps and handlers are plain functions"),
])
def test_program_signatures_are_checked_at_load(tmp_path: Path, shape: str, code: str, message: str) -> None:
    path = _scenario(tmp_path, f"controllers:\n  - {{name: p, {shape}: prog.py:main, watches: [v1/ConfigMap]}}\n"
                               "seed: []\n", code)
    with pytest.raises(EntrypointError, match=re.escape(message)):
        explore(load_scenario(path))


def test_stale_reads_are_refused_for_a_program(tmp_path: Path) -> None:
    path = _scenario(tmp_path, """
        controllers:
          - {name: p, program: prog.py:main, watches: [v1/ConfigMap]}
        seed: []
        perturbations:
          staleReads: [{controller: p}]
        """, "def main():\n    pass\n")
    with pytest.raises(ScenarioError, match=re.escape("stale reads do not apply to 'p', a program or handler")):
        load_scenario(path)


@pytest.mark.skipif(not program_parking.available(), reason="greenlet is not installed (kamera-cli[programs])")
def test_no_suspended_program_outlives_its_scenario(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import greenlet

    cleared: list[int] = []
    real_clear = program_parking.Parking.clear

    def clear(self: program_parking.Parking, containment: Any) -> None:
        cleared.append(len(self._kept))
        real_clear(self, containment)

    monkeypatch.setattr(program_parking.Parking, "clear", clear)
    def suspended() -> set[int]:
        gc.collect()
        return {id(g) for g in gc.get_objects()
                if isinstance(g, greenlet.greenlet) and not g.dead and g.parent is not None}

    before = suspended()  # a program an earlier test left blocked in C keeps its abandoned thread's greenlet
    path = Path(__file__).resolve().parents[2] / "scenarios" / "shapes" / "program" / "mirror" / "scenario.yaml"
    assert explore(load_scenario(path)).result.stats.states == 9
    assert cleared and cleared[0] > 0  # some were suspended when the scenario ended
    assert suspended() - before == set()


def test_a_lightkube_watch_loop_runs_as_a_program(tmp_path: Path) -> None:
    """Any client routed in-process reaches the program's session: lightkube's watch, one event per step."""
    pytest.importorskip("lightkube", reason="lightkube is not installed (kamera-cli[lightkube])")
    r = _watching(tmp_path, "rec", """
        invariants:
          - name: seen one at a time, as typed resources
            select: "$.items[?@.metadata.name == 'log'].data.seen"
            expect: {equals: "ADDED:a:ConfigMap,ADDED:b:ConfigMap"}
        """, """
        from lightkube import Client
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import ConfigMap

        def main():
            client = Client()
            seen = []
            for op, cm in client.watch(ConfigMap, namespace="default"):
                if cm.metadata.name != "log":
                    seen.append(f"{op}:{cm.metadata.name}:{type(cm).__name__}")
                    log = ConfigMap(metadata=ObjectMeta(name="log", namespace="default"), data={"seen": ",".join(seen)})
                    client.apply(log, field_manager="rec", force=True)
        """)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]
    assert r.stats.states == 5


@pytest.mark.parametrize("fast", [True, False])
def test_an_async_main_on_kubernetes_asyncio_runs_like_the_synchronous_program(
        fast: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """``async def main()``: its task blocks where it awaits the watch's next event, one per step, so the
    asynchronous mirror explores the synchronous mirror's graph, with the same finding."""
    pytest.importorskip("kubernetes_asyncio", reason="kubernetes_asyncio is not installed (kamera-cli[asyncio])")
    monkeypatch.setattr(program_parking, "ENABLED", fast)
    root = Path(__file__).resolve().parents[2] / "scenarios" / "shapes" / "program"
    asynchronous = explore(load_scenario(root / "mirror-async" / "scenario.yaml")).result
    synchronous = explore(load_scenario(root / "mirror" / "scenario.yaml")).result
    assert (asynchronous.stats.states, asynchronous.stats.transitions) == (
        synchronous.stats.states, synchronous.stats.transitions)
    assert [(c.name, c.verdict) for c in asynchronous.checks] == [(c.name, c.verdict) for c in synchronous.checks]


ASYNC_SLEEPER = """
import asyncio
from kubernetes_asyncio import client, config

async def main():
    await config.load_kube_config()
    async with client.ApiClient() as api:
        v1 = client.CoreV1Api(api)
        ticks = 0
        while True:
            ticks += 1
            for cm in (await v1.list_namespaced_config_map("default")).items:
                if (cm.metadata.labels or {}).get("seen") is None:
                    await v1.patch_namespaced_config_map(cm.metadata.name, "default",
                                                         {"metadata": {"labels": {"seen": str(ticks)}}})
            await asyncio.sleep(60)
"""


def test_an_async_program_s_asyncio_sleep_is_a_blocking_point(tmp_path: Path) -> None:
    pytest.importorskip("kubernetes_asyncio", reason="kubernetes_asyncio is not installed (kamera-cli[asyncio])")
    r = _watching(tmp_path, "sleeper", """
        actions:
          - apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: c, namespace: default}}
        invariants:
          - name: the third tick saw the action's object
            select: "$.items[?@.metadata.name == 'c'].metadata.labels.seen"
            expect: {equals: "3"}
        """, ASYNC_SLEEPER)
    assert r.verdict is Verdict.PASSED, [(c.name, c.message) for c in r.checks]


def test_an_async_program_with_several_tasks_is_refused_where_it_blocks(tmp_path: Path) -> None:
    """kamera suspends the whole event loop where a task blocks: a second task would starve there."""
    pytest.importorskip("kubernetes_asyncio", reason="kubernetes_asyncio is not installed (kamera-cli[asyncio])")
    r = _watching(tmp_path, "p", "", """
        import asyncio

        async def tick():
            while True:
                await asyncio.sleep(10)

        async def main():
            await asyncio.gather(tick(), tick())
        """)
    errors = _check(r, CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.FAILED
    assert ("raised ProgramThreaded: an async program blocked at a sleep of 10s while other asyncio tasks exist "
            "(Task-") in errors.counterexamples[0].summary
