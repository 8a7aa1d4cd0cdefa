"""Partial-order reduction of kopf operators against the unreduced search (issue #26).

Why: a kopf step is reordered only over the instants at which running it again gives the same
outcome, with a footprint of what it read and wrote plus the object's memo, and a kopf timer keeps
its own schedule (docs/semantics.md, "kopf"). Each of those rests on an argument; Hypothesis draws
small operator families that exercise them — timers over several objects (interval, idle, sharp),
create/update handlers with owned children, a handler that fails and retries with kopf's backoff, a
timer whose tick fails once — and every one must give the same verdicts, converged outcomes, stuck
regions and findings both ways, and reduce.

CI-sized: the suite runs this file in its kopf stage (``.ci/run``), so each test pins the examples
that cover its features (``@example``: one per feature, the smallest family that has it) and draws
one more from a range kept as small (``derandomize``: the same draw in every run). Before, four
draws per test over up to three objects with a timer, a retry and a user edit did not finish in 25
minutes on the shared 2-core machine; now the file takes about 2 minutes there (load 10).

Able to fail: one example per test is ``logged`` (``JOURNAL``): its outcome records an order, so a
lost order is a missing outcome. Made to read nothing, a kopf step reorders past the writes it read,
and ``test_timers_over_several_objects`` fails; without the journal every family converged to one
outcome and that broken rule passed every test. (Still not caught: a timer tick's window made
unbounded, whose only effect here is on when the next tick falls due.)
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kamera_cli.adapters.kopf.events import supported
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.model import core as model_core
from kamera_cli.sim.state import PendingItem
from tests.e2e.test_reduction import assert_complete_agreement, assert_reduction_agrees, outcomes_of, run_with

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

SETTINGS = settings(max_examples=1, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

CREATE_CHILD = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "create-child"


#: what a handler of a ``logged`` family calls once per object: it appends the object's name to a
#: shared ConfigMap, so the converged outcomes record the order in which the objects' steps ran.
#: Without it every family converges to one outcome whatever the order, and the comparison with the
#: unreduced search could not see a lost order: a kopf step made to read nothing, or a timer's window
#: made unbounded, passed every test (checked by hand when the tests were made CI-sized)
JOURNAL = """

def journal(entry, once=""):
    from kubernetes import client as _client
    _core = _client.CoreV1Api()
    log = (_core.read_namespaced_config_map("journal", "default").data or {}).get("log", "")
    if not once or once not in log:
        _core.patch_namespaced_config_map("journal", "default", {"data": {"log": log + entry + ";"}})


def seen_on(name):
    from kubernetes import client as _client
    widget = _client.CustomObjectsApi().get_namespaced_custom_object("example.com", "v1", "default", "widgets", name)
    return (widget["metadata"].get("annotations") or {}).get("example.com/seen", "none")
"""


def _scenario(folder: Path, operator: str, objects: int, actions: str = "", logged: bool = False) -> Path:
    """``objects`` Widgets in the default namespace, the operator over them, owned ConfigMaps;
    ``logged``: the shared ConfigMap ``journal`` (and the operator's ``journal``) too."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(CREATE_CHILD / "crds", folder / "crds", dirs_exist_ok=True)
    (folder / "operator.py").write_text(textwrap.dedent(operator) + (JOURNAL if logged else ""))
    seed = "".join(f"    - {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w{i}, namespace: default}}, "
                   f"spec: {{message: m{i}}}}}\n" for i in range(objects))
    if logged:
        seed += "    - {apiVersion: v1, kind: ConfigMap, metadata: {name: journal, namespace: default}}\n"
    (folder / "scenario.yaml").write_text(
        "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: kopf-family}\nspec:\n"
        "  explore: {maxStates: 20000, timeout: 300}\n"
        "  controllers:\n    - {name: op, kopf: operator.py, for: example.com/v1/Widget, owns: [v1/ConfigMap]}\n"
        "  crds: [crds/widget.yaml]\n  seed:\n" + seed + actions)
    return folder / "scenario.yaml"


def create_handler(fail: str = "", logged: bool = False) -> str:
    """An operator whose on.create makes an owned ConfigMap per Widget; ``fail``: lines that may
    raise before it (``retry`` is kopf's count of earlier attempts); ``logged``: then journals the
    Widget's name (``JOURNAL``)."""
    then = "    journal(name)\n" if logged else ""
    return f"""
import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()

@kopf.on.create("example.com", "v1", "widgets", id="make")
def make(spec, name, namespace, retry, **_):
{fail}    body = {{"metadata": {{"name": f"{{name}}-child"}}, "data": {{"message": spec["message"]}}}}
    kopf.adopt(body)
    try:
        core.create_namespaced_config_map(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
{then}"""


#: a tick's lines that journal, once, what the first tick of every Widget but w0 saw of w0's
#: annotation: that step only reads what w0's ticks write (no write of either wakes the other), so
#: their order reaches the outcome through a read alone
TICK_LOG = """    if body["metadata"]["name"] != "w0":
        journal(body["metadata"]["name"] + ":" + seen_on("w0"), once=body["metadata"]["name"])
"""


@SETTINGS
@given(objects=st.just(1), schedule=st.sampled_from(["interval=60", "interval=30, sharp=True",
                                                     "idle=20, interval=40", "interval=50, initial_delay=5"]),
       fails_once=st.booleans(), logged=st.just(False))
@example(objects=2, schedule="idle=20, interval=40", fails_once=False, logged=True)
@example(objects=1, schedule="interval=30, sharp=True", fails_once=True, logged=False)
@example(objects=2, schedule="interval=50, initial_delay=5", fails_once=True, logged=False)
def test_timers_over_several_objects(tmp_path: Path, objects: int, schedule: str, fails_once: bool,
                                     logged: bool) -> None:
    """Each object's ticks keep their own schedule: ticks of different objects commute."""
    failing = ("    if not (body.get('status') or {}).get('tick'):\n"
               "        raise kopf.TemporaryError('not yet', delay=7)\n") if fails_once else ""
    operator = f"""
import kopf

@kopf.timer("example.com", "v1", "widgets", {schedule}, id="tick")
def tick(body, patch, **_):
{failing}{TICK_LOG if logged else ""}    patch.metadata.annotations["example.com/seen"] = body["spec"]["message"]
    return {{"done": True}}
"""
    if fails_once:  # the first tick stores nothing; the retry stores its result
        operator = operator.replace("        raise kopf.TemporaryError",
                                    "        patch.status['tick'] = {'tried': True}\n        raise kopf.TemporaryError")
    path = _scenario(tmp_path / f"timer-{objects}-{len(schedule)}-{fails_once}", operator, objects, logged=logged)
    assert_complete_agreement(path)


@SETTINGS
@given(objects=st.just(1), with_timer=st.booleans(), retries=st.booleans(), logged=st.just(False))
@example(objects=1, with_timer=True, retries=False, logged=True)
@example(objects=2, with_timer=False, retries=True, logged=True)
def test_handlers_with_owned_children(tmp_path: Path, objects: int, with_timer: bool, retries: bool,
                                      logged: bool) -> None:
    """on.create makes an owned child (kopf's finalizer and annotations on the object), on.update
    follows the spec; a handler that fails first retries after kopf's backoff. ``logged``: with the
    timer, its first tick journals whether the child existed yet (a step that only reads what the
    create handler writes: their order is in the outcome through that read alone), else the create
    handler journals."""
    fail = ("    if retry == 0:\n        raise kopf.TemporaryError('not ready', delay=3)\n") if retries else ""
    saw = ("journal(name + ':none', once=name)", "journal(name + ':child', once=name)") if logged else ("pass",) * 2
    timer = ('\n@kopf.timer("example.com", "v1", "widgets", interval=45, id="audit")\n'
             "def audit(name, namespace, **_):\n"
             "    try:\n"
             "        core.read_namespaced_config_map(f'{name}-child', namespace)\n"
             "    except ApiException:\n"
             f"        {saw[0]}\n"
             "    else:\n"
             f"        {saw[1]}\n") if with_timer else ""
    operator = create_handler(fail, logged and not with_timer) + f"""
@kopf.on.update("example.com", "v1", "widgets", field="spec.message", id="follow")
def follow(new, name, namespace, **_):
    core.patch_namespaced_config_map(f"{{name}}-child", namespace, {{"data": {{"message": new}}}})
{timer}"""
    actions = ("  actions:\n    - {name: edit, at: any, patch: {target: {apiVersion: example.com/v1, kind: Widget, "
               "namespace: default, name: w0}, type: merge, patch: {spec: {message: edited}}}}\n")
    assert_complete_agreement(_scenario(tmp_path / f"owned-{objects}-{with_timer}-{retries}", operator, objects,
                                        actions if objects == 1 else "", logged))


def test_timers_of_different_objects_are_reordered(tmp_path: Path) -> None:
    """Before, every kopf step was global ("time-dependent controller (kopf)", "the step set a timer"):
    two objects' timers and events reached every order. Now the reduced search is smaller and no
    state is expanded fully because of a kopf step."""
    operator = """
import kopf

@kopf.timer("example.com", "v1", "widgets", interval=60, id="tick")
def tick(body, patch, **_):
    patch.metadata.annotations["example.com/seen"] = body["spec"]["message"]
"""
    reduced = assert_reduction_agrees(load_scenario(_scenario(tmp_path / "pair", operator, 3)))
    causes = dict(reduced.search.stats.global_causes)
    assert not any("kopf" in cause or "set a timer" in cause for cause in causes), causes
    assert reduced.search.stats.reduced > 0


@SETTINGS
@given(objects=st.just(2), delay=st.just(5), who=st.sampled_from(["all", "first"]), logged=st.just(False))
@example(objects=2, delay=2, who="all", logged=True)
@example(objects=3, delay=2, who="first", logged=False)
@example(objects=2, delay=3, who="runtime", logged=True)
def test_handlers_retrying_with_a_backoff_over_several_objects(tmp_path: Path, objects: int, delay: int,
                                                               who: str, logged: bool) -> None:
    """A create handler's first failure stores kopf's ``delayed`` instant on the object; the event its
    own patch causes sleeps the rest of the backoff (a retry due at that instant, kept with the
    event: ``PendingItem.retry_due``), and may be moved only over the instants before it. Before the
    instant was kept, two objects' backoffs made a false livelock in both searches alike. The event
    steps' windows come from the ``delayed`` instants kopf stored plus one run at the next instant
    (adapters/kopf/deadlines.py); ``who="runtime"``: the retry reads kopf's ``runtime`` kwarg, so the
    operator's windows are found by running its steps again at each instant, as before."""
    only = "" if who == "all" else "name == 'w0' and "
    operator = create_handler(f"    if {only}retry == 0:\n"
                              f"        raise kopf.TemporaryError('not ready', delay={delay})\n", logged)
    if who == "runtime":  # the retry sees the time (kopf's runtime kwarg): its window is found by running it
        late = f"runtime.total_seconds() >= {delay}"
        operator = create_handler("    if retry == 0:\n        raise kopf.TemporaryError('not ready', delay=1)\n"
                                  f"    spec = {{'message': 'late' if {late} else 'soon'}}\n", logged)
        operator = operator.replace("def make(spec, name, namespace, retry, **_):",
                                    "def make(spec, name, namespace, retry, runtime, **_):")
    path = _scenario(tmp_path / f"retry-{objects}-{delay}-{who}", operator, objects, logged=logged)
    reduced = assert_complete_agreement(path)
    checks = {c.name: c.verdict.value for c in reduced.result.checks}
    assert checks["converges"] == "passed"  # every object gets its child: no livelock
    assert checks["deterministic"] == ("failed" if logged else "passed")  # the journal's order is the outcome


@SETTINGS
@given(schedule=st.just("idle=15, interval=30"), second=st.booleans(), logged=st.just(False))
@example(schedule="interval=60", second=False, logged=True)
def test_timers_armed_by_a_create_handler(tmp_path: Path, schedule: str, second: bool, logged: bool) -> None:
    """A timer whose filters match only once on.create labelled the object is started by that event:
    its first tick keeps its own schedule from the event's instant (``anchored``), so the ticks of
    different objects commute and none of them is global. Two objects: with three the unreduced
    search passes 40,000 states (``bench/bench_operators.py --only kopf-create-timer-3``). With an
    ``initial_delay`` the step that waits it out is global once it runs later than the delay (its
    next tick is then due at the next step, an instant that moves with it);
    ``test_timers_over_several_objects`` covers that schedule."""
    operator = f"""
import kopf

@kopf.on.create("example.com", "v1", "widgets", id="make")
def make(patch, **_):
    patch.metadata.labels["example.com/managed"] = "yes"

@kopf.timer("example.com", "v1", "widgets", {schedule}, labels={{"example.com/managed": "yes"}}, id="tick")
def tick(body, patch, **_):
{TICK_LOG if logged else ""}    patch.metadata.annotations["example.com/seen"] = body["spec"]["message"]
"""
    if second:  # the tick also posts an Event (a record: no state) and writes a constant
        operator = operator.replace('patch.metadata.annotations["example.com/seen"] = body["spec"]["message"]',
                                    'kopf.info(body, reason="Seen", message=body["spec"]["message"])\n'
                                    '    patch.metadata.annotations["example.com/seen"] = "yes"')
    path = _scenario(tmp_path / f"armed-{len(schedule)}-{second}", operator, 2, logged=logged)
    reduced = assert_complete_agreement(path)
    causes = dict(reduced.search.stats.global_causes)
    assert not any("kopf" in cause for cause in causes), causes


@SETTINGS
@given(objects=st.integers(1, 2), wait=st.sampled_from([20, 45]), logged=st.just(False))
@example(objects=3, wait=45, logged=False)
@example(objects=2, wait=20, logged=True)
def test_daemons_over_several_objects(tmp_path: Path, objects: int, wait: int, logged: bool) -> None:
    """A daemon's wake-up keeps its own schedule from the instant it was due, like a timer's tick."""
    operator = f"""
import kopf

@kopf.daemon("example.com", "v1", "widgets", id="beat")
def beat(stopped, status, patch, name, **_):
    while not stopped:
        if (status.get("beat") or {{}}).get("alive") is not True:
            {"journal(name)" if logged else "pass"}
            patch.status["beat"] = {{"alive": True}}
        stopped.wait({wait})
"""
    assert_complete_agreement(_scenario(tmp_path / f"daemon-{objects}-{wait}", operator, objects, logged=logged))


def test_a_timer_whose_every_tick_fails_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each tick fails on its first attempt and succeeds on kopf's retry: kopf's retry state, with the
    absolute instants it started and is delayed until, is carried to the retry, and fingerprinted as
    their distances from the clock (``PendingItem.carried_from``), which merges states that differ
    only by when a failure happened; w1's first tick journals what it saw of w0's annotation. The
    reduction is checked against the full search, and the full search against one that keeps the
    carried instants absolute (as before): the same verdicts and outcomes, in no fewer states. (In fewer
    before a tick ran at the instant it was due; now every tick of this family fails at its own due
    instant, so its carried instants no longer differ between its paths: 60 states both ways.)
    Since a tick runs at its due instant, its failure is reordered like any tick: nothing is global."""
    operator = f"""
import kopf

@kopf.timer("example.com", "v1", "widgets", interval=30, id="tick")
def tick(body, patch, retry, **_):
    if retry == 0:
        raise kopf.TemporaryError("flaky", delay=7)
{TICK_LOG}    patch.metadata.annotations["example.com/seen"] = body["spec"]["message"]
"""
    scenario = load_scenario(_scenario(tmp_path / "flaky", operator, 2, logged=True))
    reduced = assert_reduction_agrees(scenario)
    assert reduced.search.complete
    assert not any("kopf" in cause for cause, _n in reduced.search.stats.global_causes)
    relative = run_with(scenario, "none")
    monkeypatch.setattr(PendingItem, "carried_from", lambda item, clock: item.carry)
    absolute = run_with(scenario, "none")
    assert absolute.result.verdict == relative.result.verdict
    assert outcomes_of(absolute) == outcomes_of(relative)
    assert relative.search.stats.states <= absolute.search.stats.states


@SETTINGS
@given(backoff=st.just(20))
@example(backoff=10)
def test_a_handler_whose_first_attempt_fails_beside_a_timer(tmp_path: Path, backoff: int) -> None:
    """The shape of a public limit-range operator: one handler on create, resume and a 60 s timer,
    which fails on its first attempt where the Widget has no annotations (a ``KeyError``: kopf logs
    it and retries after the handler's backoff; its own progress annotation is there by then). The
    events of the start's listing, and those their own steps cause, run at the instant the listing
    was due (``PendingItem.anchored``), so the failure stores the same ``delayed`` instant in every
    order and is reordered like any step: nothing is global for a kopf step. The run that makes a
    Widget's child journals the Widget: an order of the objects' retries lost by the reduction is a
    missing outcome. (Made to run such an event at the clock's instant while still counting it as
    run when due, the reduced search loses outcomes and this fails.)"""
    operator = f"""
import kopf
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()

@kopf.on.resume("example.com", "v1", "widgets", id="size", backoff={backoff})
@kopf.on.create("example.com", "v1", "widgets", id="size", backoff={backoff})
@kopf.timer("example.com", "v1", "widgets", interval=60, sharp=True, backoff={backoff}, id="size-loop")
def size(name, namespace, meta, **_):
    size = meta["annotations"].get("example.com/size", "1")
    body = {{"metadata": {{"name": f"{{name}}-child"}}, "data": {{"size": size}}}}
    kopf.adopt(body)
    try:
        core.create_namespaced_config_map(namespace, body)
    except ApiException as exc:
        if exc.status != 409:
            raise
    journal(name, once=name)
"""
    path = _scenario(tmp_path / f"fail-once-{backoff}", operator, 2, logged=True)
    reduced = assert_complete_agreement(path)
    assert len(outcomes_of(reduced)) > 1  # the journal records orders
    assert not any("kopf" in cause for cause, _n in reduced.search.stats.global_causes)


@pytest.mark.parametrize("fails", [False, True])
def test_timers_against_the_exact_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool) -> None:
    """A converged state's timers and the distance to the instant the clock jumps to are left out of
    fingerprints (docs/semantics.md, "Instants no step can see"). On an on.create that makes a child
    (failing first with a backoff, ``fails``) beside a 45 s timer whose first tick journals whether
    the child existed yet, over two Widgets: the full search agrees with the one that keeps every
    delay (verdicts, outcomes, findings), in no more states, and the reduced search with both."""
    fail = "    if retry == 0:\n        raise kopf.TemporaryError('not ready', delay=3)\n" if fails else ""
    operator = create_handler(fail) + """
@kopf.timer("example.com", "v1", "widgets", interval=45, id="audit")
def audit(name, namespace, **_):
    try:
        core.read_namespaced_config_map(f'{name}-child', namespace)
    except ApiException:
        journal(name + ':none', once=name)
    else:
        journal(name + ':child', once=name)
"""
    scenario = load_scenario(_scenario(tmp_path / f"audit-{fails}", operator, 2, logged=True))
    unclocked = assert_reduction_agrees(scenario)
    assert unclocked.search.complete
    full = run_with(scenario, "none")
    monkeypatch.setattr(model_core, "UNCLOCKED", False)
    exact = run_with(scenario, "none")
    assert {c.name: c.verdict for c in exact.result.checks} == {c.name: c.verdict for c in full.result.checks}
    assert outcomes_of(exact) == outcomes_of(full) == outcomes_of(unclocked)
    assert {f.key for f in exact.search.findings} == {f.key for f in full.search.findings}
    assert full.search.stats.states <= exact.search.stats.states


def test_a_stored_backoff_keeps_the_distance_to_the_jump(monkeypatch: pytest.MonkeyPatch) -> None:
    """kopf stores a failed handler's ``delayed`` instant in the object's progress annotation, which the
    fingerprint holds as text, and compares it with the instant its step runs at. Where one is stored,
    delays keep counting from the clock: otherwise the state waiting out the backoff and the state whose
    event is ready (and finds the handler still sleeping) took one fingerprint, and a create handler
    retried forever (``kopf/conflict-forever``) became a loop of 5 states instead of a chain of retries
    cut at the depth bound — a livelock where the full search finds none."""
    scenario = load_scenario(CREATE_CHILD.parent / "conflict-forever" / "scenario.yaml")
    unclocked = run_with(scenario, "none")
    monkeypatch.setattr(model_core, "UNCLOCKED", False)
    exact = run_with(scenario, "none")
    assert {c.name: c.verdict for c in exact.result.checks} == {c.name: c.verdict for c in unclocked.result.checks}
    assert bool(exact.search.livelocks) == bool(unclocked.search.livelocks)
    assert {f.key for f in exact.search.findings} == {f.key for f in unclocked.search.findings}
    assert unclocked.search.stats.states == exact.search.stats.states


def test_a_clock_window_is_worked_out_only_where_the_reduction_asks(tmp_path: Path) -> None:
    """A kopf step's window runs the step again at later instants (up to a dozen runs). Worked out when
    the step was taken, it cost the search of one object whose handler always fails (kopf retrying it
    with its backoff; the shape of an operator found calling a kopf function that does not exist) 197
    reconciles where the unreduced search ran 101, for the same 51 states (that operator's own: 1,253
    against 101): at a state with one process nothing is reordered and no window is asked for. Now
    the same states, verdict and findings with no more runs than the unreduced search (seen failing
    with the window worked out at once)."""
    scenario = load_scenario(_scenario(tmp_path, """
import kopf

@kopf.on.create("example.com", "v1", "widgets", id="make")
def make(spec, name, namespace, **_):
    raise RuntimeError("no such helper")
""", objects=1))
    reduced, full = run_with(scenario, "persistent"), run_with(scenario, "none")
    assert reduced.result.stats.states == full.result.stats.states
    assert reduced.result.verdict == full.result.verdict
    assert [(c.name, c.verdict, c.message) for c in reduced.result.checks] == [
        (c.name, c.verdict, c.message) for c in full.result.checks]
    assert reduced.result.stats.reconciles <= full.result.stats.reconciles, (
        reduced.result.stats.reconciles, full.result.stats.reconciles)
