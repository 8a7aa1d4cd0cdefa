"""What one sandboxed call sees and leaves behind: its virtual clock, its seed, what it tried.

Why apart from the fence: these are the values callers hold (a step's clock, the attempts a report
names); the fence is the patching that fills them in. Callers import them from either module.
"""

from __future__ import annotations

import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from kamera_cli.adapters.sandbox.child_processes import ProcessAttempt

__all__ = ["NetworkAttempt", "NetworkBlocked", "SandboxRun", "StepSeed", "VirtualClock"]


class VirtualClock:
    """Seconds since the Unix epoch, as a float, that only moves when someone moves it."""

    __slots__ = ("now",)

    def __init__(self, now: float) -> None:
        self.now = float(now)

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("sleep length must be non-negative")
        self.now += seconds

    def __repr__(self) -> str:
        return f"VirtualClock({self.now!r})"


class StepSeed(bytes):
    """A step's seed that remembers whether the step drew from it.

    Why: the simulator keys the values a step draws by how many earlier steps of its request drew and
    wrote (sim/runtime.py), and a step that never drew must not be told apart by that count; the seed
    is the one thing every shape passes to the sandbox, so it carries the answer back (kopf's index
    oracle asks it too: adapters/kopf/indexing.py).
    """

    drawn: bool = False


class NetworkBlocked(ConnectionRefusedError):
    """Raised inside user code that tries to reach the network; kamera records the attempt regardless."""


@dataclass(frozen=True, slots=True)
class NetworkAttempt:
    address: str
    #: the user-visible stack at the attempt, as ``traceback.StackSummary`` lines
    stack: tuple[traceback.FrameSummary, ...]


class SandboxRun:
    """What one sandboxed call observed (filled in while it runs)."""

    __slots__ = ("_rng", "clock", "clock_reads", "network", "on_sleep", "processes", "processes_allowed", "seed")

    def __init__(self, clock: VirtualClock, seed: bytes) -> None:
        self.clock = clock
        self.seed = seed
        self.network: list[NetworkAttempt] = []
        #: processes the call tried to start while its controller may not (each refused)
        self.processes: list[ProcessAttempt] = []
        #: the controller's ``processes: allowed`` (set by the caller): starts are let through, contained
        self.processes_allowed = False
        self._rng: random.Random | None = None
        #: told of every sleep before the clock moves (a kopf daemon parks at its first sleep)
        self.on_sleep: Callable[[float], None] | None = None
        #: how often the user's code read the virtual clock or drew a random number: values that depend
        #: on the step's instant or seed, not on what it read (a program that did keeps its exact position)
        self.clock_reads = 0

    def rng(self) -> random.Random:
        """The run's generator, seeded on first use (most reconciles never draw a random number)."""
        self.clock_reads += 1
        if isinstance(self.seed, StepSeed):
            self.seed.drawn = True
        rng = self._rng
        if rng is None:
            rng = self._rng = random.Random(self.seed)
        return rng
