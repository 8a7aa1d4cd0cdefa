"""``forEach`` with ``{{ @.path }}`` templates: values spliced in as JSON, failures naming the node,
missing values, non-scalar values, templates rejected where they do not belong, and caching."""

from __future__ import annotations

from typing import Any

import pytest

from kamera_cli.invariants import InvariantSyntaxError, compile_invariant, compile_query, parse_template, state_document
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.scenario import ExpectSpec, InvariantSpec


def obj(kind: str, name: str, namespace: str | None = "default", **extra: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    api = "example.com/v1" if kind == "Widget" else "v1"
    return {"apiVersion": api, "kind": kind, "metadata": meta, **extra}


HAS_CONFIG = InvariantSpec(
    "every widget has its config map",
    select="$.items[?@.kind == 'ConfigMap' && @.metadata.namespace == {{ @.metadata.namespace }}"
    " && @.metadata.name == {{ @.metadata.name }}]",
    expect=ExpectSpec(count=1),
    for_each="$.items[?@.kind == 'Widget']",
)


def test_holds_when_every_node_satisfies_select() -> None:
    doc = state_document([obj("Widget", "a"), obj("ConfigMap", "a"), obj("Widget", "b"), obj("ConfigMap", "b")])
    assert compile_invariant(HAS_CONFIG).evaluate(doc) == ()


def test_failures_name_each_failing_object() -> None:
    doc = state_document(
        [
            obj("Widget", "demo"),
            obj("Widget", "ok", "team-a"),
            obj("ConfigMap", "ok", "team-a"),
            obj("ConfigMap", "demo", "x"),
        ]
    )
    violations = compile_invariant(HAS_CONFIG).evaluate(doc)
    assert [v.message for v in violations] == ["expected count 1, got 0 for Widget default/demo"]
    (v,) = violations
    assert v.invariant == "every widget has its config map"
    assert v.subject == ObjectRef("example.com/v1", "Widget", "default", "demo")
    assert v.node_path == "$['items'][0]"


def test_no_node_to_check_holds_vacuously() -> None:
    assert compile_invariant(HAS_CONFIG).evaluate(state_document([obj("ConfigMap", "a")])) == ()


def test_values_are_spliced_in_as_json() -> None:
    doc = {
        "items": [
            {"kind": "Pair", "metadata": {"name": "p"}, "spec": {"n": 3, "s": 'it\'s "q"\n', "b": True, "z": None}},
            {"kind": "Value", "n": 3, "s": 'it\'s "q"\n', "b": True, "z": None},
        ]
    }
    for field in ("n", "s", "b", "z"):
        spec = InvariantSpec(
            "x",
            f"$.items[?@.kind == 'Value' && @.{field} == {{{{ @.spec.{field} }}}}]",
            ExpectSpec(count=1),
            for_each="$.items[?@.kind == 'Pair']",
        )
        assert compile_invariant(spec).evaluate(doc) == (), field


def test_missing_and_non_scalar_values_are_violations() -> None:
    doc = {"items": [{"kind": "W", "metadata": {"name": "w"}, "spec": {"list": [1]}}, {"kind": "X"}]}
    missing = InvariantSpec("m", "$.items[?@.name == {{ @.spec.owner }}]", ExpectSpec(count=1), for_each="$.items[*]")
    assert [v.message for v in compile_invariant(missing).evaluate(doc)] == [
        "{{ @.spec.owner }} has no value for W w",
        "{{ @.spec.owner }} has no value for $.items[1]",
    ]
    listed = InvariantSpec("l", "$.items[?@.x == {{ @.spec.list }}]", ExpectSpec(count=1), for_each="$.items[0]")
    assert [v.message for v in compile_invariant(listed).evaluate(doc)] == [
        "{{ @.spec.list }} is not a string, number, boolean or null for W w"
    ]


def test_plain_select_with_for_each_is_checked_per_node() -> None:
    doc = state_document([obj("Widget", "a"), obj("Widget", "b")])
    spec = InvariantSpec("i", "$.items[?@.kind == 'ConfigMap']", ExpectSpec(exists=True), for_each="$.items[*]")
    assert [v.message for v in compile_invariant(spec).evaluate(doc)] == [
        "expected at least one node, got none for Widget default/a",
        "expected at least one node, got none for Widget default/b",
    ]


def test_for_each_over_non_objects_names_the_path() -> None:
    doc = {"items": [{"spec": {"ports": [80, 443]}}]}
    spec = InvariantSpec("ports", "$.items[?@ == {{ @ }}]", ExpectSpec(count=1), for_each="$.items[*].spec.ports[*]")
    assert [v.message for v in compile_invariant(spec).evaluate(doc)] == [
        "expected count 1, got 0 for $.items[0].spec.ports[0]",
        "expected count 1, got 0 for $.items[0].spec.ports[1]",
    ]


def test_for_each_over_fields_of_objects_names_the_object_and_the_field() -> None:
    doc = state_document([{**obj("Widget", "a"), "spec": {"ports": [80], "x.y/z": {"q": 1}}}])
    spec = InvariantSpec("ports", "$.items[?@ == {{ @ }}]", ExpectSpec(count=1),
                         for_each="$.items[*].spec[*]")
    assert [(v.message, v.subject) for v in compile_invariant(spec).evaluate(doc)] == [
        ("{{ @ }} is not a string, number, boolean or null for Widget default/a .spec.ports", None),
        ("{{ @ }} is not a string, number, boolean or null for Widget default/a .spec['x.y/z']", None),
    ]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            InvariantSpec("i", "$.items[?@.a == {{ @.a }}]", ExpectSpec(count=1)),
            "select uses the template {{ @.a }} but there is no forEach to take values from",
        ),
        (
            InvariantSpec("i", "$.items", ExpectSpec(count=1), for_each="$.items[?@.a == {{ @.a }}]"),
            "forEach: invalid JSONPath '$.items[?@.a == {{ @.a }}]': unexpected token '{' at character 17",
        ),
        (
            InvariantSpec("i", "$.items[?@.a == {{ }}]", ExpectSpec(count=1), for_each="$.x"),
            "empty template '{{ }}': write a relative path such as {{ @.metadata.name }}",
        ),
        (
            InvariantSpec("i", "$.items[?@.a == @.b }}]", ExpectSpec(count=1), for_each="$.x"),
            "malformed template in '$.items[?@.a == @.b }}]': '}}' at character 21 has no matching '{{'",
        ),
        (
            InvariantSpec("i", "$.items[?@.a == {{ @.b[ }}]", ExpectSpec(count=1), for_each="$.x"),
            "template '{{ @.b[ }}': invalid JSONPath '$.b[': unexpected end of query",
        ),
        (
            InvariantSpec("i", "$.items[?@.a = {{ @.b }}]", ExpectSpec(count=1), for_each="$.x"),
            "invalid JSONPath '$.items[?@.a = {{ @.b }}]': unexpected token '=' at character 14",
        ),
    ],
)
def test_malformed_templates(spec: InvariantSpec, message: str) -> None:
    with pytest.raises(InvariantSyntaxError) as info:
        compile_invariant(spec)
    assert info.value.message == message


def test_templates_and_instantiated_queries_are_cached() -> None:
    assert parse_template(HAS_CONFIG.select) is parse_template(HAS_CONFIG.select)
    compiled = compile_invariant(HAS_CONFIG)
    doc = state_document([obj("Widget", "a"), obj("ConfigMap", "a")])
    compiled.evaluate(doc)
    compile_query.cache_clear()
    for _ in range(5):
        assert compiled.evaluate(doc) == ()
    info = compile_query.cache_info()
    # the templates' own queries, the forEach and the one instantiated select: each compiled once
    assert info.misses == 4 and info.hits > 0


@pytest.mark.parametrize("quoted", ["'{{ @.spec.s }}-x'", '"{{ @.spec.s }}-x"', "'pre {{ @.spec.n }}{{ @.spec.b }}-x'"])
def test_a_template_inside_a_string_literal_is_spliced_in_as_text(quoted: str) -> None:
    """RFC 9535 has no concatenation: '{{ @.metadata.name }}-copy' is how a derived name is written;
    splicing JSON there compared with '"a"-copy' and silently selected nothing."""
    s = 'it\'s "q"\\ \n'
    expected = {"'{{ @.spec.s }}-x'": s + "-x", '"{{ @.spec.s }}-x"': s + "-x",
                "'pre {{ @.spec.n }}{{ @.spec.b }}-x'": "pre 3true-x"}[quoted]
    doc = {"items": [{"kind": "Pair", "spec": {"n": 3, "s": s, "b": True}},
                     {"kind": "Value", "v": expected}, {"kind": "Value", "v": expected + "?"}]}
    spec = InvariantSpec("x", f"$.items[?@.kind == 'Value' && @.v == {quoted}]", ExpectSpec(count=1),
                         for_each="$.items[?@.kind == 'Pair']")
    assert compile_invariant(spec).evaluate(doc) == ()


def test_a_syntax_error_around_a_template_is_told_in_the_written_text() -> None:
    text = "$.items[?@.metadata.name == {{ @.metadata.name }} && ]"
    with pytest.raises(InvariantSyntaxError) as info:
        parse_template(text)
    assert info.value.message == (f"invalid JSONPath {text!r}: unexpected end of expression at character "
                                  f"{text.index(']') + 1}")
