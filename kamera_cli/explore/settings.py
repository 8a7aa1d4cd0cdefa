"""How a search is run: its bounds, strategy, reduction, processes and callbacks, as one value.

Why one value: the serial search, the split search's coordinator, its pool and every worker need
the same handful of settings; passed one by one they made parameter lists of up to 13 entries that
had to stay in step by position. A remote worker builds the same value from the same scenario, and
the coordinator trusts that it did (``serve_search``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from kamera_cli.explore.model import ExploreError, Model, Property
from kamera_cli.explore.reduction import NONE, PERSISTENT, Reducible, Reduction
from kamera_cli.explore.result import Progress, Strategy

S = TypeVar("S")
A = TypeVar("A")


@dataclass(frozen=True, slots=True)
class SearchSettings(Generic[S]):
    """Everything ``search`` takes besides the model (see ``checker.search`` for each field).

    ``properties`` and ``remote`` are kept as tuples, so a settings value can be shared freely.
    """

    properties: Sequence[Property[S]] = ()
    strategy: Strategy = "bfs"
    max_depth: int = 50
    max_states: int = 100_000
    timeout: float | None = None
    on_progress: Callable[[Progress], None] | None = None
    stop_on_first: bool = False
    expand_converged: bool = True
    should_stop: Callable[[], object] | None = None
    reduction: Reduction = PERSISTENT
    seed: int = 0
    walks: int = 100
    workers: int = 1
    worker_report: Callable[[], object] | None = None
    remote: Sequence[Any] = ()
    #: False: a serial breadth-first search lets go of each state once it is expanded (initial and
    #: converged states excepted) and of each edge's label (those of steps with findings excepted), and
    #: derives them again from their parent paths when read (``rederive.py``)
    keep_states: bool = True
    #: wraps each such re-derivation (the caller's: e.g. keep its counters as the search left them)
    rederive_around: Callable[[Callable[[], list[Any]]], list[Any]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "properties", tuple(self.properties))
        object.__setattr__(self, "remote", tuple(self.remote))

    @property
    def drops_states(self) -> bool:
        """Whether the search lets go of expanded states and of edge labels (``keep_states``): only a
        serial breadth-first search does (a split one keeps them in its workers)."""
        return not self.keep_states and self.strategy == "bfs" and self.workers <= 1

    def check(self) -> None:
        """Refuse settings no search can run with (an ``ExploreError`` naming the setting)."""
        if self.reduction not in (PERSISTENT, NONE):
            raise ExploreError(f"unknown reduction {self.reduction!r} (expected 'persistent' or 'none')")
        if self.strategy not in ("bfs", "dfs", "random"):
            raise ExploreError(f"unknown search strategy {self.strategy!r} (expected 'bfs', 'dfs' or 'random')")
        if self.walks < 1:
            raise ExploreError(f"walks must be at least 1, got {self.walks}")
        if self.max_depth < 0:
            raise ExploreError(f"max depth must be at least 0, got {self.max_depth}")
        if self.max_states < 1:
            raise ExploreError(f"max states must be at least 1, got {self.max_states}")
        if self.timeout is not None and not self.timeout > 0:
            raise ExploreError(f"timeout must be a positive number of seconds, got {self.timeout}")
        if self.workers < 1:
            raise ExploreError(f"workers must be at least 1, got {self.workers}")
        if self.remote and (self.strategy != "bfs" or self.workers <= len(self.remote)):
            raise ExploreError("remote workers need a breadth-first search with more workers than remote ones")

    def reducer(self, model: Model[S, A]) -> Reducible[S, A] | None:
        """The model as a ``Reducible`` when this search reduces and the model reports footprints."""
        return model if self.reduction == PERSISTENT and isinstance(model, Reducible) else None
