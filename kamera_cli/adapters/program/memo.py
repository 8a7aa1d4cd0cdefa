"""Program steps memoised by what they read: the server's answers, up to a renaming of resourceVersions.

Why: a program step runs the user's code from its last blocking point to the next — and, unless the
program that ended the previous step is still suspended (``parking.py``), first replays its whole
input log from ``main()``. A breadth-first search meets one program position in many clusters (a
user's delete placed before or after it, another controller's step), so most steps replay. Yet the
program is deterministic: what a step does is a function of its position (its input log) and of the
answers the API server gives it. So each step records its **calls** — every request it sent to the
server (its own, and the reads of its watches at scheduling points) with the answer — and a later
step from an equal position sends the recorded requests to its own server, in order, comparing each
answer with the recorded one. When every answer agrees, the step's new inputs, trace and result are
the recorded ones: the program never runs. When one differs, the program runs as usual, and the
requests already sent are answered to it from this attempt (``Tape``), so the server sees each
request exactly once, as in a run without the memo.

"Equal" is up to resourceVersions (docs/semantics.md, "Programs: memoised steps"): two logs that
differ only by a one-to-one renaming of the resourceVersions in them (and every other byte equal:
timestamps, times, bodies) are one key, and an answer agrees when it is the recorded one with its
resourceVersions renamed consistently with that renaming. A program treats resourceVersions as
opaque — it compares them for equality and sends them back, the contract ``sim/positions.py``
already rests on — so from a renamed position with renamed answers it sends the renamed requests:
a recorded request is translated before it is sent, and a request that carries a renamed value
anywhere but in a ``resourceVersion`` field or query is not translated at all (the attempt stops).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.adapters.program.session import Answer, Entry, ProgramDiverged, Watch

__all__ = ["Call", "MemoEntry", "ProgramMemo", "Renaming", "Tape", "log_key"]

#: the opaque values of an answer: a resourceVersion field's value (as any serialiser writes it) and an
#: RFC 3339 time (a JSON string that is exactly one: what the server stamps, what fingerprints blank)
_TOKENS = re.compile(rb'(?P<field>"resourceVersion"\s*:\s*")(?P<rv>[^"\\]*)"'
                     rb'|"(?P<time>\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2}))"')
#: a resourceVersion in a request's query, as a request's signature holds it
_QUERY_RV = re.compile(rb"((?:^|[?&])resourceVersion=)([^&\s]*)")
#: every JSON string literal (a renamed value outside a resourceVersion field is looked for there)
_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_HOLE = b"\x00tok\x00"
_RV, _TIME = b"rv:", b"ts:"
#: the method of a recorded watch read at a scheduling point (``Tape.pending``)
_PENDING = "PENDING"

#: recorded steps kept per key, and in all (a bound on memory, never on results: a miss runs the program)
PER_KEY = 8
LIMIT = 4096


def _holes(data: bytes, values: list[bytes], query: bool = False) -> bytes:
    """``data`` with each opaque value cut out, appended to ``values`` in order, tagged with its kind."""

    def cut(match: re.Match[bytes]) -> bytes:
        if match.group("rv") is not None:
            values.append(_RV + match.group("rv"))
            return match.group("field") + _HOLE + b'"'
        values.append(_TIME + match.group("time"))
        return b'"' + _HOLE + b'"'

    def cut_query(match: re.Match[bytes]) -> bytes:
        values.append(_RV + match.group(2))
        return match.group(1) + _HOLE

    if query:
        head, body = _split_signature(data)
        return _QUERY_RV.sub(cut_query, head) + _TOKENS.sub(cut, body)
    return _TOKENS.sub(cut, data)


def _split_signature(data: bytes) -> tuple[bytes, bytes]:
    """A request's signature (``METHOD path?query body``) as its head and its JSON body (with the space
    before it), as ``sim/positions.py`` splits it."""
    start = min((i for i in (data.find(b" {"), data.find(b" [")) if i >= 0), default=-1)
    return (data, b"") if start < 0 else (data[:start], data[start:])


def _entry_text(entry: Entry, values: list[bytes]) -> bytes:
    """An input with its opaque values cut out and without the time it came at (a program whose
    position is not exact never read the clock); everything else exact."""
    key = entry.key.encode()
    head = f"{entry.kind}\0".encode() + (_holes(key, values, query=True) if entry.kind in ("http", "open") else key)
    tail = f"\0{entry.status}\0{json.dumps(entry.headers)}\0".encode()
    return head + tail + _holes(entry.body, values)


def log_key(parent: tuple[bytes, tuple[bytes, ...]], entries: Sequence[Entry]) -> tuple[bytes, tuple[bytes, ...]]:
    """A log's key (its digest without opaque values and times) and its opaque values in order, from its
    parent's: logs are chains of steps, so each step's part is cut once."""
    values = list(parent[1])
    h = hashlib.sha256(parent[0])
    for entry in entries:
        h.update(_entry_text(entry, values) + b"\x01")
    return h.digest(), tuple(values)


def pattern(values: Sequence[bytes]) -> tuple[int, ...]:
    """Which earlier value each value repeats (its first index): two logs of one key and one pattern
    differ by a one-to-one renaming of their opaque values."""
    first: dict[bytes, int] = {}
    return tuple(first.setdefault(v, i) for i, v in enumerate(values))


@dataclass(frozen=True, slots=True)
class Call:
    """One request the step sent to the server, and its answer (a watch's lines, for a stream)."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...]
    headers: tuple[tuple[str, str], ...]
    body: bytes | None
    status: int = 0
    answer_headers: tuple[tuple[str, str], ...] = ()
    answer: bytes = b""
    lines: tuple[bytes, ...] | None = None
    #: a watch's pending events asked at a scheduling point (``PENDING``): what the watch had delivered
    #: then (the answer is its first event, or nothing: all a program's scheduler reads of it)
    view: Mapping[str, Any] | None = None

    def request(self) -> tuple[Any, ...]:
        return (self.method, self.path, self.query, self.headers, self.body)

    def response(self) -> Answer:
        stream = None if self.lines is None else iter(self.lines)
        return Answer(self.status, dict(self.answer_headers), self.answer, stream)


def _elsewhere(holed: bytes, moved: set[bytes], query: bool, exact: bool = False) -> bool:
    """Whether a renamed value is in ``holed`` outside the holes: a resourceVersion as a JSON string or
    a query value (``exact``: ``holed`` is one such value), a time anywhere in the text."""
    if exact:
        return any(v[3:] == holed if v.startswith(_RV) else v[3:] in holed for v in moved)
    strings = {m.group(1) for m in _STRING.finditer(holed)}
    if query:
        strings |= {part.partition(b"=")[2] for part in re.split(rb"[?& ]", _split_signature(holed)[0])}
    return any(v[3:] in strings if v.startswith(_RV) else v[3:] in holed for v in moved)


class Renaming:
    """A one-to-one renaming of opaque values (resourceVersions, times), from a recorded step's to the
    current one's; values are tagged with their kind, so a resourceVersion never stands for a time."""

    def __init__(self, recorded: Sequence[bytes], current: Sequence[bytes]) -> None:
        self.forward: dict[bytes, bytes] = {}
        self.back: dict[bytes, bytes] = {}
        self.ok = len(recorded) == len(current) and all(map(self.unify, recorded, current))

    def copy(self) -> Renaming:
        out = Renaming((), ())
        out.forward, out.back = dict(self.forward), dict(self.back)
        return out

    def unify(self, recorded: bytes, current: bytes) -> bool:
        """Whether ``recorded`` can stand for ``current`` (added to the renaming when new)."""
        have, had = self.forward.get(recorded), self.back.get(current)
        if have is None and had is None:
            self.forward[recorded], self.back[current] = current, recorded
            return True
        return have == current and had == recorded

    def agrees(self, recorded: bytes, current: bytes) -> bool:
        """Whether ``current`` is ``recorded`` with its resourceVersions renamed (the renaming grows)."""
        old: list[bytes] = []
        if recorded == current:  # the common case: nothing renamed
            _holes(recorded, old)
            return all(self.unify(v, v) for v in old)
        new: list[bytes] = []
        if _holes(recorded, old) != _holes(current, new) or len(old) != len(new):
            return False
        return all(map(self.unify, old, new))

    def moved(self) -> set[bytes]:
        """The tagged values the renaming changes."""
        return {k for k, v in self.forward.items() if k != v}

    def apply(self, data: bytes, query: bool = False) -> bytes | None:
        """``data`` (recorded) with its opaque values renamed; None when a renamed value is also elsewhere
        in it (data the program copied a resourceVersion or a time into: not translated)."""
        moved = self.moved()
        if not moved:
            return data
        values: list[bytes] = []
        holed = _holes(data, values, query)
        if _elsewhere(holed, moved, query):
            return None
        pieces = holed.split(_HOLE)
        out = [pieces[0]]
        for value, piece in zip(values, pieces[1:]):
            out.append(self.forward.get(value, value)[3:] + piece)
        return b"".join(out)

    def request(self, call: Call) -> tuple[Any, ...] | None:
        """The recorded call's request as the current program sends it (None: not translatable); a
        watch's pending events are asked from the recorded view, renamed."""
        if call.method == _PENDING:
            view = self.view(call.view or {})
            return None if view is None else (call.method, call.path, call.query, (), None, view)
        query: list[tuple[str, str]] = []
        moved = self.moved()
        for k, v in call.query:
            if k == "resourceVersion":
                query.append((k, self.forward.get(_RV + v.encode(), _RV + v.encode())[3:].decode()))
                continue
            if _elsewhere(v.encode(), moved, False, exact=True):
                return None
            query.append((k, v))
        body = None if call.body is None else self.apply(call.body)
        if call.body is not None and body is None:
            return None
        if any(_elsewhere(part, moved, False, exact=True) for part in call.path.encode().split(b"/")):
            return None
        return (call.method, call.path, tuple(query), call.headers, body, None)

    def view(self, view: Mapping[str, Any]) -> dict[str, Any] | None:
        """A watch's recorded view (what it had delivered) as the current program's watch has it."""
        if not self.moved():
            return dict(view)
        renamed = self.apply(json.dumps(view, sort_keys=True).encode())
        return None if renamed is None else dict(json.loads(renamed))

    def entry(self, entry: Entry, clock: float) -> Entry | None:
        """A recorded input as the current program consumes it, at ``clock`` (None: not translatable)."""
        key = self.apply(entry.key.encode(), query=entry.kind in ("http", "open"))
        body = self.apply(entry.body)
        if key is None or body is None:
            return None
        return Entry(entry.kind, key.decode(), clock, entry.status, entry.headers, body)


@dataclass(frozen=True, slots=True)
class MemoEntry:
    """A step as it ran: the opaque values of the log it ran from, its program's clock there and the
    step's instant (``clocks``), its calls, its new inputs, its trace and result (the new log's digest
    is the caller's to work out)."""

    values: tuple[bytes, ...]
    clocks: tuple[float, float]
    calls: tuple[Call, ...]
    entries: tuple[Entry, ...]
    trace: Any
    result: Any


@dataclass(frozen=True, slots=True)
class Hit:
    """A memoised step that agreed with every answer: its new inputs renamed, its trace and result."""

    entries: tuple[Entry, ...]
    trace: Any
    result: Any


class Tape:
    """The step's server as the program's session sees it: it records every call with its answer, and
    answers the calls a memo attempt already sent from what it got (``rewind``), checking that the
    program asks exactly that — a program that does not is not deterministic up to resourceVersions,
    and ``diverge`` says so (the session's: the step ends as a ``ProgramDiverged``)."""

    def __init__(self, live: Any) -> None:
        self.live = live
        self.calls: list[Call] = []
        self._next = 0
        self.diverge: Callable[[str], None] = _diverged

    def __getattr__(self, name: str) -> Any:  # the server's snapshot and registry, as the session reads them
        return getattr(self.live, name)

    def pending(self, watch: Watch) -> list[bytes]:
        """A watch's pending events at a scheduling point. The scheduler reads only whether there is one
        and the first (``Threads.wakeable``, ``input_for``), so that is the answer recorded — and what a
        step from an equal position must see again, whatever else changed in the collection."""
        if self._next < len(self.calls):
            call = self.calls[self._next]
            self._next += 1
            if call.method != _PENDING or call.path != watch.path or call.query != tuple(watch.query):
                self.diverge(f"call #{self._next} of the step: from a position equal up to resourceVersions and "
                             f"times, with answers equal up to them, it asked {call.method} {call.path}, and now "
                             f"the pending events of its watch of {watch.path}")
            return [call.answer] if call.answer else []
        self._next += 1
        call = self.watch(watch.path, tuple(watch.query), watch.view)
        return [call.answer] if call.answer else []

    def watch(self, path: str, query: tuple[tuple[str, str], ...], view: Mapping[str, Any]) -> Call:
        """Ask the live server for a watch's pending events (from ``view``); record the first."""
        events = Watch(-1, path, list(query), dict(view)).events(self.live)
        call = Call(_PENDING, path, query, (), None, answer=events[0] if events else b"", view=dict(view))
        self.calls.append(call)
        return call

    def send(self, method: str, path: str, query: Sequence[tuple[str, str]], headers: Sequence[tuple[str, str]],
             body: bytes | None) -> Call:
        """Send a request to the live server; record it with its answer."""
        resp = self.live.handle(method, path, list(query), dict(headers), body)
        lines = None if resp.stream is None else tuple(resp.stream)
        call = Call(method, path, tuple(query), tuple(headers), body, resp.status,
                    tuple(sorted((resp.headers or {}).items())), resp.body or b"", lines)
        self.calls.append(call)
        return call

    def rewind(self) -> None:
        """The program runs after all: it is answered the calls already sent, then the live server."""
        self._next = 0

    def handle(self, method: str, path: str, query: list[tuple[str, str]], headers: Mapping[str, str],
               body: bytes | None) -> Answer:
        wanted = (method, path, tuple(query), tuple(sorted(headers.items())), body)
        if self._next < len(self.calls):
            call = self.calls[self._next]
            self._next += 1
            if call.request() != wanted:
                self.diverge(
                    f"call #{self._next} of the step: from a position equal up to resourceVersions, with "
                    f"answers equal up to them, it sent {call.method} {call.path}, and now {method} {path}: "
                    "its requests depend on the values of resourceVersions, not only on their equality")
            return call.response()
        self._next += 1
        return self.send(method, path, query, wanted[3], body).response()


def _diverged(why: str) -> None:
    raise ProgramDiverged(why)


@dataclass
class ProgramMemo:
    """Recorded steps of one program, by (log key, resourceVersion pattern, choice, clock)."""

    _entries: OrderedDict[tuple[Any, ...], list[MemoEntry]] = field(default_factory=OrderedDict)
    _count: int = 0
    hits: int = 0

    def store(self, key: tuple[Any, ...], entry: MemoEntry) -> None:
        """Keep a step, unless one of its inputs came at another time than where the program stood or
        the step's instant (the only two a program that never read the clock is handed, ``_clock``)."""
        if any(_clock(e.clock, entry.clocks, entry.clocks) is None for e in entry.entries):
            return
        kept = self._entries.setdefault(key, [])
        if len(kept) >= PER_KEY:
            return
        kept.append(entry)
        self._count += 1
        while self._count > LIMIT:
            _key, dropped = self._entries.popitem(last=False)
            self._count -= len(dropped)

    def attempt(self, key: tuple[Any, ...], values: Sequence[bytes], clocks: tuple[float, float],
                tape: Tape) -> Hit | None:
        """Send the recorded requests of the steps stored under ``key`` to the live server, one at a
        time, keeping the steps whose answers agree so far; the first whose calls all agreed is the hit.
        By determinism the steps agreeing so far sent the same next request (they are a tree)."""
        candidates: list[tuple[MemoEntry, Renaming]] = []
        for entry in self._entries.get(key, ()):
            renaming = Renaming(entry.values, values)
            if renaming.ok:
                candidates.append((entry, renaming))
        n = 0
        while candidates:
            done = next(((e, r) for e, r in candidates if len(e.calls) == n), None)
            if done is not None:
                return self._hit(*done, clocks)
            asked = [(e, r, r.request(e.calls[n])) for e, r in candidates]
            first = next((req for _e, _r, req in asked if req is not None), None)
            if first is None:
                return None
            sent = tape.watch(first[1], first[2], first[5]) if first[0] == _PENDING else tape.send(*first[:5])
            candidates = [(e, r) for e, r, req in asked if req == first and _agrees(r, e.calls[n], sent)]
            n += 1
        return None

    def _hit(self, entry: MemoEntry, renaming: Renaming, clocks: tuple[float, float]) -> Hit | None:
        renamed = [renaming.entry(e, _clock(e.clock, entry.clocks, clocks) or 0.0) for e in entry.entries]
        if any(e is None for e in renamed):
            return None
        self.hits += 1
        return Hit(tuple(e for e in renamed if e is not None), entry.trace, entry.result)


def _clock(at: float, recorded: tuple[float, float], current: tuple[float, float]) -> float | None:
    """An input's time in the recorded step as the current step gives it. The program's clock is where
    it stood (its log's last input's time) until the step hands a parked thread its input, and then the
    later of that and the step's instant (``Threads.input_for``); the key says whether those two were
    equal, so the map is one-to-one. None: neither (the step is not kept)."""
    stood, instant = recorded
    if at == max(stood, instant):
        return max(current)
    if at == stood:
        return current[0]
    return None


def _agrees(renaming: Renaming, recorded: Call, sent: Call) -> bool:
    """Whether the live answer is the recorded one with resourceVersions renamed (the renaming grows)."""
    if recorded.status != sent.status or recorded.answer_headers != sent.answer_headers:
        return False
    if (recorded.lines is None) != (sent.lines is None):
        return False
    if recorded.lines is not None and sent.lines is not None:
        return len(recorded.lines) == len(sent.lines) and all(
            map(renaming.agrees, recorded.lines, sent.lines)) and renaming.agrees(recorded.answer, sent.answer)
    return renaming.agrees(recorded.answer, sent.answer)
