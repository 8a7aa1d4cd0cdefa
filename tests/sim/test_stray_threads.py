"""Threads a reconcile starts: their API calls are refused and reported with the start site (issue #28).

Why: a reconcile that started a thread which kept creating ConfigMaps after it returned passed with
exit 0; whether the thread's calls landed in the step, in a later one or nowhere was the OS
scheduler's choice.  Each case here is judged the same way whatever the scheduler does.
"""

from __future__ import annotations

import pytest

from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.model.scenario import FakeSpec
from kamera_cli.runner import explore
from tests.sim.conftest import CONFIGMAP, MakeScenario

CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}

CODE = """
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from kubernetes import client
core = client.CoreV1Api()
POOL = ThreadPoolExecutor(2)


def _create(ns):
    core.create_namespaced_config_map(ns, {"metadata": {"generateName": "stray-"}})


def _keep_creating(ns):
    while True:
        time.sleep(30)
        try:
            _create(ns)
        except Exception:
            pass


def keeps_creating(request):
    threading.Thread(target=_keep_creating, args=(request.namespace,), daemon=True).start()


def _later(ns):
    threading.Event().wait(0.6)  # real waiting: the step is over when it calls
    _create(ns)


def creates_later(request):
    threading.Thread(target=_later, args=(request.namespace,), daemon=True).start()


def _dial():
    while True:
        time.sleep(60)
        try:
            socket.create_connection(("example.com", 443))
        except OSError:
            pass


def dials_later(request):
    threading.Thread(target=_dial, daemon=True).start()


def _work():
    return sum(range(1000))


def joins_its_helper(request):
    t = threading.Thread(target=_work)
    t.start()
    t.join()
    POOL.submit(_work).result()  # the pool's idle worker outlives the step, running no user code


def pool_by_name(request):
    if request.name == "x":
        POOL.submit(_work).result()  # starts the pool's worker, idle at this step's end
    else:  # the pool's worker, idle since an earlier step, does this step's work while it waits
        POOL.submit(_patch, "x", request.namespace, "from", request.name).result()


async def reads_through_to_thread(request):
    import asyncio
    await asyncio.to_thread(core.read_namespaced_config_map, request.name, request.namespace)


def reads_on_a_timer(request):
    timer = threading.Timer(5, core.read_namespaced_config_map, args=(request.name, request.namespace))
    timer.start()


def reads_from_the_pool(request):
    POOL.submit(core.read_namespaced_config_map, request.name, request.namespace).result()


def _patch(name, ns, key, value):
    core.patch_namespaced_config_map(name, ns, {"data": {key: value}})


def writes_through_helpers(request):
    ns = request.namespace
    POOL.submit(_patch, request.name, ns, "pool", "yes").result()
    helper = threading.Thread(target=_patch, args=(request.name, ns, "thread", "yes"))
    helper.start()
    helper.join()
    list(POOL.map(_patch, [request.name] * 2, [ns] * 2, ["map-1", "map-2"], ["yes", "yes"]))


async def resolves_a_service(request):
    import asyncio
    await asyncio.get_running_loop().getaddrinfo("scheduler.default", 8787)  # on the loop's executor


def scheduler(request):  # a fake by URL of the scheduler's HTTP API
    return {}


def forgets_the_pool(request):
    POOL.submit(_patch, request.name, request.namespace, "pool", "late")
"""


def _errors(make_scenario: MakeScenario, attr: str) -> tuple[Verdict, str]:
    result = explore(make_scenario(CODE, [("widget", attr, CONFIGMAP)], [CM])).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    return check.verdict, "\n".join(f"{c.summary}\n{c.details}\n" + "\n".join(s.error for s in c.steps)
                                    for c in check.counterexamples)


def _line(start_call: str) -> int:
    """The line of ``ctrl.py`` that starts the thread (the start site the finding must name)."""
    (number,) = [i for i, text in enumerate(CODE.splitlines(), 1) if start_call in text]
    return number


@pytest.mark.parametrize(("attr", "start_call", "tried"), [
    ("keeps_creating", "target=_keep_creating", "it tried POST /api/v1/namespaces/default/configmaps"),
    ("creates_later", "target=_later", "it was still running 0.25 s after the step ended"),
    ("dials_later", "target=_dial", "it tried a connection to example.com:443"),
    ("reads_through_to_thread", "await asyncio.to_thread", "it tried GET /api/v1/namespaces/default/configmaps/x"),
    ("reads_on_a_timer", "timer.start()", "it was still running 0.25 s after the step ended"),
    ("forgets_the_pool", "POOL.submit(_patch, request.name, request.namespace",
     "it tried PATCH /api/v1/namespaces/default/configmaps/x"),
])
def test_a_thread_that_calls_out_is_a_finding_naming_its_start_site(
        make_scenario: MakeScenario, attr: str, start_call: str, tried: str) -> None:
    verdict, text = _errors(make_scenario, attr)
    assert verdict is Verdict.FAILED
    site = f"controller 'widget' started a stray thread: StrayThread: a thread started at ctrl.py:{_line(start_call)}: "
    assert site in text, text
    assert tried in text
    assert f'File "ctrl.py", line {_line(start_call)}, in {attr}' in text  # the start stack, the user's frames


@pytest.mark.parametrize("attr", ["reads_from_the_pool", "writes_through_helpers"])
def test_work_the_step_waits_for_is_the_steps_own(make_scenario: MakeScenario, attr: str) -> None:
    """``pool.submit(fn).result()``, ``thread.join()``, ``pool.map``: the step is blocked while the helper
    calls, so its calls are applied as the step's own, in the order the step waits for them."""
    for _ in range(3):  # the same answer whatever the scheduler does
        exploration = explore(make_scenario(CODE, [("widget", attr, CONFIGMAP)], [CM]))
        check = next(c for c in exploration.result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
        assert check.verdict is Verdict.PASSED, [(c.summary, [s.error for s in c.steps]) for c in check.counterexamples]
        search = exploration.search
        (final,) = [search.state(n).snapshot for n in search.converged]
        (cm,) = [o for o in final.objects() if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "x"]
        written = {"pool": "yes", "thread": "yes", "map-1": "yes", "map-2": "yes"}
        assert cm.get("data") == (None if attr == "reads_from_the_pool" else written)


def test_an_idle_pool_worker_a_later_step_waits_for_does_that_steps_work(make_scenario: MakeScenario) -> None:
    cms = [CM, {**CM, "metadata": {"name": "y", "namespace": "default"}}]
    exploration = explore(make_scenario(CODE, [("widget", "pool_by_name", CONFIGMAP)], cms))
    check = next(c for c in exploration.result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.PASSED
    search = exploration.search
    finals = [search.state(n).snapshot for n in search.converged]
    assert finals and all(o.get("data") == {"from": "y"} for f in finals for o in f.objects()
                          if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "x")


SERVICE = """
import threading
import urllib3
from kamera_cli import ServiceResponse

CALLED = []


def answer(request):
    CALLED.append(request.url)
    return ServiceResponse.of_json({"ok": True})


def _ask():
    try:
        urllib3.PoolManager().request("GET", "http://billing.default.svc:8080/charge")
    except Exception as exc:
        CALLED.append(type(exc).__name__)


def asks_a_service(request):
    threading.Thread(target=_ask).start()


def asks_in_the_reconcile(request):
    urllib3.PoolManager().request("GET", "http://billing.default.svc:8080/charge")
"""


@pytest.mark.parametrize(("attr", "verdict"), [("asks_a_service", Verdict.FAILED),
                                               ("asks_in_the_reconcile", Verdict.PASSED)])
def test_a_stray_thread_is_refused_a_service_faked_by_url_too(make_scenario: MakeScenario, attr: str,
                                                              verdict: Verdict) -> None:
    fake = FakeSpec(replace="", with_="ctrl.py:answer", url="http://billing.default.svc:8080/**")
    result = explore(make_scenario(SERVICE, [("widget", attr, CONFIGMAP)], [CM], fakes=(fake,))).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is verdict
    if verdict is Verdict.FAILED:
        assert "it tried GET http://billing.default.svc:8080/charge" in check.counterexamples[0].summary


def test_nothing_a_stray_thread_sends_reaches_the_cluster(make_scenario: MakeScenario) -> None:
    result = explore(make_scenario(CODE, [("widget", "keeps_creating", CONFIGMAP)], [CM])).result
    assert result.verdict is Verdict.FAILED
    assert result.converged
    for state in result.converged:
        names = [str(obj["metadata"]["name"]) for obj in state.objects]
        assert "x" in names
        assert not any(name.startswith("stray-") for name in names), names


def test_threads_joined_in_the_step_and_idle_pool_workers_are_not_findings(make_scenario: MakeScenario) -> None:
    verdict, text = _errors(make_scenario, "joins_its_helper")
    assert verdict is Verdict.PASSED, text


def test_a_name_a_fake_by_url_covers_resolves_on_the_loop_s_executor(make_scenario: MakeScenario) -> None:
    """The same resolution when a fake by URL answers for the host: the name resolves (on the executor's
    thread, which the step does not wait for in ``Future.result``), and nothing is a finding."""
    fake = FakeSpec(replace="", with_="ctrl.py:scheduler", url="http://scheduler.default:8787/api/**")
    result = explore(make_scenario(CODE, [("widget", "resolves_a_service", CONFIGMAP)], [CM], fakes=(fake,))).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.PASSED, [c.summary for c in check.counterexamples]


def test_a_name_resolved_on_the_loop_s_executor_is_the_step_s_network_attempt(make_scenario: MakeScenario) -> None:
    """``loop.getaddrinfo`` runs on a thread the step's first use of the executor starts: the finding is
    the connection, with what to do about it, not "a stray thread" the user never wrote (dask-kubernetes'
    operator resolves its scheduler's Service this way)."""
    verdict, text = _errors(make_scenario, "resolves_a_service")
    assert verdict is Verdict.FAILED
    assert ("controller 'widget' opened a network connection of its own: NetworkAccess: tried to open a network "
            "connection to scheduler.default:8787 from a thread it started") in text, text
    assert "`fakes:`" in text
    assert "stray thread" not in text
