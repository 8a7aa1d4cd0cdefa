"""What one step of the simulation touched, as the explorer's partial-order reduction reads it.

Why here: the explorer knows nothing of Kubernetes; it compares opaque tokens. This module turns a
reconcile's recorded regions (objects fetched or written, list queries, name counters — the same
record the memo keys on), its effective writes and the requests it enqueued into those tokens:

- an object is ``("obj", group, kind, namespace, name)`` (versions of one kind are one object);
- a list query is ``("list", group, kind, namespace)``, ``namespace`` "*" for every namespace; a write
  marks both its namespace's list and the all-namespaces list, so a new, changed or deleted object
  conflicts with every list that could show the change (selectors are ignored: coarser, still sound);
- a server counter (generateName attempts) is ``("counter", key)``, read and written;
- a request for work is the process ``("reconcile", controller, namespace, name)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

from kamera_cli.apiserver import Registry
from kamera_cli.explore import Footprint
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.labels import WriteRec
from kamera_cli.sim.memo_keys import list_scope


def process_of(controller: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    return ("reconcile", controller, namespace, name)


def object_token(ref: ObjectRef) -> tuple[str, ...]:
    return ("obj", ref.kind_ref.group, ref.kind, ref.namespace, ref.name)


def list_token(kind: KindRef, namespace: str | None) -> tuple[str, ...]:
    return ("list", kind.group, kind.kind, namespace or "*")


def step_footprint(registry: Registry, process: Hashable, regions: Sequence[tuple[Any, ...]],
                   writes: Iterable[WriteRec], listed: Iterable[tuple[KindRef, str | None]],
                   wakes: Iterable[Hashable]) -> Footprint | None:
    """The footprint of a step, or None when a region cannot be scoped (an unknown collection)."""
    reads: set[Hashable] = set()
    written: set[Hashable] = set()
    for region in regions:
        if region[0] == "obj":
            reads.add(object_token(region[1]))
        elif region[0] == "counter":
            reads.add(("counter", region[1]))
            written.add(("counter", region[1]))
        else:
            scope = list_scope(registry, region[1])
            if scope is None:
                return None
            info, namespace = scope
            reads.add(("list", info.group, info.kind, namespace or "*"))
    reads.update(list_token(kind, ns) for kind, ns in listed)
    marks: set[Hashable] = set()
    for w in writes:
        if w.refused:
            continue
        written.add(object_token(w.ref))
        marks.add(("list", w.ref.kind_ref.group, w.ref.kind, w.ref.namespace or "*"))
        marks.add(("list", w.ref.kind_ref.group, w.ref.kind, "*"))
    return Footprint(process, frozenset(reads), frozenset(written), frozenset(marks), frozenset(wakes))
