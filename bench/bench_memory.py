"""Benchmark: memory per explored state.

Run: python bench/bench_memory.py [--requests 8] [--small 3000 --large 9000] [--only NAME]

Traces the Python heap (tracemalloc) during searches and prints the peak divided by the states
explored, two ways: with every state kept (what the library's ``explore`` returns) and with expanded
states let go of and derived again when read (what ``kamera check`` does: ``Overrides.keep_states``).

Two kinds of family:

* complete searches of small synthetic families: independent requests with and without the
  reduction (3^N states, every edge a memo replay), and 8 controllers sharing one ConfigMap (many
  versions of one object);
* issue #26's operator families (WebApps owning Deployments with the built-ins, owned children, a
  kopf timer over namespaces, a program with a watch thread and a worker thread) searched *without*
  the reduction and cut at two sizes. Reduced, they take a few hundred states, and their peak is the
  start-up's (loaded code, first reconciles, caches), not the states'; what a state costs as a search
  grows is the difference between the two cuts' peaks over the difference in states ("marginal"). A
  family whose unreduced search ends below the smaller cut (owned-6: 729 states) shows its peak over
  its states, start-up included; owned-8 (6,561 states) and owned-6x2 (owned-6 with two objects of
  each kind, 3^12 states) are the same shape large enough for the windows, and their marginal is
  what a state of that shape costs.

Each cut runs in a process of its own (``--apart``), so that what one search leaves in the
process-wide caches is neither counted nor missed in the next one's peak.

Tracing slows the search several-fold; the times printed are traced times, for comparison only.
``--seconds`` adds what a change must not slow down: the untraced CPU seconds of the larger cut's
search with states let go of (the best of ``--repeat`` runs). ``--dropped-only`` leaves out the
column of states kept (the search ``kamera check`` runs is the other one).

Why two windows: the bounded caches (canonical texts, fingerprint members, memo digests) fill up over
the first few thousand states and then stop growing, so a marginal figure over a window where they
are still filling (2,000→6,000) overstates what each state costs a long search; one over a later
window (``--small 10000 --large 30000``) is closer to it. Report both.

``--live``: the same windows without tracemalloc, which slows a search several-fold (a traced
30,000-state search took over half an hour on the shared machine). Each cut is searched untraced in a
process of its own; at its end, after ``gc.collect()``, the live heap is read from the allocators'
own counters: pymalloc's bytes in allocated blocks (``sys._debugmallocstats``) plus what glibc's
``malloc`` has handed out (``mallinfo2``: objects over 512 bytes, and C extensions). It is the heap
*at the end* of the search, not tracemalloc's peak during it, and it counts blocks as allocated
(rounded up to pymalloc's 16-byte classes, with malloc's chunk headers), not bytes as requested; the
peak RSS of the process is printed beside it (what a user sees: it includes the interpreter, freed
arenas not returned, and the peak). ``--validate`` prints, for the traced cuts, tracemalloc's heap
at the end as well, to compare the three on the same window.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import resource
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_memo import scenario as shared_configmap  # noqa: E402
from bench_reduction import independent_requests  # noqa: E402
from operator_families import KINDS, kopf_timer, owned_children, owned_requests, seed_entry, webapps  # noqa: E402

from kamera_cli.model.scenario import Scenario  # noqa: E402
from kamera_cli.runner import Overrides, explore  # noqa: E402
from kamera_cli.scenario import load_scenario  # noqa: E402


def _program(folder: Path, _a: int, _b: int) -> Path:
    """bench/scenarios/program-watch-worker (a watch loop handing pods to a worker thread), as it is."""
    return ROOT / "bench" / "scenarios" / "program-watch-worker" / "scenario.yaml"


def _owned_twice(folder: Path, k: int, _b: int) -> Path:
    """owned-K with two objects of each kind (3^(2K) states): the same shape, large enough for both windows."""
    path = owned_children(folder, k)
    text = path.read_text()
    more = "".join(seed_entry(kind, "yours") for kind, _ in KINDS[:k])
    path.write_text(text.replace("  controllers:\n", more + "  controllers:\n", 1))
    return path


OPERATORS: dict[str, tuple[Callable[[Path, int, int], Path], int, int]] = {
    "webapps-2-1": (webapps, 2, 1),
    "webapps-2-2": (webapps, 2, 2),
    "owned-6": (owned_children, 6, 0),
    "owned-8": (owned_children, 8, 0),
    "owned-6x2": (_owned_twice, 6, 0),
    "owned-requests-10": (owned_requests, 10, 0),
    "kopf-timer-5": (kopf_timer, 5, 0),
    "program-watch-worker": (_program, 0, 0),
}


def measure(scenario: Scenario, keep: bool) -> tuple[int, bool, float, float]:
    """(states, complete, peak bytes, traced seconds) of one search."""
    states, complete, peak, elapsed, _ = _traced(scenario, keep, collect=False)
    return states, complete, peak, elapsed


def _traced(scenario: Scenario, keep: bool, collect: bool) -> tuple[int, bool, float, float, float]:
    """(states, complete, peak, seconds, heap at the end) of one traced search (``collect``: after
    ``gc.collect()``)."""
    explore(replace(scenario, explore=replace(scenario.explore, max_states=50)))  # imports, first runs
    gc.collect()
    tracemalloc.start()
    started = time.perf_counter()
    exploration = explore(scenario, overrides=Overrides(keep_states=keep))
    elapsed = time.perf_counter() - started
    if collect:
        gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return exploration.result.stats.states, exploration.search.complete, float(peak), elapsed, float(current)


class _MallInfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]


def live_heap() -> int:
    """Bytes allocated now: pymalloc's allocated blocks plus glibc malloc's in-use and mmapped chunks
    (pymalloc's arenas are mmapped by CPython itself, so they are in neither malloc figure)."""
    with tempfile.TemporaryFile() as out:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()
    blocks = next(int(line.split("=")[1].replace(",", "")) for line in text.splitlines()
                  if line.startswith("# bytes in allocated blocks"))
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = _MallInfo2
    info = libc.mallinfo2()
    return blocks + int(info.uordblks) + int(info.hblkhd)


def measure_live(scenario: Scenario, keep: bool) -> tuple[int, bool, float, float, float]:
    """(states, complete, peak RSS bytes, seconds, live heap bytes at the end) of one untraced search."""
    explore(replace(scenario, explore=replace(scenario.explore, max_states=50)))  # imports, first runs
    gc.collect()
    started = time.perf_counter()
    exploration = explore(scenario, overrides=Overrides(keep_states=keep))
    elapsed = time.perf_counter() - started
    gc.collect()
    live = live_heap()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return exploration.result.stats.states, exploration.search.complete, float(rss), elapsed, float(live)


def measure_end(scenario: Scenario, keep: bool) -> tuple[int, bool, float, float, float]:
    """``measure`` and tracemalloc's heap at the end of the search (after ``gc.collect()``)."""
    return _traced(scenario, keep, collect=True)


def measure_apart(name: str, states: int, keep: bool, how: str = "traced") -> tuple[int, bool, float, float, float]:
    """``measure`` of family ``name`` cut at ``states``, in a process of its own. In one process the
    second search starts with the caches the first one filled (allocated before tracing started, so
    not counted, and emptied wholesale at other moments), and the figure depended on what ran before:
    owned-6 came to 3.02 KiB per state in the bench and 3.53 alone. ``how``: "traced" (the fifth
    figure is 0), "end" (``measure_end``) or "live" (``measure_live``)."""
    out = subprocess.run([sys.executable, __file__, "--apart", name, str(states), "keep" if keep else "drop", how],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]), out[1] == "True", float(out[2]), float(out[3]), float(out[4]) if len(out) > 4 else 0.0


def _apart(name: str, states: int, keep: bool, how: str) -> None:
    build, a, b = OPERATORS[name]
    with tempfile.TemporaryDirectory() as tmp:
        scenario = load_scenario(build(Path(tmp), a, b))
        cut = replace(scenario, explore=replace(scenario.explore, reduction="none", max_states=states,
                                                timeout_seconds=3600))
        measured = {"live": measure_live, "end": measure_end, "traced": measure}[how]
        print(*measured(cut, keep))


def cpu_seconds(scenario: Scenario, repeat: int) -> float:
    """Untraced CPU seconds of one search with states let go of (the best of ``repeat``)."""
    best = float("inf")
    for _ in range(repeat):
        gc.collect()
        started = time.process_time()
        explore(scenario, overrides=Overrides(keep_states=False))
        best = min(best, time.process_time() - started)
    return best


def row(label: str, scenario: Scenario) -> None:
    cells = []
    for keep in (True, False):
        states, complete, peak, elapsed = measure(scenario, keep)
        cells.append(f"{peak / 1024 / states:>9.2f} {peak / 2**20:>8.1f} {elapsed:>7.1f}")
    print(f"{label:42} {states:>8,} {'yes' if complete else 'cut':>5}  " + "   ".join(cells), flush=True)


def marginal(label: str, scenario: Scenario, small: int, large: int, keeps: tuple[bool, ...],
             repeat: int, how: str = "traced") -> None:
    """One row: KiB per state between the two cuts. With ``how`` "end" a second figure from
    tracemalloc's heap at the end of each cut; with "live" the live heap at the end (untraced) and
    the peak RSS instead of tracemalloc's peak."""
    def cut(states: int) -> Scenario:
        return replace(scenario, explore=replace(scenario.explore, reduction="none", max_states=states,
                                                 timeout_seconds=3600))

    def per_state(a: float, b: float) -> float:
        # a family whose unreduced search ends below the larger cut: its figure over its states instead
        return b / 1024 / s2 if s2 <= s1 else (b - a) / 1024 / (s2 - s1)

    cells = []
    s1 = s2 = 0
    done = False
    for keep in keeps:
        runs = [measure_apart(label, states, keep, how) for states in (small, large)]
        (s1, _, p1, _, e1), (s2, done, p2, t2, e2) = runs
        cells.append(f"{per_state(p1, p2):>9.2f} {p2 / 2**20:>8.1f} {t2:>7.1f}")
        if how != "traced":
            cells.append(f"{per_state(e1, e2):>9.2f} {e2 / 2**20:>8.1f}")
    if repeat:
        cells.append(f"{cpu_seconds(cut(large), repeat):>9.2f}")
    states = f"{s2:,} (all)" if s2 <= s1 and done else f"{s1:,}→{s2:,}"
    print(f"{label:42} {states:>14}  " + "   ".join(cells), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--small", type=int, default=3000, help="the smaller cut of the operator families")
    parser.add_argument("--large", type=int, default=9000, help="the larger cut of the operator families")
    parser.add_argument("--only", action="append", help="run only these rows (by label prefix)")
    parser.add_argument("--dropped-only", action="store_true", help="only the searches letting states go")
    parser.add_argument("--seconds", action="store_true",
                        help="also the untraced CPU seconds of the larger cut (states let go of)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each untraced timing (the best counts)")
    parser.add_argument("--live", action="store_true",
                        help="untraced: the live heap at the end of each cut and the peak RSS (see above)")
    parser.add_argument("--validate", action="store_true",
                        help="traced: tracemalloc's heap at the end of each cut as well as its peak")
    parser.add_argument("--apart", nargs=4, metavar=("NAME", "STATES", "KEEP", "HOW"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.apart:
        _apart(args.apart[0], int(args.apart[1]), args.apart[2] == "keep", args.apart[3])
        return
    how = "live" if args.live else "end" if args.validate else "traced"
    keeps = (False,) if args.dropped_only else (True, False)

    def wanted(label: str) -> bool:
        return not args.only or any(label.startswith(o) for o in args.only)

    each = f"{'KiB/state':>9} {'peak MiB':>8} {'traced s':>7}"
    if how == "live":
        each = f"{'RSS KiB/st':>9} {'peak RSS':>8} {'secs':>7}   {'KiB/state':>9} {'live MiB':>8}"
    elif how == "end":
        each += f"   {'KiB/state':>9} {'end MiB':>8}"
    print(f"{'complete searches':42} {'states':>8} {'done':>5}  kept: {each}   dropped: {each}")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "requests"
        folder.mkdir()
        base = load_scenario(independent_requests(folder, args.requests))
        for reduction in ("none", "persistent"):
            label = f"{args.requests} independent requests ({reduction})"
            if wanted(label):
                row(label, replace(base, explore=replace(base.explore, reduction=reduction, max_states=2_000_000)))
        folder = Path(tmp) / "shared"
        folder.mkdir()
        shared = load_scenario(shared_configmap(folder, 8))
        label = "8 controllers sharing a ConfigMap (none)"
        if wanted(label):
            row(label, replace(shared, explore=replace(shared.explore, reduction="none")))
        columns = "".join(f"   {'kept' if keep else 'dropped'}: {each}" for keep in keeps)
        print(f"\n{'operator families, unreduced, marginal':42} {'states':>14}{columns}"
              + ("   untraced s" if args.seconds else ""))
        for name, (build, a, b) in OPERATORS.items():
            if wanted(name):
                folder = Path(tmp) / name
                folder.mkdir()
                marginal(name, load_scenario(build(folder, a, b)), args.small, args.large, keeps,
                         args.repeat if args.seconds else 0, how)


if __name__ == "__main__":
    main()
