"""How many states of a family differ only in how far the clock has got (issue #26, kopf pairs).

Why: two kopf objects that touch nothing in common cost about 6x one (``kopf-apps-2`` against
``kopf-apps-1``), not 2x. The states that make the difference are equal up to the clock: every
pending instant the same (a timer's next tick, the instant a listed event runs at), the clock
further on because the path to them was longer. The fingerprint keeps them apart while work is
ready (docs/semantics.md, "Instants no step can see", *What is not merged, and why*). This bench
counts them and measures what a rule that merged them would need and would give:

- *classes*: the states of the search grouped by their fingerprint with every instant that stays
  fixed while the clock moves on (a request not yet due, a kopf timer's tick, an event of the
  start's listing) measured from the earliest of them: states equal up to the clock;
- ``--bound N``: at the first N expanded states with ready work and a stable timer not yet due,
  the future of all the ready work under every order (the explorer's group search, the timer
  frozen): its size, longest path and time, the bound a sound rule would need at each such state;
- ``--merged``: the same search with those states merged (every delay measured from the earliest
  pending instant while work is ready: *unsound* in general, tests/sim/test_unseen_instants.py
  shows it losing an outcome), to show what merging them could save at most, and whether each
  node that stands for states at several distances would pass the check after the search that
  docs/explorer.md sketches (``check``; partial: it does not follow the fixed instants made inside
  the node's future, and it reads the members' distances from this process). Measurement only.

``python bench/bench_clock_classes.py --only kopf-apps-2 [--scenario FILE] [--bound 12 [--within 41]]
[--merged [--rounds]]``
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_operators import FAMILIES, outcomes

from kamera_cli.explore import checker, reduction
from kamera_cli.model.scenario import Scenario
from kamera_cli.runner import Exploration, explore
from kamera_cli.scenario import load_scenario
from kamera_cli.sim.model import kube
from kamera_cli.sim.state import SimState


def _earliest_later(state: SimState) -> int | None:
    """The earliest pending instant not yet due, where work is ready (None: no such instant)."""
    later = [p.ready_at for p in state.pending if p.ready_at > state.clock]
    return min(later) if later and state.ready() else None


def up_to_clock(state: SimState) -> str:
    """The state's fingerprint with every instant that stays fixed while the clock moves on (a request
    not yet due, an anchored one: a kopf timer's tick, an event of the start's listing) measured from
    the earliest of them, and every other ready request as ready: equal for states equal up to the
    clock."""
    fixed = [p.ready_at for p in state.pending if p.ready_at > state.clock or p.anchored]
    origin = min(fixed, default=state.clock)
    h = hashlib.sha256(state.snapshot.fingerprint().encode())
    for p in state.pending:
        at = p.ready_at - origin if p.ready_at > state.clock or p.anchored else "ready"
        retry = p.retry_due - origin if p.retry_due > state.clock else ""
        h.update(f"\n{p.key}{at}|{p.stable}|{p.fresh}|{p.relist}|{p.woken}|{p.carried_from(origin)}|{retry}".encode())
    h.update(repr((state.next_action, state.faults.digest(), state.halted, state.extra, state.outcomes,
                   state.memory)).encode())
    return h.hexdigest()


def clock_classes(exploration: Exploration) -> tuple[int, int, int, int]:
    """(classes of states equal up to the clock, those of more than one state, states in them, the largest)."""
    search = exploration.search
    classes: dict[str, int] = defaultdict(int)
    for n in range(search.stats.states):
        classes[up_to_clock(search.state(n))] += 1
    multi = [size for size in classes.values() if size > 1]
    return len(classes), len(multi), sum(multi), max(multi, default=0)


@contextmanager
def merged(refused: frozenset[str] = frozenset(), bucket: int = 0) -> Iterator[dict[str, set[int]]]:
    """Every delay measured from the earliest pending instant not yet due while work is ready
    (unsound), except for states whose fingerprint so taken is ``refused`` (they keep the exact one);
    yields, per fingerprint so taken, the distances from the clock to that instant of the states it
    stood for (its members). ``bucket`` (H > 0): only where that distance is H or more, and the
    fingerprint says which multiple of H it is in (``~b<k>``), so that the check needs no table."""
    original = kube.KubeModel._seen_from
    fingerprint = kube.KubeModel.fingerprint
    members: dict[str, set[int]] = defaultdict(set)
    exact = [False]

    def coarse(model: kube.KubeModel, state: SimState) -> int | None:
        ref = None if exact[0] or model.is_converged(state) else _earliest_later(state)
        return None if ref is None or ref - state.clock < bucket else ref

    def shifted(model: kube.KubeModel, state: SimState, converged: bool) -> int | None:
        ref = None if converged else coarse(model, state)
        return ref if ref is not None else original(model, state, converged)

    def recorded(model: kube.KubeModel, state: SimState) -> str:
        if state._fp:
            return fingerprint(model, state)
        fp = fingerprint(model, state)
        ref = coarse(model, state)
        if ref is not None and bucket:
            fp = f"{fp}~b{(ref - state.clock) // bucket}"
            object.__setattr__(state, "_fp", fp)
        if fp in refused:
            object.__setattr__(state, "_fp", "")
            exact[0] = True
            try:
                return fingerprint(model, state)
            finally:
                exact[0] = False
        if ref is not None:
            members[fp].add(ref - state.clock)
        return fp

    with mock.patch.object(kube.KubeModel, "_seen_from", shifted), \
            mock.patch.object(kube.KubeModel, "fingerprint", recorded):
        yield members


def check(exploration: Exploration, members: dict[str, set[int]], failed: set[str] | None = None,
          bucket: int = 0) -> dict[str, int]:
    """Whether each node of the merged search that stands for states at different distances from
    its earliest fixed instant would pass the check docs/explorer.md sketches: from it, no cycle,
    every path ends converged or waiting for a jump to a fixed instant (an anchored request: every
    member jumps to the same instant, and is one state from there) and is shorter (in steps, one
    second each) than the nearest member's distance, and every anchored request ready at it is ready
    at every member's clock. Counts by what failed first ("passed" when nothing did); ``failed``
    gets the fingerprints of the nodes that failed. ``bucket``: the members' distances are every one
    of the node's multiple of H (its fingerprint's ``~b<k>``), and every such node is checked."""
    graph = exploration.search.graph
    longest: dict[int, int | None] = {}  # None: no bound (a cycle, a jump, a cut, a deadlock)

    def bound(node: int) -> int | None:
        stack, on_path = [(node, False)], set()
        while stack:
            n, done = stack.pop()
            if n in longest and not done:
                continue
            if done:
                on_path.discard(n)
                state = graph.state(n)
                outs = [graph.e_dst[e] for e in graph.out_range(n)]
                first = min((p.ready_at for p in state.pending), default=None)
                if not outs:
                    longest[n] = 0 if graph.is_converged(n) else None
                elif not state.ready() and any(p.anchored and p.ready_at == first for p in state.pending):
                    longest[n] = 0  # every member jumps to that fixed instant: from there they are one
                elif not graph.is_expanded(n) or not state.ready():
                    longest[n] = None
                else:
                    after = [longest.get(d) for d in outs]
                    longest[n] = None if any(a is None for a in after) else 1 + max(a for a in after if a is not None)
                continue
            if n in on_path:
                return None  # a cycle through it
            on_path.add(n)
            stack.append((n, True))
            stack.extend((graph.e_dst[e], False) for e in graph.out_range(n) if graph.e_dst[e] not in longest)
        return longest.get(node)

    counts: dict[str, int] = defaultdict(int)
    for n in range(graph.num_states):
        fp = graph.fingerprint(n)
        if bucket:
            if "~b" not in fp:
                continue
            k = int(fp.rpartition("~b")[2])
            spread = set(range(k * bucket, (k + 1) * bucket))
        else:
            spread = members.get(fp, set())
        if len(spread) < 2:
            continue
        state = graph.state(n)
        length = bound(n)
        earliest = (_earliest_later(state) or state.clock) - max(spread)  # the earliest member's clock
        if length is None:
            why = "no bound (a cycle, another jump, a cut, a deadlock)"
        elif length >= min(spread):
            why = "longer than the nearest member's distance"
        elif any(p.anchored and p.ready_at <= state.clock and p.ready_at > earliest for p in state.pending):
            why = "an anchored request not yet ready at a member's clock"
        else:
            why = "passed"
        counts[why] += 1
        if why != "passed" and failed is not None:
            failed.add(graph.fingerprint(n))
    return dict(counts)


def rounds(scenario: Scenario, limit: int = 8, bucket: int = 0) -> Iterator[tuple[Exploration, float, dict[str, int]]]:
    """The merged search again and again, each time with the nodes the check refused before kept
    exact, until the check refuses nothing (or ``limit`` rounds): what the design would do."""
    refused: set[str] = set()
    for _ in range(limit):
        with merged(frozenset(refused), bucket) as members:
            t0 = time.perf_counter()
            exploration = explore(scenario)
            seconds = time.perf_counter() - t0
        failed: set[str] = set()
        counts = check(exploration, members, failed, bucket)
        yield exploration, seconds, counts
        if not failed - refused:
            return
        refused |= failed


@contextmanager
def bounds(limit: int, within: int) -> Iterator[list[tuple[int, int, int, bool, float]]]:
    """Collects, at the first ``limit`` states with ready work and a stable timer not yet due at most
    ``within`` seconds away, (its distance, the future's states, its longest path, complete, seconds)."""
    original = checker.persistent_subset
    seen: list[tuple[int, int, int, bool, float]] = []

    def measured(model: Any, state: Any, actions: Any, transitions: Any, successors_of: Any, fingerprint: Any,
                 *rest: Any, **kw: Any) -> Any:
        far = [p.ready_at - state.clock for p in state.pending if p.ready_at > state.clock and p.stable]
        if far and min(far) <= within and state.ready() and len(seen) < limit:
            processes = sorted({model.process(a) for a in actions}, key=repr)
            t0 = time.perf_counter()
            f = reduction._group_future(model, processes, state, list(zip(actions, transitions)), successors_of,
                                        fingerprint, {})
            size = len(f.graph.edges) if f is not None and f.graph is not None else reduction.GROUP_LIMIT
            seen.append((min(far), size, -1 if f is None else f.length, f is not None and f.complete,
                         time.perf_counter() - t0))
        return original(model, state, actions, transitions, successors_of, fingerprint, *rest, **kw)

    with mock.patch.object(checker, "persistent_subset", measured):
        yield seen


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", action="append", choices=sorted(FAMILIES), default=[])
    parser.add_argument("--scenario", action="append", type=Path, default=[], help="a scenario file as well")
    parser.add_argument("--bound", type=int, default=0, help="measure the ready work's future at N states")
    parser.add_argument("--within", type=int, default=1 << 30, help="--bound: only where the timer is this near (s)")
    parser.add_argument("--merged", action="store_true", help="also search with the clock classes merged (unsound)")
    parser.add_argument("--rounds", action="store_true", help="with --merged: again, the refused nodes exact")
    parser.add_argument("--bucket", type=int, default=0, help="with --rounds: the distance held as a multiple of H")
    args = parser.parse_args()
    for name in [*args.only, *map(str, args.scenario)]:
        with tempfile.TemporaryDirectory() as tmp:
            if name in FAMILIES:
                build, a, b = FAMILIES[name]
                scenario = load_scenario(build(Path(tmp), a, b))
            else:
                scenario = load_scenario(Path(name))
            with bounds(args.bound, args.within) as seen:
                t0 = time.perf_counter()
                exploration = explore(scenario)
                seconds = time.perf_counter() - t0
            classes, multi, inside, largest = clock_classes(exploration)
            print(f"{name}: {exploration.search.stats.states:,} states, {seconds:.1f} s, "
                  f"{exploration.result.verdict.value}; {classes:,} classes equal up to the clock, "
                  f"{multi:,} of more than one state ({inside:,} states, the largest {largest})", flush=True)
            for distance, size, length, complete, took in seen:
                print(f"  timer {distance} s away: the ready work's future {size:,} states, longest path "
                      f"{'cut' if not complete else length}, {took:.2f} s", flush=True)
            if args.merged:
                with merged() as members:
                    t0 = time.perf_counter()
                    coarse = explore(scenario)
                    seconds = time.perf_counter() - t0
                same = outcomes(coarse) == outcomes(exploration)
                print(f"  merged (unsound, measurement only): {coarse.search.stats.states:,} states, "
                      f"{seconds:.1f} s, {coarse.result.verdict.value}, the same outcomes: {same}; "
                      f"nodes standing for several distances, "
                      f"by the check: {check(coarse, members)}", flush=True)
            if args.merged and args.rounds:
                for i, (again, seconds, counts) in enumerate(rounds(scenario, bucket=args.bucket), 1):
                    same = outcomes(again) == outcomes(exploration)
                    print(f"  round {i}: {again.search.stats.states:,} states, {seconds:.1f} s, "
                          f"{again.result.verdict.value}, the same outcomes: {same}; by the check: {counts}",
                          flush=True)


if __name__ == "__main__":
    main()
