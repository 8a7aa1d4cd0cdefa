"""Watch streams: the events a watch delivers, as newline-terminated JSON lines.

Why a watch ends once it has delivered what exists: the simulation is single-threaded, so nothing
else can write while the watching reconcile runs; blocking would only deadlock (docs/apiserver.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from kamera_cli.apiserver.server.encoding import encode_object
from kamera_cli.apiserver.storage.snapshot import WriteRecord

Event = dict[str, Any]
Matcher = Callable[[Mapping[str, Any]], bool]


def events_from_log(records: list[WriteRecord], accept: Matcher,
                    present: Callable[[Mapping[str, Any]], Mapping[str, Any]]) -> list[Event]:
    """Turn logged writes into watch events as the real watch cache filters them.

    A MODIFIED object entering the selector is ADDED, one leaving it DELETED (with its new state).
    """
    out: list[Event] = []
    for w in records:
        if w.type == "DELETED":
            if w.before is not None and accept(w.before):
                final = dict(w.before)
                final["metadata"] = {**(w.before.get("metadata") or {}), "resourceVersion": str(w.rv)}
                out.append({"type": "DELETED", "object": present(final)})
            continue
        assert w.after is not None
        now_in = accept(w.after)
        was_in = w.before is not None and accept(w.before)
        if w.type == "ADDED" or not was_in:
            if now_in:
                out.append({"type": "ADDED", "object": present(w.after)})
        elif now_in:
            out.append({"type": "MODIFIED", "object": present(w.after)})
        else:
            out.append({"type": "DELETED", "object": present(w.after)})
    return out


def bookmark(kind: str, api_version: str, rv: int) -> Event:
    return {"type": "BOOKMARK", "object": {"kind": kind, "apiVersion": api_version,
                                           "metadata": {"resourceVersion": str(rv)}}}


def error_event(status: Mapping[str, Any]) -> Event:
    return {"type": "ERROR", "object": dict(status)}


def stream(events: list[Event]) -> Iterator[bytes]:
    """One line per event, serialised lazily so a reader that stops early pays for nothing more."""
    for event in events:
        yield b'{"type":"' + event["type"].encode() + b'","object":' + encode_object(event["object"]) + b"}\n"
