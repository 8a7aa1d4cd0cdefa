"""What a checked system must provide, and what may be checked about it.

Why a Protocol: the explorer is generic. The Kubernetes simulation (``sim/``) implements ``Model``;
the tests implement it with counters and hand-written graphs. Nothing here knows what a state is
beyond its fingerprint, so the same search, bounds and cycle analysis serve every model.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, Protocol, TypeVar

from kamera_cli.errors import UsageError

S = TypeVar("S")
A = TypeVar("A")

PropertyKind = Literal["always", "converged"]
ALWAYS: PropertyKind = "always"
CONVERGED: PropertyKind = "converged"


class ExploreError(UsageError):
    """The explorer was asked for something it cannot do (an unknown strategy, a negative bound).

    A ``UsageError`` because bounds usually come from the command line; the message names the value.
    """


@dataclass(frozen=True, slots=True)
class Footprint:
    """What one step touched, as opaque tokens the model chooses.

    ``reads``: what the step's outcome depends on. ``writes``: what it changed. ``marks``: extra
    tokens a write shows to readers only (kamera: the list query a new object appears in), so two
    writers of different objects do not conflict through them. ``wakes``: processes whose pending
    work the step creates or changes.
    """

    process: Hashable
    reads: frozenset[Hashable] = frozenset()
    writes: frozenset[Hashable] = frozenset()
    marks: frozenset[Hashable] = frozenset()
    wakes: frozenset[Hashable] = frozenset()
    #: the step commutes as described only with runs of fewer than this many other steps (a step
    #: whose outcome depends on the time it runs at: kamera's clock-comparing built-ins); None: any
    window: int | None = None

    def union(self, other: Footprint) -> Footprint:
        window = self.window if other.window is None else other.window if self.window is None else \
            min(self.window, other.window)
        return Footprint(self.process, self.reads | other.reads, self.writes | other.writes,
                         self.marks | other.marks, self.wakes | other.wakes, window)

    def conflicts(self, other: Footprint) -> bool:
        """Dependent: one writes what the other reads or writes, or one wakes the other's process."""
        if other.process in self.wakes or self.process in other.wakes:
            return True
        if self.writes & other.writes:
            return True
        if (self.writes or self.marks) and other.reads and not (self.writes | self.marks).isdisjoint(other.reads):
            return True
        return bool((other.writes or other.marks) and self.reads
                    and not (other.writes | other.marks).isdisjoint(self.reads))


#: a transition's footprint and cause, worked out when first asked for (``Transition.settle``)
Settle = Callable[[], tuple[Footprint | None, str]]


@dataclass(frozen=True, slots=True)
class Transition(Generic[S]):
    """The outcome of taking one action.

    ``label`` says what the step did (the model's business; kept on the edge for the story).
    ``findings`` are problems observed during the step, e.g. a controller exception. A finding may
    carry a ``key`` attribute (a string, or a method returning one) that says which findings are the
    same problem; otherwise ``repr(finding)`` is the key. ``footprint`` is what the step touched,
    for partial-order reduction (``None``: unknown, the step is dependent on every other);
    ``cause`` says why a step has none (counted by cause in ``SearchStats.global_causes``, so a
    user sees what made the search fall back to full expansion).

    ``settle``: a model whose footprints cost work of their own (kamera runs a clock-reading step
    again at later instants to find its window) may leave both to be worked out on first use, and a
    reducible model's ``footprint`` then reads them through ``settled()``. Many transitions are never
    asked: a state with one enabled step is not reduced, and a step into a state already seen
    passes no future on. The answer is a function of the step alone, so asking later gives what
    asking at once would have.
    """

    state: S
    label: object = None
    findings: tuple[object, ...] = ()
    footprint: Footprint | None = None
    cause: str = ""
    settle: Settle | None = field(default=None, compare=False, repr=False)

    def settled(self) -> Footprint | None:
        """The footprint (``cause`` is set too), worked out now if the model left it for later."""
        work = self.settle
        if work is not None:
            footprint, cause = work()
            # a value fixed when the step was taken, computed once: not a change of the transition
            object.__setattr__(self, "footprint", footprint)
            object.__setattr__(self, "cause", cause)
            object.__setattr__(self, "settle", None)
        return self.footprint


class Model(Protocol[S, A]):
    """A transition system the explorer can search.

    Contract: ``actions`` returns the enabled actions in a deterministic order; ``successor`` is a
    function of (state, action); ``fingerprint`` is a stable digest (equal states, equal digests, in
    any process), never based on ``hash()``. ``is_converged`` marks the states where the system is
    done; a converged state may still have actions (they are explored too).
    """

    def initial_states(self) -> Sequence[S]: ...

    def actions(self, state: S) -> Sequence[A]: ...

    def successor(self, state: S, action: A) -> Transition[S]: ...

    def fingerprint(self, state: S) -> str: ...

    def is_converged(self, state: S) -> bool: ...


class Portable(Protocol[S]):
    """What a model adds to ``Model`` when a state alone is not enough to go on from in another process.

    A parallel search ships states between processes; by default it pickles them. A model whose
    states point at process-local data (kamera's programs keep their input logs by digest, outside
    the state) packs that data with the state, and ``unpack`` puts it back in the receiving process.
    """

    def pack(self, state: S) -> bytes: ...

    def unpack(self, blob: bytes) -> S: ...


def pack_state(model: object, state: object) -> bytes:
    """``model.pack(state)`` for a ``Portable`` model, else the state pickled."""
    pack = getattr(model, "pack", None)
    blob: bytes = pack(state) if pack is not None else pickle.dumps(state, protocol=pickle.HIGHEST_PROTOCOL)
    return blob


def unpack_state(model: object, blob: bytes) -> Any:
    unpack = getattr(model, "unpack", None)
    return unpack(blob) if unpack is not None else pickle.loads(blob)


@dataclass(frozen=True, slots=True)
class Tallied:
    """A predicate's answer with something to count: ``detail`` is the answer (``None``: holds),
    ``note`` goes to the property's ``tally`` — once per distinct state judged, in the process that
    builds the graph. Why not count inside the predicate: a parallel search evaluates predicates in
    its workers, where some states are evaluated twice and the counts would be lost."""

    detail: object
    note: object


def unwrap(answer: object, tally: Callable[[object], None] | None) -> object:
    """A predicate's answer as the search judges it (a ``Tallied`` note handed to ``tally``)."""
    if isinstance(answer, Tallied):
        if tally is not None:
            tally(answer.note)
        return answer.detail
    return answer


@dataclass(frozen=True, slots=True)
class Property(Generic[S]):
    """A named check over states.

    The predicate returns ``None`` when the property holds and a detail (a message, a list of
    offending nodes, anything the caller wants back) when it is violated. ``always`` properties are
    checked at every reachable state, initial states included; ``converged`` ones at every distinct
    converged state.

    ``observes`` tells partial-order reduction which written tokens (``Footprint.writes`` and
    ``marks``) can change the predicate's answer; ``None`` means any write can. A property must not
    depend on anything a step changes without reporting it in its footprint. ``tally`` receives the
    notes of ``Tallied`` answers (see there).
    """

    name: str
    kind: PropertyKind
    predicate: Callable[[S], object]
    observes: Callable[[Hashable], bool] | None = None
    tally: Callable[[object], None] | None = None

    def __post_init__(self) -> None:
        if self.kind not in (ALWAYS, CONVERGED):
            raise ExploreError(f"property {self.name!r}: kind must be 'always' or 'converged', not {self.kind!r}")

    @staticmethod
    def always(name: str, predicate: Callable[[S], object]) -> Property[S]:
        return Property(name, ALWAYS, predicate)

    @staticmethod
    def converged(name: str, predicate: Callable[[S], object]) -> Property[S]:
        return Property(name, CONVERGED, predicate)
