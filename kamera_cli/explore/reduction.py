"""Partial-order reduction: at each state, expand a persistent subset of the enabled actions.

Why: independent work interleaves in every order. ``k`` controllers that each take two steps on
objects of their own reach ``3^k`` states, although every order ends in the same place. A
persistent set ``T`` at state ``s`` is a set of enabled actions such that no sequence of actions
outside ``T`` taken from ``s`` contains an action dependent on one in ``T``; exploring only ``T``
(with the conditions below) still reaches every terminal state, every reachable stuck region,
every finding and every property violation (docs/explorer.md, "Partial-order reduction").

How ``T`` is chosen, from the footprints the model reports (``Reducible``): actions belong to
*processes* (kamera: one reconcile request). A process is *free* at ``s`` when its future is known
without the others: it has one enabled action, and running it alone (its *solo run*) wakes no
other process, never reaches a step with an unknown (``None``) footprint, and ends or repeats a
state within ``SOLO_LIMIT`` steps. Because a step is a function of what it reads, a free process
behaves exactly as in its solo run as long as nothing writes what it reads. Free processes whose
solo runs conflict with another process's footprint stop being free (iterated to a fixpoint). Then
``T`` is every enabled action of the processes that are not free, or, when all are free, the
actions of the first one. Every action outside ``T`` is a step of a free process, so every path
outside ``T`` is an interleaving of solo-run prefixes, none of which touches what ``T`` reads,
writes or wakes.

Conditions kept (checked by the caller, ``checker.py``):
- visibility: when ``T`` is not everything, no action in ``T`` may write what an ``always``
  property observes, nor change whether the state is converged;
- cycle proviso: when a successor through ``T`` is not a new state, the state is expanded fully,
  so every cycle of the reduced graph holds a fully expanded state (livelocks and ignored work).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from kamera_cli.explore.model import Footprint, Transition

S = TypeVar("S")
A = TypeVar("A")
S_contra = TypeVar("S_contra", contravariant=True)
A_contra = TypeVar("A_contra", contravariant=True)

Reduction = Literal["persistent", "none"]
PERSISTENT: Reduction = "persistent"
NONE: Reduction = "none"

#: the longest solo run followed before a process is treated as having an unknown future
SOLO_LIMIT = 16


@runtime_checkable
class Reducible(Protocol[S_contra, A_contra]):
    """What a model adds to ``Model`` to be reduced.

    ``process``: the process an action belongs to (actions of one process are never reordered).
    ``footprint``: the step's footprint, or ``None`` when the step is global (time, external
    actions, anything whose effect the model cannot describe): a ``None`` among the enabled
    actions, or in a solo run, makes the state fully expanded.
    """

    def process(self, action: A_contra) -> Hashable: ...

    def footprint(self, state: S_contra, action: A_contra, transition: Transition[Any]) -> Footprint | None: ...


#: a solo run's length when it returns to a state it passed (no bound on how long it may run)
CYCLE = 1 << 30

#: the cause counted when the deferred steps could reach a pending timer's instant
TIMER_IN_REACH = "a timer falls due within the deferred steps"


def persistent_subset(model: Reducible[S, A], state: S, actions: Sequence[A],
                      transitions: Sequence[Transition[S]],
                      successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
                      fingerprint: Callable[[S], str], horizon: int | None = None,
                      causes: dict[str, int] | None = None) -> tuple[list[int], list[Footprint]] | None:
    """Indexes (into ``actions``) of a persistent set at ``state`` and every action's footprint, or
    ``None`` when the state must be expanded fully.

    ``successors_of(state, process)`` returns the process's enabled actions at ``state`` with their
    transitions. ``horizon``: how many steps can be taken from ``state`` before time alone enables
    more work (a timer falls due); ``None`` when nothing is waiting for time. ``causes`` counts why a
    state is expanded fully (a global step's ``Transition.cause``, or ``TIMER_IN_REACH``).
    """
    if len(actions) < 2:
        return None
    prints: list[Footprint] = []
    order: list[Hashable] = []
    members: dict[Hashable, list[int]] = {}
    first: dict[Hashable, Footprint] = {}
    for i, (a, t) in enumerate(zip(actions, transitions)):
        fp = model.footprint(state, a, t)
        if fp is None:
            _count(causes, t.cause or "unknown")
            return None
        prints.append(fp)
        p = model.process(a)
        if p not in members:
            order.append(p)
            members[p] = []
            first[p] = fp
        else:
            first[p] = first[p].union(fp)
        members[p].append(i)
    if len(order) < 2:
        return None
    solo: dict[Hashable, tuple[Footprint, int]] = {}
    for p in order:
        # a solo run only grows the first step's footprint, and conflicts only grow with footprints:
        # a process whose first step already conflicts with another's can never be free, so its
        # (costly) solo run is not worked out
        if len(members[p]) == 1 and not any(first[p].conflicts(first[q]) for q in order if q != p):
            run = _solo_run(model, p, transitions[members[p][0]].state, first[p], successors_of, fingerprint)
            if run is not None:
                solo[p] = run
    free = [p for p in order if p in solo]
    changed = True
    while changed:
        changed = False
        for p in list(free):
            mine = solo[p][0]
            for q in order:
                if q == p:
                    continue
                theirs = solo[q][0] if q in free else first[q]
                if mine.conflicts(theirs):
                    free.remove(p)
                    changed = True
                    break
    # Every path outside the set is made of the free processes' solo runs, so it is at most their
    # total length; time alone must not enable anything along it (a timer falling due there would
    # be a process the argument never looked at).
    if free and horizon is not None and sum(solo[p][1] for p in free) >= horizon:
        _count(causes, TIMER_IN_REACH)
        return None
    free_set = set(free)
    chosen = [p for p in order if p not in free_set] or [free[0]]
    picked = sorted(i for p in chosen for i in members[p])
    return None if len(picked) == len(actions) else (picked, prints)


def _count(causes: dict[str, int] | None, cause: str) -> None:
    if causes is not None:
        causes[cause] = causes.get(cause, 0) + 1


def _solo_run(model: Reducible[S, A], process: Hashable, after: S, footprint: Footprint,
              successors_of: Callable[[S, Hashable], tuple[list[A], list[Transition[S]]]],
              fingerprint: Callable[[S], str]) -> tuple[Footprint, int] | None:
    """The union footprint of ``process`` running alone from ``after`` (its first step taken) and
    the run's length in steps, or ``None`` when that future is not known: it wakes another
    process, branches, or runs too long."""
    if not footprint.wakes <= {process}:
        return None
    total = footprint
    seen = {fingerprint(after)}
    state = after
    for steps in range(1, SOLO_LIMIT + 1):
        acts, ts = successors_of(state, process)
        if not acts:
            return total, steps
        if len(acts) > 1:
            return None
        fp = model.footprint(state, acts[0], ts[0])
        if fp is None or not fp.wakes <= {process}:
            return None
        total = total.union(fp)
        state = ts[0].state
        key = fingerprint(state)
        if key in seen:
            return total, CYCLE  # it may go round for ever: its paths have no bound
        seen.add(key)
    return None
