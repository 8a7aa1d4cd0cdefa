"""Result JSON without what changes from run to run, for tests that compare two runs' output."""

from __future__ import annotations

#: timings, and the work counts that say how much each process did rather than what was found (the
#: reduction's fully expanded states by cause, ``global_steps``, are a property of the graph: kept)
VOLATILE = frozenset({"elapsed_seconds", "states_per_second", "started_at", "reconciles", "memo_hits",
                      "memo_hit_rate", "rate"})


def stable(value: object, volatile: frozenset[str] = VOLATILE) -> object:
    if isinstance(value, dict):
        return {k: stable(v, volatile) for k, v in value.items() if k not in volatile}
    if isinstance(value, list):
        return [stable(v, volatile) for v in value]
    return value
