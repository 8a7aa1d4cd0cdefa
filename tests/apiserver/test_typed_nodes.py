"""A create's typed field walk (``patch_typed.typed_nodes``) must find exactly the nodes the general
comparison (``patch_ssa.diff_objects`` against an empty object) finds, with the kind's schema.

The objects are generated from the definition table for every built-in root, as in
``test_schema_plan.py``: keyed lists with and without their keys, duplicates, sets, atomic maps and
wrong shapes included.
"""

from __future__ import annotations

import random

import pytest

from kamera_cli.apiserver.patch.apply import WalkContext, diff_objects
from kamera_cli.apiserver.patch.typed import typed_nodes

from .test_schema_plan import _REGISTRY, _ROOTS, _value

_INFOS = {str(info.definition): info for info in _REGISTRY.resources() if info.definition and not info.custom}


@pytest.mark.parametrize("root", _ROOTS)
def test_the_typed_walk_finds_what_the_comparison_with_nothing_finds(root: str) -> None:
    lookup = _REGISTRY.field_lookup(_INFOS[root])
    rng = random.Random("typed:" + root)
    for _ in range(40):
        obj = _value(rng, root, 0)
        if not isinstance(obj, dict):
            continue
        expected = diff_objects({}, obj, WalkContext(lookup)).added
        assert typed_nodes(obj, lookup, WalkContext(lookup)) == expected, obj
        assert typed_nodes(obj, lookup, WalkContext(lookup)) == expected  # the trie, now warm, answers the same


def test_a_custom_resources_spec_is_added_with_its_own_dot() -> None:
    """A custom resource has no Go type: its create is compared with an empty object, so ``spec`` is
    added (``.``); ``metadata`` never is, the apiserver strips it from every field set."""
    from kamera_cli.apiserver.patch.managed_fields import _no_fields

    obj = {"metadata": {"labels": {"a": "b"}}, "spec": {"x": 1}}
    nodes = typed_nodes(obj, _no_fields, WalkContext(_no_fields), frozenset())
    assert nodes == {("f:metadata", "f:labels"), ("f:metadata", "f:labels", "f:a"), ("f:spec",), ("f:spec", "f:x")}


def test_a_deployments_containers_are_keyed_by_name() -> None:
    info = _REGISTRY.lookup("apps/v1", "Deployment")
    assert info is not None
    lookup = _REGISTRY.field_lookup(info)
    obj = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "i"}]}}}}
    nodes = typed_nodes(obj, lookup, WalkContext(lookup))
    assert ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"a"}', "f:image") in nodes


def _compared_with_zero(added: set[tuple[str, ...]], obj: dict, zero: frozenset) -> set[tuple[str, ...]]:
    """The reference for ``typed_nodes(..., zero)``: the nodes added to nothing, then those the zero
    value has taken out -- a map or list of it with anything recorded below it (no ``.`` of its own),
    and one whose value is a zero."""
    parents = {path[:-1] for path in added}
    out = set(added)
    for path in added & zero:
        value = obj
        for element in path:
            value = value.get(element[2:]) if isinstance(value, dict) else None
        if path in parents or value is None or value is False or value in ("", 0) or value in ({}, []):
            out.discard(path)
    return out


@pytest.mark.parametrize("root", _ROOTS)
def test_the_comparison_with_the_zero_value_drops_what_the_zero_value_has(root: str) -> None:
    info = _INFOS[root]
    lookup, zero = _REGISTRY.field_lookup(info), _REGISTRY.zero_fields(info)
    rng = random.Random("zero:" + root)
    for _ in range(40):
        obj = _value(rng, root, 0)
        if not isinstance(obj, dict):
            continue
        # compared with a zero value, only metadata is never recorded itself: a top-level spec or status
        # is a node like any other, which the zero value then takes out when it has it
        added = typed_nodes(obj, lookup, WalkContext(lookup)) | {
            ("f:" + name,) for name in ("spec", "status") if name in obj}
        expected = _compared_with_zero(added, obj, zero)
        assert typed_nodes(obj, lookup, WalkContext(lookup), zero) == expected, obj
