"""A worker's network namespace: entering one, naming it, and killing every process left in it.

Network containment is a kernel guarantee where Linux allows it: the worker moves itself into a
new network namespace (user namespace too when not root), where no interface but a downed
loopback exists, so no socket of any kind — raw ``_socket``, UDP, a subprocess, a thread left
behind — can reach anything.  Where that fails the in-process fence (``adapters.sandbox``) is the
only barrier, and the result says so.

Why a module of its own: the supervisor's worker enters the namespace and the supervisor empties it,
while a remote search process (``distributed.py``, a layer above) enters the same containment with
no supervisor around it; none of this depends on how a scenario is run or watched.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time

from kamera_cli.adapters import install_audit_fence

__all__ = ["contain_here", "isolate_network", "kill_namespace", "namespace_id"]

_CLONE_NEWNET = 0x40000000
_CLONE_NEWUSER = 0x10000000


def contain_here() -> str:
    """Put this process behind kamera's network containment (as a supervised worker is): its own
    network namespace where the machine allows, the in-process fence always; says which it got."""
    containment = isolate_network()
    install_audit_fence(block_processes=containment != "network namespace")
    return containment


def isolate_network() -> str:
    """Enter a fresh network namespace; the answer says which containment holds."""
    if not sys.platform.startswith("linux"):
        return "in-process fence only: network namespaces need Linux"
    if os.environ.get("KAMERA_NO_NETNS"):
        return "in-process fence only: KAMERA_NO_NETNS is set"
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        uid, gid = os.getuid(), os.getgid()
        flags = _CLONE_NEWNET if os.geteuid() == 0 else _CLONE_NEWUSER | _CLONE_NEWNET
        if libc.unshare(flags) != 0:
            err = ctypes.get_errno()
            return f"in-process fence only: no network namespace ({os.strerror(err)})"
        if flags & _CLONE_NEWUSER:  # keep our own uid/gid inside, so file access is unchanged
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with contextlib.suppress(OSError), open(f"/proc/self/{name}", "w") as fh:
                    fh.write(text)
    except (OSError, AttributeError) as exc:
        return f"in-process fence only: no network namespace ({exc})"
    return "network namespace"


def namespace_id() -> str:
    """This process's network namespace (``net:[inode]``) when it has one of its own, else ""."""
    try:
        mine = os.readlink("/proc/self/ns/net")
        return mine if mine != os.readlink(f"/proc/{os.getppid()}/ns/net") else ""
    except OSError:
        return ""


def kill_namespace(namespace: str) -> int:
    """SIGKILL every process in a worker's network namespace; how many there were.

    Why the namespace and not the process group: a child that calls ``setsid`` (``start_new_session=True``),
    double-forks or daemonises leaves the worker's group, and is reparented away from it, but every
    process the worker started shares its network namespace (only privilege in a user namespace of its
    own could leave it).  Repeated until none is left: one may fork while the others are killed."""
    if not namespace:
        return 0
    killed: set[int] = set()
    for _ in range(50):
        found = []
        with contextlib.suppress(OSError):
            for entry in os.listdir("/proc"):
                if not entry.isdigit() or int(entry) == os.getpid():
                    continue
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{entry}/ns/net") == namespace:
                        found.append(int(entry))
        alive = [pid for pid in found if not _is_zombie(pid)]
        if not alive:
            break
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.01)
    return len(killed)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0] in (b"Z", b"X")
    except (OSError, IndexError):
        return True
