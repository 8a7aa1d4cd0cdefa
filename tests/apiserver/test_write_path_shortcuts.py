"""The write path's identity shortcuts must not change answers.

Validation skips subtrees a patch shares with the stored object only when that object passed
validation whole through this server; managedFields bookkeeping reuses the stored list only when
the write leaves every entry as it was.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver import ApiError, ApiServer, Registry
from kamera_cli.model.objects import ObjectRef
from tests.apiserver.conftest import Clock, make_server


def _deployment(name: str = "d") -> dict[str, Any]:
    labels = {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "default"},
            "spec": {"selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "app", "image": "nginx:1.27"}]}}}}


def _ref(name: str = "d") -> ObjectRef:
    return ObjectRef("apps/v1", "Deployment", "default", name)


def test_an_invalid_object_placed_in_the_snapshot_directly_still_fails_validation_on_patch() -> None:
    server = make_server()
    broken = _deployment()
    broken["metadata"].update(uid="u", resourceVersion="1", generation=1, creationTimestamp="2026-01-01T00:00:00Z")
    broken["spec"]["template"]["spec"]["containers"] = [{"image": "nginx"}]  # name is required
    server.snapshot = server.snapshot.with_object(_ref(), broken)
    with pytest.raises(ApiError) as info:
        server.patch(_ref(), "merge", {"spec": {"replicas": 3}})
    assert info.value.status == 422
    assert "spec.template.spec.containers[0].name" in str(info.value.body)


def test_patching_a_shared_subtree_into_an_invalid_value_is_still_refused() -> None:
    server = make_server()
    server.create(_deployment())
    with pytest.raises(ApiError) as info:
        server.patch(_ref(), "json", [{"op": "replace", "path": "/spec/template/spec/containers/0/image",
                                       "value": 5}])
    assert info.value.status == 422
    unknown = server.patch(_ref(), "merge", {"spec": {"template": {"spec": {"bogus": 1}}}})
    assert "bogus" not in unknown["spec"]["template"]["spec"]


def test_a_patch_touching_only_its_own_fields_keeps_managed_fields_and_moves_the_time() -> None:
    clock = Clock()
    server = make_server(clock=clock)
    server.create(_deployment())
    first = server.patch(_ref(), "merge", {"spec": {"replicas": 2}}, field_manager="scaler")
    second = server.patch(_ref(), "merge", {"spec": {"replicas": 3}}, field_manager="scaler")
    assert first["metadata"]["managedFields"] == second["metadata"]["managedFields"]
    clock.t = 60
    third = server.patch(_ref(), "merge", {"spec": {"replicas": 4}}, field_manager="scaler")
    times = {e["manager"]: e.get("time") for e in third["metadata"]["managedFields"]}
    assert times["scaler"] == "2026-01-01T00:01:00Z"
    other = server.patch(_ref(), "merge", {"spec": {"replicas": 5}}, field_manager="other")
    owners = {e["manager"]: e["fieldsV1"] for e in other["metadata"]["managedFields"]}
    assert "f:replicas" in owners["other"]["f:spec"] and "scaler" not in owners


def _script() -> list[bytes]:
    server = ApiServer(Registry.builtin(), make_server().snapshot, now=Clock())
    base = "/apis/apps/v1/namespaces/default/deployments"
    out = [server.handle("POST", base, [], {}, json.dumps(_deployment()).encode()).body]
    for i in range(4):
        out.append(server.handle("PATCH", base + "/d", [], {"Content-Type": "application/strategic-merge-patch+json"},
                                 json.dumps({"spec": {"replicas": i}}).encode()).body)
        out.append(server.handle("PATCH", base + "/d", [("fieldManager", "m"), ("force", "true")],
                                 {"Content-Type": "application/apply-patch+yaml"},
                                 json.dumps({**_deployment(), "spec": {"paused": i % 2 == 0}}).encode()).body)
        out.append(server.handle("PUT", base + "/d", [], {}, json.dumps(_deployment()).encode()).body)
    return out


def test_write_answers_are_identical_without_the_shortcuts(monkeypatch: pytest.MonkeyPatch) -> None:
    from kamera_cli.apiserver.patch import managed_fields
    from kamera_cli.apiserver.server import writes as server_writes

    with_shortcuts = _script()
    monkeypatch.setattr(server_writes, "remember_clean", lambda *_args: None)
    monkeypatch.setattr(managed_fields, "_rendered_here", lambda _raw: False)
    assert _script() == with_shortcuts


def test_a_put_equal_to_the_stored_object_only_by_python_equality_is_still_validated() -> None:
    server = make_server()
    stored = server.create(_deployment())
    body = json.loads(json.dumps(stored))
    body["spec"]["replicas"] = 1.0  # == 1 in Python, but not an integer in JSON
    with pytest.raises(ApiError) as info:
        server.update(body)
    assert info.value.status == 422 and "spec.replicas" in str(info.value.body)
    body["spec"]["replicas"] = 1
    body["spec"]["template"]["spec"]["containers"][0]["tty"] = 1  # == True, but not a boolean
    with pytest.raises(ApiError) as info:
        server.update(body)
    assert info.value.status == 422 and "tty" in str(info.value.body)



_json_values: st.SearchStrategy[Any] = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["metadata", "spec", "status", "name", "uid", "managedFields", "a", "b"]), inner, max_size=4),
    max_leaves=25)


_objects = st.dictionaries(st.sampled_from(["apiVersion", "kind", "metadata", "spec", "status", "data"]), _json_values,
                           max_size=5)


@settings(max_examples=200, deadline=None)
@given(_objects)
def test_the_create_shortcut_adds_exactly_what_the_schemaless_diff_adds(obj: dict[str, Any]) -> None:
    from kamera_cli.apiserver.patch.apply import WalkContext, diff_objects
    from kamera_cli.apiserver.patch.managed_fields import _no_fields
    from kamera_cli.apiserver.patch.typed import typed_nodes

    added = typed_nodes(obj, _no_fields, WalkContext(_no_fields))
    assert added == diff_objects({}, obj, WalkContext(_no_fields)).added


def test_an_objects_json_splices_its_managed_fields_text_and_stays_exact():
    # encoding.encode_object caches a managedFields list's text by identity; the answer is byte-for-byte
    # what encoding the whole object gives, also when the placeholder text occurs in the object itself
    from kamera_cli.apiserver.server.encoding import _PLACEHOLDER, encode, encode_object
    managed = [{"manager": "m", "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]
    first = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "managedFields": managed},
             "data": {"k": "é"}}
    second = {**first, "metadata": {"name": "a", "annotations": {"x": _PLACEHOLDER}, "managedFields": managed}}
    third = {**first, "metadata": {"name": "a", "labels": {"v": "3"}, "managedFields": managed}}
    assert encode_object(first) == encode(first)  # the list's first sight: encoded with its object
    assert encode_object(second) == encode(second)  # the placeholder text occurs: encoded whole
    assert encode_object(third) == encode(third)  # met again: spliced from the cached text


def test_a_reapply_that_leaves_ownership_as_it_was_shares_the_stored_managed_fields() -> None:
    # server_side_apply: same manager, same fields, same time -> the stored list itself, no re-render
    server = make_server()
    applied = {**_deployment(), "spec": {**_deployment()["spec"], "replicas": 1}}
    server.apply(applied, "m")
    before = server.get(_ref())["metadata"]["managedFields"]
    server.apply({**applied, "spec": {**applied["spec"], "replicas": 2}}, "m")
    after = server.snapshot.get(_ref())
    assert after is not None and after["spec"]["replicas"] == 2
    assert after["metadata"]["managedFields"] == before
    stored_before = after["metadata"]["managedFields"]
    server.apply({**applied, "spec": {**applied["spec"], "replicas": 3}}, "m")
    again = server.snapshot.get(_ref())
    assert again is not None and again["metadata"]["managedFields"] is stored_before


def test_apply_key_defaulting_copies_only_what_it_fills() -> None:
    # default_apply_keys: a configuration naming every protocol is itself; one that does not is copied on
    # the way to the port, and the parsed body (the journal's record of the request) is left as sent
    from kamera_cli.apiserver.defaulting.kinds import default_apply_keys
    named = _deployment()
    named["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "protocol": "UDP"}]
    assert default_apply_keys("apps", "Deployment", named) is named
    bare = _deployment()
    bare["spec"]["template"]["spec"]["containers"][0]["ports"] = [{"containerPort": 80}]
    sent = json.loads(json.dumps(bare))
    out = default_apply_keys("apps", "Deployment", bare)
    assert out["spec"]["template"]["spec"]["containers"][0]["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert bare == sent
    assert out["spec"]["selector"] is bare["spec"]["selector"]


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.sampled_from(["labels", "annotations", "name"]),
                       st.dictionaries(st.text(max_size=5), st.text(max_size=25), max_size=3), max_size=3),
       st.text(max_size=30))
def test_the_digest_with_a_spliced_template_text_equals_the_whole_objects(tmeta: dict[str, Any], image: str) -> None:
    # snapshot.object_digest caches a pod template's canonical text by identity; the digest must be the one
    # hashing the whole object's canonical text (timestamps, non-ASCII text and the placeholder included)
    import hashlib

    from kamera_cli.apiserver.storage import snapshot

    template = {"metadata": tmeta, "spec": {"containers": [{"name": "c", "image": image}]}}
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "uid": "u"},
           "spec": {"replicas": 1, "template": template, "note": "2026-01-01T00:00:00Z"}}
    whole = hashlib.sha256(snapshot._canonical({**obj, "metadata": {"name": "d"}}).encode()).hexdigest()
    assert snapshot.object_digest(obj) == whole
    assert snapshot.object_digest(obj) == whole  # the second time from the cached template text


@settings(max_examples=300, deadline=None)
@given(_objects, _objects, st.data())
def test_the_no_op_and_generation_checks_compare_as_copies_would(a: dict[str, Any], b: dict[str, Any],
                                                                 data: Any) -> None:
    from kamera_cli.apiserver.defaulting.metadata import same_ignoring_bookkeeping, spec_changed, without

    if data.draw(st.booleans()):
        b = {**a, **{k: v for k, v in b.items() if data.draw(st.booleans())}}
    for skip in (("metadata",), ("metadata", "status")):
        assert spec_changed(a, b, status_counts=skip == ("metadata",)) == (without(a, *skip) != without(b, *skip))
    ma, mb = a.get("metadata"), b.get("metadata")
    if isinstance(ma or {}, dict) and isinstance(mb or {}, dict):
        bookkeeping = ("resourceVersion", "managedFields")
        expected = without(a, "metadata") == without(b, "metadata") and (
            without(ma or {}, *bookkeeping) == without(mb or {}, *bookkeeping))
        assert same_ignoring_bookkeeping(a, b) == expected


def test_a_text_cache_forgets_its_oldest_past_its_budget_and_answers_right_after() -> None:
    # the JSON cache is bounded by its texts' total length as well as by count: each entry keeps its
    # object alive, and 4,096 workloads' JSON held 10 MiB (issue #26); it forgets its oldest entries,
    # not all of them, so that it stays full and the heap's peak does not move with where a search stops
    from kamera_cli.apiserver.storage.identity import TextCache
    cache: TextCache[bytes] = TextCache(3, budget=10)
    keys = [object() for _ in range(6)]
    for k in keys[:2]:
        cache.put(k, b"1234")
    assert cache.get(keys[0]) == b"1234" and cache.get(keys[1]) == b"1234"  # 8 of 10
    cache.put(keys[2], b"1234")  # 12: over the budget, the oldest goes
    assert cache.get(keys[0]) is None and cache.get(keys[1]) == b"1234" and cache.get(keys[2]) == b"1234"
    assert cache.derive(keys[3], lambda k: b"xy") == b"xy" and cache.get(keys[3]) == b"xy"  # 10 of 10
    assert cache.get(keys[1]) == b"1234" and cache.get(keys[2]) == b"1234"
    cache.put(keys[4], b"z")  # a fourth entry: past the count, the oldest goes
    assert cache.get(keys[1]) is None and [cache.get(k) for k in keys[2:5]] == [b"1234", b"xy", b"z"]
    cache.put(keys[2], b"12")  # the same key again: replaced, not counted twice
    assert cache.get(keys[2]) == b"12" and cache.get(keys[3]) == b"xy" and cache.get(keys[4]) == b"z"
    cache.put(keys[5], b"x" * 11)  # longer than the whole budget: not kept, nothing pushed out
    assert cache.get(keys[5]) is None and cache.get(keys[3]) == b"xy"
