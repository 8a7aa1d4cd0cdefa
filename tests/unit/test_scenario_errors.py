"""Every class of scenario problem, with the exact ``file:line:col: $.path: message (hint)`` text a
user sees: YAML syntax, duplicate keys, unknown fields (did you mean), schema violations, dispatch on
apiVersion/kind, referenced files, manifests, kinds, entry points, names, expressions, actions."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
import yaml

from kamera_cli.errors import ExitCode, KameraError, ScenarioError
from kamera_cli.model.objects import KindRef
from kamera_cli.scenario import load_scenario

BUILTIN = {"ConfigMap", "Namespace", "Secret"}

HEAD = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  controllers: [{name: app, entrypoint: "app.py:reconcile", for: v1/ConfigMap}]
"""


def problems_of(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: dict[str, str], **kwargs: object) -> list[str]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    kwargs.setdefault("known_kind", lambda kind: kind.kind in BUILTIN)
    kwargs.setdefault("check_entrypoint", lambda entrypoint, base_dir: None)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml", **kwargs)  # type: ignore[arg-type]
    assert info.value.exit_code == ExitCode.USAGE
    assert str(info.value) == "\n".join(p.render() for p in info.value.problems)
    return [p.render() for p in info.value.problems]


def test_yaml_syntax_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": "spec:\n  seed: [a, b\n  x: 1\n"})
    # libyaml and the pure-Python parser word it slightly differently; the position is the same
    if getattr(yaml, "__with_libyaml__", False):
        problem = "did not find expected ',' or ']'"
    else:
        problem = "expected ',' or ']', but got ':'"
    assert got == [f"scenario.yaml:3:4: $: invalid YAML: {problem}"
                   " (while parsing a flow sequence, which starts at line 2, column 9)"]


def test_duplicate_keys_are_rejected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + "  seed: []\n  seed: [x.yaml]\n"
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:7:3: $.spec.seed: duplicate key 'seed' (first at line 6)"
        " (YAML keeps only one of them; remove or rename the other)"
    ]


def test_unknown_fields_did_you_mean_and_yaml11_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        HEAD.replace("  controllers", "  controlers") + "  seed: []\n  explore: {maxStats: 3, colour: red}\non: push\n"
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:5:3: $.spec: missing required field 'controllers'",
        "scenario.yaml:5:3: $.spec.controlers: unknown field 'controlers' (did you mean 'controllers'?)",
        "scenario.yaml:7:13: $.spec.explore.maxStats: unknown field 'maxStats' (did you mean 'maxStates'?)",
        "scenario.yaml:7:26: $.spec.explore.colour: unknown field 'colour'"
        " (allowed here: maxDepth, maxStates, memoize, reduction, seed, strategy, timeout, walks)",
        "scenario.yaml:8:1: $.on: unknown field 'on' (allowed here: apiVersion, kind, metadata, spec)",
    ]


def test_a_bad_reduction_is_named_with_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + "  seed: []\n  explore: {reduction: full}\n"
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        'scenario.yaml:7:24: $.spec.explore.reduction: must be one of persistent, none; got "full"',
    ]


def test_schema_violations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = """\
    apiVersion: kamera.dev/v1alpha1
    kind: Scenario
    metadata: {name: Bad_Name}
    spec:
      controllers:
        - {name: app, entrypoint: app.py, for: ConfigMap, timeout: 10x}
      seed: [3]
      explore: {strategy: bfz, maxDepth: "7", timeout: 0}
      invariants:
        - {name: i, select: $.items, expect: {}}
        - {name: j, select: $.items, expect: {matches: "(", count: -1}}
      actions:
        - {at: convergd, delete: {apiVersion: v1, kind: Secret}}
    """
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        'scenario.yaml:3:18: $.metadata.name: "Bad_Name" is not a valid scenario name (e.g. widget-has-config)',
        'scenario.yaml:6:31: $.spec.controllers[0].entrypoint: "app.py" is not a valid entry point'
        " (e.g. controllers/widget.py:reconcile, my_operator.widgets:Reconciler)",
        'scenario.yaml:6:44: $.spec.controllers[0].for: "ConfigMap" is not a valid kind reference'
        " (e.g. example.com/v1/Widget, v1/ConfigMap, apps/v1/Deployment)",
        'scenario.yaml:6:64: $.spec.controllers[0].timeout: "10x" is not a valid duration'
        " (e.g. 10s, 10m, 1h30m, 500ms)",
        "scenario.yaml:7:10: $.spec.seed[0]: expected a file, folder or glob (relative to the scenario's folder)"
        " or an inline manifest, got integer",
        "scenario.yaml:8:23: $.spec.explore.strategy: must be one of bfs, dfs, random; got \"bfz\""
        " (did you mean 'bfs'?)",
        'scenario.yaml:8:38: $.spec.explore.maxDepth: expected integer, got string "7"',
        "scenario.yaml:8:52: $.spec.explore.timeout: must be greater than 0; got 0",
        "scenario.yaml:10:42: $.spec.invariants[0].expect: must have at least 1 field"
        " (one of count, equals, exists, matches, max, min, unique)",
        'scenario.yaml:11:52: $.spec.invariants[1].expect.matches: invalid regular expression "(":'
        " missing ), unterminated subpattern at position 0",
        "scenario.yaml:11:64: $.spec.invariants[1].expect.count: must be at least 0; got -1",
        'scenario.yaml:13:12: $.spec.actions[0].at: must be one of converged, any; got "convergd"'
        " (did you mean 'converged'?)",
        "scenario.yaml:13:30: $.spec.actions[0].delete: missing required field 'name'",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "apiVersion: kamera.dev/v1beta9\nkind: Scenario\n",
            "scenario.yaml:1:13: $.apiVersion: unsupported version 'kamera.dev/v1beta9': this kamera reads"
            " kamera.dev/v1alpha1",
        ),
        (
            "apiVersion: apps/v1\nkind: Scenario\n",
            "scenario.yaml:1:13: $.apiVersion: not a kamera scenario: apiVersion 'apps/v1'"
            " (expected kamera.dev/v1alpha1)",
        ),
        (
            "apiVersion: kamera.dev/v1alpha1\nkind: Test\n",
            "scenario.yaml:2:7: $.kind: unsupported kind 'Test': kamera reads kind Scenario",
        ),
        (
            "kind: Scenario\n",
            "scenario.yaml:1:1: $: missing apiVersion: a scenario starts with apiVersion: kamera.dev/v1alpha1",
        ),
        ("- a\n- b\n", "scenario.yaml:1:1: $: expected a Scenario (a mapping), got array"),
        (
            "# nothing\n",
            "scenario.yaml: $: empty file: expected a document with apiVersion kamera.dev/v1alpha1, kind Scenario",
        ),
    ],
)
def test_dispatch_on_api_version_and_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [expected]


def test_one_scenario_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + "  seed: []\n---\n" + HEAD + "  seed: []\n"
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:8:1: $: a scenario file holds exactly one document (put each scenario in its own file)"
    ]


def test_referenced_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "scenario.yaml": HEAD + "  seed: [missing.yaml, 'none/*.yaml', empty, bad.yaml, objs.yaml]\n",
        "empty/readme.md": "nothing here",
        "bad.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x\n",
        "objs.yaml": """\
            apiVersion: v1
            kind: ConfigMap
            metadata: {labels: {a: b}}
            ---
            kind: Secret
            metadata: {name: s}
            ---
            - just a list
            ---
            apiVersion: v1
            kind: List
            items:
              - {apiVersion: v1, metadata: {name: nokind}}
              - {apiVersion: example.com/v1, kind: Gadget, metadata: {name: g}}
            """,
    }
    got = problems_of(tmp_path, monkeypatch, files)
    syntax = [line for line in got if line.startswith("bad.yaml")]
    assert len(syntax) == 1 and syntax[0].startswith("bad.yaml:4:1: $: invalid YAML: ")
    assert [line for line in got if not line.startswith("bad.yaml")] == [
        "objs.yaml:3:11: $.metadata: missing metadata.name (or metadata.generateName)",
        "objs.yaml:5:1: $: missing apiVersion",
        "objs.yaml:8:1: $: expected a Kubernetes object (a mapping), got array",
        "objs.yaml:13:5: $.items[0]: missing kind",
        "objs.yaml:14:40: $.items[1].kind: unknown kind 'example.com/v1/Gadget': not built in and not defined by"
        " the scenario's CRDs (add its CustomResourceDefinition to spec.crds)",
        "scenario.yaml:6:10: $.spec.seed[0]: no such file or folder: 'missing.yaml'"
        " (paths are relative to the scenario file's folder)",
        "scenario.yaml:6:24: $.spec.seed[1]: glob 'none/*.yaml' matches no file",
        "scenario.yaml:6:39: $.spec.seed[2]: folder 'empty' holds no .yaml, .yml, .json file",
    ]


def test_seed_namespaces_and_duplicates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + textwrap.indent(
        textwrap.dedent("""\
        seed:
          - {apiVersion: v1, kind: Namespace, metadata: {name: default}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: team-a}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: kube-system}}
          - {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: kube-system}}
        """),
        "  ",
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:7:58: $.spec.seed[0].metadata.name: namespace 'default' always exists in the simulated"
        " cluster (remove it from seed)",
        "scenario.yaml:8:72: $.spec.seed[1].metadata.namespace: namespace 'team-a' does not exist"
        " (add {apiVersion: v1, kind: Namespace, metadata: {name: team-a}} to spec.seed)",
        "scenario.yaml:10:58: $.spec.seed[3].metadata.name: duplicate object ConfigMap kube-system/b:"
        " already seeded at scenario.yaml:9",
    ]


def test_controllers_kinds_entrypoints_and_references(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = """\
    apiVersion: kamera.dev/v1alpha1
    kind: Scenario
    metadata: {name: s}
    spec:
      crds: [{apiVersion: v1, kind: ConfigMap, metadata: {name: not-a-crd}}]
      controllers:
        - {name: app, entrypoint: "missing.py:reconcile", for: example.com/v1/Widget}
        - name: app
          entrypoint: "ok.py:reconcile"
          for: v1/ConfigMap
          owns: [apps/v1/Deployment]
          watches: [{kind: v1/Secret, map: "mappers.py:nope"}]
      seed: []
      perturbations:
        staleReads: [{controller: ap}]
        crashes: [{controller: "*"}]
        conflicts: [{controller: zzz}]
    """

    def check_entrypoint(entrypoint: str, base_dir: str) -> str | None:
        assert Path(base_dir) == tmp_path.resolve()
        if entrypoint.startswith("missing.py"):
            return "no such file: missing.py"
        if entrypoint.startswith("mappers.py"):
            raise KameraError("mappers.py has no attribute 'nope'")
        return None

    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}, check_entrypoint=check_entrypoint)
    unknown = "not built in and not defined by the scenario's CRDs (add its CustomResourceDefinition to spec.crds)"
    assert got == [
        "scenario.yaml:5:33: $.spec.crds[0].kind: spec.crds takes CustomResourceDefinitions, got v1/ConfigMap"
        " (put other objects in spec.seed)",
        "scenario.yaml:7:31: $.spec.controllers[0].entrypoint: no such file: missing.py",
        f"scenario.yaml:7:60: $.spec.controllers[0].for: unknown kind 'example.com/v1/Widget': {unknown}",
        "scenario.yaml:8:13: $.spec.controllers[1].name: duplicate controller name 'app' (first at line 7)",
        f"scenario.yaml:11:14: $.spec.controllers[1].owns[0]: unknown kind 'apps/v1/Deployment': {unknown}",
        "scenario.yaml:12:40: $.spec.controllers[1].watches[0].map: mappers.py has no attribute 'nope'",
        "scenario.yaml:15:31: $.spec.perturbations.staleReads[0].controller: no controller named 'ap'"
        " (did you mean 'app'?)",
        "scenario.yaml:17:30: $.spec.perturbations.conflicts[0].controller: no controller named 'zzz'"
        ' (controllers: app, or "*" for all)',
    ]


def test_invariant_expressions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + textwrap.indent(
        textwrap.dedent("""\
        seed: []
        invariants:
          - {name: a, select: "$.items[?@.kind = 'x']", expect: {exists: true}}
          - {name: b, forEach: "$.items[", select: "$.items", expect: {exists: true}}
          - {name: c, forEach: "$.items[*]", select: "$.items[?@.name == {{ @.metadata.name ]", expect: {count: 1}}
          - {name: d, forEach: "$.items[*]", select: "$.items[?@.name == {{ $.x }}]", expect: {count: 1}}
          - {name: e, forEach: "$.items[*]", select: "$.items[?@.name == {{ @..x }}]", expect: {count: 1}}
          - {name: f, select: "$.items[?@.name == {{ @.metadata.name }}]", expect: {count: 1}}
          - {name: f, forEach: "$.items[*]", select: "$.items[?@.name == {{ @.metadata.name }}]", expect: {min: 1}}
        """),
        "  ",
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:8:25: $.spec.invariants[0].select: invalid JSONPath \"$.items[?@.kind = 'x']\":"
        " unexpected token '=' at character 17 (compare with == (a single = is kubectl's form, not RFC 9535))",
        "scenario.yaml:9:26: $.spec.invariants[1].forEach: invalid JSONPath '$.items[': unexpected end of query",
        "scenario.yaml:10:48: $.spec.invariants[2].select: malformed template in"
        " '$.items[?@.name == {{ @.metadata.name ]': '{{' at character 20 has no matching '}}'",
        "scenario.yaml:11:48: $.spec.invariants[3].select: template '{{ $.x }}' must be a path relative to the"
        " forEach node, starting with @ (e.g. {{ @.metadata.name }})",
        "scenario.yaml:12:48: $.spec.invariants[4].select: template '{{ @..x }}' must name a single value"
        " (names and indexes only, e.g. @.spec.items[0].name)",
        "scenario.yaml:13:25: $.spec.invariants[5].select: {{ @.metadata.name }} needs a forEach to take values"
        " from (add forEach, or write the value into the expression)",
        "scenario.yaml:14:14: $.spec.invariants[6].name: duplicate invariant name 'f' (first at line 13)",
    ]


def test_actions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + textwrap.indent(
        textwrap.dedent("""\
        seed: []
        actions:
          - {name: none}
          - {apply: x.yaml, delete: {apiVersion: v1, kind: Secret, name: s}}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, type: json, patch: {a: 1}}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, type: json, patch: [{op: put, path: /a}]}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, patch: [1]}
          - delete: {apiVersion: example.com/v1, kind: Gadget, name: g}
          - apply: {apiVersion: v1, kind: ConfigMap, metadata: {}}
        """),
        "  ",
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:8:7: $.spec.actions[0]: an action needs exactly one of apply, replace, delete, patch; got none",
        "scenario.yaml:9:7: $.spec.actions[1]: an action needs exactly one of apply, replace, delete, patch;"
        " got apply and delete (split it into several actions)",
        "scenario.yaml:10:83: $.spec.actions[2].patch.patch: a json patch is a list of RFC 6902 operations, got object",
        "scenario.yaml:11:84: $.spec.actions[3].patch.patch[0]: a json patch operation is"
        " {op: add|remove|replace|move|copy|test, path: /json/pointer, ...}",
        "scenario.yaml:12:71: $.spec.actions[4].patch.patch: a merge patch is an object, got array",
        "scenario.yaml:13:50: $.spec.actions[5].delete.kind: unknown kind 'example.com/v1/Gadget': not built in"
        " and not defined by the scenario's CRDs (add its CustomResourceDefinition to spec.crds)",
        "scenario.yaml:14:58: $.spec.actions[6].apply.metadata: missing metadata.name (or metadata.generateName)",
    ]


def test_replace_and_patch_extensions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + textwrap.indent(
        textwrap.dedent("""\
        seed: []
        actions:
          - replace: {apiVersion: v1, kind: ConfigMap, metadata: {}}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, type: apply, patch: [1]}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, type: apply, patch: {kind: Secret}}
          - patch: {target: {apiVersion: v1, kind: Secret, name: s}, subresource: exec, patch: {}}
          - {replace: {apiVersion: v1, kind: Secret, metadata: {name: s}}, apply: x.yaml}
        """),
        "  ",
    )
    problems = problems_of(tmp_path, monkeypatch, {"scenario.yaml": text})
    assert problems[0] == "scenario.yaml:8:60: $.spec.actions[0].replace.metadata: missing metadata.name " \
                          "(or metadata.generateName)"
    assert problems[1] == "scenario.yaml:9:84: $.spec.actions[1].patch.patch: an apply patch is an object, got array"
    assert problems[2] == ("scenario.yaml:10:84: $.spec.actions[2].patch.patch: an apply patch carries apiVersion, "
                           "kind and metadata.name of its target (v1, Secret, s)")
    assert problems[3].startswith("scenario.yaml:11:")
    assert "$.spec.actions[3].patch.subresource" in problems[3] and "exec" in problems[3]
    assert problems[4] == ("scenario.yaml:12:7: $.spec.actions[4]: an action needs exactly one of apply, replace, "
                           "delete, patch; got apply and replace (split it into several actions)")


def test_problems_are_sorted_by_file_line_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {
        "scenario.yaml": HEAD + "  seed: [z.yaml, a.yaml]\n  explore: {strategy: x}\n",
        "z.yaml": "kind: ConfigMap\nmetadata: {name: z}\n",
        "a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n",
    }
    got = problems_of(tmp_path, monkeypatch, files)
    assert [line.split(": $")[0] for line in got] == ["a.yaml:3:11", "scenario.yaml:7:23", "z.yaml:1:1"]


def test_default_kind_check_is_skipped_without_registry_or_callback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no callback, the API server's registry decides; where it cannot be imported, kinds pass."""
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD.replace("v1/ConfigMap", "example.com/v9/Thing") + "  seed: []\n", encoding="utf-8")
    try:
        from kamera_cli.apiserver import Registry  # type: ignore[attr-defined, unused-ignore]  # noqa: F401
    except ImportError:
        assert load_scenario(path, check_entrypoint=lambda e, b: None).controllers[0].for_kind == KindRef(
            "example.com", "v9", "Thing"
        )
    else:
        with pytest.raises(ScenarioError, match=re.escape("unknown kind 'example.com/v9/Thing'")):
            load_scenario(path, check_entrypoint=lambda e, b: None)


def test_durations_the_schema_lets_through(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        HEAD.replace("for: v1/ConfigMap}", "for: v1/ConfigMap, timeout: 0ms}")
        + "  seed: []\n  explore: {timeout: .inf}\n"
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:5:89: $.spec.controllers[0].timeout: a duration must be greater than zero, got '0ms'",
        "scenario.yaml:7:22: $.spec.explore.timeout: a duration must be greater than zero, got inf",
    ]


def test_json_patch_operations(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = "{apiVersion: v1, kind: Secret, name: s}"
    text = HEAD + textwrap.indent(
        textwrap.dedent(f"""\
        seed: []
        actions:
          - patch:
              target: {target}
              type: json
              patch:
                - {{op: add, path: /data/a}}
                - {{op: move, path: /data/b}}
                - {{op: copy, from: data/c, path: /data/d}}
                - {{op: remove, path: metadata}}
                - {{op: test, path: "", value: {{}}}}
        """),
        "  ",
    )
    assert problems_of(tmp_path, monkeypatch, {"scenario.yaml": text}) == [
        "scenario.yaml:12:13: $.spec.actions[0].patch.patch[0]: a json patch add operation needs 'value'",
        "scenario.yaml:13:13: $.spec.actions[0].patch.patch[1]: a json patch move operation needs 'from'"
        " (a JSON Pointer)",
        "scenario.yaml:14:30: $.spec.actions[0].patch.patch[2].from: 'data/c' is not a JSON Pointer:"
        " it must start with '/' (or be empty)",
        "scenario.yaml:15:32: $.spec.actions[0].patch.patch[3].path: 'metadata' is not a JSON Pointer:"
        " it must start with '/' (or be empty)",
    ]


def test_may_fail_is_true_or_a_list_of_error_codes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEAD + textwrap.indent(
        textwrap.dedent("""\
        seed: []
        actions:
          - {mayFail: [200], delete: {apiVersion: v1, kind: Secret, name: s}}
          - {mayFail: "yes", delete: {apiVersion: v1, kind: Secret, name: s}}
          - {mayFail: [404, 403], delete: {apiVersion: v1, kind: Secret, name: s}}
        """),
        "  ",
    )
    problems = problems_of(tmp_path, monkeypatch, {"scenario.yaml": text})
    assert problems == [
        "scenario.yaml:8:18: $.spec.actions[0].mayFail[0]: must be at least 400; got 200",
        "scenario.yaml:9:17: $.spec.actions[1].mayFail: expected boolean or array, got string (e.g. True, [403, 404])",
    ]


def test_may_fail_is_read_into_the_action(tmp_path: Path) -> None:
    from kamera_cli.scenario import load_scenario

    (tmp_path / "app.py").write_text("def reconcile(request):\n    pass\n")
    (tmp_path / "scenario.yaml").write_text(HEAD + textwrap.indent(textwrap.dedent("""\
        seed: []
        actions:
          - {mayFail: [404, 403], delete: {apiVersion: v1, kind: Secret, name: s}}
          - {mayFail: true, delete: {apiVersion: v1, kind: Secret, name: s}}
          - {delete: {apiVersion: v1, kind: Secret, name: s}}
        """), "  "))
    first, second, third = load_scenario(tmp_path / "scenario.yaml").actions
    assert (first.may_fail, first.may_fail_codes) == (True, (403, 404))
    assert first.refusal_allowed(404) and not first.refusal_allowed(409)
    assert second.refusal_allowed(409) and not third.refusal_allowed(404)


def test_a_kopf_file_name_the_file_system_refuses_is_a_located_problem(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the mutation property test: a name past the file system's limit made the loader raise
    OSError from ``Path.is_file`` instead of reporting it."""
    long = "x" * 300 + ".py"
    text = HEAD.replace('entrypoint: "app.py:reconcile"', f"kopf: {long}") + "  seed: []\n"
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": text})
    assert got == [f"scenario.yaml:5:35: $.spec.controllers[0].kopf: kopf operator file {long!r} cannot be"
                   " looked up: File name too long"]
