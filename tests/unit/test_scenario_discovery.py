"""Finding scenario files under PATHs, loading many at once (all problems of all files together),
unique scenario names across a run, and finding the packaged JSON Schema."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from kamera_cli.errors import ScenarioError, UsageError
from kamera_cli.scenario import check_unique_names, discover, load_schema, schema_path, schema_text, validate_paths


def scenario_text(name: str, seed: str = "[]") -> str:
    return (
        "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\n"
        f"metadata:\n  name: {name}\n"
        "spec:\n  controllers: [{name: c, entrypoint: 'c.py:r', for: v1/ConfigMap}]\n"
        f"  seed: {seed}\n"
    )


def put(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def known(kind: object) -> bool:
    return True


def test_discover_files_and_folders_sorted(tmp_path: Path) -> None:
    put(tmp_path / "b" / "scenario.yaml", "x")
    put(tmp_path / "a" / "deep" / "x.scenario.yml", "x")
    put(tmp_path / "a" / "scenario.yml", "x")
    put(tmp_path / "a" / "other.yaml", "x")
    put(tmp_path / ".git" / "scenario.yaml", "x")
    explicit = put(tmp_path / "odd-name.yaml", "x")
    found = discover([tmp_path / "b", tmp_path, explicit])
    assert [p.relative_to(tmp_path).as_posix() for p in found] == [
        "a/deep/x.scenario.yml",
        "a/scenario.yml",
        "b/scenario.yaml",
        "odd-name.yaml",
    ]


def test_discover_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"no such file or folder: '.*nope'"):
        discover([tmp_path / "nope"])
    put(tmp_path / "empty" / "notes.yaml", "x")
    with pytest.raises(UsageError, match=r"no scenario found under .*empty.*scenario\.yaml"):
        discover([tmp_path / "empty"])


def test_validate_paths_collects_every_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    put(tmp_path / "s" / "one" / "scenario.yaml", scenario_text("one"))
    put(tmp_path / "s" / "two" / "scenario.yaml", scenario_text("two", "[missing.yaml]"))
    put(tmp_path / "s" / "three" / "scenario.yaml", scenario_text("one"))
    put(tmp_path / "s" / "four" / "scenario.yaml", "kind: Scenario\n")
    with pytest.raises(ScenarioError) as info:
        validate_paths(["s"], known_kind=known, check_entrypoint=lambda e, b: None)
    assert str(info.value).splitlines() == [
        "s/four/scenario.yaml:1:1: $: missing apiVersion: a scenario starts with apiVersion: kamera.dev/v1alpha1",
        "s/three/scenario.yaml:4:3: $.metadata.name: scenario name 'one' is already used by s/one/scenario.yaml"
        " (names must be unique in a run)",
        "s/two/scenario.yaml:7:10: $.spec.seed[0]: no such file or folder: 'missing.yaml'"
        " (paths are relative to the scenario file's folder)",
    ]


def test_validate_paths_returns_scenarios_in_order(tmp_path: Path) -> None:
    put(tmp_path / "b" / "scenario.yaml", scenario_text("b"))
    put(tmp_path / "a" / "scenario.yaml", scenario_text("a"))
    assert [s.name for s in validate_paths([tmp_path], known_kind=known, check_entrypoint=lambda e, b: None)] == [
        "a",
        "b",
    ]


def test_check_unique_names_passes_distinct(tmp_path: Path) -> None:
    scenarios = validate_paths(
        [put(tmp_path / "x.scenario.yaml", scenario_text("x"))], known_kind=known, check_entrypoint=lambda e, b: None
    )
    check_unique_names(scenarios)


def test_schema_is_found_and_valid() -> None:
    path = schema_path()
    assert path.name == "scenario.schema.json"
    schema = load_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert json.loads(path.read_text(encoding="utf-8")) == schema


def test_every_schema_property_has_a_description_or_title() -> None:
    """Editors show these; a field without one is a field nobody can discover."""
    missing: list[str] = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            for name, sub in node.get("properties", {}).items():
                undocumented = not (sub.get("description") or sub.get("title") or "$ref" in sub)
                if undocumented and sub.get("type") not in ("object", "array"):
                    missing.append(f"{where}.{name}")
                walk(sub, f"{where}.{name}")
            for key in ("items", "$defs"):
                sub = node.get(key)
                if isinstance(sub, dict):
                    for name, value in sub.items() if key == "$defs" else [("[]", sub)]:
                        walk(value, f"{where}.{name}")

    walk(load_schema(), "$")
    assert missing == []


def test_schema_text() -> None:
    assert json.loads(schema_text("scenario")) == load_schema()
    with pytest.raises(UsageError, match="unknown schema 'nope'"):
        schema_text("nope")


def test_schema_is_found_in_an_installed_wheel_layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Wheels force-include ``schemas/`` as ``kamera_cli/schemas/``; that copy wins when present."""
    from kamera_cli.scenario import schema as schema_module

    package = tmp_path / "site-packages" / "kamera_cli"
    put(package / "__init__.py", "")
    put(package / "schemas" / "scenario.schema.json", "{}")
    monkeypatch.setattr(schema_module, "PACKAGE_DIR", package)
    assert schema_path() == package / "schemas" / "scenario.schema.json"
    assert schema_text("scenario") == "{}"
