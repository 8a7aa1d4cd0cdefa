"""metacontroller's dynamic apply (pkg/dynamic/apply/apply.go, common/manage_children.go ApplyUpdate)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kamera_cli.adapters.metacontroller.apply import (
    LAST_APPLIED,
    ApplyError,
    apply_update,
    get_last_applied,
    merge,
    set_last_applied,
)


def test_a_field_applied_before_and_no_longer_desired_is_removed_and_others_fields_are_kept() -> None:
    observed = {"spec": {"a": 1, "b": 2, "byOthers": 3}}
    last = {"spec": {"a": 1, "b": 2}}
    desired = {"spec": {"a": 5}}
    assert merge(observed, last, desired) == {"spec": {"a": 5, "byOthers": 3}}


def test_without_a_last_applied_configuration_nothing_is_removed() -> None:
    assert merge({"spec": {"x": 1}}, None, {"spec": {"y": 2}}) == {"spec": {"x": 1, "y": 2}}


def test_lists_of_objects_with_a_known_key_merge_item_by_item() -> None:
    observed = {"containers": [{"name": "app", "image": "v1", "resources": {"cpu": 1}},
                               {"name": "sidecar", "image": "proxy"}]}
    last = {"containers": [{"name": "app", "image": "v1"}]}
    desired = {"containers": [{"name": "app", "image": "v2"}, {"name": "extra", "image": "e"}]}
    got = merge(observed, last, desired)
    # observed order first, then the new item; the injected sidecar (never applied) is kept, and the
    # field another party set on the applied container survives
    assert got["containers"] == [{"name": "app", "image": "v2", "resources": {"cpu": 1}},
                                 {"name": "sidecar", "image": "proxy"}, {"name": "extra", "image": "e"}]


def test_an_item_applied_before_and_no_longer_desired_leaves_the_list() -> None:
    observed = {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}
    last = {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}
    got = merge(observed, last, {"ports": [{"port": 80, "name": "http"}]})
    assert got == {"ports": [{"port": 80, "name": "http"}]}


def test_the_merge_key_is_the_first_known_key_every_item_has() -> None:
    # both have "name" and "port": "port" comes first in metacontroller's list
    observed = {"ports": [{"port": 80, "name": "a"}]}
    got = merge(observed, None, {"ports": [{"port": 80, "name": "b"}]})
    assert got == {"ports": [{"port": 80, "name": "b"}]}


def test_lists_of_scalars_and_lists_without_a_common_key_are_replaced() -> None:
    assert merge({"args": ["a", "b"]}, {"args": ["a"]}, {"args": ["c"]}) == {"args": ["c"]}
    assert merge({"xs": [{"k": 1}]}, None, {"xs": [{"k": 2}]}) == {"xs": [{"k": 2}]}


def test_a_desired_value_of_another_type_than_an_observed_map_counts_as_absent() -> None:
    # apply.go's type assertions leave a nil map, and the error branch never fires: the map stays
    assert merge({"spec": {"a": 1}}, None, {"spec": "text"}) == {"spec": {"a": 1}}
    assert merge({"spec": {"a": 1}}, {"spec": {"a": 1}}, {"spec": None}) == {"spec": {}}


def test_apply_update_keeps_server_fields_and_status_and_records_what_was_applied() -> None:
    observed = {"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "uid": "u1", "resourceVersion": "7", "generation": 2,
                             "creationTimestamp": "2026-01-01T00:00:00Z", "labels": {"a": "1"}},
                "spec": {"x": 1}, "status": {"phase": "Running"}}
    desired: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": "p", "uid": "other", "labels": {"a": "2"}},
                               "spec": {"x": 2}, "status": {"phase": "Bogus"}}
    got = apply_update(observed, desired)
    assert got["metadata"]["uid"] == "u1" and got["metadata"]["resourceVersion"] == "7"
    assert got["metadata"]["generation"] == 2 and got["status"] == {"phase": "Running"}
    assert got["spec"] == {"x": 2} and got["metadata"]["labels"] == {"a": "2"}
    assert json.loads(got["metadata"]["annotations"][LAST_APPLIED]) == desired
    # applying the same desired object again changes nothing: metacontroller then writes nothing
    assert apply_update(got, desired) == got


def test_the_annotation_in_a_desired_object_is_not_part_of_what_is_recorded() -> None:
    desired = {"metadata": {"name": "p", "annotations": {LAST_APPLIED: "{}", "keep": "me"}}}
    got = apply_update({"metadata": {"name": "p"}}, desired)
    assert json.loads(got["metadata"]["annotations"][LAST_APPLIED]) == {
        "metadata": {"name": "p", "annotations": {"keep": "me"}}}


def test_a_field_dropped_from_the_desired_object_is_removed_on_the_next_update() -> None:
    created: dict[str, Any] = {"metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}}
    set_last_applied(created, {"metadata": {"name": "p"}, "data": {"a": "1", "b": "2"}})
    created["data"]["byOthers"] = "3"
    got = apply_update(created, {"metadata": {"name": "p"}, "data": {"a": "1"}})
    assert got["data"] == {"a": "1", "byOthers": "3"}


def test_an_unreadable_annotation_is_an_error() -> None:
    with pytest.raises(ApplyError, match="can't unmarshal"):
        get_last_applied({"metadata": {"annotations": {LAST_APPLIED: "{not json"}}})
    assert get_last_applied({"metadata": {"annotations": {LAST_APPLIED: ""}}}) is None


def test_the_annotation_text_is_what_gos_json_marshal_writes() -> None:
    obj: dict[str, Any] = {}
    set_last_applied(obj, {"b": "<a&b>", "a": "é"})
    assert obj["metadata"]["annotations"][LAST_APPLIED] == '{"a":"é","b":"\\u003ca\\u0026b\\u003e"}'
