"""A program's conversation with the API server, recorded so that it can be replayed.

Why replay: a program (a ``main()`` with a watch loop) keeps its position on a live Python stack,
which cannot be part of an explored state — states are values that the explorer forks.  What *can*
be a value is the sequence of inputs the program consumed since it (re)started: every answer the
API server gave it, every watch event delivered to it, every sleep that returned.  The program is
deterministic under kamera's sandbox, so running ``main()`` again and handing it the same inputs in
the same order brings it back to the same blocking point.  A step therefore replays the logged
inputs (nothing reaches the server: each request must be the one logged, and gets the logged
answer), delivers *one* new input at the blocking point where the log ends, and lets the program
run live — its requests answered by the step's server and logged — until it blocks again, where
the step ends.

The blocking points kamera controls are the reads of a watch stream (one event per read) and
``time.sleep``.  A watch delivers, for each object of its collection whose content differs from
what this watch last delivered for it, one event with the object's current content (ADDED,
MODIFIED, or DELETED with the last delivered object), in namespace/name order — so changes to one
object between two reads coalesce, as kamera's work queue coalesces requests (docs/controllers.md,
"Programs").
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

__all__ = ["WATCH_TABLE", "Entry", "ProgramDiverged", "ProgramParked", "Session", "Watch"]

#: the trace's name for the program's table of watches (``trace.py``)
WATCH_TABLE = "watches"

_TRUTHY = ("true", "1", "True")


class ProgramParked(BaseException):
    """Unwinds a program from a blocking point where the step ends (it derives from BaseException so
    that the program's ``except Exception`` cannot swallow it)."""


class ProgramDiverged(Exception):
    """Replaying the logged inputs, the program asked for something else than it did the first time."""

    controller_fault = True


class _Server(Protocol):
    def handle(self, method: str, path: str, query: list[tuple[str, str]], headers: Mapping[str, str],
               body: bytes | None) -> Any: ...


@dataclass(frozen=True, slots=True)
class Answer:
    """What the transport needs from an answer (the shape of ``apiserver.server.HttpResponse``)."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    stream: Iterator[bytes] | None = None


@dataclass(frozen=True, slots=True)
class Entry:
    """One input the program consumed: its start ("start"), an answer ("http"), a watch opened ("open":
    its initial view as the body), an event read from watch ``key`` ("event") or a sleep of ``key``
    seconds ("sleep").
    ``clock`` is the virtual time the program saw when it got it."""

    kind: str
    key: str
    clock: float
    status: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""

    def digest(self) -> bytes:
        h = hashlib.sha256(f"{self.kind}\0{self.key}\0{self.clock!r}\0{self.status}\0".encode())
        h.update(json.dumps(self.headers).encode())
        h.update(self.body)
        return h.digest()


def _signature(method: str, path: str, query: Sequence[tuple[str, str]], body: bytes | None) -> str:
    text = "&".join(f"{k}={v}" for k, v in sorted(query))
    return f"{method} {path}?{text} " + (body or b"").decode("utf-8", "replace")


def _object_key(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return f"{ns}/{meta.get('name', '')}" if ns else str(meta.get("name", ""))


def watch_content(obj: Mapping[str, Any]) -> str:
    """An object's content as a watch tells changes: server bookkeeping that a no-op write leaves alone
    (resourceVersion, managedFields) does not make an event."""
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    return json.dumps({**obj, "metadata": meta}, sort_keys=True, separators=(",", ":"), default=str)


class Watch:
    """One watch the program opened: its collection, and what it has delivered for each object."""

    def __init__(self, index: int, path: str, query: list[tuple[str, str]],
                 view: dict[str, dict[str, Any]]) -> None:
        self.index = index
        self.path = path
        #: the selectors only: a fresh watch of the collection lists what there is now
        self.query = [(k, v) for k, v in query if k in ("labelSelector", "fieldSelector")]
        self.view = view

    def deliver(self, line: bytes) -> None:
        event = json.loads(line)
        obj = event.get("object") or {}
        key = _object_key(obj)
        if event.get("type") == "DELETED":
            self.view.pop(key, None)
        else:
            self.view[key] = obj

    def current(self, server: _Server) -> dict[str, dict[str, Any]]:
        """What the collection holds now, as the server's own fresh watch lists it (ADDED per object)."""
        resp = server.handle("GET", self.path, [*self.query, ("watch", "true"), ("timeoutSeconds", "1")],
                             {"Accept": "application/json"}, None)
        out: dict[str, dict[str, Any]] = {}
        if resp.status != 200 or resp.stream is None:
            return out
        for line in resp.stream:
            event = json.loads(line)
            if event.get("type") == "ADDED":
                obj = event.get("object") or {}
                out[_object_key(obj)] = obj
        return out

    def pending(self, server: _Server) -> list[bytes]:
        """The events this watch would deliver now, one per changed object, in namespace/name order (a
        step's server that records what the program read answers for itself: ``memo.Tape``)."""
        answer = getattr(server, "pending", None)
        if answer is not None:
            events: list[bytes] = answer(self)
            return events
        return self.events(server)

    def events(self, server: _Server) -> list[bytes]:
        """``pending``, from the server's listing of the collection now."""
        now = self.current(server)
        events: list[tuple[str, str, Mapping[str, Any]]] = []
        for key in sorted({*now, *self.view}):
            new, old = now.get(key), self.view.get(key)
            if new is None and old is not None:
                events.append((key, "DELETED", old))
            elif new is not None and old is None:
                events.append((key, "ADDED", new))
            elif new is not None and old is not None and watch_content(new) != watch_content(old):
                events.append((key, "MODIFIED", new))
        return [json.dumps({"type": t, "object": o}, separators=(",", ":")).encode() + b"\n" for _k, t, o in events]


class Session:
    """The server a program talks to during one step: the log first, then the step's live server.

    ``deliver``: whether this step hands the program one new input at the blocking point where the
    log ends (every step but the one that starts the program).  The program's threads
    (``threads``, green) park at its blocking points; ``schedule`` decides who runs.
    """

    def __init__(self, live: Any, log: Sequence[Entry], *, deliver: bool, clock: Any, step_clock: float,
                 choice: str = "") -> None:
        self.live = live
        self.registry = getattr(live, "registry", None)  # the transport's discovery cache is per registry
        self.log = list(log)
        self._base = tuple(log)
        self.replayed = 0
        self.delivered = not deliver
        self.clock = clock
        self.step_clock = step_clock
        self.watches: list[Watch] = []
        self.diverged = ""
        #: what this step gave the program (for the step's story line)
        self.told = ""
        #: the program's own OS thread: a thread it starts outside kamera's scheduling is not served
        self.thread = threading.get_ident()
        self.threaded = ""
        #: the program's green threads (``program_threads``), or None: one thread, unwound at each step
        self.threads: Any = None
        #: the explorer's branch for this step: the thread to run among those the last ``yield`` named
        self.choice = choice
        #: the labels of the last ``yield``, while its choice is still to be made
        self.awaiting: list[str] | None = None
        #: whether this step ended at a choice (``yield``) rather than with every thread waiting
        self.yielded = False
        #: a suspended program being discarded: it must not reach anything any more
        self.killed = False
        #: the step asked for a point of the API server's history (a list at a resourceVersion, a
        #: continue token): its position is kept exact (``ProgramFactory.exact_position``)
        self.historic = False
        if not self._base:  # the program starts: what its clock says before its first input is logged too
            self._record(Entry("start", "", clock.now))
        elif self._base[0].kind == "start":
            self.replayed = 1
            clock.now = self._base[0].clock

    @property
    def snapshot(self) -> Any:
        return getattr(self.live, "snapshot", None)

    @property
    def new_entries(self) -> list[Entry]:
        """What this step added to the log."""
        return self.log[len(self._base):]

    # -- the inputs ---------------------------------------------------------------------------------------------
    def _replaying(self) -> bool:
        return self.replayed < len(self._base)

    def _next_logged(self, kind: str, key: str) -> Entry:
        entry = self._base[self.replayed]
        if entry.kind != kind or entry.key != key:
            self._diverge(f"input #{self.replayed + 1}: it had consumed {entry.kind} {entry.key[:160]!r} at this "
                          f"point, and now asks for {kind} {key[:160]!r}")
        self.replayed += 1
        self.clock.now = entry.clock
        return entry

    def _diverge(self, why: str) -> None:
        self.diverged = self.diverged or why
        raise ProgramParked()

    def diverge(self, why: str) -> None:
        """The program asked for something else than the log (or a memo attempt) says it did: the
        step ends, as a ``ProgramDiverged``."""
        self._diverge(why)

    def _enter(self, what: str) -> None:
        """Every blocking point and request starts here: a diverged or discarded program goes no further,
        and only the program's own thread is served."""
        if threading.get_ident() != self.thread:
            self.threaded = self.threaded or what
            raise ProgramParked()
        if self.diverged or self.killed:
            raise ProgramParked()

    def _one_task(self, what: str) -> None:
        """An ``async def main()`` runs as one task: at a blocking point no other task may be waiting to
        run, since kamera suspends the whole event loop there (tasks are not scheduled like threads)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        me = asyncio.current_task(loop)
        others = sorted(t.get_name() for t in asyncio.all_tasks(loop) if t is not me and not t.done())
        if len(others) > (0 if me is not None else 1):
            self.threaded = self.threaded or (
                f"an async program blocked at {what} while other asyncio tasks exist ({', '.join(others)}); "
                "kamera runs an async program as one task (use threads to run work concurrently)")
            raise ProgramParked()

    def begin_step(self, live: Any, clock: Any, step_clock: float, choice: str) -> None:
        """Resume a suspended program for a new step: its log is consumed, one new input is due."""
        self.live = live
        self.registry = getattr(live, "registry", None)
        self._base = tuple(self.log)
        self.replayed = len(self.log)
        self.delivered = False
        self.clock = clock
        self.step_clock = step_clock
        self.choice = choice
        self.yielded = False
        self.told = ""
        self.historic = False
        # the program's clock where it stopped, as a replay would leave it: its last input's time
        clock.now = self.log[-1].clock if self.log else step_clock

    def _record(self, entry: Entry) -> None:
        self.log.append(entry)
        self.replayed = len(self.log)

    # -- the HTTP surface the transport calls ---------------------------------------------------------------------
    def handle(self, method: str, path: str, query: list[tuple[str, str]], headers: Mapping[str, str],
               body: bytes | None) -> Answer:
        self._enter(f"{method} {path}")
        if self.threads is not None:
            self.threads.preempt(f"{method} {path}")  # a scheduling point: another may send its request first
        sig = _signature(method, path, query, body)
        watching = method == "GET" and any(k == "watch" and v in _TRUTHY for k, v in query)
        if self._replaying():
            entry = self._next_logged("open" if watching else "http", sig)
            if watching:
                return self._open(path, query, json.loads(entry.body))
            return Answer(entry.status, dict(entry.headers), entry.body)
        if watching:
            view = self._initial_view(path, query)
            self._record(Entry("open", sig, self.clock.now, body=json.dumps(view).encode()))
            return self._open(path, query, view)
        self.historic = self.historic or any(
            (k == "resourceVersion" and v not in ("", "0")) or (k in ("resourceVersionMatch", "continue") and v)
            for k, v in query)
        resp = self.live.handle(method, path, query, headers, body)
        data = resp.body if resp.stream is None else b"".join(resp.stream)
        answer = Answer(resp.status, dict(resp.headers or {}), data)
        self._record(Entry("http", sig, self.clock.now, resp.status, tuple(sorted(answer.headers.items())), data))
        return answer

    def _initial_view(self, path: str, query: list[tuple[str, str]]) -> dict[str, dict[str, Any]]:
        """What a new watch counts as delivered: nothing for a watch without a resourceVersion (or from
        "0"), which first delivers every object as ADDED; for a watch from the resourceVersion of a list
        the program made, that list's items (so what changed since the list is delivered); otherwise what
        there is now (within a step nothing else writes between the program's requests)."""
        rv = next((v for k, v in query if k == "resourceVersion"), "")
        if rv in ("", "0"):
            return {}
        listed = self._logged_list(path, query, rv)
        if listed is not None:
            return listed
        return Watch(-1, path, query, {}).current(self.live)

    def _logged_list(self, path: str, query: list[tuple[str, str]], rv: str) -> dict[str, dict[str, Any]] | None:
        """The items of the latest list of this collection (same selectors) the program got at ``rv``."""
        selectors = sorted((k, v) for k, v in query if k in ("labelSelector", "fieldSelector"))
        for entry in reversed(self.log):
            if entry.kind != "http" or entry.status != 200 or not entry.key.startswith(f"GET {path}?"):
                continue
            asked = entry.key[len(f"GET {path}?"):].split(" ", 1)[0]
            pairs = sorted(tuple(p.split("=", 1)) for p in asked.split("&") if p)
            if "watch=true" in asked or [p for p in pairs if p[0] in ("labelSelector", "fieldSelector")] != selectors:
                continue
            try:
                doc = json.loads(entry.body)
            except ValueError:
                continue
            if not isinstance(doc, dict) or str((doc.get("metadata") or {}).get("resourceVersion")) != rv:
                continue
            kind = str(doc.get("kind", ""))
            kind = kind[:-4] if kind.endswith("List") else kind
            items = [{"apiVersion": doc.get("apiVersion"), "kind": kind, **item}
                     for item in doc.get("items") or [] if isinstance(item, dict)]
            return {_object_key(item): item for item in items}
        return None

    def _open(self, path: str, query: list[tuple[str, str]], view: dict[str, dict[str, Any]]) -> Answer:
        self.threads.trace.touch(WATCH_TABLE)  # watches are numbered in the order they are opened
        watch = Watch(len(self.watches), path, query, view)
        self.watches.append(watch)
        return Answer(200, {"Content-Type": "application/json", "Transfer-Encoding": "chunked"}, b"",
                      self._events(watch))

    def _events(self, watch: Watch) -> Iterator[bytes]:
        while True:
            yield self._next_event(watch)

    def _next_event(self, watch: Watch) -> bytes:
        self._enter(f"a read of the watch on {watch.path}")
        self._one_task(f"a read of the watch on {watch.path}")
        # parked until a scheduling point hands it an event (program_threads)
        entry = self.threads.park(("watch", watch.index), f"waits on its watch of {watch.path}")
        self.threads.trace.touch(f"watch:{watch.index}")
        self.clock.now = max(self.clock.now, entry.clock)
        line: bytes = entry.body
        watch.deliver(line)
        return line

    def on_sleep(self, seconds: float) -> None:
        """``time.sleep(seconds)`` is a blocking point: replayed, delivered (the step's input) or parked at."""
        self._enter(f"time.sleep({seconds:g})")
        self._one_task(f"a sleep of {seconds:g}s")
        entry = self.threads.park(("sleep", float(seconds), self.clock.now + seconds), f"sleeps {seconds:g}s")
        self.clock.now = max(self.clock.now, entry.clock) - seconds  # the sandbox adds the sleep after this

    # -- scheduling points of a program's threads (program_threads) -----------------------------------------------
    def schedule(self, runnable: list[Any], parked: list[Any]) -> Any:
        """Who runs at a scheduling point where more than one thread exists: the thread to run (a
        parked one handed its input first), or None where the step ends.  Replayed from the log's
        ``run``/``yield``/``pick`` entries, or decided live: one candidate runs (``run``), a parked
        one only as the step's input; several end the step (``yield``) unless this step is the
        choice among them (``pick``, the explorer's branch)."""
        threads = self.threads
        if self._replaying():
            entry = self._base[self.replayed]
            if entry.kind == "run":
                return self._logged_thread(runnable, self._next_logged("run", entry.key).key)
            if entry.kind == "yield":
                labels = json.loads(self._next_logged("yield", entry.key).key)
                known = {t.label for t in runnable} | {t.label for t in parked}
                if not {t.label for t in runnable} <= set(labels) <= known:
                    self._diverge(f"input #{self.replayed}: it had {', '.join(labels)} to choose from at this point, "
                                  f"and now {', '.join(sorted(known))}")
                self.awaiting = labels
            elif entry.kind != "pick":
                self._diverge(f"input #{self.replayed + 1}: it had consumed {entry.kind} {entry.key[:160]!r} at this "
                              "point, and now its threads are at a scheduling point")
        if self._replaying():
            label = self._next_logged("pick", self._base[self.replayed].key).key
            self.awaiting = None
            chosen = self._logged_thread(runnable + parked, label)
            if chosen in parked:
                point = chosen.point
                kind = {"watch": "event", "sleep": "sleep"}.get(point[0], "timeout")
                key = str(point[1]) if kind == "event" else repr(float(point[1])) if kind == "sleep" else label
                threads.hand(chosen, self._next_logged(kind, key))
            return chosen
        if not self.delivered and self.awaiting is not None:  # this step is the choice the last one left
            labels, self.awaiting = self.awaiting, None
            label = self.choice if self.choice in labels else labels[0]
            return self._pick(self._logged_thread(runnable + parked, label))
        candidates = runnable + threads.wakeable(parked)
        if not candidates and not self.delivered:
            candidates = threads.timers(parked)  # nothing else to do: the first sleep ends (early)
        if len(candidates) == 1 and candidates[0] in runnable:
            self._record(Entry("run", candidates[0].label, self.clock.now))
            return candidates[0]
        if len(candidates) > 1:
            self.awaiting = [t.label for t in candidates]
            self.yielded = True
            self._record(Entry("yield", threads.labels(candidates), self.clock.now))
            return None
        if not candidates or self.delivered:
            return None
        return self._pick(candidates[0])  # the one wake-up there is: this step's input

    def _pick(self, chosen: Any) -> Any:
        threads = self.threads
        self.delivered = True
        self._record(Entry("pick", chosen.label, self.clock.now))
        told = ""
        if chosen.state == "parked":
            entry = threads.input_for(chosen)
            self._record(entry)
            told = (_event_text(entry.body) if entry.kind == "event" and entry.body else
                    f"woke from time.sleep({chosen.point[1]:g})" if entry.kind == "sleep" else
                    "its wait timed out" if entry.kind == "timeout" else "nothing to read")
            threads.hand(chosen, entry)
        if len(threads.threads) > 1:
            told = f"{chosen.label} runs" + (f": {told}" if told else "")
        self.told = told
        return chosen

    def _logged_thread(self, threads: list[Any], label: str) -> Any:
        found = next((t for t in threads if t.label == label), None)
        if found is None:
            self._diverge(f"input #{self.replayed}: thread {label!r} ran at this point, and now it cannot run")
        return found


def _event_text(line: bytes) -> str:
    event = json.loads(line)
    obj = event.get("object") or {}
    return f"read {event.get('type')} {obj.get('kind', '')} {_object_key(obj)}"
