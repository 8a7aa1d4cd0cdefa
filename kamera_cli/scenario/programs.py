"""The keys of a program, sweep or event handler controller (docs/scenario.md, "Programs").

Why a module of its own: these shapes have no reconcile wiring, so the keys that only make sense
for a reconciler are refused here, each with a located message, before the controller is built.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

#: (key, message, hint) -> None: records a problem at the controller's key
Report = Callable[[str, str, str], None]

_ONE_SHAPE = "a controller is a reconciler (entrypoint), a kopf operator, a program or a handler"
_NOT_PER_OBJECT = "a program is not called per object: list the kinds it watches in 'watches'"


def program_key_problems(raw: Mapping[str, Any], report: Report) -> None:
    """Report every key of a ``program:``/``handler:`` controller that cannot go with it."""
    shape = "program" if "program" in raw else "handler"
    for key, why in (("entrypoint", _ONE_SHAPE), ("kopf", _ONE_SHAPE), ("for", _NOT_PER_OBJECT),
                     ("owns", _NOT_PER_OBJECT)):
        if key in raw:
            report(key, f"{key!r} cannot be combined with {shape!r}", why)
    if "program" in raw and "handler" in raw:
        report("handler", "'handler' cannot be combined with 'program'",
               "a program's main() or an event handler handle(event_type, obj): choose one")
    if "every" in raw and "program" not in raw:
        report("every", "'every' is a sweep's period: it needs 'program'",
               "write program: sweep.py:main with every: 30s")
    if "schedule" in raw and "every" in raw:  # 'schedule' without 'program', 'firstTick' without 'every': the schema's
        report("schedule", "'schedule' cannot be combined with 'every'",
               "a sweep ticks every period or at the points of a cron schedule: choose one")
