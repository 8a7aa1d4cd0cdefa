"""Whether an object passes a kopf handler's metadata filters, without a real event.

Why: every write's triggers ask each timer, daemon and the event processing whether a stored object
concerns them; a step started for an object no handler selects would be a step where kopf does
nothing, multiplying states. The answer follows kopf's own ``registries.match`` (labels, annotations,
``when=``) and errs towards "matches", so that kopf's own matching in the step has the last word.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, cast

__all__ = ["metadata_matches"]

#: ``metadata_matches`` answers by (handler, object) identity: every write's triggers ask each timer,
#: daemon and the event processing about the same stored objects again and again (a search's memo
#: replays share them), and building kopf's body kwargs was a fifth of a kopf search's time
_MATCHED: dict[tuple[int, int], tuple[Any, Mapping[str, Any], bool]] = {}


def metadata_matches(handler: Any, obj: Mapping[str, Any], logger: Any = None) -> bool:
    """``_metadata_matches``, remembered per (handler, object) when no logger is given (see ``_MATCHED``)."""
    if logger is not None:
        return _metadata_matches(handler, obj, logger)
    hit = _MATCHED.get((id(handler), id(obj)))
    if hit is not None and hit[0] is handler and hit[1] is obj:
        return hit[2]
    answer = _metadata_matches(handler, obj)
    if len(_MATCHED) > 100_000:
        _MATCHED.clear()
    _MATCHED[(id(handler), id(obj))] = (handler, obj, answer)
    return answer


def _metadata_matches(handler: Any, obj: Mapping[str, Any], logger: Any = None) -> bool:
    """Whether ``obj`` passes the handler's ``labels=``/``annotations=`` filters and its ``when=``
    callback, as kopf's ``registries.match`` decides (``_matches_labels``, ``_matches_annotations``,
    ``_matches_filter_callback``), with the body kwargs kopf gives them (``causes.ResourceCause``:
    ``body``, ``spec``, ``meta``, ``status``, ``name``, ``namespace``, ``labels``, ...).  A callback that
    raises, or needs a kwarg only a real event has, is taken to match: only what surely does not match
    is left out (the tick or the event step then decides with kopf's own matching)."""
    from kopf._cogs.structs import bodies
    from kopf._core.intents import filters

    body = bodies.Body(cast(Any, dict(obj)))
    kwargs = {"body": body, "spec": body.spec, "meta": body.metadata, "status": body.status,
              "uid": body.metadata.uid, "name": body.metadata.name, "namespace": body.metadata.namespace,
              "labels": body.metadata.labels, "annotations": body.metadata.annotations,
              "logger": logger or logging.getLogger("kopf.objects")}

    def passes(check: Callable[..., Any], *args: Any) -> bool:
        try:
            return bool(check(*args, **kwargs))
        except Exception:  # a filter that cannot be evaluated here is left to kopf
            return True

    for pattern, content in ((handler.labels, body.metadata.labels), (handler.annotations, body.metadata.annotations)):
        for key, value in (pattern or {}).items():
            if value is filters.MetaFilterToken.ABSENT:
                if key in content:
                    return False
            elif value is filters.MetaFilterToken.PRESENT:
                if key not in content:
                    return False
            elif callable(value):
                if not passes(value, content.get(key)):
                    return False
            elif content.get(key) != value:
                return False
    when = getattr(handler, "when", None)
    return when is None or passes(when)
