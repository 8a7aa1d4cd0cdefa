"""Loading and validating scenario files (layer 4); imports no controller code.

Owns ``load_scenario`` (``loader``, with the sections ``actions``, ``perturbations``, ``cluster``,
``fakes``, ``metacontroller``, ``programs``, ``process`` read by modules of their own over the shared
``reading.Reader``), the YAML reader that keeps positions (``yamldoc``), the JSON Schema check
(``schema``), manifests and kinds, and discovery of scenario files.

May import: ``invariants``, ``apiserver`` (the registry, to know kinds), ``controlplane`` (built-in
names), ``adapters`` (only to check an entry point without importing it), ``model``, ``errors``.
See docs/scenario.md.
"""

from __future__ import annotations

from kamera_cli.scenario.discovery import check_unique_names, discover, is_scenario_name, validate_paths
from kamera_cli.scenario.durations import parse_duration
from kamera_cli.scenario.loader import API_VERSION, BUILTIN_NAMESPACES, KIND, load_scenario
from kamera_cli.scenario.schema import load_schema, schema_path, schema_text

__all__ = [
    "API_VERSION",
    "BUILTIN_NAMESPACES",
    "KIND",
    "check_unique_names",
    "discover",
    "is_scenario_name",
    "load_scenario",
    "load_schema",
    "parse_duration",
    "schema_path",
    "schema_text",
    "validate_paths",
]
