"""Processes that are down on one path: restarted after a crash, they never started again.

Why a mark in the explored state: a kopf operator's restart runs its login and startup handlers
again, against the cluster as the crash left it, and they may now fail (a settings ConfigMap a user
deleted, a Secret that is gone).  kopf then starts no watch, so the operator takes no step on that
path — but on every other path it runs.  The controllers' code is shared by all paths, so which
paths it is down on must be part of each state (``SimState.memory``, where a process's memory of its
objects lives too, and which a crash of that process clears), not of the loaded controller.
"""

from __future__ import annotations

__all__ = ["DOWN_KEY", "marked", "owners"]

#: the memory key of the mark (an object's memory is keyed ``namespace/name``, never empty)
DOWN_KEY = ""

Memory = tuple[tuple[str, str, str], ...]


def marked(memory: Memory, owner: str) -> Memory:
    """``memory`` with ``owner`` (a controller, with its timers and daemons) marked down."""
    rest = [e for e in memory if not (e[0] == owner and e[1] == DOWN_KEY)]
    return tuple(sorted([*rest, (owner, DOWN_KEY, "down")]))


def owners(memory: Memory) -> frozenset[str]:
    """The owners marked down in ``memory``."""
    return frozenset(o for o, key, _value in memory if key == DOWN_KEY)
