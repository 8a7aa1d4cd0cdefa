"""Durations as people write them in YAML: ``500ms``, ``30s``, ``10m``, ``1h30m``, or plain seconds."""

from __future__ import annotations

import re

_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|h|m|s)")
_WHOLE = re.compile(r"^(?:[0-9]+(?:\.[0-9]+)?(?:ms|h|m|s))+$")
_NUMBER = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


#: the longest duration accepted (timers and budgets beyond a year are typos, and overflow OS timeouts)
MAX_SECONDS = 366 * 86400


def parse_duration(value: object) -> float:
    """Seconds; raises ValueError with the reason for anything else (booleans included)."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and _NUMBER.match(value.strip()):
        seconds = float(value.strip())  # "30" from a command line: seconds
    elif isinstance(value, str) and _WHOLE.match(value.strip()):
        seconds = sum(float(n) * _UNIT[unit] for n, unit in _PART.findall(value.strip()))
    else:
        raise ValueError(f"{value!r} is not a duration (e.g. 500ms, 30s, 10m, 1h30m, or a number of seconds)")
    if not seconds > 0 or seconds == float("inf"):
        raise ValueError(f"a duration must be greater than zero, got {value!r}")
    if seconds > MAX_SECONDS:
        raise ValueError(f"{value!r} is longer than {MAX_SECONDS // 86400} days: surely not meant")
    return seconds
