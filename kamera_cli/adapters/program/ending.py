"""How a program's step ended, besides blocking where it may: what kamera reports of it.

Why apart from the factory: these are values and findings the explorer and the reports see by
name, while the factory is how a program is run.
"""

from __future__ import annotations

from dataclasses import dataclass

from kamera_cli.adapters.sandbox.values import Result

__all__ = ["ProgramCrashed", "ProgramEnded", "ProgramResult", "ProgramThreaded", "ProgramUnwatched", "ScriptExited"]


@dataclass(frozen=True, slots=True)
class ProgramResult(Result):
    """A step's result with what is kept for the key until its next step (None: unchanged)."""

    memory: str | None = None
    #: what the step did, for its story line (replaces the plain "requeue" note)
    note: str = ""


class ProgramThreaded(Exception):
    """A thread kamera does not schedule used the API, a watch or a sleep: one started below
    ``threading.Thread`` (``_thread``); or an async program blocked while it has several tasks."""

    controller_fault = True


class ProgramCrashed(Exception):
    """An exception escaped a program's ``main()`` (its cause): a real process would exit there."""

    controller_fault = True


class ProgramUnwatched(Exception):
    """A program waits on a watch of a kind that its scenario entry does not list in ``watches``."""

    controller_fault = True


class ScriptExited(Exception):
    """A script called ``sys.exit`` with a failing code: its process would exit with that status."""

    def __init__(self, code: object) -> None:
        super().__init__(f"sys.exit({code!r})")
        self.code = code


class ProgramEnded(Exception):
    """A program's ``main()`` returned: the process would exit, and nothing would handle later events."""

    controller_fault = True
