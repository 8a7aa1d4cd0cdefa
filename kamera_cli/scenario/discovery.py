"""Finding scenario files under the PATHs a user names, and loading them all in one go.

Why one front end for ``kamera validate`` and ``kamera check``: both must report every problem in
every file at once, in the same order, before anything runs.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from kamera_cli.errors import Problem, ScenarioError, UsageError
from kamera_cli.model.scenario import Position, Scenario
from kamera_cli.scenario.kinds import KnownKind
from kamera_cli.scenario.loader import CheckEntrypoint, load_scenario

SCENARIO_NAMES = ("scenario.yaml", "scenario.yml")
SCENARIO_SUFFIXES = (".scenario.yaml", ".scenario.yml")


def is_scenario_name(name: str) -> bool:
    return name in SCENARIO_NAMES or name.endswith(SCENARIO_SUFFIXES)


def discover(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Scenario files: each PATH is a file, or a folder searched recursively; sorted, without repeats."""
    found: dict[str, Path] = {}
    for given in paths:
        path = Path(given)
        if path.is_file():
            found.setdefault(os.path.normpath(str(path)), path)
        elif path.is_dir():
            matches = _search(path)
            if not matches:
                raise UsageError(
                    f"no scenario found under {str(given)!r}: kamera looks for scenario.yaml, scenario.yml, "
                    "*.scenario.yaml and *.scenario.yml (hint: name the file, or rename it to scenario.yaml)"
                )
            for match in matches:
                found.setdefault(os.path.normpath(str(match)), match)
        else:
            raise UsageError(
                f"no such file or folder: {str(given)!r} (hint: check the path; it is relative to {os.getcwd()})"
            )
    return [found[key] for key in sorted(found)]


def _search(folder: Path) -> list[Path]:
    matches: list[Path] = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in ("node_modules", "__pycache__"))
        matches.extend(Path(root) / name for name in sorted(files) if is_scenario_name(name))
    return sorted(matches, key=str)


def check_unique_names(scenarios: Sequence[Scenario]) -> None:
    """Scenario names identify results (JUnit suites, reports): raise ``ScenarioError`` on a repeat."""
    first: dict[str, Scenario] = {}
    problems: list[Problem] = []
    for scenario in scenarios:
        earlier = first.get(scenario.name)
        if earlier is None:
            first[scenario.name] = scenario
            continue
        where = scenario.positions.get("$.metadata.name") or Position(scenario.file)
        problems.append(
            Problem(
                scenario.file,
                where.line,
                where.column,
                "$.metadata.name",
                f"scenario name {scenario.name!r} is already used by {earlier.file}",
                "names must be unique in a run",
            )
        )
    if problems:
        raise ScenarioError(problems)


def validate_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    known_kind: KnownKind | None = None,
    check_entrypoint: CheckEntrypoint | None = None,
) -> list[Scenario]:
    """Discover and load every scenario; one ``ScenarioError`` with all problems of all files."""
    problems: list[Problem] = []
    scenarios: list[Scenario] = []
    for path in discover(paths):
        try:
            scenarios.append(load_scenario(path, known_kind=known_kind, check_entrypoint=check_entrypoint))
        except ScenarioError as exc:
            problems.extend(exc.problems)
    try:
        check_unique_names(scenarios)
    except ScenarioError as exc:
        problems.extend(exc.problems)
    if problems:
        raise ScenarioError(problems)
    return scenarios
