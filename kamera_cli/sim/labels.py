"""What a transition did, recorded cheaply during the search and turned into a story only when reported.

Why two forms: the explorer keeps a label on every edge of a graph that may hold 10^5 states, so the
label holds references to objects the snapshots already share; diffs and text are computed only for
the few paths that become counterexamples.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import DiffEntry, Step, Write
from kamera_cli.sim.diffs import created, created_as_sent, diff


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

    def story_verb(self) -> str:
        if self.refused:
            return {"create": "create", "delete": "delete"}.get(self.verb, self.verb)
        if self.after is None:
            return "deleted" if self.verb == "delete" else "removed"
        if self.subresource == "binding":
            return "bound"
        if self.before is None:
            return "created" if self.verb != "apply" else "applied"
        if self.verb == "delete":
            return "marked for deletion"
        return {"update": "updated", "patch": "patched", "apply": "applied"}.get(self.verb, self.verb)

    def to_write(self) -> Write:
        defaulted = 0
        if self.refused or self.after is None:
            changes: tuple[DiffEntry, ...] = ()
        elif self.before is None:
            if self.sent is not None:
                changes, defaulted = created_as_sent(self.after, self.sent)
            else:
                changes = created(self.after)
        else:
            changes = diff(self.before, self.after)
        return Write(verb=self.story_verb(), ref=self.ref, subresource=self.subresource, diff=changes,
                     refused=self.refused, defaulted=defaulted)


@dataclass(frozen=True, slots=True)
class StepLabel:
    kind: str  # reconcile | garbage-collector | namespace-controller | action
    actor: str
    request: str = ""
    writes: tuple[WriteRec, ...] = ()
    note: str = ""
    error: str = ""
    log: str = ""
    #: the reconcile's regions (``memo_keys._regions``: what its outcome depends on), shared, not copied
    reads: tuple[tuple[Any, ...], ...] = ()

    def to_step(self, index: int) -> Step:
        return Step(
            index=index,
            kind=self.kind,
            actor=self.actor,
            request=self.request,
            writes=tuple(w.to_write() for w in self.writes),
            note=self.note,
            error=self.error,
            log=self.log,
            reads=tuple(text for text in (region_text(r) for r in self.reads) if text),
        )


def region_text(region: tuple[Any, ...]) -> str:
    """``v1/ConfigMap default/web`` for an object, ``list /api/v1/...?labelSelector=app%3Dweb`` for a
    collection; "" for server bookkeeping (generateName counters), which a reader has no use for."""
    if region and region[0] == "obj":
        return str(region[1])
    if region and region[0] == "list":
        query = "&".join(f"{k}={v}" for k, v in region[2])
        return f"list {region[1]}" + (f"?{query}" if query else "")
    return ""


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
