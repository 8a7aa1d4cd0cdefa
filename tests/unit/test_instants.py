"""The clock a built-in reads records what it was compared with (sim/instants.py).

Each property is checked against the brute force it replaces: running the comparison at every
later instant and seeing when its answer first changes.
"""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from kamera_cli.sim.instants import ClockLog, Instant

OPS = ["<", "<=", ">", ">=", "==", "!="]


def _compare(left: object, op: str, right: object) -> bool:
    return bool({"<": lambda: left < right, "<=": lambda: left <= right, ">": lambda: left > right,  # type: ignore[operator]
                 ">=": lambda: left >= right, "==": lambda: left == right,  # type: ignore[operator]
                 "!=": lambda: left != right}[op]())


@given(clock=st.integers(0, 50), shift=st.floats(-60, 60).map(lambda f: round(f * 2) / 2),
       sign=st.sampled_from([1, -1]), op=st.sampled_from(OPS), other=st.integers(-80, 80),
       now_left=st.booleans())
def test_a_comparison_stays_the_same_for_as_long_as_the_record_says(
        clock: int, shift: float, sign: int, op: str, other: int, now_left: bool) -> None:
    def expression(at: int, log: ClockLog) -> object:
        now = Instant.now(at, log)
        return now + shift if sign == 1 else shift - now

    def answer(at: int) -> bool:
        value = expression(at, ClockLog())
        return _compare(value, op, other) if now_left else _compare(other, op, value)

    log = ClockLog()
    value = expression(clock, log)
    first = _compare(value, op, other) if now_left else _compare(other, op, value)
    stable = log.stable_for(clock, None)
    assert stable is not None and not log.opaque
    assert first == answer(clock)
    for k in range(0, min(stable, 200) + 1):
        assert answer(clock + k) == first, (k, stable)


def test_a_requeue_until_an_instant_is_due_there_wherever_the_step_runs() -> None:
    log = ClockLog()
    now = Instant.now(100, log)
    since, deadline = 50.0, 600
    past = since + deadline < now
    requeue = max(1.0, since + deadline - now + 1)
    assert not past and isinstance(requeue, Instant)
    stable = log.stable_for(100, requeue)
    assert stable is not None and 500 <= stable < 551
    due = {at + max(1, math.ceil(since + deadline - at + 1)) for at in range(100, 100 + stable + 1)}
    assert due == {651}


def test_a_constant_delay_or_an_untracked_use_leaves_it_to_running_again() -> None:
    log = ClockLog()
    now = Instant.now(10, log)
    assert log.stable_for(10, 30.0) is None  # due at now + 30: a different instant at every instant
    _ = now * 2
    assert log.opaque and log.stable_for(10, None) is None
    for use in (float, int, str, hash, math.floor, math.ceil, round):
        other = ClockLog()
        use(Instant.now(10, other))  # type: ignore[operator]
        assert other.opaque, use


def test_the_difference_of_two_readings_is_a_plain_number() -> None:
    log = ClockLog()
    start = Instant.now(7, log) - 5
    elapsed = Instant.now(7, log) - start
    assert elapsed == 5 and not isinstance(elapsed, Instant) and not log.opaque
    assert log.stable_for(7, None) == 1 << 30
