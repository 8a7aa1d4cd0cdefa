"""Processes a controller starts: what kamera records of one and how it shows its command line.

Why a module of its own: the fence (``fence.py``) refuses a process while a sandboxed call runs and the
worker's audit hook (``audit_hooks.py``) sees the event; both, and the findings built from an attempt,
need the same values, which depend on nothing of the sandbox's state.
"""

from __future__ import annotations

import os
import shlex
import traceback
from dataclasses import dataclass
from typing import Any

__all__ = ["PROCESS_EVENTS", "ProcessAttempt", "ProcessRefused", "command_line"]


class ProcessRefused(PermissionError):
    """Raised inside user code that starts a process its controller may not start (``processes:``)."""


@dataclass(frozen=True, slots=True)
class ProcessAttempt:
    #: the audit event: ``subprocess.Popen``, ``os.system``, ``os.fork``, ``os.exec``, ``pty.spawn``, ...
    call: str
    #: the command line as a shell would show it ("" for a fork, which runs no command)
    command: str
    stack: tuple[traceback.FrameSummary, ...]

    def describe(self) -> str:
        return f"{self.call} {self.command}" if self.command else f"{self.call}()"


#: the audit events of a new process (``os.forkpty`` is what ``pty.spawn`` and ``pty.fork`` call)
PROCESS_EVENTS = frozenset({"subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                            "os.forkpty", "pty.spawn", "os.startfile"})


def command_line(event: str, args: tuple[Any, ...]) -> str:
    """The command an audit event starts, shell-quoted: the argv where the event has one."""
    argv: Any = None
    if event == "os.system" and args:
        return os.fsdecode(args[0]) if isinstance(args[0], (str, bytes)) else str(args[0])
    if event == "subprocess.Popen" and len(args) > 1:
        argv = args[1] if args[1] is not None else args[0]
    elif event in ("os.exec", "os.posix_spawn") and len(args) > 1:
        argv = args[1]
    elif event == "os.spawn" and len(args) > 2:
        argv = args[2]
    elif event == "pty.spawn" and args:
        argv = args[0]
    if isinstance(argv, (str, bytes)):
        return os.fsdecode(argv)
    if isinstance(argv, (list, tuple)):
        return shlex.join(os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else str(a) for a in argv)
    return ""
