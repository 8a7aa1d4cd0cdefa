"""Running one reconcile of one controller against one snapshot — with memoization.

Why memoization lives here: a reconcile is (by the determinism check's guarantee) a function of
what it reads.  We record the *regions* of the cluster it touched — objects fetched or written,
list queries — as digests taken on the snapshot it started from.  A later reconcile of the same
controller and request whose regions digest the same would make the same requests and get the same
answers, so its recorded effects are replayed without running the code.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from kamera_cli.adapters import Request, VirtualClock, WatchedClock, run_reconcile
from kamera_cli.adapters.sandbox.observed import StepSeed
from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver import errors as api_errors
from kamera_cli.apiserver.defaulting.metadata import format_time
from kamera_cli.apiserver.server.encoding import EqualObjects
from kamera_cli.apiserver.server.write_rules import has_precondition
from kamera_cli.model.objects import KindRef
from kamera_cli.sim.journal import as_written_now, journal_writes
from kamera_cli.sim.labels import Finding, WriteRec
from kamera_cli.sim.memo_keys import (
    IndexReads,
    collection_path,
    content_digest,
    counter_keys,
    draw_counter_key,
    obj_digest,
    read_regions,
    retimed_output,
    snapshot_list_digest,
)
from kamera_cli.sim.runs import Fault, InjectedCrash, ReconcileRun, Stats

if TYPE_CHECKING:
    from kamera_cli.sim.state import PendingItem

#: Exceptions that stand for a reconcile that would never return (not retried, like a timeout).
_NEVER_RETURNS = frozenset({"WatchBlocked", "ProgramEnded"})

#: what a memo entry's run holds in place of the snapshot it left (``_replay`` never reads it)
_NO_SNAPSHOT = Snapshot.empty()
#: the objects replays wrote, one per JSON text (``EqualObjects``: equal copies on many paths); 1,024,
#: oldest first, so that it is full within the first thousand states or so (issue #26)
_EQUAL = EqualObjects(1024)

#: one replay variant: the befores it met, the writes it made, the story's writes
_Variant = tuple[tuple[Any, ...], tuple[WriteRec, ...], tuple[WriteRec, ...]]


@dataclass(slots=True)
class _MemoEntry:
    regions: tuple[tuple[Any, ...], ...]
    digests: tuple[str, ...]
    run: ReconcileRun
    #: server bookkeeping the reconcile moved (name incarnations, generateName attempts)
    counters: tuple[tuple[str, int], ...]
    #: the virtual time it ran at: what the server stamped then is restamped when it is replayed later
    clock: int = 0
    #: replays by starting resourceVersion: the befores they met and the writes they made. A replay
    #: that meets the same befores at the same resourceVersion reuses the same write records and
    #: stored objects instead of new copies (most of the memory of a large search is edges' writes)
    #: (keyed by the starting resourceVersion, and the replay's instant when it restamps)
    replays: dict[tuple[int, int | None], list[_Variant]] = field(default_factory=dict)


@dataclass
class ControllerRuntime:
    name: str
    for_kind: KindRef
    namespaced: bool
    watched_kinds: tuple[KindRef, ...]
    factory: Any  # adapters ReconcilerFactory
    registry: Registry
    bind: Callable[[ApiServer | None], None]
    client: Any
    budget_seconds: float = 10.0
    memoize: bool = True
    replaying: bool = False
    #: deriving a state or label the search let go of again (explore/rederive.py): memo hits are taken
    #: as the search took them, but nothing is stored and nothing is run twice to compare
    rederiving: bool = False
    stats: Stats = field(default_factory=Stats)
    #: the kopf operators' index reads, and the one whose indexing this controller's steps do ("": none)
    indices: IndexReads | None = None
    index_owner: str = ""
    _memo: dict[tuple[Any, ...], list[_MemoEntry]] = field(default_factory=dict)
    _checked: set[tuple[str, str]] = field(default_factory=set)
    #: how many memo entries were stored (each run's ``memo_serial``)
    _serials: int = 0
    #: per key: regions read -> digests of their answers -> position of the first entry in ``_memo``.
    #: A lookup digests each distinct set of regions once instead of every stored entry.
    _index: dict[tuple[Any, ...], dict[tuple[tuple[Any, ...], ...], dict[tuple[str, ...], int]]] = field(
        default_factory=dict)

    # ------------------------------------------------------------------ public
    def run(self, snapshot: Snapshot, item: PendingItem, clock: int, fault: Fault | None,
            views: Mapping[KindRef, Snapshot] | None = None, choice: str = "", remembered: str = "") -> ReconcileRun:
        # a controller that reads the clock (kopf's retry backoffs) is also a function of the time,
        # unless its framework can tell that no read mattered (``clock_blind``: then any instant will do)
        blind = getattr(self.factory, "clock_blind", None)
        timed = getattr(self.factory, "time_dependent", False) and blind is None
        key = (item.namespace, item.name, fault, clock if timed else None,
               item.relist, choice, item.woken, item.carry, remembered)
        # a built-in that asked for the time in a run is memoised per instant (under this key)
        timed_key = (*key[:3], clock, *key[4:])
        if self.memoize:
            found = self._lookup(key, snapshot, views)
            if found is None and (self.native or blind is not None):
                found = self._lookup(timed_key, snapshot, views)
            # replays re-execute to verify a counterexample, except a known overrun: running into
            # the same loop again would only cost another whole budget
            if found is not None and (not self.replaying or found.run.timed_out):
                self.stats.memo_hits += 1
                return self._replay(found, snapshot, clock)
        run, regions, signature = self._execute(snapshot, item, clock, fault, views, choice, remembered,
                                                memo=fault is None and not views and not self.replaying)
        if blind is not None and not self.clock_blind(item, run):
            key = timed_key
        if self.native and self.factory.read_clock:
            key = timed_key
            run = replace(run, clocked=self.factory.compared_clock,
                          stable_for=getattr(self.factory, "stable_for", None))
        if self.native:
            claims = tuple((key, tuple(c)) for key, c in self.factory.listings.items() if c is not None)
            if claims:
                run = replace(run, claims=claims)
        findings = list(run.findings)
        check_key = (item.namespace, item.name)
        # a reconcile that overran its budget is not run again to compare: a second overrun proves
        # nothing about determinism and costs another whole budget
        if (check_key not in self._checked and fault is None and not views and not self.replaying
                and not self.rederiving
                and not run.timed_out and not self.native):
            self._checked.add(check_key)
            self.stats.determinism_checks += 1
            _again, _regions2, signature2 = self._execute(snapshot, item, clock, fault, views, choice, remembered,
                                                          memo=False)
            difference = _first_difference(signature, signature2)
            if difference:
                findings.append(Finding(
                    "nondeterministic-controller", self.name,
                    f"controller {self.name!r} is not deterministic: two runs of the same reconcile of "
                    f"{item.request_text} from the same state differ at API call {difference}",
                ))
                run = _with_findings(run, findings)
                return run
        if findings != list(run.findings):
            run = _with_findings(run, findings)
        if self.memoize and regions is not None and not self.replaying and not self.rederiving:
            counters = tuple((k, run.snapshot.counter(k)) for k in counter_keys(regions))
            entries = self._memo.setdefault(key, [])
            self._serials += 1
            run = replace(run, memo_serial=self._serials)
            digests = self._digests(snapshot, regions, views, exact=key[3] is not None)
            self._index.setdefault(key, {}).setdefault(regions, {}).setdefault(digests, len(entries))
            # without the snapshot the run left: a replay builds its own on the state it meets, and a
            # stored one would keep a whole state alive per entry after the search let go of it
            entries.append(_MemoEntry(regions, digests, replace(run, snapshot=_NO_SNAPSHOT), counters, clock))
        return run

    def _lookup(self, key: tuple[Any, ...], snapshot: Snapshot,
                views: Mapping[KindRef, Snapshot] | None) -> _MemoEntry | None:
        """The earliest stored entry whose reads answer the same in ``snapshot`` (what a scan would find)."""
        best: int | None = None
        for regions, table in self._index.get(key, {}).items():
            position = table.get(self._digests(snapshot, regions, views, exact=key[3] is not None))
            if position is not None and (best is None or position < best):
                best = position
        return None if best is None else self._memo[key][best]

    def clock_blind(self, item: PendingItem, run: ReconcileRun) -> bool:
        """Whether no read of the clock in ``run`` could change what it did (its framework says, from
        who read it: ``clock_blind`` on the factory, kopf's); the run is then the same at every instant."""
        blind = getattr(self.factory, "clock_blind", None)
        return blind is not None and run.clock_readers is not None and bool(blind(run.clock_readers, item.carry,
                                                                                  run.carry))

    # ------------------------------------------------------------------ execution
    @property
    def native(self) -> bool:
        """A built-in controller: trusted code called directly (see ``sim/builtins.py``)."""
        return bool(getattr(self.factory, "builtin", False))

    def _execute(self, snapshot: Snapshot, item: PendingItem, clock: int, fault: Fault | None,
                 views: Mapping[KindRef, Snapshot] | None, choice: str = "", remembered: str = "",
                 memo: bool = False) -> tuple[ReconcileRun, tuple[tuple[Any, ...], ...] | None, list[str]]:
        """One run of the controller's code (``memo``: a program may answer it from its own memo,
        ``adapters/program/memo.py``; it is then counted as a memo hit, not an execution)."""
        server = ApiServer(self.registry, snapshot, now=lambda: clock)
        for kind, view in (views or {}).items():
            server.set_stale_view(kind, view)
        attempts = 0
        conflictable = 0
        crashed = False

        def before_write(access: Any) -> None:
            nonlocal attempts, conflictable
            attempts += 1
            if access.verb in ("update", "patch") and has_precondition(access.request_body):
                # only these can lose an optimistic-concurrency race; a create's only 409 is AlreadyExists
                conflictable += 1
                if fault is not None and fault.kind == "conflict" and conflictable == fault.at:
                    res = access.resource
                    raise api_errors.stale(res.plural if res else "objects", res.group if res else "", access.name)
            if fault is None:
                return
            if fault.kind == "crash" and attempts == fault.at + 1:
                raise InjectedCrash()

        server.before_write = before_write
        request = Request(item.namespace or None, item.name, relisted=item.relist, timer=item.woken,
                          carried=item.carry, remembered=remembered, choice=choice, memo=memo)
        # what the step draws is keyed by how many earlier steps of this request drew and wrote, not by
        # the whole cluster: a name made from uuid4 is then the same on every path that reaches this
        # step having done the same, as on a cluster it is just "a fresh name" (docs/semantics.md,
        # "Randomness")
        draws_key = draw_counter_key(self.name, item.namespace, item.name)
        draws = snapshot.counter(draws_key)
        seed = StepSeed(hashlib.sha256(
            f"{self.name}\0{item.namespace}\0{item.name}\0{draws}".encode()
        ).digest())
        watched = getattr(self.factory, "clock_blind", None) is not None
        vclock = WatchedClock(float(clock)) if watched else VirtualClock(float(clock))
        self.stats.executions += 1
        if self.native:
            outcome = self.factory.invoke_native(server, item.namespace, item.name, clock, choice)
        else:
            self.bind(server)
            try:
                outcome = run_reconcile(self.factory, request, self.client, budget_seconds=self.budget_seconds,
                                        clock=vclock, seed=seed)
            except InjectedCrash:
                crashed = True
                outcome = None
            finally:
                self.bind(None)
            if not crashed and fault is not None and fault.kind == "crash":
                # crashed after as many writes as the run made: the process dies as the run returns,
                # its result (a requeue) with it, and restarts like any other crash
                crashed = True
                outcome = None
            if getattr(self.factory, "memo_hit", False):  # a program's step answered by its memo
                self.stats.executions -= 1
                self.stats.memo_hits += 1
        crash_regions: tuple[tuple[Any, ...], ...] | None = None
        if crashed:
            # the restarted module's top-level code may call the API (e.g. build a DynamicClient):
            # it sees the cluster as the crash left it; anything it writes is discarded
            restart = ApiServer(self.registry, server.snapshot, now=lambda: clock)
            self.bind(restart)
            try:
                self.factory.reload()
            finally:
                self.bind(None)
            crash_regions = tuple(dict.fromkeys((*read_regions(server), *read_regions(restart))))
        story = journal_writes(server)
        writes = tuple(w for w in story if not w.refused)
        # nothing refused (most steps): one tuple for both, which a memo entry keeps as long as the search
        story_writes = writes if len(writes) == len(story) else tuple(story)
        findings: list[Finding] = []
        # a restart runs what a start runs (kopf: login, then startup handlers); when that now fails,
        # the process never comes back on this path: the operator's error, as on its first start
        restart_failed = getattr(self.factory, "last_start", None) if crashed else None
        if restart_failed is not None:
            findings.append(Finding("controller-error", self.name,
                                    f"after a crash of {self.name!r}, its restart: {restart_failed[0]}",
                                    restart_failed[1]))
        note = "restarted, but its start failed: it takes no more steps on this path" if restart_failed else ""
        error_text = ""
        requeue_now = False
        requeue_after: float | None = None
        retry = False
        carry = ""
        memory: str | None = None
        if outcome is not None:
            outcome_kind = outcome.kind
            if outcome_kind == "ok":
                res = outcome.result
                kept = getattr(res, "memory", None)
                memory = kept if isinstance(kept, str) else None
                if res is not None and res.requeue_after:
                    requeue_after = float(res.requeue_after)
                    retry = res.retry
                    carry = str(getattr(res, "carry", ""))
                    note = f"{'retry' if retry else 'requeue'} after {requeue_after:g}s"
                    # work not done yet (a timer armed by an event, waiting for its first tick)
                    # keeps the cluster from counting as converged, like a retry
                    retry = retry or bool(getattr(res, "armed", False))
                elif res is not None and res.requeue:
                    requeue_now = True
                    note = "requeue"
                told = getattr(res, "note", "")  # a program's step says what it read and where it blocks
                note = told if isinstance(told, str) and told else note
            elif outcome_kind == "api-error":
                err = outcome.error
                status = err.api_status if err else None
                why = _api_reason(err.message) if err else ""
                note = f"raised ApiException ({status}{': ' + why if why else ''}); requeue"
                backoff = _backoff(outcome.result)
                if backoff is not None:  # the framework's rate-limited retry (reconcile.retry_failure)
                    requeue_after, memory, carry = backoff
                    retry = True
                    note = f"{note[:-len('requeue')]}retry after {requeue_after:g}s"
                else:
                    requeue_now = True
            else:
                err = outcome.error
                summary = f"{err.type_name}: {err.message}" if err else outcome_kind
                error_text = err.traceback if err else ""
                if outcome_kind == "exception" and (err is None or err.type_name not in _NEVER_RETURNS):
                    backoff = _backoff(outcome.result)
                    if backoff is not None:
                        requeue_after, memory, carry = backoff
                        retry = True
                    else:
                        requeue_now = True
                    again = "requeue" if backoff is None else f"retry after {backoff[0]:g}s"
                    if err is not None and err.type_name == "ProgramCrashed":
                        again = "its process exits (a crash perturbation restarts it)"
                    note = f"raised {err.type_name if err else 'an exception'}; {again}"
                    findings.append(Finding("controller-error", self.name,
                                            f"controller {self.name!r} raised {summary}", error_text))
                else:
                    overran = getattr(self.factory, "timeout_text", "")  # a program never returns: it blocks
                    what = {"timeout": overran or "did not return within its time budget",
                            "exit": "tried to exit the process",
                            "network": "opened a network connection of its own",
                            "process": "started a process",
                            "thread": "started a stray thread"}.get(
                                outcome_kind, "ended" if err and err.type_name == "ProgramEnded"
                                else "would block forever")
                    note = what
                    findings.append(Finding("controller-error", self.name,
                                            f"controller {self.name!r} {what}: {summary}", error_text))
        signature = [sig for sig in (_signature(acc) for acc in server.journal) if sig is not None]
        after = server.snapshot
        if seed.drawn and writes:
            after = after.with_counter(draws_key, draws + 1)
        run = ReconcileRun(
            snapshot=after,
            writes=writes,
            story_writes=story_writes,
            write_attempts=attempts,
            conflictable=conflictable,
            requeue_now=requeue_now,
            requeue_after=requeue_after,
            findings=tuple(findings),
            retry=retry,
            carry=carry,
            memory=memory,
            timed_out=outcome is not None and outcome.kind == "timeout",
            output=outcome.output if outcome is not None else "",
            note=note,
            error_text=error_text,
            clock_readers=frozenset(vclock.readers) if isinstance(vclock, WatchedClock) else None,
            down=restart_failed is not None,
            crash_regions=crash_regions,
        )
        # A timeout is memoised by what the reconcile had read before it overran: the same reads lead
        # the same (deterministic) code into the same loop, so it is a finding once, not once per state.
        regions = None if (crashed or outcome is None) else read_regions(server)
        if regions is not None and self.indices is not None and self.index_owner and not views:
            # (a step that read a stale view keeps its lists: what a view shows moves with other writes)
            regions = self.indices.regions(self.index_owner, regions, server.journal)
        if regions is not None and seed.drawn:
            # a replay is a fresh run only at the same count: the draws depend on it
            regions = (*regions, ("counter", draws_key))
        return replace(run, regions=regions), regions, signature

    def regions_digest(self, snapshot: Snapshot, regions: Sequence[tuple[Any, ...]]) -> str:
        """What ``regions`` hold on ``snapshot``, as one digest, as the memo compares them (a stable
        timer's reads: ``PendingItem.reads``)."""
        return hashlib.sha256("\0".join(self._digests(snapshot, regions)).encode()).hexdigest()

    # ------------------------------------------------------------------ memo
    def _digests(self, snapshot: Snapshot, regions: Sequence[tuple[Any, ...]],
                 views: Mapping[KindRef, Snapshot] | None = None, *, exact: bool = False) -> tuple[str, ...]:
        """Each region's digest on the true cluster — and on the stale view, for a kind read stale.

        ``exact`` for a run memoised per instant (it read the clock): it compares the time with what it
        read, so the timestamps it read count too — a Deployment's progress deadline is its
        condition's ``lastUpdateTime`` plus the deadline, and another state equal but for that
        timestamp would answer a different requeue.
        """
        out = []
        for region in regions:
            if region[0] == "obj":
                digest = obj_digest(snapshot, region[1], exact)
                view = views.get(region[1].kind_ref) if views else None
                if view is not None:
                    digest += "|" + obj_digest(view, region[1], exact)
                out.append(digest)
            elif region[0] == "counter":
                out.append(str(snapshot.counter(region[1])))
            elif region[0] == "index":
                out.append(self._index_digest(snapshot, region, views, exact))
            else:
                out.append(self._list_digest(snapshot, region, views, exact))
        return tuple(out)

    def _index_digest(self, snapshot: Snapshot, region: tuple[Any, ...],
                      views: Mapping[KindRef, Snapshot] | None, exact: bool) -> str:
        """An index region's digest (``IndexReads.digest``); read stale, or unknown: its list's."""
        found = None if views or self.indices is None else self.indices.digest(snapshot, region, exact)
        return found if found is not None else self._list_digest(snapshot, ("list", region[1], ()), views, exact)

    def _list_digest(self, snapshot: Snapshot, region: tuple[Any, ...],
                     views: Mapping[KindRef, Snapshot] | None = None, exact: bool = False) -> str:
        _, path, query = region
        if not views:
            fast = snapshot_list_digest(self.registry, snapshot, path, query, exact)
            if fast is not None:
                return fast
        server = ApiServer(self.registry, snapshot, now=lambda: 0)
        for kind, view in (views or {}).items():
            server.set_stale_view(kind, view)
        resp = server.handle("GET", path, list(query), {"Accept": "application/json"}, None)
        if resp.status != 200:
            return f"status:{resp.status}"
        try:
            doc = json.loads(resp.body)
        except ValueError:
            return "unparsable"
        items = doc.get("items") or []
        h = hashlib.sha256()
        for obj in items:
            h.update(content_digest(obj, exact).encode())
        return h.hexdigest()

    def _replay(self, entry: _MemoEntry, snapshot: Snapshot, clock: int) -> ReconcileRun:
        """The memoised run's writes applied to ``snapshot`` as a fresh run at ``clock`` would make
        them: new resourceVersions, and the server's timestamps (creation, deletion, managedFields)
        of the time the run is replayed at, not of the time it first ran — a replay must not depend
        on which equal state happened to be reconciled first (a parallel search's workers meet them
        in other orders)."""
        new = snapshot
        rv0 = snapshot.resource_version
        befores = tuple(snapshot.get(w.ref) for w in entry.run.writes)
        stamps = (format_time(entry.clock), format_time(clock)) if clock != entry.clock else None
        replays, slot = entry.replays, (rv0, None if stamps is None else clock)
        seen = replays.get(slot)
        if seen is None:
            seen = replays[slot] = []
            if len(replays) > _REPLAY_SLOTS:  # the oldest resourceVersion's variants go
                del replays[next(iter(replays))]
        match = next((v for v in seen if all(a is b for a, b in zip(v[0], befores))), None)
        if match is not None:
            _met, writes, story = match
            for w in writes:
                new = new.with_object(w.ref, w.after, rv=new.resource_version + 1)
        else:
            fresh = []
            for w in entry.run.writes:
                before = new.get(w.ref)
                rv = new.resource_version + 1
                after = None if w.after is None else _EQUAL.one(as_written_now(w.after, rv, stamps, w.before, before))
                new = new.with_object(w.ref, after, rv=rv)
                fresh.append(WriteRec(w.verb, w.ref, w.subresource, before, after, sent=w.sent))
            it = iter(fresh)
            writes = tuple(fresh)
            # one tuple for both when nothing was refused (most steps): a variant lives as long as its entry
            story = (writes if len(entry.run.story_writes) == len(writes)
                     else tuple(w if w.refused else next(it) for w in entry.run.story_writes))
            if len(seen) < _REPLAY_VARIANTS:
                seen.append((befores, writes, story))
        for key, value in entry.counters:
            new = new.with_counter(key, value)
        output = entry.run.output if stamps is None else retimed_output(entry.run.output, entry.clock, clock)
        return replace(entry.run, snapshot=new, writes=writes, story_writes=story, output=output)


def _backoff(result: Any) -> tuple[float, str | None, str] | None:
    """A failed step's timed retry, the framework's memory and what it carries to the retry (a kopf
    timer's retry state), when its adapter attached one."""
    if result is None or not getattr(result, "requeue_after", None):
        return None
    kept = getattr(result, "memory", None)
    return float(result.requeue_after), kept if isinstance(kept, str) else None, str(getattr(result, "carry", ""))


def _api_reason(message: str) -> str:
    """The Status message inside an ApiException's text, shortened for a story line."""
    try:
        start = message.index("{")
        body = json.loads(message[start:message.rindex("}") + 1])
        text = str(body.get("message") or body.get("reason") or "")
    except ValueError:
        text = message.strip().splitlines()[0] if message.strip() else ""
    return text if len(text) <= 160 else text[:157] + "..."


def _with_findings(run: ReconcileRun, findings: list[Finding]) -> ReconcileRun:
    return replace(run, findings=tuple(findings))


def _signature(acc: Any) -> str | None:
    """What a request asked for: method, resource path, query and body (None for discovery requests,
    which the client caches and so makes only on first use)."""
    res = acc.resource
    if res is None:
        return None
    body = acc.request_body
    text = json.dumps(body, sort_keys=True, default=str) if body is not None else ""
    query = "&".join(f"{k}={v}" for k, v in sorted(acc.query or ()))
    path = collection_path(acc) + (f"/{acc.name}" if acc.name else "") + (
        f"/{acc.subresource}" if acc.subresource else "")
    return f"{acc.method} {path}" + (f"?{query}" if query else "") + (f" {text}" if text else "")


def _first_difference(a: list[str], b: list[str]) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            x_part, y_part = _around_difference(x, y)
            return f"#{i + 1}: first run sent `{x_part}`, second run sent `{y_part}`"
    if len(a) != len(b):
        i = min(len(a), len(b))
        extra = (a if len(a) > len(b) else b)[i]
        return f"#{i + 1}: only one run sent `{extra[:200]}`"
    return ""


def _around_difference(x: str, y: str, width: int = 80) -> tuple[str, str]:
    """Both texts cut around where they first differ (a long shared prefix would hide the point)."""
    if len(x) <= 200 and len(y) <= 200:
        return x, y
    at = next((i for i, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
    start = max(0, at - width)
    head = " ".join(x.split(" ", 2)[:2]) + " " if start > 0 else ""  # keep "PATCH /path" for context

    def cut(text: str) -> str:
        end = min(len(text), at + width)
        return (head + "…" if start > 0 else "") + text[start:end] + ("…" if end < len(text) else "")

    return cut(x), cut(y)


_REPLAY_VARIANTS = 16
#: resourceVersions an entry keeps variants for, the latest: a breadth-first search meets a replay's
#: equal befores again soon (the other orders of the same steps), and variants kept for every
#: resourceVersion ever met would keep every state's objects alive after the search let go of it
#: (webapps-2-1 at 20,000 states: 59,372 of 72,524 replays matched a variant with no bound, 55,092
#: with 4 resourceVersions kept)
_REPLAY_SLOTS = 4
