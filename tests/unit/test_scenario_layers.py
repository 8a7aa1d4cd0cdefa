"""The loader's use of the layers below it, through their published names: the API server's
``Registry`` (kinds, scopes, CRDs refused) and the adapters' ``check_entrypoint``; plus YAML details
(merge keys, tags, non-string keys) and where problems in referenced files are reported."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

import kamera_cli.adapters
import kamera_cli.apiserver
from kamera_cli.errors import KameraError, ScenarioError
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.scenario import load_scenario

SCENARIO = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: s}
spec:
  controllers: [{name: c, entrypoint: "c.py:reconcile", for: example.com/v1/Widget}]
  crds: [crd.yaml]
  seed:
    - {apiVersion: example.com/v1, kind: Widget, metadata: {name: w}}
    - {apiVersion: example.org/v1, kind: Gizmo, metadata: {name: n, namespace: default}}
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: cm}}
"""

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true}]
"""


@dataclass(frozen=True)
class Info:
    namespaced: bool


class FakeRegistry:
    """Stands in for ``kamera_cli.apiserver.Registry`` exactly as docs/architecture.md names it."""

    BUILTIN: ClassVar[dict[tuple[str, str], Info]] = {
        ("v1", "ConfigMap"): Info(True),
        ("v1", "Namespace"): Info(False),
        ("example.org/v1", "Gizmo"): Info(False),  # cluster-scoped: only the registry knows
        ("apps/v1", "Deployment"): Info(True),
    }
    crds_seen: ClassVar[list[list[Any]]] = []

    def __init__(self, kinds: dict[tuple[str, str], Info]) -> None:
        self.kinds = kinds

    @classmethod
    def builtin(cls) -> FakeRegistry:
        return cls(dict(cls.BUILTIN))

    def with_crds(self, manifests: list[Any]) -> FakeRegistry:
        FakeRegistry.crds_seen.append(manifests)
        kinds = dict(self.kinds)
        for crd in manifests:
            spec = crd["spec"]
            if "plural" not in spec["names"] or spec["names"]["plural"] != spec["names"]["plural"].lower():
                raise KameraError(f"CRD {crd['metadata']['name']}: spec.names.plural must be lower case")
            for version in spec["versions"]:
                kinds[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = Info(
                    spec.get("scope") == "Namespaced"
                )
        return FakeRegistry(kinds)

    def lookup(self, api_version: str, kind: str) -> Info | None:
        return self.kinds.get((api_version, kind))

    def resources(self) -> list[Any]:
        return [Resource(KindRef.of(*key)) for key in self.kinds]


@dataclass(frozen=True)
class Resource:
    kind_ref: KindRef


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> type[FakeRegistry]:
    FakeRegistry.crds_seen = []
    monkeypatch.setattr(kamera_cli.apiserver, "Registry", FakeRegistry, raising=False)
    return FakeRegistry


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def test_registry_decides_kinds_and_scopes(tmp_path: Path, registry: type[FakeRegistry]) -> None:
    write(tmp_path, {"scenario.yaml": SCENARIO, "crd.yaml": CRD})
    s = load_scenario(tmp_path / "scenario.yaml", check_entrypoint=lambda e, b: None)
    assert [ObjectRef.of(o) for o in s.seed] == [
        ObjectRef("example.com/v1", "Widget", "default", "w"),
        ObjectRef("example.org/v1", "Gizmo", "", "n"),  # cluster-scoped per the registry: namespace dropped
        ObjectRef("v1", "ConfigMap", "default", "cm"),
    ]
    assert registry.crds_seen[-1][0]["metadata"]["name"] == "widgets.example.com"


def test_registry_refusing_a_crd_is_located_at_that_crd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: type[FakeRegistry]
) -> None:
    write(tmp_path, {"scenario.yaml": SCENARIO, "crd.yaml": CRD.replace("plural: widgets", "plural: Widgets")})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml", check_entrypoint=lambda e, b: None)
    assert [p.render() for p in info.value.problems] == [
        "crd.yaml:1:1: $: invalid CustomResourceDefinition:"
        " CRD widgets.example.com: spec.names.plural must be lower case",
    ]


def test_adapters_check_entrypoint_is_the_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: type[FakeRegistry]
) -> None:
    calls: list[tuple[str, str]] = []

    def check_entrypoint(entrypoint: str, base_dir: str) -> str | None:
        calls.append((entrypoint, base_dir))
        return "c.py: line 3: invalid syntax"

    monkeypatch.setattr(kamera_cli.adapters, "check_entrypoint", check_entrypoint, raising=False)
    write(tmp_path, {"scenario.yaml": SCENARIO, "crd.yaml": CRD})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml")
    assert calls == [("c.py:reconcile", str(tmp_path.resolve()))]
    assert [p.render() for p in info.value.problems] == [
        "scenario.yaml:5:39: $.spec.controllers[0].entrypoint: c.py: line 3: invalid syntax"
    ]


def test_problems_in_referenced_files_use_paths_relative_to_the_given_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(
        tmp_path,
        {
            "suite/one/scenario.yaml": SCENARIO.replace("crds: [crd.yaml]", "crds: [../shared/crds/*.yaml]"),
            "suite/shared/crds/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n",
        },
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("suite/one/scenario.yaml", known_kind=lambda k: True, check_entrypoint=lambda e, b: None)
    assert [p.render() for p in info.value.problems] == [
        "suite/shared/crds/a.yaml:2:7: $.kind: spec.crds takes CustomResourceDefinitions, got v1/ConfigMap"
        " (put other objects in spec.seed)"
    ]


def test_yaml_merge_keys_tags_and_keys(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = """\
    apiVersion: kamera.dev/v1alpha1
    kind: Scenario
    metadata: {name: s}
    spec:
      controllers: [{name: c, entrypoint: "c.py:r", for: v1/ConfigMap}]
      seed: [objs.yaml]
    """
    merged = """\
    apiVersion: v1
    kind: List
    items:
      - &cm {apiVersion: v1, kind: ConfigMap, metadata: {name: a}, data: {x: "1"}}
      - <<: *cm
        metadata: {name: merged}
        data: {when: 2026-01-01, yes: no}
    """
    write(tmp_path, {"scenario.yaml": scenario, "objs.yaml": merged})
    a, b = load_scenario(tmp_path / "scenario.yaml", known_kind=lambda k: True, check_entrypoint=lambda e, b: None).seed
    assert a["data"] == {"x": "1"}
    assert b == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "merged", "namespace": "default"},
        "data": {"when": "2026-01-01", "yes": False},  # the key stays a string, the value is YAML 1.1
    }
    tagged = """\
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: tagged}
    data: {blob: !!binary aGVsbG8=, other: !custom x, [1, 2]: y}
    """
    write(tmp_path, {"objs.yaml": tagged})
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml", known_kind=lambda k: True, check_entrypoint=lambda e, b: None)
    assert [p.render() for p in info.value.problems] == [
        "objs.yaml:4:14: $.data.blob: binary values are not JSON: write a base64 string",
        "objs.yaml:4:40: $.data.other: cannot read this value (!custom): "
        "could not determine a constructor for the tag '!custom'",
        "objs.yaml:4:51: $.data: keys must be plain strings",
    ]


def test_kind_refs_parse_into_the_model(tmp_path: Path) -> None:
    write(
        tmp_path, {"scenario.yaml": SCENARIO.replace("  crds: [crd.yaml]\n", "").split("  seed:")[0] + "  seed: []\n"}
    )
    s = load_scenario(tmp_path / "scenario.yaml", known_kind=lambda k: True, check_entrypoint=lambda e, b: None)
    assert s.controllers[0].for_kind == KindRef("example.com", "v1", "Widget")


def test_loading_imports_no_controller_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Validation must be safe on untrusted or broken controllers: nothing of theirs runs."""
    marker = tmp_path / "imported"
    code = f"open({str(marker)!r}, 'w').close()\ndef reconcile(request):\n    pass\n"
    write(
        tmp_path,
        {
            "scenario.yaml": """\
            apiVersion: kamera.dev/v1alpha1
            kind: Scenario
            metadata: {name: s}
            spec:
              controllers:
                - {name: a, entrypoint: "ctl.py:reconcile", for: v1/ConfigMap}
                - name: b
                  entrypoint: "ctlpkg.mod:reconcile"
                  for: v1/Secret
                  watches: [{kind: v1/ConfigMap, map: "ctlpkg.mappers:fn"}]
              seed: []
            """,
            "ctl.py": code,
            "ctlpkg/__init__.py": code,
            "ctlpkg/mod.py": code,
            "ctlpkg/mappers.py": code,
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    load_scenario(tmp_path / "scenario.yaml", known_kind=lambda k: True)  # the default entry-point check
    assert not marker.exists()


def test_unknown_kinds_get_the_closest_known_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: type[FakeRegistry]
) -> None:
    scenario = SCENARIO.replace("for: example.com/v1/Widget", "for: example.com/v1/Widgte").replace(
        "kind: Gizmo", "kind: gizmo"
    )
    write(
        tmp_path,
        {
            "scenario.yaml": scenario + "    - {apiVersion: v1, kind: Deployment, metadata: {name: d}}\n",
            "crd.yaml": CRD,
        },
    )
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ScenarioError) as info:
        load_scenario("scenario.yaml", check_entrypoint=lambda e, b: None)
    unknown = "not built in and not defined by the scenario's CRDs"
    assert [p.render() for p in info.value.problems] == [
        f"scenario.yaml:5:62: $.spec.controllers[0].for: unknown kind 'example.com/v1/Widgte': {unknown}"
        " (did you mean 'example.com/v1/Widget'?)",
        f"scenario.yaml:9:42: $.spec.seed[1].kind: unknown kind 'example.org/v1/gizmo': {unknown}"
        " (did you mean 'example.org/v1/Gizmo'?)",
        f"scenario.yaml:11:30: $.spec.seed[3].kind: unknown kind 'v1/Deployment': {unknown}"
        " (did you mean 'apps/v1/Deployment'?)",
    ]
