"""What every part of the scenario loader shares while it reads one file: the problems found so far,
where a path points in the YAML, and the kinds the scenario knows.

Why a module of its own: the loader (``loader.py``) reads the document section by section and hands
some sections (``actions.py``, ``perturbations.py``) to modules of their own; each records problems
the same way and resolves kinds against the same oracle. They share this ``Reader``, so none of them
imports another's private class. ``Reader`` holds no parsing of a particular section.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kamera_cli.errors import Problem
from kamera_cli.model.objects import KindRef
from kamera_cli.model.scenario import Position
from kamera_cli.scenario.kinds import KindOracle
from kamera_cli.scenario.manifests import Located, check_manifest
from kamera_cli.scenario.paths import Path_
from kamera_cli.scenario.values import as_dict
from kamera_cli.scenario.yamldoc import Document


class Reader:
    """The state a scenario's reading shares across its sections, and the helpers that report into it."""

    def __init__(self, file: str, problems: list[Problem]) -> None:
        self.file = file
        self.problems = problems
        self.doc: Document = Document(file, None, (0, 0))
        self.oracle: KindOracle  # set once the CRDs are read
        self.controller_names: list[str] = []
        #: controllers that are programs, sweeps or handlers (stale reads do not apply to them)
        self.program_names: list[str] = []

    def add(self, path: Path_, message: str, hint: str = "", *, key: bool = False) -> None:
        self.problems.append(self.doc.problem(path, message, hint, key=key))

    def position(self, path: Path_, *, key: bool = False) -> Position:
        line, column = self.doc.key_at(path) if key else self.doc.at(path)
        return Position(self.file, line, column)

    def kind_ref(self, value: Any, path: Path_) -> KindRef | None:
        if not isinstance(value, str):
            return None
        try:
            ref = KindRef.parse(value)
        except ValueError:
            return None  # the schema's pattern has reported it
        self.check_known(ref, lambda message, hint: self.add(path, message, hint))
        return ref

    def check_known(self, ref: KindRef, report: Callable[[str, str], None]) -> None:
        if self.oracle.known(ref) is False:
            report(*self.unknown_kind(ref))

    def unknown_kind(self, ref: KindRef) -> tuple[str, str]:
        return (
            f"unknown kind {str(ref)!r}: not built in and not defined by the scenario's CRDs",
            self.oracle.suggest(ref) or "add its CustomResourceDefinition to spec.crds",
        )

    def objects(self, items: list[Located]) -> list[tuple[Located, dict[str, Any]]]:
        """Checked objects with their namespace settled (default for namespaced kinds, none otherwise)."""
        result: list[tuple[Located, dict[str, Any]]] = []
        for item in items:
            ref = check_manifest(item, self.problems)
            if ref is None:
                continue
            if self.oracle.known(ref) is False:
                self.problems.append(item.problem(("kind",), *self.unknown_kind(ref)))
            obj = item.obj
            meta = dict(as_dict(obj.get("metadata")))
            if self.oracle.namespaced(ref):
                if not meta.get("namespace"):
                    meta["namespace"] = "default"
            else:
                meta.pop("namespace", None)  # the API server ignores it for cluster-scoped kinds
            result.append((item, {**obj, "metadata": meta}))
        return result
