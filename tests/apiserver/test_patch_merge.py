"""JSON merge patch (RFC 7386): the RFC's own examples, Kubernetes shapes, and the round-trip property."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kamera_cli.apiserver.patch.functions import PatchError, create_merge_patch, merge_patch, merge_patch_value

# RFC 7386 Appendix A: (target, patch, result)
RFC_EXAMPLES: list[tuple[Any, Any, Any]] = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize(("target", "patch", "result"), RFC_EXAMPLES)
def test_rfc7386_appendix_a(target: Any, patch: Any, result: Any) -> None:
    before = copy.deepcopy((target, patch))
    assert merge_patch_value(target, patch) == result
    assert (target, patch) == before


def test_kubernetes_shapes_labels_null_deletes_lists_replace() -> None:
    deploy: dict[str, Any] = {
        "metadata": {"name": "d", "labels": {"app": "x", "tier": "web"}, "finalizers": ["a", "b"]},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:1"},
                                                            {"name": "s", "image": "s:1"}]}}}}
    out = merge_patch(deploy, {"metadata": {"labels": {"tier": None, "new": "1"}, "finalizers": ["c"]},
                               "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i:2"}]}}}})
    assert out["metadata"]["labels"] == {"app": "x", "new": "1"}
    assert out["metadata"]["finalizers"] == ["c"]  # lists are replaced wholesale
    assert out["spec"]["template"]["spec"]["containers"] == [{"name": "c", "image": "i:2"}]
    assert deploy["metadata"]["labels"] == {"app": "x", "tier": "web"}


def test_status_patch_shares_untouched_subtrees() -> None:
    obj = {"metadata": {"name": "a"}, "spec": {"big": list(range(100))}, "status": {"ready": False}}
    out = merge_patch(obj, {"status": {"ready": True}})
    assert out["spec"] is obj["spec"] and out["metadata"] is obj["metadata"]
    assert out["status"] == {"ready": True} and obj["status"] == {"ready": False}


@pytest.mark.parametrize("patch", [None, ["x"], "str", 3])
def test_patch_that_does_not_yield_an_object_is_400(patch: Any) -> None:
    with pytest.raises(PatchError) as err:
        merge_patch({"a": 1}, patch)
    assert (err.value.status, err.value.reason) == (400, "BadRequest")


scalars = st.one_of(st.booleans(), st.integers(-3, 3), st.text(max_size=2))
# Merge patch cannot express "set this member to null", so documents hold no nulls inside objects.
docs = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(st.one_of(inner, st.none()), max_size=3),
    st.dictionaries(st.sampled_from("abcd"), inner, max_size=4)), max_leaves=15)


@settings(max_examples=80, deadline=None)
@given(docs, docs)
def test_create_then_apply_round_trips(a: Any, b: Any) -> None:
    assert merge_patch_value(a, create_merge_patch(a, b)) == b


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.sampled_from("abcd"), docs, max_size=4))
def test_empty_patch_is_identity(a: dict[str, Any]) -> None:
    assert merge_patch(a, {}) == a
