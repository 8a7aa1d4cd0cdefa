"""What a built-in controller may ask of the cluster, and what it answers.

Why a Protocol and not the API server itself: the built-in controllers sit beside the simulated API
server (same layer), so they are written against the requests any client can make — get, list,
create, update, patch, delete — and the simulation hands them an implementation that sends each
request through the server's ordinary path.  That keeps their reads and writes in the server's
journal, so they are memoised, triggered and footprinted exactly like users' controllers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

Obj = dict[str, Any]


class ClusterError(Exception):
    """A request the server refused: ``status`` and ``reason`` as in the server's Status body."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        super().__init__(f"{status} {reason}: {message}")
        self.status = status
        self.reason = reason
        self.message = message

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def conflict(self) -> bool:
        return self.status == 409


class Cluster(Protocol):
    """The requests a built-in controller makes; every one goes through the simulated API server."""

    def get(self, api_version: str, kind: str, namespace: str, name: str) -> Obj | None:
        """The object, or None when it does not exist."""

    def claimable(self, api_version: str, kind: str, namespace: str, selector: Mapping[str, Any] | None,
                  controllers: Sequence[str]) -> list[Obj]:
        """The objects a claim can concern, in the server's order: those ``selector`` matches (a nil or
        empty selector: none) and those whose controllerRef's uid is in ``controllers``.

        What ``ControllerRefManager`` acts on out of a whole listing (it ignores everything else), so a
        controller that claims asks for exactly this; the simulation then knows the step depends on
        nothing else of the kind (docs/semantics.md, "Partial-order reduction").
        """
        ...

    def list(self, api_version: str, kind: str, namespace: str = "") -> list[Obj]:
        """Every object of the kind (in ``namespace``; everywhere when empty), in the server's order."""

    def create(self, obj: Mapping[str, Any]) -> Obj: ...

    def update(self, obj: Mapping[str, Any], *, subresource: str = "") -> Obj: ...

    def patch(self, api_version: str, kind: str, namespace: str, name: str, body: Any, *,
              patch_type: str = "merge", subresource: str = "") -> Obj: ...

    def delete(self, api_version: str, kind: str, namespace: str, name: str, *,
               grace_period_seconds: int | None = None, preconditions_uid: str = "") -> None: ...

    def now(self) -> int:
        """The virtual time in seconds since the epoch, for a decision that depends on it.

        Asking makes the step a function of the time as well as of what it read (it is memoised per
        instant); a timestamp that is only written uses :meth:`stamp` instead.
        """

    def stamp(self) -> str:
        """The virtual time as an RFC 3339 timestamp, to write into an object."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a built-in step ended: ``requeue_after`` asks for the same key again on the virtual clock.

    ``retry`` marks the requeue as unfinished work (it blocks convergence, like a controller's
    backoff after an error); without it the requeue is a resync, which does not.
    """

    requeue_after: float | None = None
    retry: bool = False


NO_REQUEUE = Outcome()


@dataclass(frozen=True, slots=True)
class Watch:
    """A kind the built-in watches and how its events map to the built-in's own keys.

    ``map``: ``owner`` (the controller ownerReference of the built-in's kind), ``namespace`` (every
    object of the built-in's kind in the event's namespace), ``orphans`` (the same, but only for an
    object that exists and has no controller ownerReference: what could adopt it; a controlled one
    reaches its controller through ``owns``), ``sameName``, or ``all``.
    """

    api_version: str
    kind: str
    #: one of the names above, or a function from the changed object to (namespace, name) keys
    map: str | Callable[[Mapping[str, Any]], Iterable[tuple[str | None, str]]]


class BuiltinController(Protocol):
    """One built-in controller: an explored actor with the reconcile shape of any controller."""

    #: the name the scenario's ``cluster.builtins`` uses, and the actor name in reports
    name: str
    #: the kind it reconciles: one step handles one object of this kind
    api_version: str
    kind: str
    #: kinds it owns (events of an owned object enqueue its controller owner)
    owns: Sequence[tuple[str, str]]
    watches: Sequence[Watch]

    def reconcile(self, cluster: Cluster, namespace: str, name: str, choice: str) -> Outcome:
        """Do one sync of ``namespace/name``.

        ``choice`` is the branch the explorer took among :meth:`choices` ("" when there was none).
        """

    def choices(self, obj: Mapping[str, Any] | None) -> tuple[str, ...]:
        """The outcomes the next sync of ``obj`` may have, each an explored branch (() when just one)."""
