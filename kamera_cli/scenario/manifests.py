"""Kubernetes manifests referenced by a scenario: files, folders, globs and inline objects.

Why here and not in the API server: every problem must point at the file, line and column where the
user wrote the manifest, which only the loader knows. The API server later gets plain objects.
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.errors import Problem
from kamera_cli.model.objects import KindRef
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.schema import json_type
from kamera_cli.scenario.yamldoc import Document, read_documents

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_GLOB_CHARS = frozenset("*?[")


@dataclass(slots=True)
class Located:
    """One manifest and where it was written (its document and the path inside it)."""

    obj: dict[str, Any]
    doc: Document
    path: Path_

    def problem(self, sub: Path_, message: str, hint: str = "") -> Problem:
        return self.doc.problem((*self.path, *sub), message, hint)


class Sources:
    """Resolves ``seed``/``crds``/``apply`` entries relative to the scenario's folder."""

    def __init__(self, scenario: Document, base_dir: str, display_dir: str, problems: list[Problem]) -> None:
        self.scenario = scenario
        self.base_dir = base_dir
        self.display_dir = display_dir
        self.problems = problems

    def resolve(self, entry: Any, entry_path: Path_) -> list[Located]:
        """The manifests an entry stands for (Lists flattened); problems for what cannot be read."""
        if isinstance(entry, dict):
            return self._flatten(entry, self.scenario, entry_path)
        if not isinstance(entry, str) or not entry:
            return []  # the schema has reported it
        found: list[Located] = []
        for absolute, display in self._files(entry, entry_path):
            documents = read_documents(absolute, display, self.problems)
            for doc in documents or ():
                found.extend(self._flatten(doc.data, doc, ()))
        return found

    def _display(self, absolute: str, ref: str) -> str:
        if os.path.isabs(ref):
            return absolute
        return os.path.normpath(os.path.join(self.display_dir, os.path.relpath(absolute, self.base_dir)))

    def _files(self, ref: str, entry_path: Path_) -> list[tuple[str, str]]:
        absolute = os.path.normpath(os.path.join(self.base_dir, ref))
        if any(ch in _GLOB_CHARS for ch in ref):
            matches = sorted(glob.glob(absolute, recursive=True))
            files: list[str] = []
            for match in matches:
                files.extend(_folder_files(match) if os.path.isdir(match) else [match])
            if not files:
                self.problems.append(self.scenario.problem(entry_path, f"glob {ref!r} matches no file"))
            return [(f, self._display(f, ref)) for f in files]
        if os.path.isdir(absolute):
            files = _folder_files(absolute)
            if not files:
                suffixes = ", ".join(MANIFEST_SUFFIXES)
                self.problems.append(self.scenario.problem(entry_path, f"folder {ref!r} holds no {suffixes} file"))
            return [(f, self._display(f, ref)) for f in files]
        if os.path.isfile(absolute):
            return [(absolute, self._display(absolute, ref))]
        self.problems.append(
            self.scenario.problem(
                entry_path, f"no such file or folder: {ref!r}", "paths are relative to the scenario file's folder"
            )
        )
        return []

    def _flatten(self, data: Any, doc: Document, path: Path_) -> list[Located]:
        if not isinstance(data, dict):
            self.problems.append(doc.problem(path, f"expected a Kubernetes object (a mapping), got {json_type(data)}"))
            return []
        kind = data.get("kind")
        items = data.get("items")
        meta = data.get("metadata")
        named = isinstance(meta, Mapping) and bool(meta.get("name"))
        if isinstance(kind, str) and kind.endswith("List") and isinstance(items, list) and not named:
            found: list[Located] = []
            for i, item in enumerate(items):
                found.extend(self._flatten(item, doc, (*path, "items", i)))
            return found
        return [Located(data, doc, path)]


def _folder_files(folder: str) -> list[str]:
    found: list[str] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(root, f) for f in files if f.endswith(MANIFEST_SUFFIXES) and not f.startswith("."))
    return sorted(found)


def check_manifest(item: Located, problems: list[Problem]) -> KindRef | None:
    """The object's kind when it has apiVersion, kind and a name (or generateName); else problems."""
    obj = item.obj
    ok = True
    api_version = obj.get("apiVersion")
    kind = obj.get("kind")
    if not isinstance(api_version, str) or not api_version:
        message = "missing apiVersion" if api_version is None else "apiVersion must be a string"
        problems.append(item.problem((), message))
        ok = False
    elif api_version.count("/") > 1:
        problems.append(item.problem(("apiVersion",), f"{api_version!r} is not an apiVersion (group/version or v1)"))
        ok = False
    if not isinstance(kind, str) or not kind:
        problems.append(item.problem((), "missing kind" if kind is None else "kind must be a string"))
        ok = False
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        problems.append(item.problem((), "missing metadata.name" if meta is None else "metadata must be a mapping"))
        ok = False
    else:
        name, generate = meta.get("name"), meta.get("generateName")
        if not (isinstance(name, str) and name) and not (isinstance(generate, str) and generate):
            problems.append(item.problem(("metadata",), "missing metadata.name (or metadata.generateName)"))
            ok = False
        namespace = meta.get("namespace")
        if namespace is not None and not (isinstance(namespace, str) and namespace):
            problems.append(item.problem(("metadata", "namespace"), "metadata.namespace must be a non-empty string"))
            ok = False
    if not ok or not isinstance(api_version, str) or not isinstance(kind, str):
        return None
    return KindRef.of(api_version, kind)
