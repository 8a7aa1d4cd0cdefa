"""Reading a Kubernetes audit log: its lines as ``audit.k8s.io/v1`` Events, when each completed, their order.

Why a module of its own: what a log *is* (JSON lines the API server's log backend writes, one Event
each, several files from several API servers or rotations) is independent of what the import makes
of an event (``audit``). Reading streams line by line, so a log of gigabytes costs the memory of
the events the caller keeps, not of the file.
"""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kamera_cli.errors import Problem

AUDIT_API_VERSION = "audit.k8s.io/v1"
GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True, slots=True)
class Event:
    """One line of a log: where it is, what it holds, and its ``stageTimestamp`` in UTC (if recorded)."""

    file: str
    line: int
    data: dict[str, Any]
    when: datetime | None = None

    def problem(self, path: str, message: str, hint: str = "") -> Problem:
        return Problem(self.file, self.line, 1, path, message, hint)


def parse_time(raw: str) -> datetime | None:
    """An RFC 3339 time (what a MicroTime prints) in UTC; ``None`` when it is not one.

    A time without an offset is taken as UTC, as the API server writes every time in UTC.
    """
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return None
    return when.replace(tzinfo=timezone.utc) if when.tzinfo is None else when.astimezone(timezone.utc)


def _timed(event: Event, problems: list[Problem]) -> Event | None:
    raw = event.data.get("stageTimestamp")
    if raw is None:
        return event
    when = parse_time(raw) if isinstance(raw, str) else None
    if when is None:
        problems.append(event.problem("$.stageTimestamp", f"not an RFC 3339 time: {raw!r}",
                                      "the API server writes e.g. 2025-11-20T10:02:00.002000Z"))
        return None
    return Event(event.file, event.line, event.data, when)


def _is(data: Any, kind: str, *, inherited: bool = False) -> bool:
    if not isinstance(data, dict):
        return False
    if inherited and "kind" not in data and "apiVersion" not in data:
        return True  # an EventList's items may leave their type to the list's
    return data.get("kind") == kind and data.get("apiVersion") == AUDIT_API_VERSION


def _decode(path: str, number: int, line_bytes: bytes, problems: list[Problem]) -> list[Event]:
    """The line's Event, or the items of an ``EventList`` (what the webhook backend posts), in order."""
    try:
        text = line_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(path, number, exc.start + 1, "$", f"not UTF-8 text: {exc.reason}"))
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(path, number, exc.colno, "$", f"invalid JSON: {exc.msg}",
                                "an audit log holds one JSON Event per line"))
        return []
    except RecursionError:
        problems.append(Problem(path, number, 1, "$", "invalid JSON: nested too deeply"))
        return []
    hint = "give the API server's audit log (--audit-log-path), JSON format"
    if _is(data, "EventList") and isinstance(data.get("items"), list):
        events = []
        for i, item in enumerate(data["items"]):
            if not _is(item, "Event", inherited=True):
                problems.append(Problem(path, number, 1, f"$.items[{i}]", f"not an {AUDIT_API_VERSION} Event", hint))
            elif (event := _timed(Event(path, number, item), problems)) is not None:
                events.append(event)
        return events
    if not _is(data, "Event"):
        got = f"{data.get('apiVersion')}/{data.get('kind')}" if isinstance(data, dict) else type(data).__name__
        problems.append(Problem(path, number, 1, "$", f"not an {AUDIT_API_VERSION} Event (got {got})", hint))
        return []
    event = _timed(Event(path, number, data), problems)
    return [event] if event is not None else []


def _lines(handle: io.BufferedReader) -> Iterator[bytes]:
    """The file's lines, through gzip when it is compressed (``--audit-log-compress`` rotates to .gz)."""
    if handle.peek(2)[:2] == GZIP_MAGIC:
        with gzip.GzipFile(fileobj=handle) as unzipped:
            yield from unzipped
    else:
        yield from handle


def read_events(path: str, problems: list[Problem]) -> Iterator[Event]:
    """Each line's Event, in file order, as it is read; located problems for lines that are not one."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; the lines are yielded as they are read
    except OSError as exc:
        problems.append(Problem(path, 0, 0, "$", f"cannot read file: {exc.strerror or exc}"))
        return
    with handle:
        try:
            for number, line_bytes in enumerate(_lines(handle), start=1):
                if line_bytes.strip():
                    yield from _decode(path, number, line_bytes.rstrip(b"\r\n"), problems)
        except (OSError, EOFError, zlib.error) as exc:  # a folder, a read error, a damaged or cut gzip stream
            problems.append(Problem(path, 0, 0, "$", f"cannot read file: {getattr(exc, 'strerror', None) or exc}"))


def in_recorded_order(events: list[Event], notes: list[str]) -> list[Event]:
    """The events sorted by when they completed (stable: ties keep the files' and lines' order).

    Why ``stageTimestamp`` of ``ResponseComplete``: a write takes effect between its receipt and its
    response, and the log does not say when; of two overlapping requests, the one answered first
    most likely committed first. Sorting matters when several files are given (each API server of
    a highly available control plane writes its own log; rotated files may come in any order); in a
    single file the backend writes events as they complete, so the order is the file's.
    """
    times = [e.when for e in events if e.when is not None]
    if len(times) < len(events):
        if len({e.file for e in events}) > 1:
            notes.append("some completed events have no stageTimestamp: the files' events are replayed in the order "
                         "the files were given, each file in its own order")
        return events
    order = sorted(range(len(events)), key=lambda i: (times[i], i))
    moved = sum(1 for rank, i in enumerate(order) if rank != i)
    if moved:
        notes.append(f"{moved} event(s) were not in stageTimestamp order in the file(s) given: the timeline is "
                     "sorted by stageTimestamp (when each request completed)")
    return [events[i] for i in order]
