"""kamera's single exception tree and exit-code table.

Why one tree: the CLI maps exceptions to exit codes in exactly one place (``cli.py``), and it can
only do that reliably if every error kamera raises on purpose descends from ``KameraError`` and
says which exit code it means.  Anything else reaching the CLI is, by definition, a bug in kamera.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass


class ExitCode(enum.IntEnum):
    """Process exit codes of ``kamera``; documented in the README's exit-code table."""

    #: Every check of every scenario passed.
    OK = 0
    #: At least one check failed (a counterexample was found).
    CHECK_FAILED = 1
    #: Bad command line, or a scenario that cannot be loaded or validated.
    USAGE = 2
    #: A bug in kamera itself; a report with versions and the traceback is written to a file.
    INTERNAL = 3
    #: A bound (states, depth, time) was hit before the search finished, and nothing failed.
    INCONCLUSIVE = 4


class KameraError(Exception):
    """Root of every error kamera raises deliberately."""

    exit_code: ExitCode = ExitCode.INTERNAL


@dataclass(frozen=True, slots=True)
class Problem:
    """One located problem in a user's input file, printed as ``file:line:col: $.path: message``."""

    file: str
    line: int  # 1-based; 0 when unknown
    column: int  # 1-based; 0 when unknown
    path: str  # JSONPath of the offending node, "$" for the document
    message: str
    hint: str = ""

    def render(self) -> str:
        where = self.file
        if self.line:
            where += f":{self.line}:{self.column or 1}"
        text = f"{where}: {self.path}: {self.message}"
        if self.hint:
            text += f" ({self.hint})"
        return text

    def sort_key(self) -> tuple[str, int, int, str, str]:
        return (self.file, self.line, self.column, self.path, self.message)


class ScenarioError(KameraError):
    """A scenario (or a file it references) is invalid; carries every problem found, sorted."""

    exit_code = ExitCode.USAGE

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems: tuple[Problem, ...] = tuple(sorted(problems, key=Problem.sort_key))
        super().__init__("\n".join(p.render() for p in self.problems))


class UsageError(KameraError):
    """Bad command-line usage that typer itself cannot catch (e.g. no scenario found under a PATH)."""

    exit_code = ExitCode.USAGE


class EntrypointError(KameraError):
    """A controller or mapper entry point cannot be loaded or has the wrong shape.

    The message names the scenario, the controller, what was tried and how to fix it.
    """

    exit_code = ExitCode.USAGE

    def __init__(self, message: str, *, scenario: str = "", controller: str = "", hint: str = "") -> None:
        self.scenario = scenario
        self.controller = controller
        self.hint = hint
        parts = []
        if scenario:
            parts.append(scenario)
        if controller:
            parts.append(f"controller {controller!r}")
        prefix = ": ".join(parts)
        text = f"{prefix}: {message}" if prefix else message
        if hint:
            text += f"\n  hint: {hint}"
        super().__init__(text)


class InternalError(KameraError):
    """A broken invariant inside kamera: always a bug in kamera, never the user's fault."""

    exit_code = ExitCode.INTERNAL

