"""An API error that escapes a reconcile is a requeue (not a finding) whichever client raised it.

Each client's own exception for an error status — the official client's ``ApiException``,
kubernetes_asyncio's, kr8s's ``ServerError``, lightkube's ``ApiError``, pykube-ng's ``HTTPError`` —
reaches the runner as ``api-error`` with the HTTP status and the Status message, as controller-runtime
requeues any error.  The 409 below is a real answer of the simulated API server (creating an object
that exists), reached through each client's routing.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest

from kamera_cli.adapters import Request, Result, VirtualClock, load_reconciler, run_reconcile
from kamera_cli.apiserver.transports.containment import Containment
from tests.apiserver.conftest import make_server
from tests.unit.test_adapters_running import EPOCH, write

CREATE_TWICE = {
    "kubernetes": """
        from kubernetes import client, config
        def reconcile(request):
            config.load_kube_config()
            client.CoreV1Api().create_namespaced_config_map("default", {"metadata": {"name": "taken"}})
        """,
    "kr8s": """
        from kr8s.objects import ConfigMap
        def reconcile(request):
            ConfigMap({"metadata": {"name": "taken", "namespace": "default"}}).create()
        """,
    "lightkube": """
        from lightkube import Client
        from lightkube.models.meta_v1 import ObjectMeta
        from lightkube.resources.core_v1 import ConfigMap
        def reconcile(request):
            Client().create(ConfigMap(metadata=ObjectMeta(name="taken", namespace="default")))
        """,
    "pykube": """
        import pykube
        def reconcile(request):
            api = pykube.HTTPClient(pykube.KubeConfig.from_env())
            pykube.ConfigMap(api, {"metadata": {"name": "taken", "namespace": "default"}}).create()
        """,
}


@pytest.fixture
def contained() -> Iterator[None]:
    server = make_server()
    server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "taken", "namespace": "default"}})
    with Containment(server):
        yield


@pytest.mark.parametrize("client", sorted(CREATE_TWICE))
def test_a_conflict_escaping_any_client_is_an_api_error(client: str, tmp_path: Path, contained: None) -> None:
    if importlib.util.find_spec(client) is None:
        pytest.skip(f"{client} is not installed (pip install 'kamera-cli[{client}]')")
    write(tmp_path, "ctrl.py", CREATE_TWICE[client])
    factory = load_reconciler("ctrl.py:reconcile", tmp_path, scenario="demo", controller="widget")
    try:
        outcome = run_reconcile(factory, Request("default", "web"), None, budget_seconds=10,
                                clock=VirtualClock(EPOCH), seed=b"seed")
    finally:
        factory.unload()
    assert outcome.kind == "api-error", outcome
    assert outcome.result == Result(requeue=True)
    assert outcome.error is not None and outcome.error.api_status == 409
    assert 'configmaps "taken" already exists' in outcome.error.message
