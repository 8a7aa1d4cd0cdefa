"""How the coalescing queue keeps what a kopf object's pending work must remember (issue #26).

Why: an event that takes a pending item's place must not lose the instant a stored backoff falls
due (``retry_due``: the fingerprint holds it as seconds from now), and a timer re-armed twice before
its first tick ran counts its ``idle`` from the later change, as kopf does.
"""

from __future__ import annotations

from kamera_cli.sim.state import TIMER, WATCH, PendingItem, merge_pending


def test_an_event_in_a_retry_s_place_keeps_the_retry_s_instant() -> None:
    retry = PendingItem("op", "default", "w0", 9, TIMER, retry_due=9)
    event = PendingItem("op", "default", "w0", 7, WATCH)
    for new in ([retry, event], [event, retry]):  # whichever came first in the step's new work
        (merged,) = merge_pending((), list(new), None)
        assert (merged.ready_at, merged.source, merged.retry_due) == (7, WATCH, 9)


def test_the_retry_s_instant_counts_in_the_fingerprint_until_it_passes() -> None:
    from kamera_cli.apiserver import Snapshot
    from kamera_cli.sim.state import SimState

    event = PendingItem("op", "default", "w0", 7, WATCH)
    waiting = PendingItem("op", "default", "w0", 7, WATCH, retry_due=9)
    prints = {(clock, item.retry_due): SimState(Snapshot.empty(), (item,), clock).fingerprint(False)
              for clock in (8, 9, 10) for item in (event, waiting)}
    assert prints[(8, 9)] != prints[(8, 0)]  # one second of backoff left: not the state without it
    assert prints[(9, 9)] == prints[(9, 0)] == prints[(10, 9)]  # due: the handler runs either way


def test_a_timer_re_armed_before_its_first_tick_counts_from_the_latest_change() -> None:
    first = PendingItem("op/timer:t", "default", "w0", 5, WATCH, anchored=True)
    again = PendingItem("op/timer:t", "default", "w0", 8, WATCH, anchored=True)
    (merged,) = merge_pending((first,), [again], None)
    assert merged.ready_at == 8
    tick = PendingItem("op/timer:t", "default", "w0", 40, TIMER, woken=True, anchored=True)
    (merged,) = merge_pending((tick,), [again], None)  # a running timer's tick: the re-arm comes first
    assert (merged.ready_at, merged.woken) == (8, False)
    (merged,) = merge_pending((again,), [tick], None)  # a tick never pushes an armed one later
    assert merged.ready_at == 8
