"""The compiled schema plans must answer exactly as the interpreted walks they stand in for.

``schema_plan.typed_ok`` says whether ``validation._walk`` would find a cause, and
``schema_plan.needs_prune`` whether ``validation._prune`` would change anything; the write path
trusts a "nothing wrong" / "nothing to prune" from them without walking again.  Objects here are
generated from the definition table itself (every built-in resource's root definition), mostly
right, with wrong types, nulls, zero values, unknown keys and subtrees shared with a base mixed in.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any

import pytest

from kamera_cli.apiserver import Registry
from kamera_cli.apiserver.registry.schema_plan import needs_prune, typed_ok
from kamera_cli.apiserver.validation import schema as V

_REGISTRY = Registry.builtin()
_DEFS = _REGISTRY.definitions
_ROOTS = sorted({str(info.definition) for info in _REGISTRY.resources() if info.definition and not info.custom})
_ODD_VALUES: tuple[Any, ...] = (None, 0, 1, -1, 0.0, 1.5, True, False, "", "x", "10Mi", [], [None], {}, {"k": None},
                                {"k": "v"}, ["a"], [{}])


def _scalar(rng: random.Random, ptype: Any) -> Any:
    if rng.random() < 0.15:
        return rng.choice(_ODD_VALUES)
    if ptype == "integer":
        return rng.choice((0, 1, 7))
    if ptype == "number":
        return rng.choice((0, 2, 0.5))
    if ptype == "boolean":
        return rng.choice((True, False))
    return rng.choice(("", "a", "80", "1Gi"))


def _value(rng: random.Random, name: str, depth: int) -> Any:
    definition = _DEFS.get(name)
    if definition is None or rng.random() < 0.03:
        return rng.choice(_ODD_VALUES)
    if "properties" not in definition:
        if name.endswith(".Quantity"):
            return rng.choice(("1", 2, 0.5, "100m", True, None, []))
        if definition.get("format") == "int-or-string":
            return rng.choice((1, "1", "50%", True, 1.5, []))
        return _scalar(rng, definition.get("type"))
    out: dict[str, Any] = {}
    if depth > 5:
        return out
    props = definition["properties"]
    keys = list(props)
    chosen = set(rng.sample(keys, min(len(keys), rng.randint(0, 4))))
    if rng.random() < 0.8:
        chosen.update(definition.get("required", ()))
    for key in sorted(chosen):
        out[key] = _prop(rng, props[key], depth + 1)
    if rng.random() < 0.05:
        out["unknownField"] = "x"
    return out


def _prop(rng: random.Random, spec: Mapping[str, Any], depth: int) -> Any:
    if spec.get("ref"):
        return _value(rng, spec["ref"], depth)
    ptype = spec.get("type")
    item = spec.get("items") if ptype == "array" else spec.get("values")
    if ptype == "array":
        return [_element(rng, item, depth) for _ in range(rng.randint(0, 2))] if rng.random() > 0.05 else "x"
    if ptype == "object":
        return {f"k{i}": _element(rng, item, depth) for i in range(rng.randint(0, 2))} if rng.random() > 0.05 else 1
    return _scalar(rng, ptype)


def _element(rng: random.Random, item: Any, depth: int) -> Any:
    if isinstance(item, str) and item in ("string", "integer", "number", "boolean"):
        return _scalar(rng, item)
    if isinstance(item, str):
        return _value(rng, item, depth)
    return rng.choice(_ODD_VALUES)


def _interpreted_causes(root: str, obj: Any, base: Any = None) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    V._walk(_DEFS, root, obj, "", out, base)
    return out


def _mutated(rng: random.Random, base: dict[str, Any], root: str) -> dict[str, Any]:
    """A new object sharing most subtrees with ``base``, one of them replaced by a fresh one."""
    out = dict(base)
    fresh = _value(rng, root, 0)
    if isinstance(fresh, dict) and fresh:
        key = rng.choice(sorted(fresh))
        out[key] = fresh[key]
    return out


@pytest.mark.parametrize("root", _ROOTS)
def test_the_plans_agree_with_the_interpreted_walks(root: str) -> None:
    rng = random.Random(root)
    for _ in range(60):
        obj = _value(rng, root, 0)
        causes = _interpreted_causes(root, obj)
        assert typed_ok(_DEFS, root, obj) == (not causes), (obj, causes)
        pruned = V._prune(_DEFS, root, obj, top=True)
        assert needs_prune(_DEFS, root, obj) == (pruned is not obj), obj
        if not isinstance(obj, dict) or causes or pruned is not obj:
            continue
        other = _mutated(rng, obj, root)  # obj plays the clean stored object it shares subtrees with
        assert typed_ok(_DEFS, root, other, obj) == (not _interpreted_causes(root, other, obj)), other
        assert needs_prune(_DEFS, root, other, obj) == (V._prune(_DEFS, root, other, top=True, base=obj)
                                                        is not other), other


def test_validate_and_prune_answer_as_before_when_the_plan_finds_something() -> None:
    root = "io.k8s.api.apps.v1.Deployment"
    obj = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": "two", "selector": {}, "template": {"spec": {"containers": [{"image": 1}]}},
                    "paused": False}}
    assert V.validate_builtin(_DEFS, root, obj) == _interpreted_causes(root, obj) != []
    pruned = V.prune_builtin(_DEFS, root, obj)
    assert "paused" not in pruned["spec"] and pruned is not obj
