"""The ``expect`` operators over a ``select`` node list: each with a passing and a failing case, the
exact one-line messages, several operators at once, and the state document they run against."""

from __future__ import annotations

from typing import Any

import pytest

from kamera_cli.invariants import (
    InvariantSyntaxError,
    Violation,
    compile_invariant,
    compile_query,
    find,
    state_document,
)
from kamera_cli.model.scenario import ExpectSpec, InvariantSpec


def cm(name: str, namespace: str = "default", **data: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


DOC = state_document(
    [
        cm("b", replicas="2", mode="on"),
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": "default"}},
        cm("a", replicas="2", mode="off"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}},
    ]
)


def messages(select: str, **expect: Any) -> list[str]:
    has_equals = "equals" in expect
    spec = InvariantSpec("inv", select, ExpectSpec(has_equals=has_equals, **expect))
    return [v.message for v in compile_invariant(spec).evaluate(DOC)]


def test_state_document_is_a_sorted_list() -> None:
    assert DOC["apiVersion"] == "v1" and DOC["kind"] == "List"
    keys = [
        (o["apiVersion"], o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]) for o in DOC["items"]
    ]
    assert keys == sorted(keys)
    assert [k[3] for k in keys] == ["w", "a", "b", "team-a"]


CMS = "$.items[?@.kind == 'ConfigMap']"
NAMES = "$.items[?@.kind == 'ConfigMap'].metadata.name"


@pytest.mark.parametrize(
    ("select", "expect", "failure"),
    [
        (CMS, {"count": 2}, None),
        (CMS, {"count": 1}, "expected count 1, got 2"),
        (CMS, {"min": 2}, None),
        (CMS, {"min": 3}, "expected at least 3 nodes, got 2"),
        (CMS, {"max": 2}, None),
        (CMS, {"max": 1}, "expected at most 1 node, got 2"),
        (CMS, {"exists": True}, None),
        ("$.items[?@.kind == 'Pod']", {"exists": True}, "expected at least one node, got none"),
        ("$.items[?@.kind == 'Pod']", {"exists": False}, None),
        (CMS, {"exists": False}, "expected no node, got 2 (first at ConfigMap default/a)"),
        ("$.items[?@.kind == 'ConfigMap'].data.replicas", {"equals": "2"}, None),
        ("$.items[?@.kind == 'ConfigMap'].data.mode", {"equals": "on"}, 'expected every node to equal "on", got "off" at ConfigMap default/a .data.mode'),  # noqa: E501
        ("$.items[?@.kind == 'Pod']", {"equals": None}, "expected nodes equal to null, got none"),
        (NAMES, {"unique": True}, None),
        ("$.items[?@.kind == 'ConfigMap'].data.replicas", {"unique": True}, "expected unique values, got \"2\" at ConfigMap default/a .data.replicas and ConfigMap default/b .data.replicas"),  # noqa: E501
        (NAMES, {"unique": False}, None),
        (NAMES, {"matches": "[a-z]"}, None),
        (NAMES, {"matches": "a"}, "expected every node to match 'a', got \"b\" at ConfigMap default/b .metadata.name"),
        ("$.items[*].metadata", {"matches": ".*"}, "expected every node to match '.*', got non-string {\"name\":\"w\",\"namespace\":\"default\"} at Widget default/w .metadata"),  # noqa: E501
        ("$.items[?@.kind == 'Pod']", {"matches": ".*"}, "expected nodes matching '.*', got none"),
    ],
)  # fmt: skip
def test_operator(select: str, expect: dict[str, Any], failure: str | None) -> None:
    assert messages(select, **expect) == ([] if failure is None else [failure])


def test_equals_is_json_equality() -> None:
    doc = {"items": [{"n": 1}, {"n": 1.0}, {"n": True}, {"o": {"b": [1, 2], "a": None}}]}
    count = ExpectSpec(has_equals=True, equals=1)
    holds = compile_invariant(InvariantSpec("i", "$.items[0:2].n", count)).evaluate(doc)
    assert holds == ()  # 1 and 1.0 are the same JSON number
    fails = compile_invariant(InvariantSpec("i", "$.items[2].n", count)).evaluate(doc)
    assert [v.message for v in fails] == ["expected every node to equal 1, got true at $.items[2].n"]
    obj = ExpectSpec(has_equals=True, equals={"a": None, "b": [1, 2]})
    assert compile_invariant(InvariantSpec("i", "$.items[3].o", obj)).evaluate(doc) == ()


def test_all_given_operators_must_hold_and_the_first_failure_is_reported() -> None:
    assert messages(NAMES, min=1, max=5, unique=True, matches="[ab]") == []
    assert messages(NAMES, min=1, max=1, unique=True) == ["expected at most 1 node, got 2"]


def test_violation_value() -> None:
    spec = InvariantSpec("only one", CMS, ExpectSpec(count=1))
    (violation,) = compile_invariant(spec).evaluate(DOC)
    assert violation == Violation("only one", "expected count 1, got 2")
    assert str(violation) == "expected count 1, got 2"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (InvariantSpec("i", "$.items[", ExpectSpec(count=1)), "invalid JSONPath '$.items[': unexpected end of query"),
        (InvariantSpec("i", "$.items", ExpectSpec()), "expect needs at least one of count, min, max, exists, equals, unique, matches"),  # noqa: E501
        (InvariantSpec("i", "$.items", ExpectSpec(matches="(")), "invalid regular expression '(': missing ), unterminated subpattern at position 0"),  # noqa: E501
        (InvariantSpec("i", "$.items", ExpectSpec(count=1), for_each="$..["), "forEach: invalid JSONPath '$..[': unexpected end of query"),  # noqa: E501
    ],
)  # fmt: skip
def test_compile_errors(spec: InvariantSpec, message: str) -> None:
    with pytest.raises(InvariantSyntaxError) as info:
        compile_invariant(spec)
    assert info.value.message == message


def test_strict_rfc9535_rejects_extensions() -> None:
    for text in ("$.a[?(@.b =~ /x/)]", "$.a | $.b", "$.a.`len`", "$[?isinstance(@, 'str')]", "@.a"):
        with pytest.raises(InvariantSyntaxError):
            compile_query(text)
    assert find("$[?match(@, 'a.c')]", ["abc", "a\rc", "xabc"]) == ["abc"]  # I-Regexp: '.' excludes \r
    assert find("$[?search(@, '\\\\p{Lu}')]", ["abc", "aBc"]) == ["aBc"]


def test_queries_are_compiled_once() -> None:
    compile_query.cache_clear()
    for _ in range(3):
        find("$.items[?@.kind == 'Widget']", DOC)
    info = compile_query.cache_info()
    assert (info.misses, info.hits) == (1, 2)
    assert compile_query("$.x") is compile_query("$.x")


def test_evaluation_errors_are_violations_not_crashes() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(300):
        node["a"] = {}
        node = node["a"]
    plain = compile_invariant(InvariantSpec("deep", "$..a", ExpectSpec(exists=True)))
    assert [v.message for v in plain.evaluate(deep)] == ["cannot evaluate '$..a': recursion limit exceeded"]
    each = compile_invariant(InvariantSpec("deep", "$.a", ExpectSpec(exists=True), for_each="$..a"))
    assert [v.message for v in each.evaluate(deep)] == ["cannot evaluate forEach '$..a': recursion limit exceeded"]
