"""The differences between client generations (33.x legacy .. 37.x modern) the transport absorbs.

Both calling conventions are exercised directly against the stand-in, so every difference is
covered whichever client is installed; the tests at the bottom check the installed client's own
behaviour (CI runs this folder on 37.x and on 33.1.0).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transport_fakes import FakeServer

from kamera_cli.apiserver.transports.containment import Containment, PoolManagerStandIn

kubernetes = pytest.importorskip("kubernetes")
import urllib3  # noqa: E402
from kubernetes import client  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

MAJOR = int(kubernetes.__version__.split(".")[0])


@pytest.fixture
def server() -> FakeServer:
    server = FakeServer()
    server.seed("v1", "configmaps", "default", {"metadata": {"name": "a"}, "data": {"k": "v"}})
    return server


def _stand_in(server: FakeServer) -> PoolManagerStandIn:
    return PoolManagerStandIn(Containment(server))


def test_legacy_get_query_params_arrive_in_fields(server: FakeServer) -> None:
    pm = _stand_in(server)
    resp = pm.request("GET", "http://kamera.invalid/api/v1/namespaces/default/configmaps",
                      fields=[("labelSelector", "a=b"), ("limit", 5), ("watch", False)],
                      headers={"Accept": "application/json"}, preload_content=True, timeout=None)
    assert isinstance(resp, urllib3.HTTPResponse)
    assert resp.status == 200
    assert server.seen[-1].query == [("labelSelector", "a=b"), ("limit", "5"), ("watch", "false")]


def test_modern_query_in_url_with_empty_fields(server: FakeServer) -> None:
    pm = _stand_in(server)
    resp = pm.request("GET", "http://kamera.invalid/api/v1/namespaces/default/configmaps?labelSelector=a%3Db&watch=True",
                      fields={}, headers={}, preload_content=False, timeout=None)
    assert resp.status == 200
    assert server.seen[-1].query == [("labelSelector", "a=b"), ("watch", "true")]
    resp.release_conn()


def test_post_fields_are_not_turned_into_query(server: FakeServer) -> None:
    pm = _stand_in(server)
    body = json.dumps({"metadata": {"name": "b"}})
    resp = pm.request("POST", "http://kamera.invalid/api/v1/namespaces/default/configmaps?fieldManager=x",
                      body=body, headers={}, preload_content=True)
    assert resp.status == 201
    assert server.seen[-1].query == [("fieldManager", "x")]
    assert server.seen[-1].body == {"metadata": {"name": "b"}}
    assert "Content-Type" not in server.seen[-1].headers  # v37 sends none; the transport adds none


def test_preload_and_streaming_answers_are_real_responses(server: FakeServer) -> None:
    pm = _stand_in(server)
    url = "http://kamera.invalid/api/v1/namespaces/default/configmaps/a"
    preloaded = pm.request("GET", url, preload_content=True)
    assert json.loads(preloaded.data)["data"] == {"k": "v"}
    lazy = pm.request("GET", url, preload_content=False)
    assert b"".join(lazy.stream(amt=None, decode_content=False)) == preloaded.data
    assert lazy.headers["Content-Type"] == "application/json"
    assert lazy.reason == "OK"


def test_clear_is_a_no_op(server: FakeServer) -> None:
    pm = _stand_in(server)
    pm.clear()
    assert pm.request("GET", "http://kamera.invalid/version").status == 200


def test_installed_client_exception_classes(server: FakeServer) -> None:
    with Containment(server):
        core = client.CoreV1Api()
        with pytest.raises(ApiException) as missing:
            core.read_namespaced_config_map("nope", "default")
        with pytest.raises(ApiException) as dup:
            core.create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert (missing.value.status, dup.value.status) == (404, 409)
    names = (type(missing.value).__name__, type(dup.value).__name__)
    if MAJOR >= 37:
        assert names == ("NotFoundException", "ConflictException")
        assert isinstance(missing.value.body, str)
    elif MAJOR <= 35:
        assert names == ("ApiException", "ApiException")


def test_installed_client_delete_return_type(server: FakeServer) -> None:
    with Containment(server):
        deleted = client.CoreV1Api().delete_namespaced_config_map("a", "default")
    if MAJOR >= 37:
        assert isinstance(deleted, dict)
    else:
        assert type(deleted).__name__ == "V1Status"


def test_installed_client_boolean_spelling_is_normalised(server: FakeServer) -> None:
    with Containment(server):
        client.CoreV1Api().list_namespaced_config_map("default", watch=False, allow_watch_bookmarks=True)
    query = dict(server.seen[-1].query)
    assert query["watch"] == "false"
    assert query["allowWatchBookmarks"] == "true"
