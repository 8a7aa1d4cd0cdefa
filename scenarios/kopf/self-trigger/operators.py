"""Two versions of a kopf operator that records when it last handled a Widget.

``buggy`` writes the timestamp into an annotation from an ``on.update`` handler. kopf's diff base
(the last-handled configuration) covers metadata annotations, so the handler's own write is a new
change: another update cause, another timestamp, forever — kopf's well-known self-triggering loop.
``fixed`` keeps the timestamp in the handler's result, which kopf stores in ``status``, outside
what it diffs.
"""

import datetime

import kopf


def stamp_buggy(patch, **_):
    patch.metadata.annotations["example.com/last-handled"] = datetime.datetime.now().isoformat()


def stamp_fixed(**_):
    return {"lastHandled": datetime.datetime.now().isoformat()}


def created(**_):
    return "created"


def register(update_fn):
    kopf.on.create("example.com", "v1", "widgets")(created)
    kopf.on.update("example.com", "v1", "widgets")(update_fn)
