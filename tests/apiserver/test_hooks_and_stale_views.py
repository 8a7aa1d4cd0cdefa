"""before_write (refuse or abort a write; nothing committed), journal, stale views, helpers raising ApiError."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from kamera_cli.apiserver import ApiError
from kamera_cli.apiserver.errors import stale
from kamera_cli.model.objects import KindRef, ObjectRef

CM = KindRef("", "v1", "ConfigMap")
A = ObjectRef("v1", "ConfigMap", "default", "a")


class Crash(BaseException):
    pass


def _cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": data}


def test_hook_sees_before_and_after_and_can_inject_a_conflict(api_client, server):
    server.create(_cm("a", x="1"))
    seen = []

    def hook(access):
        seen.append((access.verb, access.before["data"], access.after["data"]))
        raise stale("configmaps", "", "a")

    server.before_write = hook
    rv = server.snapshot.resource_version
    with pytest.raises(ApiException) as exc:
        client.CoreV1Api(api_client).replace_namespaced_config_map("a", "default", _cm("a", x="2"))
    assert exc.value.status == 409
    assert seen == [("update", {"x": "1"}, {"x": "2"})]
    assert server.snapshot.resource_version == rv and server.snapshot.get(A)["data"] == {"x": "1"}


def test_hook_base_exception_aborts_the_caller_and_commits_nothing(server):
    server.create(_cm("a", x="1"))
    server.before_write = lambda access: (_ for _ in ()).throw(Crash())
    before = server.snapshot
    with pytest.raises(Crash):
        server.handle("DELETE", "/api/v1/namespaces/default/configmaps/a", [], {}, None)
    assert server.snapshot is before


def test_stale_view_serves_old_reads_except_for_own_writes(api_client, server):
    server.create(_cm("a", x="1"))
    server.create(_cm("b", x="1"))
    old = server.snapshot
    other = server.get(ObjectRef("v1", "ConfigMap", "default", "b"))
    other["data"] = {"x": "2"}
    server.update(other)  # written by "someone else" in a real cluster; here: before the view is set
    server.set_stale_view(CM, old)
    core = client.CoreV1Api(api_client)
    assert core.read_namespaced_config_map("b", "default").data == {"x": "1"}  # stale
    core.replace_namespaced_config_map("a", "default", _cm("a", x="9"))
    listed = {i.metadata.name: i.data for i in core.list_namespaced_config_map("default").items}
    assert listed == {"a": {"x": "9"}, "b": {"x": "1"}}  # own write visible, other still stale
    server.set_stale_view(CM, None)
    assert core.read_namespaced_config_map("b", "default").data == {"x": "2"}


def test_writes_are_checked_against_the_current_state_even_with_a_stale_view(api_client, server):
    created = server.create(_cm("a", x="1"))
    old = server.snapshot
    created["data"] = {"x": "2"}
    server.update(created)
    server.set_stale_view(CM, old)
    core = client.CoreV1Api(api_client)
    stale_obj = core.read_namespaced_config_map("a", "default")
    stale_obj.data = {"x": "3"}
    with pytest.raises(ApiException) as exc:
        core.replace_namespaced_config_map("a", "default", stale_obj)
    assert exc.value.status == 409


def test_programmatic_helpers_raise_api_error(server):
    with pytest.raises(ApiError) as exc:
        server.get(A)
    assert exc.value.status == 404 and exc.value.body["reason"] == "NotFound"
    server.create(_cm("a"))
    with pytest.raises(ApiError) as exc:
        server.create(_cm("a"))
    assert exc.value.status == 409


def test_create_helper_writes_a_seeds_status_through_the_status_subresource(server):
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}, "status": {"phase": "Running"}}
    out = server.create(pod)
    # podStatusStrategy.PrepareForUpdate backfills the qosClass the create stored
    assert out["status"] == {"phase": "Running", "qosClass": "BestEffort"}


def test_create_helper_accepts_yaml_timestamps_and_refuses_other_objects(server):
    import datetime

    out = server.create({**_cm("t"), "metadata": {"name": "t", "namespace": "default",
                                                  "annotations": {"when": datetime.date(2026, 1, 2)}}})
    assert out["metadata"]["annotations"] == {"when": "2026-01-02"}
    with pytest.raises(ApiError) as exc:
        server.create({**_cm("u"), "data": {"x": object()}})
    assert exc.value.status == 400
