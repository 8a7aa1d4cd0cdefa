"""Server-set metadata: deterministic uid (new on re-create), generateName, creationTimestamp, kind/apiVersion."""

from __future__ import annotations

import re

import pytest
from kubernetes import client

from kamera_cli.apiserver import ApiError
from kamera_cli.model.objects import ObjectRef

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")


def test_uid_is_uuid_shaped_and_new_on_recreate(server):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}
    first = server.create(obj)["metadata"]["uid"]
    server.delete(ObjectRef.of(obj))
    second = server.create(obj)["metadata"]["uid"]
    assert UUID.match(first) and UUID.match(second) and first != second


def test_generate_name_is_deterministic_and_avoids_collisions(server):
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "web-", "namespace": "default"}}
    names = [server.create(body)["metadata"]["name"] for _ in range(5)]
    assert len(set(names)) == 5
    assert all(re.match(r"^web-[bcdfghjklmnpqrstvwxz2456789]{5}$", n) for n in names)
    from .conftest import make_server

    again = make_server()
    assert [again.create(body)["metadata"]["name"] for _ in range(5)] == names


def test_generate_name_does_not_depend_on_unrelated_writes(server):
    from .conftest import make_server

    other = make_server()
    other.create({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "noise", "namespace": "default"}})
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-", "namespace": "default"}}
    assert server.create(body)["metadata"]["name"] == other.create(body)["metadata"]["name"]


def test_creation_timestamp_comes_from_the_virtual_clock(api_client, clock):
    clock.t = 3661
    cm = client.CoreV1Api(api_client).create_namespaced_config_map("default", {"metadata": {"name": "a"}})
    assert cm.metadata.creation_timestamp.isoformat() == "2026-01-01T01:01:01+00:00"


def test_responses_carry_kind_and_api_version(server):
    resp = server.handle("POST", "/apis/apps/v1/namespaces/default/deployments", [], {}, (
        b'{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":'
        b'{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}'))
    body = resp.json()
    assert resp.status == 201 and body["kind"] == "Deployment" and body["apiVersion"] == "apps/v1"


def test_server_set_fields_in_the_body_are_ignored_on_create(server):
    # a resourceVersion is refused outright (tests/apiserver/test_write_rules.py); "0" means unset
    out = server.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
        "name": "a", "namespace": "default", "uid": "mine", "resourceVersion": "0",
        "deletionTimestamp": "2020-01-01T00:00:00Z"}})
    assert out["metadata"]["uid"] != "mine" and "deletionTimestamp" not in out["metadata"]
    assert out["metadata"]["resourceVersion"] != "0"


def test_managed_fields_manager_is_the_user_agent_prefix(api_client, server, fake_patching):
    client.CoreV1Api(api_client).create_namespaced_config_map("default", {"metadata": {"name": "a"},
                                                                         "data": {"k": "v"}})
    managers = [m["manager"] for m in server.journal[-1].after["metadata"]["managedFields"]]
    assert managers == ["OpenAPI-Generator"]


def test_apply_creates_a_missing_object(server, fake_patching):
    out = server.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": "applied", "namespace": "default"}, "data": {"k": "v"}}, "kamera-test")
    assert out["data"] == {"k": "v"} and out["metadata"]["uid"]
    assert server.journal[-1].verb == "patch" and server.journal[-1].status == 201


def test_bookkeeping_counters_are_readable_with_their_public_keys(server):
    from kamera_cli.apiserver.defaulting.metadata import generate_name_key, incarnation_key

    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "g-", "namespace": "default"}}
    server.create(body)
    server.create(body)
    assert server.snapshot.counter(generate_name_key("", "ConfigMap", "default", "g-")) == 2
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}}
    server.create(obj)
    server.delete(ObjectRef.of(obj))
    server.create(obj)
    assert server.snapshot.counter(incarnation_key(ObjectRef.of(obj))) == 2


def test_apply_of_the_same_values_by_a_second_manager_records_shared_ownership(server, fake_patching):
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s", "namespace": "default"},
           "data": {"k": "v"}}
    first = server.apply(obj, "one")
    again = server.apply(obj, "one")
    assert again["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]  # true no-op
    if getattr(fake_patching, "__file__", None):  # the real patching module tracks ownership
        shared = server.apply(obj, "two", force=False)
        assert shared["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
        assert sorted(m["manager"] for m in shared["metadata"]["managedFields"]) == ["one", "two"]


def test_an_invalid_generate_name_is_reported_with_the_generated_name(server):
    # ValidateObjectMeta: generateName in its prefix form (a trailing '-' masked), then the generated name
    with pytest.raises(ApiError) as exc:
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"generateName": "My-App-", "namespace": "default"}})
    causes = exc.value.body["details"]["causes"]
    assert [(c["field"], c["message"].split(":")[1].strip()) for c in causes] == [
        ("metadata.generateName", '"My-App-"'), ("metadata.name", f'"{exc.value.body["details"]["name"]}"')]
    assert server.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"generateName": "app-", "namespace": "default"}})["metadata"]["name"]


def test_generate_name_masking_drops_the_character_before_the_dash(server):
    # maskTrailingDash replaces the last two characters with "a": "web_-" is checked as "weba" and passes
    # the prefix check; only the generated name (with its "_") is refused
    with pytest.raises(ApiError) as exc:
        server.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"generateName": "web_-", "namespace": "default"}})
    assert [c["field"] for c in exc.value.body["details"]["causes"]] == ["metadata.name"]
