from __future__ import annotations

from kubernetes import client


def test_crud_through_client(api_client):
    core = client.CoreV1Api(api_client)
    cm = core.create_namespaced_config_map("default", {"metadata": {"name": "a"}, "data": {"x": "1"}})
    assert cm.metadata.name == "a"
    got = core.read_namespaced_config_map("a", "default")
    assert got.data == {"x": "1"}
    lst = core.list_namespaced_config_map("default")
    assert [i.metadata.name for i in lst.items] == ["a"]
