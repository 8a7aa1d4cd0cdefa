"""The audit fence: the last line of kamera's network containment, for worker processes only.

Why apart from the sandbox: the sandbox's patches come and go with each step; this hook is installed
once and for good in a process that exists to run simulations (the supervisor's workers, a remote
search worker), and it is the one piece that must hold whatever user code does between steps.
"""

from __future__ import annotations

import sys
from typing import Any

from kamera_cli.adapters.sandbox.addresses import format_address
from kamera_cli.adapters.sandbox.child_processes import PROCESS_EVENTS
from kamera_cli.adapters.sandbox.fence import network_blocked, process_refused

_audit_installed = False


def install_audit_fence(*, block_processes: bool) -> None:
    """Refuse every socket connect and addressed send in this process, from any thread, for good.

    Why an audit hook on top of the patches above: the patches cover ``socket.socket``'s Python
    methods, but not ``_socket.socket``, ``sendmsg``, or a thread the controller left running after
    its reconcile returned; CPython raises an audit event for each of those at the C level, and a
    hook that raises aborts the call.  Audit hooks can never be removed, so this is only for a
    process that exists to run simulations (the supervisor's worker).  ``block_processes`` also
    refuses new processes: a child would not inherit the hook, so it is allowed only where a
    network namespace contains it.  Even there, a process user code starts during a step is refused
    and recorded (``process_refused``: a finding naming the call and its command line) unless its
    controller says ``processes: allowed`` — kamera cannot model what a child does.
    """
    global _audit_installed
    if _audit_installed:
        return
    _audit_installed = True

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect":
            raise network_blocked(format_address(args[1]))
        if event in ("socket.sendto", "socket.sendmsg") and len(args) > 1 and args[1] is not None:
            raise network_blocked(format_address(args[1]))
        if event not in PROCESS_EVENTS:
            return
        refused = process_refused(event, args)
        if refused is not None:
            raise refused
        if block_processes and event != "os.fork":  # kamera's own split search forks its workers
            raise PermissionError(
                f"kamera: starting a process ({event}) is refused: without a network namespace kamera "
                "cannot contain what a child process does"
            )

    sys.addaudithook(hook)
