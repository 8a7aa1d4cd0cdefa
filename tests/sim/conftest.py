"""Helpers to build scenarios in code: a controller file in tmp_path plus frozen Scenario values."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.model.objects import KindRef
from kamera_cli.model.scenario import ControllerSpec, ExploreBounds, Expectations, Scenario

TASK_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "tasks.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "tasks", "singular": "task", "kind": "Task", "listKind": "TaskList"},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            }}},
        }],
    },
}

TASK = KindRef("example.com", "v1", "Task")
CONFIGMAP = KindRef("", "v1", "ConfigMap")

MakeScenario = Callable[..., Scenario]


@pytest.fixture
def make_scenario(tmp_path: Path) -> MakeScenario:
    counter = {"n": 0}

    def make(code: str, controllers: list[tuple[str, str, KindRef]] | list[Any], seed: list[dict[str, Any]],
             *, crds: tuple[dict[str, Any], ...] = (), **kwargs: Any) -> Scenario:
        counter["n"] += 1
        folder = tmp_path / f"s{counter['n']}"
        folder.mkdir()
        (folder / "ctrl.py").write_text(textwrap.dedent(code))
        specs = []
        for c in controllers:
            if isinstance(c, ControllerSpec):
                specs.append(c)
            else:
                name, attr, kind = c[:3]
                extra = c[3] if len(c) > 3 else {}
                specs.append(ControllerSpec(name=name, entrypoint=f"ctrl.py:{attr}", for_kind=kind, **extra))
        return Scenario(
            name=f"test-{counter['n']}",
            file=str(folder / "scenario.yaml"),
            base_dir=str(folder),
            controllers=tuple(specs),
            seed=tuple(seed),
            crds=crds,
            explore=kwargs.pop("explore", ExploreBounds(max_depth=30, max_states=5000, timeout_seconds=60)),
            expect=kwargs.pop("expect", Expectations()),
            **kwargs,
        )

    return make
