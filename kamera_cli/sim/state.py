"""The state the explorer checks: a cluster snapshot plus the controllers' pending work.

Why these fields and no others: everything that can change what happens next is here (so that
deduplicating by fingerprint is sound), and nothing that cannot (the absolute clock, sources of
ready work) is in the fingerprint (so that equivalent states are merged).
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from kamera_cli.apiserver import Snapshot
    from kamera_cli.apiserver.storage.snapshot import WriteRecord


class CanonicalForm(Protocol):
    """What a state's fingerprint reads of a snapshot's canonical form (``symmetry.Canon`` is one).

    Why a protocol here: ``symmetry.py`` builds canonical forms of states, so it imports this module;
    naming its class back would make the two import each other.
    """

    @property
    def fingerprint(self) -> str: ...

    @property
    def names(self) -> Mapping[str, str]: ...

    def rename(self, text: str) -> str: ...


#: Sources of a pending request, as the story shows them.
WATCH = "watch"
REQUEUE = "requeue"
TIMER = "timer"
RESTART = "restart"
SEED = "seed"
#: only while merging: the request ends the controller's pending tick (a kopf timer or daemon whose
#: filters stopped matching) instead of enqueueing anything
STOP = "stop"


@dataclass(frozen=True, slots=True, order=True)
class PendingItem:
    """One queued request; the queue coalesces on (controller, namespace, name)."""

    controller: str
    namespace: str  # "" for cluster-scoped kinds
    name: str
    ready_at: int = 0  # virtual second at which it becomes ready
    source: str = WATCH
    #: a requeue_after timer whose last run changed nothing (a periodic resync): does not block convergence
    stable: bool = False
    #: kinds whose write enqueued this request: an informer updates its cache before it delivers the
    #: event, so the reconcile sees those kinds fresh (never through a stale view)
    fresh: tuple[str, ...] = ()
    #: delivered by the initial listing of a restarted controller (kopf tells a listing from an
    #: update: resume handlers run on it); set only for controllers that can tell the difference
    relist: bool = False
    #: delivered by the controller's own requeue timer, to a controller that tells it from an event
    #: (a kopf timer runs its handler on its own tick, and only re-arms on an event)
    woken: bool = False
    #: only while merging: an event that starts the controller's timer when it is not running, and
    #: must not disturb it when it is (a kopf interval timer keeps its schedule across events)
    spawn: bool = False
    #: what the controller's last run carries to this requeue (a kopf timer's retry count and
    #: backoff, which kopf keeps in the timer task's memory)
    carry: str = ""
    #: a tick a kopf timer or daemon scheduled itself (or the first of an object listed at the start):
    #: the next is measured from the instant this one was due, so that instant counts even once it
    #: has passed (``due_after``)
    anchored: bool = False
    #: the instant a retry of this key falls due, kept when an event ready earlier took its place: a
    #: kopf handler's backoff is stored on the object as an absolute instant (``delayed``), which the
    #: fingerprint holds but not the clock, so without it a step that sleeps out the backoff and the
    #: state after it (one second closer to the instant) would be one state (0: none)
    retry_due: int = 0
    #: a stable timer's last run's read regions (``ReconcileRun.regions``) and their digest then: a
    #: resync is stable only while what it read is unchanged (``unsettled``); () when not watched
    reads: tuple[Any, ...] = ()
    read_digest: str = ""

    def __reduce__(self) -> tuple[type[PendingItem], tuple[Any, ...]]:
        # a split search ships states: a tuple pickles several times faster than a slotted dataclass
        return (PendingItem, pending_values(self))

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.controller, self.namespace, self.name)

    def delay(self, clock: int) -> int:
        """How far from ``clock`` the item is due, as the fingerprint holds it: 0 once ready, except
        for an anchored timer, whose overdue seconds decide its next tick (negative then)."""
        return self.ready_at - clock if self.anchored else max(0, self.ready_at - clock)

    def due_after(self, clock: int, seconds: float) -> int:
        """When the requeue ``seconds`` after this item's run at ``clock`` is due (whole seconds, at least
        one). An anchored timer keeps its own schedule: ``seconds`` after the instant this tick was due,
        however many other steps ran before it (at the next step, if that has passed already)."""
        delay = max(1, math.ceil(seconds))
        return max(self.ready_at + delay, clock + 1) if self.anchored else clock + delay

    @property
    def request_text(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def carried_from(self, clock: int) -> str:
        """``carry`` as the fingerprint holds it: every instant in it as seconds from ``clock``."""
        return relative_instants(self.carry, clock) if self.carry else ""


#: an ISO 8601 instant as a JSON string (kopf's ``format_iso8601``: microseconds, UTC offset)
_INSTANT = re.compile(r'"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?)"')


_EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
_MICROSECOND = datetime.timedelta(microseconds=1)


@functools.lru_cache(maxsize=4096)
def relative_instants(text: str, clock: int) -> str:
    """``text`` with each quoted ISO 8601 instant replaced by its distance from ``clock`` in seconds.

    Why: a kopf timer's carried retry state (``PendingItem.carry``) is kopf's handler state as it
    stores it, with the absolute instants it started and is delayed until. kopf uses them only
    against the clock (``delayed > now``, ``now - started``) and makes new ones from the clock, so a
    state's future depends on them only through their distance from it — the same holds of every
    other time the fingerprint keeps (a pending item's delay, ``retry_due``), and the clock itself is
    not in the fingerprint. Kept absolute, a timer that fails and retries made every execution's
    states differ by when the failure happened (docs/semantics.md, "kopf", *Its retry*)."""
    def offset(match: re.Match[str]) -> str:
        try:
            instant = datetime.datetime.fromisoformat(match.group(1).replace("Z", "+00:00"))
        except ValueError:
            return match.group(0)
        if instant.tzinfo is None:
            instant = instant.replace(tzinfo=datetime.timezone.utc)
        micros = (instant - _EPOCH) // _MICROSECOND - clock * 1_000_000  # exact: no float rounding
        return f'"@{micros}us"'
    return _INSTANT.sub(offset, text)


#: a pending item's fields as a tuple, in order (``PendingItem(*values)`` gives it back)
pending_values = attrgetter(*(f.name for f in fields(PendingItem)))


@dataclass(frozen=True, slots=True)
class FaultBook:
    """Per-execution perturbation bookkeeping; part of the fingerprint because it bounds what can happen next."""

    crashes: int = 0
    conflicts: int = 0
    #: (controller, kind) -> how many writes behind the current cluster its view is
    lags: tuple[tuple[str, str, int], ...] = ()
    #: kind -> its latest writes (oldest first, at most the largest ``maxLag`` over it), for the kinds
    #: some controller may read stale: what a lagging view undoes (sim/perturbing.py). Kept here, not
    #: read from the server's log of recent writes, because that log is shared by every kind: writes
    #: of other kinds would push these out of it, and then a view would depend on every write
    history: tuple[tuple[str, tuple[WriteRecord, ...]], ...] = ()

    def lag(self, controller: str, kind: str) -> int:
        for c, k, n in self.lags:
            if c == controller and k == kind:
                return n
        return 0

    def with_lag(self, controller: str, kind: str, lag: int) -> FaultBook:
        rest = tuple(e for e in self.lags if not (e[0] == controller and e[1] == kind))
        lags = tuple(sorted((*rest, (controller, kind, lag)) if lag else rest))
        return FaultBook(self.crashes, self.conflicts, lags, self.history)

    def written(self, kind: str) -> tuple[WriteRecord, ...]:
        """The kind's latest writes kept for stale views, oldest first."""
        for k, records in self.history:
            if k == kind:
                return records
        return ()

    def with_written(self, kind: str, records: tuple[WriteRecord, ...]) -> FaultBook:
        rest = tuple(e for e in self.history if e[0] != kind)
        history = tuple(sorted((*rest, (kind, records)) if records else rest, key=lambda e: e[0]))
        return FaultBook(self.crashes, self.conflicts, self.lags, history)

    def __reduce__(self) -> tuple[type[FaultBook], tuple[Any, ...]]:
        return (FaultBook, (self.crashes, self.conflicts, self.lags, self.history))

    def digest(self) -> str:
        return f"c{self.crashes}x{self.conflicts}" + "".join(f"|{c}:{k}:{n}" for c, k, n in self.lags)


@dataclass(frozen=True, slots=True)
class SimState:
    snapshot: Snapshot
    pending: tuple[PendingItem, ...]  # sorted by key: the queue is a set, order is the explorer's choice
    clock: int
    next_action: int = 0
    steps_since_action: int = 0
    faults: FaultBook = FaultBook()
    #: set when an external action failed: the execution stops here as a finding
    halted: str = ""
    #: extra fingerprint material (e.g. recent history of kinds read stale)
    extra: str = ""
    #: the environment's choices so far, ``(object, outcome)`` sorted (a pod's fate): executions that
    #: differ in them are different experiments, not different orders of the same one
    outcomes: tuple[tuple[str, str], ...] = ()
    #: what a framework keeps in memory per object between steps, ``(owner, object key, value)``
    #: sorted (a kopf operator's per-object ``memo``); lost when the owner crashes
    memory: tuple[tuple[str, str, str], ...] = ()
    #: the fingerprint once computed ("" before): a slot set once, not a list per state (a search
    #: holds thousands of states it has not expanded yet)
    _fp: str = field(default="", init=False, compare=False, repr=False)

    def __reduce__(self) -> tuple[type[SimState], tuple[Any, ...]]:
        # without the cached fingerprint (``_fp``): the receiving process computes its own
        return (SimState, (self.snapshot, self.pending, self.clock, self.next_action, self.steps_since_action,
                           self.faults, self.halted, self.extra, self.outcomes, self.memory))

    def remembered(self, owner: str, key: str) -> str:
        for o, k, value in self.memory:
            if o == owner and k == key:
                return value
        return ""

    def remembering(self, owner: str, key: str, value: str) -> tuple[tuple[str, str, str], ...]:
        """``memory`` with the owner's value for ``key`` replaced (dropped when empty)."""
        rest = [e for e in self.memory if not (e[0] == owner and e[1] == key)]
        return tuple(sorted([*rest, (owner, key, value)] if value else rest))

    def ready(self) -> list[PendingItem]:
        return [p for p in self.pending if p.ready_at <= self.clock]

    def fingerprint(self, track_steps: bool, canon: CanonicalForm | None = None,
                    memory: tuple[tuple[str, str, str], ...] | None = None,
                    clock: int | None = None, settled: bool = False,
                    only: frozenset[tuple[str, str, str]] | None = None) -> str:
        """The state's digest; with ``canon`` (the snapshot's canonical form, sim/symmetry.py) the
        snapshot is taken by its canonical fingerprint and the names in requests and pod fates by
        their canonical tokens, so states one renaming of generated names apart are one state.
        ``memory``: what the frameworks' memory counts as (a program's position up to renaming,
        sim/positions.py), in place of ``self.memory``. ``clock``: the instant every delay is
        measured from, in place of ``self.clock`` (the instant the clock jumps to, when no step
        can run before it: docs/semantics.md, "Instants no step can see"); ``settled``: the state is
        converged, so its pending timers are held without their delays (nothing runs from it).
        ``only``: the keys of the only pending requests taken (a node of a group's own search,
        ``KubeModel.group_fingerprint``); such a digest is not the state's, and is not kept."""
        if self._fp and only is None:
            return self._fp
        now = self.clock if clock is None else clock
        rename = canon.rename if canon is not None and canon.names else None
        h = hashlib.sha256()
        h.update((self.snapshot.fingerprint() if canon is None else canon.fingerprint).encode())
        lines = []
        for p in self.pending:
            if only is not None and p.key not in only:
                continue
            delay = "" if settled else p.delay(now)
            name = p.name if rename is None else rename(p.name)
            line = f"\n{p.controller}\x00{p.namespace}\x00{name}\x00{delay}\x00{int(p.stable)}"
            if p.fresh:
                line += "\x00" + ",".join(p.fresh)
            if p.relist:
                line += "\x00relist"
            if p.woken:
                line += "\x00woken"
            if settled:
                lines.append(line)
                continue
            if p.carry:
                line += "\x00carry:" + p.carried_from(now)
            if p.retry_due > now:
                line += f"\x00retry:{p.retry_due - now}"
            lines.append(line)
        if rename is not None:
            lines.sort()
        h.update("".join(lines).encode())
        if clock is not None:
            # a state that waits for the jump is never one where the same work is ready at the clock:
            # that work runs at the clock, which stored instants (a Job's startTime, kopf's ``delayed``)
            # are compared with, and which the fingerprint does not hold
            h.update(b"\njump")
        h.update(f"\na{self.next_action}".encode())
        if track_steps:
            h.update(f"s{self.steps_since_action}".encode())
        h.update(self.faults.digest().encode())
        if self.halted:
            h.update(b"\nhalted:" + self.halted.encode())
        if self.extra:
            h.update(b"\nextra:" + self.extra.encode())
        if self.outcomes:
            fates = self.outcomes if rename is None else sorted((rename(k), v) for k, v in self.outcomes)
            h.update(("\noutcomes:" + ";".join(f"{k}={v}" for k, v in fates)).encode())
        memory = self.memory if memory is None else memory
        if memory:
            memory = memory if rename is None else tuple(sorted((o, rename(k), v) for o, k, v in memory))
            h.update(("\nmemory:" + "\x00".join(f"{o}\x01{k}\x01{v}" for o, k, v in memory)).encode())
        fp = h.hexdigest()
        if only is None:
            object.__setattr__(self, "_fp", fp)  # a cache of the value's digest, not part of the value
        return fp


def merge_pending(
    pending: tuple[PendingItem, ...], new: list[PendingItem], consumed: PendingItem | None
) -> tuple[PendingItem, ...]:
    """Coalesce new requests into the queue: one entry per key; work that is ready now wins over timers;
    a stop (``STOP``) drops the key's entry."""
    table: dict[tuple[str, str, str], PendingItem] = {p.key: p for p in pending}
    if consumed is not None:
        table.pop(consumed.key, None)
    for item in new:
        if item.source == STOP:
            table.pop(item.key, None)
            continue
        old = table.get(item.key)
        if old is None:
            table[item.key] = replace(item, spawn=False) if item.spawn else item
            continue
        if item.spawn:  # the timer is already running: the event leaves its schedule alone
            continue
        fresh = tuple(sorted(set(old.fresh) | set(item.fresh)))
        due = max(old.retry_due, item.retry_due)  # the backoff still counts after an event took its place
        if item.ready_at < old.ready_at or (item.ready_at == old.ready_at and old.stable and not item.stable):
            old = item
        elif item.anchored and old.anchored and not (item.woken or old.woken) and item.ready_at > old.ready_at:
            old = item  # a timer re-armed again before its first tick ran (kopf's idle): from the latest change
        if due != old.retry_due:
            old = replace(old, retry_due=due)
        if fresh != old.fresh:
            old = replace(old, fresh=fresh)
        if item.relist and not old.relist:  # the restart's listing is still to be delivered
            old = replace(old, relist=True)
        table[item.key] = old
    return shared_queue(tuple(sorted(table.values(), key=lambda p: p.key)))


#: queues met before, each its own key: states the search holds share one tuple (and its items) per
#: distinct queue. The oldest go first: most queues are met once (webapps-2-2, 6,000 states: 15,349
#: new queues in 17,074 steps), so the table mostly holds queues of states let go of; forgotten
#: wholesale at 4,096 it grew by 0.1 KiB per state over 2,000->6,000 states (issue #26)
_QUEUES: dict[tuple[PendingItem, ...], tuple[PendingItem, ...]] = {}
_QUEUES_LIMIT = 512
#: items met before, each its own key: two queues that differ share the items they have in common
_ITEMS: dict[PendingItem, PendingItem] = {}
_ITEMS_LIMIT = 8192


#: instants met before, each its own value (``later``)
_INSTANTS: dict[int, int] = {}


def later(clock: int) -> int:
    """``clock + 1``, one int object per instant. Why: the clock counts from the epoch, so each step's
    ``clock + 1`` was an int object of its own that the state kept (issue #26: 0.6 per state on
    webapps-2-2, about 20 bytes); a search meets few instants (one per depth, about)."""
    instant = clock + 1
    if len(_INSTANTS) >= 4096:
        _INSTANTS.clear()
    return _INSTANTS.setdefault(instant, instant)


def shared_queue(pending: tuple[PendingItem, ...]) -> tuple[PendingItem, ...]:
    """``pending``, or an equal queue met before. Why: most states a breadth-first search holds before
    expanding them share their queue with many others (the same requests, ready at the same instants),
    and a queue's tuple and items cost about as much as the rest of a state's own objects (issue #26).
    A queue met for the first time is made of items met before where it can: a step's triggers are
    built afresh each time, and most of a new queue's items are equal to ones other states hold."""
    hit = _QUEUES.get(pending)
    if hit is not None:
        return hit
    while len(_QUEUES) >= _QUEUES_LIMIT:
        del _QUEUES[next(iter(_QUEUES))]  # the oldest (a dict keeps insertion order)
    pending = shared_items(pending)
    _QUEUES[pending] = pending
    return pending


def shared_items(pending: tuple[PendingItem, ...]) -> tuple[PendingItem, ...]:
    """``pending`` made of items met before where they are equal (an equal item is the same request:
    a frozen value compared field by field)."""
    items = _ITEMS
    if len(items) + len(pending) > _ITEMS_LIMIT:
        items.clear()
    return tuple([items.setdefault(p, p) for p in pending])


# -- processes that are down on one path ------------------------------------------------------------
# Why a mark in the explored state: a kopf operator's restart runs its login and startup handlers
# again, against the cluster as the crash left it, and they may now fail (a settings ConfigMap a user
# deleted, a Secret that is gone).  kopf then starts no watch, so the operator takes no step on that
# path, but on every other path it runs.  The controllers' code is shared by all paths, so which paths
# it is down on must be part of each state (``SimState.memory``, where a process's memory of its
# objects lives too, and which a crash of that process clears), not of the loaded controller.

#: the memory key of the mark (an object's memory is keyed ``namespace/name``, never empty)
DOWN_KEY = ""

Memory = tuple[tuple[str, str, str], ...]


def marked_down(memory: Memory, owner: str) -> Memory:
    """``memory`` with ``owner`` (a controller, with its timers and daemons) marked down."""
    rest = [e for e in memory if not (e[0] == owner and e[1] == DOWN_KEY)]
    return tuple(sorted([*rest, (owner, DOWN_KEY, "down")]))


def down_owners(memory: Memory) -> frozenset[str]:
    """The owners marked down in ``memory``."""
    return frozenset(o for o, key, _value in memory if key == DOWN_KEY)


def unsettled(pending: tuple[PendingItem, ...], changed: Callable[[PendingItem], bool]) -> tuple[PendingItem, ...]:
    """``pending`` with every stable timer whose reads changed since its last run made unstable.

    Why: a periodic resync that changed nothing is stable (it does not block convergence) only
    because its next tick would change nothing either, and that holds while what it read is the
    same. A kopf timer that polls Deployments gets no event when one changes; taken as stable after
    a tick that came too early, it let a state be converged that its next tick would change
    (docs/semantics.md, "Converged"). ``changed(item)``: whether the item's ``reads`` now differ
    from its ``read_digest``.
    """
    if not any(p.stable and p.reads for p in pending):
        return pending
    return tuple(replace(p, stable=False, reads=(), read_digest="")
                 if p.stable and p.reads and changed(p) else p for p in pending)
