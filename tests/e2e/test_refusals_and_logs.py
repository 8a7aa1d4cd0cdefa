"""What a controller meets when it reaches for the network, and what it logs, as on a cluster.

A refused connection is the client's own connection error (the controller's ``except`` takes the path
it takes on a cluster where nothing listens) and still a ``NetworkAccess`` finding, for a reconcile and
for a kopf handler; a step's log holds the ``logging`` records emitted during it, for both shapes,
and leaves no handler behind.
"""

from __future__ import annotations

import logging
import textwrap
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Step, Verdict
from tests.e2e.test_kopf import run as run_kopf

#: the operator's notification: caught as requests' own error, the fallback path writes a ConfigMap
NOTIFY = '''
def notify(name):
    try:
        requests.post(f"http://hooks.example.com/{name}", timeout=2)
        return "sent"
    except requests.exceptions.ConnectionError as exc:
        log.warning("notification for %s failed: %s", name, type(exc).__name__)
        return "failed"
'''

RECONCILER = '''
import logging
import requests
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
log = logging.getLogger(__name__)
log.setLevel(logging.INFO)  # a plain program logs at WARNING and up unless told otherwise
quiet = logging.getLogger("quiet")
''' + NOTIFY + '''

def reconcile(request):
    if request.name != "team-a":
        return
    log.info("reconciling %s", request.name)
    quiet.info("not emitted: below the root logger's WARNING")
    print("printed too")
    outcome = notify(request.name)
    try:
        core.create_namespaced_config_map("team-a", client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="notified"), data={"outcome": outcome}))
    except ApiException as exc:
        if exc.status != 409:
            raise
'''

OPERATOR = '''
import logging
import kopf
import requests

log = logging.getLogger(__name__)
''' + NOTIFY + '''

@kopf.on.create("example.com", "v1", "widgets")
def created(name, logger, **_):
    logger.info("creating %s", name)
    log.info("module logger for %s", name)
    return {"outcome": notify(name)}
'''


def _finding(result: ScenarioResult) -> str:
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    assert check.verdict is Verdict.FAILED
    return check.message


def _first_step(result: ScenarioResult, actor: str, request: str) -> Step:
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    return next(s for c in check.counterexamples for s in c.steps if (s.actor, s.request) == (actor, request))


def _root_untouched(before: tuple[int, list[logging.Handler]]) -> None:
    root = logging.getLogger()
    assert (root.level, list(root.handlers)) == before


def test_a_reconcile_catches_requests_own_error_and_the_attempt_is_a_finding(tmp_path: Path) -> None:
    (tmp_path / "controller.py").write_text(RECONCILER)
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: notify}
        spec:
          controllers:
            - {name: teams, entrypoint: "controller.py:reconcile", for: v1/Namespace, owns: [v1/ConfigMap]}
          seed:
            - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
        """))
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    (result,) = kamera_cli.check(tmp_path / "scenario.yaml").scenarios
    _root_untouched(before)
    # the except branch ran: the fallback's ConfigMap is in every converged state
    for state in result.converged:
        (cm,) = [o for o in state.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "notified"]
        assert cm["data"] == {"outcome": "failed"}
    assert "NetworkAccess: tried to open a network connection to hooks.example.com:80" in _finding(result)
    step = _first_step(result, "teams", "team-a")
    assert step.log.splitlines() == ["INFO controller: reconciling team-a", "printed too",
                                     "WARNING controller: notification for team-a failed: ConnectionError"]


@pytest.mark.skipif(supported() is not None, reason=supported() or "")
def test_a_kopf_handler_catches_requests_own_error_and_the_attempt_is_a_finding(tmp_path: Path) -> None:
    root = logging.getLogger()
    before = (root.level, list(root.handlers))
    result = run_kopf(tmp_path, OPERATOR)
    _root_untouched(before)
    for state in result.converged:  # the handler succeeded through its except branch
        (widget,) = [o for o in state.objects if o["kind"] == "Widget"]
        assert widget["status"] == {"created": {"outcome": "failed"}}
    assert "NetworkAccess: tried to open a network connection to hooks.example.com:80" in _finding(result)
    log = _first_step(result, "op", "default/demo").log.splitlines()
    assert log[:3] == ["INFO kopf.objects: creating demo", "INFO operator: module logger for demo",
                       "WARNING operator: notification for demo failed: ConnectionError"]
    assert "INFO kopf.objects: Handler 'created' succeeded." in log
