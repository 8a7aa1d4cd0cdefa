"""What a transition did, recorded cheaply during the search; ``judging.story`` tells it when reported.

Why two forms: the explorer keeps a label on every edge of a graph that may hold 10^5 states, so the
label holds references to objects the snapshots already share; diffs and text are computed only for
the few paths that become counterexamples.

Why here and not in ``judging/``: ``sim.model`` and the runtime record these values during the
search, and ``sim`` sits below ``judging``; so the records stay in ``sim`` and the telling (steps,
writes, diffs) lives in ``judging``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.model.objects import ObjectRef


@dataclass(frozen=True, slots=True)
class WriteRec:
    verb: str  # create | update | patch | apply | delete
    ref: ObjectRef
    subresource: str
    before: Mapping[str, Any] | None
    after: Mapping[str, Any] | None
    refused: int = 0
    #: for a create: the body the controller sent (so the story can fold the server's defaults)
    sent: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class StepLabel:
    kind: str  # reconcile | garbage-collector | namespace-controller | action | stop (sim/stopping.py)
    actor: str
    request: str = ""
    writes: tuple[WriteRec, ...] = ()
    note: str = ""
    error: str = ""
    log: str = ""
    #: the reconcile's regions (``memo_keys.read_regions``: what its outcome depends on), shared, not copied
    reads: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem seen during one transition (opaque to the explorer; ``key`` deduplicates)."""

    kind: str  # controller-error | nondeterministic-controller | action-failed
    actor: str
    message: str
    detail: str = ""

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.actor, self.message)
