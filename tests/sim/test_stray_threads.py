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
    else:
        POOL.submit(core.read_namespaced_config_map, "x", request.namespace).result()


async def reads_through_to_thread(request):
    import asyncio
    await asyncio.to_thread(core.read_namespaced_config_map, request.name, request.namespace)


def reads_on_a_timer(request):
    timer = threading.Timer(5, core.read_namespaced_config_map, args=(request.name, request.namespace))
    timer.start()


def reads_from_the_pool(request):
    POOL.submit(core.read_namespaced_config_map, request.name, request.namespace).result()
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
    ("reads_from_the_pool", "POOL.submit(core.read_namespaced_config_map, request.name",
     "it tried GET /api/v1/namespaces/default/configmaps/x"),
])
def test_a_thread_that_calls_out_is_a_finding_naming_its_start_site(
        make_scenario: MakeScenario, attr: str, start_call: str, tried: str) -> None:
    verdict, text = _errors(make_scenario, attr)
    assert verdict is Verdict.FAILED
    site = f"controller 'widget' started a stray thread: StrayThread: a thread started at ctrl.py:{_line(start_call)}: "
    assert site in text, text
    assert tried in text
    assert f'File "ctrl.py", line {_line(start_call)}, in {attr}' in text  # the start stack, the user's frames


def test_an_idle_pool_worker_that_calls_the_api_in_a_later_step_is_that_steps_finding(
        make_scenario: MakeScenario) -> None:
    cms = [CM, {**CM, "metadata": {"name": "y", "namespace": "default"}}]
    result = explore(make_scenario(CODE, [("widget", "pool_by_name", CONFIGMAP)], cms)).result
    check = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert check.verdict is Verdict.FAILED
    (cex,) = check.counterexamples
    assert "it tried GET /api/v1/namespaces/default/configmaps/x" in cex.summary
    assert cex.steps[-1].request == "default/y"


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
