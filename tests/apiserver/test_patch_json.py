"""JSON Patch (RFC 6902): every operation, the apiserver's error codes, atomicity, no input mutation."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver.patch.functions import PatchError, json_patch

CM: dict[str, Any] = {
    "apiVersion": "v1", "kind": "ConfigMap",
    "metadata": {"name": "a", "namespace": "ns", "labels": {"app": "x"}, "finalizers": ["f/one"]},
    "data": {"k": "v", "a/b": "slash", "m~n": "tilde"},
}


def apply(ops: Any, obj: dict[str, Any] | None = None) -> dict[str, Any]:
    source = CM if obj is None else obj
    before = copy.deepcopy(source)
    ops_before = copy.deepcopy(ops)
    try:
        return json_patch(source, ops)
    finally:
        assert source == before, "json_patch mutated its input object"
        assert ops == ops_before, "json_patch mutated its patch"


def test_add_replace_remove_on_maps() -> None:
    out = apply([
        {"op": "add", "path": "/metadata/labels/tier", "value": "web"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "remove", "path": "/metadata/labels/app"},
    ])
    assert out["metadata"]["labels"] == {"tier": "web"}
    assert out["data"]["k"] == "w"


def test_add_to_list_inserts_and_dash_appends() -> None:
    out = apply([
        {"op": "add", "path": "/metadata/finalizers/0", "value": "f/zero"},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f/last"},
    ])
    assert out["metadata"]["finalizers"] == ["f/zero", "f/one", "f/last"]


def test_remove_list_item_by_index() -> None:
    out = apply([{"op": "remove", "path": "/metadata/finalizers/0"}])
    assert out["metadata"]["finalizers"] == []


def test_pointer_escapes() -> None:
    out = apply([{"op": "replace", "path": "/data/a~1b", "value": "1"},
                 {"op": "replace", "path": "/data/m~0n", "value": "2"}])
    assert out["data"]["a/b"] == "1"
    assert out["data"]["m~n"] == "2"


def test_move_and_copy() -> None:
    out = apply([{"op": "copy", "from": "/metadata/labels", "path": "/metadata/annotations"},
                 {"op": "move", "from": "/data/k", "path": "/data/moved"},
                 {"op": "add", "path": "/metadata/annotations/extra", "value": "1"}])
    assert out["data"]["moved"] == "v" and "k" not in out["data"]
    assert out["metadata"]["annotations"] == {"app": "x", "extra": "1"}
    assert out["metadata"]["labels"] == {"app": "x"}  # the copy does not alias the source


def test_test_op_passes_and_is_type_strict() -> None:
    assert apply([{"op": "test", "path": "/data/k", "value": "v"}])["data"]["k"] == "v"
    doc = {"spec": {"replicas": 1, "paused": True}}
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/spec/paused", "value": 1}])
    with pytest.raises(PatchError):
        json_patch(doc, [{"op": "test", "path": "/spec/replicas", "value": True}])
    assert json_patch(doc, [{"op": "test", "path": "/spec/replicas", "value": 1.0}]) == doc


def test_optimistic_lock_idiom_resource_version_test() -> None:
    obj = {"metadata": {"name": "a", "resourceVersion": "7"}, "spec": {"x": 1}}
    ops = [{"op": "test", "path": "/metadata/resourceVersion", "value": "6"},
           {"op": "replace", "path": "/spec/x", "value": 2}]
    with pytest.raises(PatchError) as err:
        json_patch(obj, ops)
    assert err.value.status == 422
    assert err.value.reason == "Invalid"
    assert err.value.message == "the server rejected our request due to an error in our request"
    assert "test failed" in err.value.causes[0]["message"]


@pytest.mark.parametrize("ops", [
    [{"op": "remove", "path": "/data/missing"}],
    [{"op": "replace", "path": "/data/missing", "value": 1}],
    [{"op": "add", "path": "/nope/deeper", "value": 1}],
    [{"op": "add", "path": "/metadata/finalizers/5", "value": "x"}],
    [{"op": "add", "path": "/metadata/finalizers/01", "value": "x"}],
    [{"op": "frobnicate", "path": "/data"}],
    [{"op": "add", "path": "data/k", "value": 1}],
    [{"op": "add", "path": "/data/k"}],
    [{"op": "move", "path": "/data/x"}],
    [{"op": "move", "from": "/metadata", "path": "/metadata/labels/inner"}],
])
def test_failing_operations_are_422(ops: list[dict[str, Any]]) -> None:
    with pytest.raises(PatchError) as err:
        apply(ops)
    assert (err.value.status, err.value.reason) == (422, "Invalid")
    assert err.value.causes and err.value.causes[0]["message"]


@pytest.mark.parametrize("body", [{"op": "add"}, "add", None, [1, 2], [[{"op": "add"}]]])
def test_unparsable_patch_is_400(body: Any) -> None:
    with pytest.raises(PatchError) as err:
        apply(body)
    assert (err.value.status, err.value.reason) == (400, "BadRequest")


def test_untouched_subtrees_are_shared_not_copied() -> None:
    out = apply([{"op": "replace", "path": "/data/k", "value": "w"}])
    assert out["metadata"] is CM["metadata"]
    assert out["data"] is not CM["data"]


def test_later_op_modifying_an_inserted_value_does_not_touch_the_patch() -> None:
    ops = [{"op": "add", "path": "/spec", "value": {"inner": {"a": 1}}},
           {"op": "add", "path": "/spec/inner/b", "value": 2}]
    out = apply(ops, {"metadata": {}})
    assert out["spec"] == {"inner": {"a": 1, "b": 2}}


# No booleans: the reference library compares with ==, so it would call True equal to 1.
json_scalars = st.one_of(st.none(), st.integers(-5, 5), st.text(max_size=3))
json_docs = st.recursive(json_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=3), inner, max_size=3)), max_leaves=12)


@st.composite
def ops_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = st.sampled_from(["a", "b", "c", "0", "1", "-"])
    ops = []
    for _ in range(draw(st.integers(1, 5))):
        path = "/" + "/".join(draw(st.lists(keys, min_size=1, max_size=3)))
        kind = draw(st.sampled_from(["add", "remove", "replace", "test", "move", "copy"]))
        op: dict[str, Any] = {"op": kind, "path": path}
        if kind in ("add", "replace", "test"):
            op["value"] = draw(json_docs)
        if kind in ("move", "copy"):
            op["from"] = "/" + "/".join(draw(st.lists(keys, min_size=1, max_size=2)))
        ops.append(op)
    return ops


@settings(max_examples=120, deadline=None)
@given(st.dictionaries(st.sampled_from(["a", "b", "c"]), json_docs, max_size=3), ops_lists())
def test_atomic_all_or_nothing_and_agrees_with_jsonpatch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> None:
    """A failing op leaves the input unchanged; a success equals the reference library's result."""
    import jsonpatch  # the reference implementation, used only as an oracle here

    before = copy.deepcopy(doc)
    try:
        ours: Any = json_patch(doc, ops)
    except PatchError:
        ours = PatchError
    assert doc == before
    try:
        theirs: Any = jsonpatch.apply_patch(copy.deepcopy(doc), copy.deepcopy(ops))
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError):
        theirs = PatchError
    assert (ours is PatchError) == (theirs is PatchError), (ours, theirs)
    if ours is not PatchError:
        assert ours == theirs
