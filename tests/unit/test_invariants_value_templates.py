"""Templates in ``expect.equals``: whole objects compared structurally, values spliced into strings,
and a template anywhere it is not evaluated refused at load time with its position."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.errors import ScenarioError
from kamera_cli.invariants import compile_invariant, state_document
from kamera_cli.invariants.evaluation import first_difference
from kamera_cli.invariants.templates import MissingValue, instantiate_value, parse_value_template
from kamera_cli.model.scenario import ExpectSpec, InvariantSpec
from kamera_cli.scenario import load_scenario


def cm(name: str, data: dict[str, Any], copy_of: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "shop"}
    if copy_of:
        meta["annotations"] = {"copy-of": copy_of}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}


COPY_SELECT = "$.items[?@.kind == 'ConfigMap' && @.metadata.annotations['copy-of'] == {{ @.metadata.name }}].data"
SOURCES = "$.items[?@.kind == 'ConfigMap' && !@.metadata.annotations]"


def messages(equals: Any, *objects: dict[str, Any], select: str = COPY_SELECT) -> list[str]:
    spec = InvariantSpec("copy", select, ExpectSpec(has_equals=True, equals=equals), for_each=SOURCES)
    return [v.message for v in compile_invariant(spec).evaluate(state_document(list(objects)))]


def test_a_whole_map_is_compared_structurally() -> None:
    source = cm("app", {"color": "blue", "shard-c": "1"})
    assert messages("{{ @.data }}", source, cm("app-copy", {"shard-c": "1", "color": "blue"}, "app")) == []
    assert messages("{{ @.data }}", source, cm("app-copy", {"color": "blue", "shard-c": "0"}, "app")) == [
        'expected every node to equal {"color":"blue","shard-c":"1"}; at ConfigMap shop/app-copy .data: '
        '.shard-c is "0", '
        'expected "1" for ConfigMap shop/app'
    ]
    assert messages("{{ @.data }}", source, cm("app-copy", {"color": "blue"}, "app")) == [
        'expected every node to equal {"color":"blue","shard-c":"1"}; at ConfigMap shop/app-copy .data: '
        '.shard-c missing, '
        'expected "1" for ConfigMap shop/app'
    ]


def test_templates_inside_a_written_out_value_and_inside_strings() -> None:
    source = cm("app", {"color": "blue"})
    equals = {"color": "{{ @.data.color }}", "owner": "{{ @.metadata.name }}-copy", "fixed": 3}
    good = cm("app-copy", {"color": "blue", "owner": "app-copy", "fixed": 3}, "app")
    assert messages(equals, source, good) == []
    bad = cm("app-copy", {"color": "red", "owner": "app-copy", "fixed": 3}, "app")
    assert messages(equals, source, bad) == [
        'expected every node to equal {"color":"blue","fixed":3,"owner":"app-copy"}; '
        'at ConfigMap shop/app-copy .data: .color is "red", expected "blue" for ConfigMap shop/app'
    ]


def test_a_missing_value_is_a_violation_of_that_node() -> None:
    source = cm("app", {"color": "blue"})
    assert messages("{{ @.spec }}", source, cm("app-copy", {}, "app")) == [
        "{{ @.spec }} has no value for ConfigMap shop/app"
    ]
    assert messages("x-{{ @.data }}", source, cm("app-copy", {}, "app")) == [
        "{{ @.data }} is not a string, number, boolean or null, so it cannot be part of a string for ConfigMap shop/app"
    ]


def test_instantiation_keeps_the_value_untouched_elsewhere() -> None:
    template = parse_value_template({"a": ["{{ @.n }}", "n={{ @.n }}", "{x}"], "b": None})
    assert instantiate_value(template, {"n": 7}) == {"a": [7, "n=7", "{x}"], "b": None}
    with pytest.raises(MissingValue):
        instantiate_value(template, {})
    assert parse_value_template({"plain": "text"}).is_plain


@pytest.mark.parametrize(
    ("got", "wanted", "difference"),
    [
        ({"a": 1}, {"a": 1.0}, None),
        ({"a": {"b": [1, 2]}}, {"a": {"b": [1, 3]}}, ".a.b[1] is 2, expected 3"),
        ([1], [1, 2], "the list has 1 items, expected 2"),
        ({"x.y": 1}, {"x.y": 2}, "['x.y'] is 1, expected 2"),
        ({"k": 1}, {}, ".k not expected, got 1"),
        ("a", {"a": 1}, 'the value is "a", expected {"a":1}'),
    ],
)
def test_first_difference(got: Any, wanted: Any, difference: str | None) -> None:
    assert first_difference(got, wanted) == difference


HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  controllers: [{name: app, entrypoint: "app.py:reconcile", for: v1/ConfigMap}]
  seed: []
  invariants:
"""


def problems(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, invariants: str) -> list[str]:
    (tmp_path / "scenario.yaml").write_text(HEAD + textwrap.indent(textwrap.dedent(invariants), "    "))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml", known_kind=lambda kind: True, check_entrypoint=lambda e, b: None)
    return [p.render() for p in info.value.problems]


def test_templates_where_not_evaluated_are_load_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got = problems(tmp_path, monkeypatch, """\
        - name: no forEach
          select: "$.items[0].data"
          expect: {equals: {a: [1, "{{ @.data }}"]}}
        - name: in a key
          forEach: "$.items[*]"
          select: "$.items[0].data"
          expect:
            equals: {"{{ @.name }}": 1}
        - name: in matches
          forEach: "$.items[*]"
          select: "$.items[0].data.x"
          expect: {matches: "{{ @.data.x }}"}
        - name: malformed
          forEach: "$.items[*]"
          select: "$.items[0].data"
          expect:
            equals: "{{ .data }}"
        """)
    assert got == [
        "scenario.yaml:10:32: $.spec.invariants[0].expect.equals.a[1]: {{ @.data }} needs a forEach to take values "
        "from (add forEach, or write the value itself)",
        "scenario.yaml:15:18: $.spec.invariants[1].expect.equals['{{ @.name }}']: a template in a key is not "
        "evaluated: '{{ @.name }}' (templates stand for values; write the key itself)",
        "scenario.yaml:19:25: $.spec.invariants[2].expect.matches: a template in matches is not evaluated: "
        "'{{ @.data.x }}' (templates are evaluated in select and in equals only)",
        "scenario.yaml:24:17: $.spec.invariants[3].expect.equals: template '{{ .data }}' must be a path relative to "
        "the forEach node, starting with @ (e.g. {{ @.metadata.name }})",
    ]
