"""pytest plugin: ``pytest --kamera PATH`` turns every scenario's checks into pytest items.

Why a plugin: teams already gate pull requests on their pytest run and its ``--junitxml``; this
puts kamera's verdicts in that same report without a second CI step.  Off unless asked for.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.model.result import CheckName, ScenarioResult, Verdict


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kamera", "kamera controller model checking")
    group.addoption(
        "--kamera",
        action="append",
        default=[],
        metavar="PATH",
        help="check kamera scenarios (a file, or a folder searched for scenario.yaml); repeatable",
    )


def pytest_configure(config: pytest.Config) -> None:
    paths = config.getoption("kamera") or []
    if not paths:
        return
    from kamera_cli.errors import KameraError
    from kamera_cli.scenario import discover

    try:
        files = discover([Path(p) for p in paths])
    except KameraError as exc:
        raise pytest.UsageError(f"--kamera: {exc}") from exc
    # `pytest --kamera A B`: B reaches pytest as a plain argument; when it holds scenarios, the user
    # meant them too (argparse gives --kamera one value) — never check A alone in silence
    for arg in config.args:
        candidate = Path(arg.split("::")[0])
        if candidate.exists() and not candidate.name.endswith(".py"):
            with contextlib.suppress(KameraError):  # a folder of tests, not of scenarios
                files.extend(f for f in discover([candidate]) if f not in files)
    config.stash[_FILES] = {f.resolve() for f in files}
    # collected like any other argument, so -k, --co, -x and the summary counts all see them
    config.args = [*config.args, *(str(f) for f in files)]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.resolve() in parent.config.stash.get(_FILES, set()):
        return KameraScenario.from_parent(parent, path=file_path)
    return None


_FILES = pytest.StashKey[set[Path]]()


class KameraScenario(pytest.File):
    """One scenario file; runs its exploration once, on the first of its items."""

    _result: ScenarioResult | None = None

    def collect(self) -> Iterator[pytest.Item]:
        from kamera_cli.errors import ScenarioError
        from kamera_cli.scenario import load_scenario

        try:
            scenario = load_scenario(self.path)
        except ScenarioError as exc:
            yield KameraCheck.from_parent(self, name=CheckName.LOAD, load_error=str(exc))
            return
        names = []
        if scenario.expect.converges:
            names.append(CheckName.CONVERGES)
        if scenario.expect.deterministic:
            names.append(CheckName.DETERMINISTIC)
        if not scenario.expect.controller_errors:
            names.append(CheckName.NO_CONTROLLER_ERRORS)
        if scenario.actions:
            names.append("actions apply")
        names.extend(CheckName.invariant(i.name) for i in scenario.invariants)
        for name in names:
            yield KameraCheck.from_parent(self, name=name)

    def result(self) -> ScenarioResult:
        if self._result is None:
            from kamera_cli.supervisor import run_one

            self._result = run_one(self.path)  # supervised, like kamera check
        return self._result


class KameraFailure(Exception):
    """A failed kamera check; its text is the counterexample story."""


class KameraCheck(pytest.Item):
    def __init__(self, *, load_error: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.load_error = load_error

    def runtest(self) -> None:
        if self.load_error:
            raise KameraFailure(self.load_error)
        parent = self.parent
        assert isinstance(parent, KameraScenario)
        result = parent.result()
        if result.verdict is Verdict.ERROR:
            raise KameraFailure(result.error)
        check = next((c for c in result.checks if c.name == self.name), None)
        if check is None:
            raise KameraFailure(f"kamera produced no check named {self.name!r}")
        if check.verdict is Verdict.PASSED:
            return
        from kamera_cli.report.style import PLAIN
        from kamera_cli.report.terminal import check_lines

        story = "\n".join(check_lines(check, PLAIN, verbose=True))
        # the header pytest prints is the file path; say which scenario failed in the first line
        raise KameraFailure(f"scenario {result.name!r}: {check.name} {check.verdict.value}: {check.message}\n{story}")

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, KameraFailure):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"kamera: {self.parent.name if self.parent else ''}::{self.name}"
