"""Whatever a scenario file holds, loading it either succeeds or raises ``ScenarioError``: a user
never sees a traceback from kamera for their own mistake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kamera_cli.errors import ScenarioError
from kamera_cli.scenario import load_scenario

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from(["", "x", "v1/ConfigMap", "10s", "0s", "*", "$.items[*]", "{{ @.a }}", "c.py:r", "bfs", "any"]),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["name", "kind", "x"]), inner, max_size=3)
    ),
    max_leaves=8,
)
FIELDS = {
    "controllers": ["name", "entrypoint", "for", "owns", "watches", "timeout"],
    "invariants": ["name", "when", "forEach", "select", "expect"],
    "actions": ["name", "at", "apply", "delete", "patch"],
}


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    for section, fields in FIELDS.items():
        items = draw(st.lists(st.dictionaries(st.sampled_from(fields), values, max_size=len(fields)), max_size=2))
        spec[section] = items
    for key in ("seed", "crds", "explore", "expect", "perturbations"):
        if draw(st.booleans()):
            spec[key] = draw(values)
    return {"apiVersion": "kamera.dev/v1alpha1", "kind": "Scenario", "metadata": {"name": "f"}, "spec": spec}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(doc=scenarios())
def test_loading_never_crashes(tmp_path: Path, doc: dict[str, Any]) -> None:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    try:
        load_scenario(path, known_kind=lambda k: True, check_entrypoint=lambda e, b: None)
    except ScenarioError as exc:
        assert exc.problems, json.dumps(doc)
        for problem in exc.problems:
            assert "\n" not in problem.render()
