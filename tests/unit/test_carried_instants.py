"""A kopf timer's carried retry state is fingerprinted relative to the clock (docs/semantics.md, "kopf").

Why: kopf stores the instants a failing handler started and is delayed until as absolute times and
compares them only with the clock; kept absolute in the fingerprint, two states that differ only by
when the failure happened were never merged. Relative, they are one state exactly when every
instant kept is the same distance from each state's clock — and two states whose instants are not
must stay apart.
"""

from __future__ import annotations

import json

from kamera_cli.apiserver import Snapshot
from kamera_cli.sim.state import TIMER, PendingItem, SimState, relative_instants

EPOCH = 1767225600  # 2026-01-01T00:00:00Z, the virtual clock's origin


def _carry(started: int, delayed: int, micros: int = 0) -> str:
    def at(second: int) -> str:
        minutes, seconds = divmod(second, 60)
        return f"2026-01-01T00:{minutes:02d}:{seconds:02d}.{micros:06d}+00:00"
    return json.dumps({"delayed": at(delayed), "message": "not yet", "retries": 1, "started": at(started)},
                      sort_keys=True)


def _state(clock: int, carry: str, due: int) -> SimState:
    tick = PendingItem("op/timer:tick", "default", "w0", EPOCH + due, TIMER, woken=True, carry=carry, anchored=True)
    return SimState(snapshot=Snapshot.empty(), pending=(tick,), clock=EPOCH + clock)


def test_states_a_time_shift_apart_are_one_state() -> None:
    early = _state(10, _carry(9, 16), 16)
    late = _state(25, _carry(24, 31), 31)
    assert early.fingerprint(False) == late.fingerprint(False)


def test_an_instant_at_another_distance_from_the_clock_is_another_state() -> None:
    early = _state(10, _carry(9, 16), 16)
    started_earlier = _state(25, _carry(23, 31), 31)  # the failure is one second older
    delayed_longer = _state(25, _carry(24, 32), 31)  # the retry finds kopf still sleeping
    fingerprints = {s.fingerprint(False) for s in (early, started_earlier, delayed_longer)}
    assert len(fingerprints) == 3


def test_offsets_are_exact_to_the_microsecond() -> None:
    text = '{"delayed": "2026-01-01T00:00:19.000001+00:00"}'
    assert relative_instants(text, EPOCH + 14) == '{"delayed": "@5000001us"}'
    # far from the epoch a float would round this away
    far = relative_instants('"2030-06-01T12:00:00.000001Z"', EPOCH)
    near = relative_instants('"2030-06-01T12:00:00.000002Z"', EPOCH)
    assert far != near
    assert relative_instants('{"message": "2026 is not an instant"}', EPOCH) == '{"message": "2026 is not an instant"}'
