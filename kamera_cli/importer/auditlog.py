"""Reading a Kubernetes audit log: its lines as ``audit.k8s.io/v1`` Events, when each completed, their order.

Why a module of its own: what a log *is* (JSON lines the API server's log backend writes, one Event
each, several files from several API servers or rotations) is independent of what the import makes
of an event (``audit``). Reading streams line by line, so a log of gigabytes costs the memory of
the events the caller keeps, not of the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from kamera_cli.errors import Problem

AUDIT_API_VERSION = "audit.k8s.io/v1"


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


def _decode(path: str, number: int, line_bytes: bytes, problems: list[Problem]) -> Event | None:
    try:
        text = line_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(Problem(path, number, exc.start + 1, "$", f"not UTF-8 text: {exc.reason}"))
        return None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        problems.append(Problem(path, number, exc.colno, "$", f"invalid JSON: {exc.msg}",
                                "an audit log holds one JSON Event per line"))
        return None
    except RecursionError:
        problems.append(Problem(path, number, 1, "$", "invalid JSON: nested too deeply"))
        return None
    if not isinstance(data, dict) or data.get("kind") != "Event" or data.get("apiVersion") != AUDIT_API_VERSION:
        got = f"{data.get('apiVersion')}/{data.get('kind')}" if isinstance(data, dict) else type(data).__name__
        problems.append(Problem(path, number, 1, "$", f"not an {AUDIT_API_VERSION} Event (got {got})",
                                "give the API server's audit log (--audit-log-path), JSON format"))
        return None
    event = Event(path, number, data)
    raw = data.get("stageTimestamp")
    if raw is None:
        return event
    when = parse_time(raw) if isinstance(raw, str) else None
    if when is None:
        problems.append(event.problem("$.stageTimestamp", f"not an RFC 3339 time: {raw!r}",
                                      "the API server writes e.g. 2025-11-20T10:02:00.002000Z"))
        return None
    return Event(path, number, data, when)


def read_events(path: str, problems: list[Problem]) -> Iterator[Event]:
    """Each line's Event, in file order, as it is read; located problems for lines that are not one."""
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below; the lines are yielded as they are read
    except OSError as exc:
        problems.append(Problem(path, 0, 0, "$", f"cannot read file: {exc.strerror or exc}"))
        return
    with handle:
        try:
            for number, line_bytes in enumerate(handle, start=1):
                if line_bytes.strip():
                    event = _decode(path, number, line_bytes.rstrip(b"\r\n"), problems)
                    if event is not None:
                        yield event
        except OSError as exc:  # a folder, or a read error part way
            problems.append(Problem(path, 0, 0, "$", f"cannot read file: {exc.strerror or exc}"))


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
