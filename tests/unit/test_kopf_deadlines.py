"""What a kopf step's window is told from (adapters/kopf/deadlines.py): the instants kopf stored, and
whether a handler can see the time.

Why: the window of a kopf step that read the clock only through kopf's progression is the run of
instants before the earliest stored deadline; a later deadline missed, or a handler that reads
``runtime`` taken as blind, would let the reduction move a step past an instant where it changes
(docs/semantics.md, "kopf", *Its window*).
"""

from __future__ import annotations

import datetime
import functools
import json
from types import SimpleNamespace
from typing import Any

from kamera_cli.adapters.kopf.deadlines import handler_sees_time, later_deadlines, steady_for

T0 = 1_700_000_000  # an instant on the virtual clock, seconds since the epoch


def iso(seconds: float, zulu: bool = False) -> str:
    text = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).isoformat()
    return text.replace("+00:00", "Z") if zulu else text


def test_every_later_instant_in_the_stored_text_counts() -> None:
    progress = json.dumps({"started": iso(T0 - 3), "delayed": iso(T0 + 5.5)})
    record = json.dumps({"kopf.zalando.org/make": progress})  # kopf's record inside an annotation
    assert later_deadlines([record, f'"{iso(T0 + 9, zulu=True)}"', "no instant here"], T0) == [T0 + 5.5, T0 + 9]
    assert later_deadlines([f'"{iso(T0)}"'], T0) == []  # not later than the clock: answers the same from now on


def test_the_window_ends_the_second_before_the_earliest_deadline() -> None:
    stored = [f'"{iso(T0 + 5)}"', f'"{iso(T0 + 30)}"']
    assert steady_for(stored, T0, 1000) == 4  # T0+1..T0+4 are still before T0+5
    assert steady_for([f'"{iso(T0 + 4.5)}"'], T0, 1000) == 4  # T0+4 < T0+4.5 <= T0+5
    assert steady_for([f'"{iso(T0 + 1)}"'], T0, 1000) == 0
    assert steady_for([f'"{iso(T0 - 10)}"', ""], T0, 1000) == 1000  # nothing later: only the cap


def handler(fn: Any, timeout: float | None = None) -> SimpleNamespace:
    return SimpleNamespace(fn=fn, timeout=timeout)


def unused(name, patch, **_):  # type: ignore[no-untyped-def]
    patch["seen"] = name


def named(runtime, **_):  # type: ignore[no-untyped-def]
    return runtime


def started_too(name, started, **_):  # type: ignore[no-untyped-def]
    return name


def passes_on(name, **kwargs):  # type: ignore[no-untyped-def]
    return unused(name, **kwargs)


def closes_over(name, *args, **kwargs):  # type: ignore[no-untyped-def]
    return lambda: kwargs


def looks_at_locals(name, **_):  # type: ignore[no-untyped-def]
    return locals()


def test_a_handler_sees_the_time_only_through_what_it_can_read() -> None:
    assert not handler_sees_time(handler(unused))
    assert handler_sees_time(handler(unused, timeout=60))  # kopf compares its runtime with it
    for fn in (named, started_too, passes_on, closes_over, looks_at_locals):
        assert handler_sees_time(handler(fn)), fn.__name__
    assert handler_sees_time(handler(functools.partial(unused, "x")))  # not a plain function: taken to see it
    assert handler_sees_time(SimpleNamespace(timeout=None))  # no function at all
