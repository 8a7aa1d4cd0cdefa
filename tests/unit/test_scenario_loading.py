"""Valid scenarios load into the frozen model: every field, defaults, positions, manifests from
files, folders, globs, multi-document files and Lists, default namespaces and durations."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.model.scenario import ExpectSpec, ExploreBounds, Position
from kamera_cli.scenario import load_scenario, parse_duration

BUILTIN = {"ConfigMap", "Namespace", "Secret", "Deployment", "ClusterRole"}


def known(kind: KindRef) -> bool:
    return kind.kind in BUILTIN


def no_entrypoint_check(entrypoint: str, base_dir: str) -> None:
    return None


def write(root: Path, name: str, text: str) -> Path:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""

FULL = """
# yaml-language-server: $schema=../../schemas/scenario.schema.json
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata:
  name: widget-has-config
  description: checks widgets
spec:
  controllers:
    - name: widget
      entrypoint: controllers/widget.py:reconcile
      for: example.com/v1/Widget
      owns: [v1/ConfigMap]
      watches:
        - kind: v1/Secret
          map: sameName
        - kind: v1/ConfigMap
          map: mappers:by_label
      timeout: 1h30m
  crds: [crds/widget.yaml]
  seed:
    - manifests/widget.yaml
    - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
  explore:
    maxDepth: 7
    maxStates: 500
    timeout: 90
    strategy: dfs
    memoize: false
  expect:
    converges: false
    deterministic: false
    controllerErrors: true
  invariants:
    - name: every widget has its config map
      forEach: "$.items[?@.kind == 'Widget']"
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.name == {{ @.metadata.name }}]"
      expect: {count: 1}
    - name: names
      when: always
      select: $.items[*].metadata.name
      expect: {min: 1, max: 9, exists: true, unique: true, matches: "[a-z-]+", equals: null}
  actions:
    - name: delete it
      delete: {apiVersion: example.com/v1, kind: Widget, name: demo}
    - apply: manifests/widget.yaml
      at: any
    - name: scale
      at: {afterSteps: 3}
      patch:
        target: {apiVersion: v1, kind: Namespace, namespace: ignored, name: team-a}
        type: json
        patch: [{op: add, path: /metadata/labels, value: {a: b}}]
    - replace: {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: team-a}, data: {k: v}}
    - patch:
        target: {apiVersion: example.com/v1, kind: Widget, name: demo}
        type: apply
        fieldManager: kubectl
        force: true
        subresource: status
        patch: {apiVersion: example.com/v1, kind: Widget, metadata: {name: demo}, status: {phase: Done}}
  perturbations:
    staleReads:
      - {controller: widget, kinds: [example.com/v1/Widget], maxLag: 2}
      - {controller: "*"}
    crashes:
      - {controller: widget, afterWrites: [2, 0, 2], max: 3}
    conflicts:
      - {controller: "*"}
"""

WIDGETS = """
apiVersion: example.com/v1
kind: Widget
metadata: {name: demo}
spec: {size: 1}
---
---
apiVersion: v1
kind: List
metadata: {resourceVersion: ""}
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm, namespace: team-a}, data: {on: "yes"}}
  - {apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: reader, namespace: x}}
"""


@pytest.fixture
def full(tmp_path: Path) -> Path:
    write(tmp_path, "crds/widget.yaml", CRD)
    write(tmp_path, "manifests/widget.yaml", WIDGETS)
    return write(tmp_path, "scenario.yaml", FULL)


def test_every_field_reaches_the_model(full: Path) -> None:
    s = load_scenario(full, known_kind=known, check_entrypoint=no_entrypoint_check)
    assert s.name == "widget-has-config"
    assert s.description == "checks widgets"
    assert s.file == str(full)
    assert s.base_dir == str(full.parent.resolve())
    (c,) = s.controllers
    assert (c.name, c.entrypoint, c.for_kind, c.owns) == (
        "widget",
        "controllers/widget.py:reconcile",
        KindRef("example.com", "v1", "Widget"),
        (KindRef("", "v1", "ConfigMap"),),
    )
    assert [(w.kind, w.map) for w in c.watches] == [
        (KindRef("", "v1", "Secret"), "sameName"),
        (KindRef("", "v1", "ConfigMap"), "mappers:by_label"),
    ]
    assert c.timeout == 5400.0
    assert c.position == Position(str(full), 9, 7)
    assert s.explore == ExploreBounds(max_depth=7, max_states=500, timeout_seconds=90.0, strategy="dfs", memoize=False)
    assert (s.expect.converges, s.expect.deterministic, s.expect.controller_errors) == (False, False, True)
    assert [crd["metadata"]["name"] for crd in s.crds] == ["widgets.example.com"]
    inv0, inv1 = s.invariants
    assert inv0.for_each == "$.items[?@.kind == 'Widget']" and inv0.when == "converged"
    assert inv0.expect == ExpectSpec(count=1)
    assert inv1.when == "always" and inv1.for_each is None
    assert inv1.expect == ExpectSpec(
        min=1, max=9, exists=True, unique=True, matches="[a-z-]+", has_equals=True, equals=None
    )
    delete, apply, patch, replace, ssa = s.actions
    assert (replace.verb, replace.name, replace.objects[0]["data"]) == ("replace", "action 4 (replace)", {"k": "v"})
    assert (ssa.patch_type, ssa.field_manager, ssa.force, ssa.subresource) == ("apply", "kubectl", True, "status")
    assert (patch.field_manager, patch.force, patch.subresource) == ("", False, "")
    assert (delete.name, delete.verb, delete.at) == ("delete it", "delete", "converged")
    assert delete.target == ObjectRef("example.com/v1", "Widget", "default", "demo")
    assert (apply.name, apply.verb, apply.at) == ("action 2 (apply)", "apply", "any")
    assert [o["metadata"]["name"] for o in apply.objects] == ["demo", "cm", "reader"]
    assert (patch.verb, patch.at, patch.patch_type) == ("patch", 3, "json")
    assert patch.target == ObjectRef("v1", "Namespace", "", "team-a")  # cluster-scoped: namespace dropped
    assert patch.patch == [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}]
    p = s.perturbations
    assert [(r.controller, r.kinds, r.max_lag) for r in p.stale_reads] == [
        ("widget", (KindRef("example.com", "v1", "Widget"),), 2),
        ("*", (), 1),
    ]
    assert [(r.controller, r.after_writes, r.max) for r in p.crashes] == [("widget", (0, 2), 3)]
    assert [(r.controller, r.max) for r in p.conflicts] == [("*", 1)]


def test_seed_files_lists_and_namespaces(full: Path) -> None:
    s = load_scenario(full, known_kind=known, check_entrypoint=no_entrypoint_check)
    refs = [ObjectRef.of(o) for o in s.seed]
    # Namespaces first; multi-document file, empty documents skipped, List flattened, inline last
    assert refs == [
        ObjectRef("v1", "Namespace", "", "team-a"),
        ObjectRef("example.com/v1", "Widget", "default", "demo"),  # namespaced without namespace: default
        ObjectRef("v1", "ConfigMap", "team-a", "cm"),
        ObjectRef("rbac.authorization.k8s.io/v1", "ClusterRole", "", "reader"),  # cluster-scoped: dropped
    ]
    assert s.seed[2]["data"] == {"on": "yes"}  # the key 'on' stays a string


def test_positions_for_annotations(full: Path) -> None:
    s = load_scenario(full, known_kind=known, check_entrypoint=no_entrypoint_check)
    f = str(full)
    assert s.positions["$.metadata.name"] == Position(f, 5, 3)
    assert s.positions["$.spec.expect.converges"] == Position(f, 30, 5)
    assert s.positions["$.spec.expect.deterministic"] == Position(f, 31, 5)
    assert s.positions["$.spec.expect.controllerErrors"] == Position(f, 32, 5)
    assert s.positions["$.spec.controllers[0]"] == Position(f, 9, 7)
    assert s.positions["$.spec.invariants[1]"] == s.invariants[1].position == Position(f, 38, 7)
    assert s.actions[2].position == Position(f, 47, 7)
    assert s.positions["$.spec.seed"] == Position(f, 20, 3)
    # every seed object, by its index in Scenario.seed, where it was written
    manifests = str(full.parent / "manifests" / "widget.yaml")
    assert [s.positions[f"seed[{i}]"] for i in range(len(s.seed))] == [
        Position(f, 22, 7),
        Position(manifests, 1, 1),
        Position(manifests, 11, 5),
        Position(manifests, 12, 5),
    ]


def test_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.scenario.yaml",
        """
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: minimal}
        spec:
          controllers: [{name: c, entrypoint: "pkg.mod:reconcile", for: v1/ConfigMap}]
          seed: []
        """,
    )
    s = load_scenario(path, known_kind=known, check_entrypoint=no_entrypoint_check)
    assert s.explore == ExploreBounds()
    assert (s.expect.converges, s.expect.deterministic, s.expect.controller_errors) == (True, True, False)
    assert s.controllers[0].timeout == 10.0
    assert (s.invariants, s.actions, s.seed, s.crds, s.description) == ((), (), (), (), "")
    assert not s.perturbations.any
    # absent expect keys point at the nearest node that exists
    assert s.positions["$.spec.expect.converges"] == Position(str(path), 5, 3)


def test_folders_and_globs(tmp_path: Path) -> None:
    write(tmp_path, "m/b.yaml", "{apiVersion: v1, kind: ConfigMap, metadata: {name: b}}")
    write(tmp_path, "m/sub/a.yml", "{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}")
    write(tmp_path, "m/c.json", '{"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}}')
    write(tmp_path, "m/.hidden/x.yaml", "{apiVersion: v1, kind: Secret, metadata: {name: hidden}}")
    write(tmp_path, "m/notes.txt", "not yaml: [")
    write(tmp_path, "g/one.yaml", "{apiVersion: v1, kind: Secret, metadata: {name: one}}")
    write(tmp_path, "g/two.yaml", "{apiVersion: v1, kind: Secret, metadata: {generateName: two-}}")
    path = write(
        tmp_path,
        "scenario.yaml",
        """
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: files}
        spec:
          controllers: [{name: c, entrypoint: "c.py:r", for: v1/ConfigMap}]
          seed: [m, "g/*.yaml"]
        """,
    )
    s = load_scenario(path, known_kind=known, check_entrypoint=no_entrypoint_check)
    names = [o["metadata"].get("name") or o["metadata"]["generateName"] for o in s.seed]
    assert names == ["b", "c", "a", "one", "two-"]  # folder files sorted by path, then the glob's


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("10m", 600.0), ("30s", 30.0), ("1h30m", 5400.0), ("500ms", 0.5), ("1.5s", 1.5), (2, 2.0), (0.25, 0.25),
     ("10", 10.0), ("0.5", 0.5)],  # a bare number string (a command-line --timeout) is seconds
)
def test_durations(text: object, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "0", "10x", "m", "0s", 0, -1, True, None])
def test_bad_durations(text: object) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_model_is_frozen(full: Path) -> None:
    s = load_scenario(full, known_kind=known, check_entrypoint=no_entrypoint_check)
    with pytest.raises(AttributeError):
        s.name = "x"  # type: ignore[misc]


def test_only_unnamed_lists_are_flattened(tmp_path: Path) -> None:
    """``kind: List`` (and typed lists such as ConfigMapList) as kubectl prints them are flattened; a
    named object whose kind merely ends in "List" is an object."""
    write(
        tmp_path,
        "objs.yaml",
        """
        apiVersion: v1
        kind: ConfigMapList
        metadata: {resourceVersion: ""}
        items: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}]
        ---
        apiVersion: example.com/v1
        kind: TodoList
        metadata: {name: chores}
        items: [{title: dishes}]
        """,
    )
    path = write(
        tmp_path,
        "scenario.yaml",
        """
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: lists}
        spec:
          controllers: [{name: c, entrypoint: "c.py:r", for: v1/ConfigMap}]
          seed: [objs.yaml]
        """,
    )
    s = load_scenario(path, known_kind=lambda k: True, check_entrypoint=no_entrypoint_check)
    assert [ObjectRef.of(o) for o in s.seed] == [
        ObjectRef("v1", "ConfigMap", "default", "a"),
        ObjectRef("example.com/v1", "TodoList", "default", "chores"),
    ]
