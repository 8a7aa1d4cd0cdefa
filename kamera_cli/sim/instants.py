"""The clock a built-in reads, as a number that notes what the step compared it with.

Why: a clock-dependent built-in step may be reordered by the reduction only if its outcome is the
same at every instant it could be moved to (sim/timing.py). Running it again at each of those
instants cost most of a search's time once the window grew to what owned trees need. A built-in
only compares the time (``since + deadline < now``) and subtracts it from instants (a requeue
``since - now`` away), so handing it ``now`` as a number that records each comparison's threshold
says at once for how many later instants every comparison, and so the outcome, stays the same.
Anything else done with it (a multiplication, ``int()``, ``float()``, formatting, hashing) makes
the record *opaque*, and the step is then checked by running it again as before.
"""

from __future__ import annotations

import math
from typing import Any


class ClockLog:
    """What one step did with the time: comparison thresholds (in clock seconds), later instants
    that must stay below a requeue's due instant, and whether anything untracked happened."""

    __slots__ = ("bounds", "opaque", "thresholds")

    def __init__(self) -> None:
        self.thresholds: list[float] = []
        self.bounds: list[float] = []
        self.opaque = False

    def stable_for(self, clock: int, requeue_after: object) -> int | None:
        """How many instants after ``clock`` the step's outcome is certainly unchanged (None: unknown,
        run it again to know). A requeue must fall due at the same instant wherever the step runs:
        ``since - now`` does (its due instant is ``since``) until ``now`` reaches it."""
        if self.opaque:
            return None
        bounds = list(self.bounds)
        if requeue_after is not None:
            if not isinstance(requeue_after, Instant) or requeue_after.sign != -1 or requeue_after.log is not self:
                return None
            bounds.append(math.ceil(requeue_after.offset) - 1)
        for t in self.thresholds:
            if t == clock:
                bounds.append(clock)
            elif t > clock:
                bounds.append(math.ceil(t) - 1)
        return (int(min(bounds)) - clock) if bounds else 1 << 30


class Instant(float):
    """``sign * now + offset`` for the step's ``now``: comparisons are recorded in ``log``."""

    sign: int
    offset: float
    log: ClockLog

    def __new__(cls, value: float, sign: int, offset: float, log: ClockLog) -> Instant:
        obj = super().__new__(cls, value)
        obj.sign, obj.offset, obj.log = sign, offset, log
        return obj

    @classmethod
    def now(cls, clock: int, log: ClockLog) -> Instant:
        return cls(float(clock), 1, 0.0, log)

    def plain(self) -> float:
        return float.__float__(self)

    def _note(self, other: object) -> None:
        if isinstance(other, Instant):
            if other.log is not self.log or other.sign != self.sign:
                self.log.opaque = True
            return  # the same clock on both sides: their difference is a constant
        if isinstance(other, (int, float)):
            self.log.thresholds.append((float(other) - self.offset) * self.sign)
        else:
            self.log.opaque = True

    def _shift(self, by: object) -> Instant | None:
        if isinstance(by, (int, float)) and not isinstance(by, Instant):
            return Instant(self.plain() + by, self.sign, self.offset + by, self.log)
        return None

    def _lose(self) -> None:
        self.log.opaque = True

    # comparisons: recorded, answered as for the plain number
    def __lt__(self, other: object) -> bool:
        self._note(other)
        return float.__lt__(self, other)  # type: ignore[operator]

    def __le__(self, other: object) -> bool:
        self._note(other)
        return float.__le__(self, other)  # type: ignore[operator]

    def __gt__(self, other: object) -> bool:
        self._note(other)
        return float.__gt__(self, other)  # type: ignore[operator]

    def __ge__(self, other: object) -> bool:
        self._note(other)
        return float.__ge__(self, other)  # type: ignore[operator]

    def __eq__(self, other: object) -> bool:
        self._note(other)
        return float.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._note(other)
        return float.__ne__(self, other)

    def __bool__(self) -> bool:
        self._note(0)
        return float.__bool__(self)

    # shifts by a constant stay tracked
    def __add__(self, other: Any) -> Any:
        shifted = self._shift(other)
        return shifted if shifted is not None else self._opaque(float.__add__(self, other))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        if isinstance(other, Instant) and other.log is self.log and other.sign == self.sign:
            return self.offset - other.offset  # the same clock on both sides
        if isinstance(other, (int, float)) and not isinstance(other, Instant):
            return Instant(self.plain() - other, self.sign, self.offset - other, self.log)
        return self._opaque(float.__sub__(self, other))

    def __rsub__(self, other: Any) -> Any:
        if isinstance(other, (int, float)) and not isinstance(other, Instant):
            return Instant(other - self.plain(), -self.sign, other - self.offset, self.log)
        return self._opaque(float.__rsub__(self, other))

    def __neg__(self) -> Instant:
        return Instant(-self.plain(), -self.sign, -self.offset, self.log)

    def __pos__(self) -> Instant:
        return self

    def _opaque(self, value: Any) -> Any:
        self._lose()
        return value

    # everything else loses track of the clock
    def __hash__(self) -> int:
        self._lose()
        return float.__hash__(self)

    def __float__(self) -> float:
        self._lose()
        return self.plain()

    def __int__(self) -> int:
        self._lose()
        return int(self.plain())

    def __round__(self, ndigits: Any = None) -> Any:
        self._lose()
        return round(self.plain(), ndigits)

    def __trunc__(self) -> int:
        self._lose()
        return math.trunc(self.plain())

    def __floor__(self) -> int:
        self._lose()
        return math.floor(self.plain())

    def __ceil__(self) -> int:
        self._lose()
        return math.ceil(self.plain())

    def __abs__(self) -> float:
        self._lose()
        return abs(self.plain())

    def __str__(self) -> str:
        self._lose()
        return float.__repr__(self)

    __repr__ = __str__

    def __format__(self, spec: str) -> str:
        self._lose()
        return format(self.plain(), spec)


def _untracked(name: str) -> Any:
    base = getattr(float, name)

    def op(self: Instant, *args: Any) -> Any:
        self._lose()
        return base(self.plain(), *(a.plain() if isinstance(a, Instant) else a for a in args))

    op.__name__ = name
    return op


for _name in ("__mul__", "__rmul__", "__truediv__", "__rtruediv__", "__floordiv__", "__rfloordiv__", "__mod__",
              "__rmod__", "__divmod__", "__rdivmod__", "__pow__", "__rpow__", "as_integer_ratio", "is_integer",
              "hex", "conjugate"):
    setattr(Instant, _name, _untracked(_name))
