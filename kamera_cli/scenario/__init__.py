"""Loading and validating scenario files (layer 3); imports no controller code."""

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
