"""What a group's future depends on at a state, as one digest: the key the explorer reuses futures by.

Why: the partial-order reduction works out a unit's *future* (a search of everything the unit's
processes, and what they wake, can do alone; ``explore/reduction.py``). The search is a function of
what its steps read, so a unit met again in another interleaving, or worked out again after it aged,
has the future it had — if the state agrees on everything any step of that search can read. The
future's union footprint names exactly that (every step of the search is in it), so this module
digests, at a given state, the values of the union footprint's read tokens plus the few things a
search depends on that are no token (docs/explorer.md, "Futures reused by what they read"):

- each member process's pending request (as the fingerprint holds it: delays from the clock);
- whether work outside the group keeps the state from being quiet, or from a jump of the clock;
- the collector's and the namespace controller's work (whether there is any), the external actions'
  progress, the perturbation budgets;
- when some step of the future compared the time (its footprint has a window): the clock and the
  objects' timestamps; or, when every member is a built-in of ``SHIFTED`` (whose every comparison of
  the clock is with an instant ``_instants`` names) or an actor, only those instants' distances from
  the clock (docs/semantics.md, "Futures of built-ins keyed by distances from the clock");
- with the collector or the namespace controller in the group, what their work lists are functions
  of (``_actor_inputs``);
- under the symmetry reduction, every object generated from the same ``generateName`` as one the
  future reads (the canonical renaming orders them together).

``None`` when the future cannot be keyed: a token of a kind this module does not know, a member that
is an external action, or a program (its position lives in the framework's memory).
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from kamera_cli.apiserver import Snapshot
from kamera_cli.apiserver.storage.jsontext import canonical
from kamera_cli.apiserver.storage.snapshot import digest_text
from kamera_cli.controlplane.deployment import DeploymentController
from kamera_cli.controlplane.kubelet import Kubelet
from kamera_cli.controlplane.objects import parse_time
from kamera_cli.controlplane.replicaset import ReplicaSetController
from kamera_cli.explore import Footprint
from kamera_cli.model.objects import KindRef
from kamera_cli.sim.state import FaultBook, PendingItem, SimState

#: the built-ins that compare the clock only with the instants ``_instants`` reads (a Deployment's
#: progress deadline from its ``Progressing`` condition, a Pod's ``deletionTimestamp``; a Pod's
#: readiness only under ``minReadySeconds``, which ``_instants`` refuses), and otherwise only stamp it
SHIFTED = (DeploymentController, ReplicaSetController, Kubelet)

#: how objects are digested: as the fingerprint sees them (no step of the future compared the time),
#: with the instants ``SHIFTED`` built-ins compare as distances from the clock, or with every timestamp
#: and the clock itself
_PLAIN, _SHIFTED, _EXACT = 0, 1, 2

#: the actors a group may hold (their work lists are functions of ``_actor_inputs``)
_ACTORS = ("garbage-collector", "namespace-controller")


def group_digest(state: SimState, processes: Iterable[Hashable], footprint: Footprint, *, actor_work: bool,
                 symmetry: bool, shifted: frozenset[str] = frozenset()) -> str | None:
    """The digest of everything a future of the group ``processes`` (union footprint ``footprint``)
    depends on at ``state``, or ``None`` when it cannot say (see the module docstring).

    ``actor_work``: whether the collector or the namespace controller has work at ``state``;
    ``symmetry``: whether fingerprints rename generated names (sim/symmetry.py); ``shifted``: the
    controllers that are built-ins of ``SHIFTED``."""
    keys: set[tuple[str, str, str]] = set()
    controllers: set[str] = set()
    actors = False
    for p in processes:
        if isinstance(p, tuple) and len(p) == 3 and p[0] == "actor" and p[1] in _ACTORS:
            actors = True
            continue
        if not (isinstance(p, tuple) and len(p) == 4 and p[0] == "reconcile"):
            return None
        keys.add((str(p[1]), str(p[2]), str(p[3])))
        controllers.add(str(p[1]))
    mode = _PLAIN if footprint.window is None else _SHIFTED if controllers <= shifted else _EXACT
    found = _digest(state, keys, actors, footprint, mode, actor_work, symmetry)
    if found is _UNSHIFTED:  # an object holds an instant the shifted view cannot show
        found = _digest(state, keys, actors, footprint, _EXACT, actor_work, symmetry)
    return None if found is _UNSHIFTED else found


#: ``_digest``'s answer when an object cannot be digested in the shifted view
_UNSHIFTED = "\x01"


def _digest(state: SimState, keys: set[tuple[str, str, str]], actors: bool, footprint: Footprint, mode: int,
            actor_work: bool, symmetry: bool) -> str | None:
    memo = _memo(state)
    parts: list[str] = []
    ready_outside = unstable_outside = False
    waiting_outside: list[int] = []
    for item in state.pending:
        if item.key in keys:
            parts.append("p" + _pending_line(item, state.clock))
        else:
            unstable_outside = unstable_outside or not item.stable
            if item.ready_at <= state.clock:
                ready_outside = True
            else:
                waiting_outside.append(item.ready_at - state.clock)
    parts.append(f"o{int(unstable_outside)}{int(ready_outside)}{int(actor_work)}")
    if not ready_outside:  # with nothing else ready, when the clock jumps depends on the others' timers
        parts.append("w" + ",".join(map(str, sorted(waiting_outside))))
    # not the steps since the last action: only an action due after a number of steps reads them, and
    # with one every step is global (no future is worked out)
    parts.append(f"a{state.next_action}:{state.halted}:{state.faults.digest()}")
    if mode == _EXACT:
        parts.append(f"c{state.clock}")
    if actors:
        parts.append("g" + state.snapshot.derived(_ACTOR_INPUTS, _actor_inputs))
    for token in sorted(footprint.reads, key=repr):
        found = memo.values.get((token, mode, symmetry), "")
        if not found:
            found = memo.values[(token, mode, symmetry)] = _token_value(state, memo.kinds, token, mode, symmetry,
                                                                       memo.fates) or "\x00"
        if found == "\x00":
            return None
        if _UNSHIFTED in found:  # (JSON text escapes control characters: only ``_text`` puts it there)
            return _UNSHIFTED
        parts.append(found)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


_ACTOR_INPUTS = "future-keys-actor-inputs"


def _actor_inputs(snapshot: Snapshot) -> str:
    """What the collector's and the namespace controller's work lists are functions of
    (apiserver/actors.py): every object's name, uid, ownerReferences, finalizers and whether it is
    being deleted, and a Namespace's finalizers. Why the whole cluster: an item may concern an object
    no step of the future read (a dependent of an owner the future deleted)."""
    lines: list[str] = []
    for ref, obj in sorted(snapshot.iter_entries(), key=lambda e: e[0]):
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        spec = obj.get("spec") if ref.kind == "Namespace" else None
        lines.append(canonical([str(ref), meta.get("uid"), meta.get("ownerReferences"), meta.get("finalizers"),
                                bool(meta.get("deletionTimestamp")),
                                spec.get("finalizers") if isinstance(spec, Mapping) else None]))
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


class _Memo:
    """The token values digested at one state. Why: the cache of futures compares every future it
    keeps for a group with the state (``FutureCache.find``), and those futures read mostly the same
    tokens; each value is a function of the state, so it is worked out once per state."""

    __slots__ = ("fates", "kinds", "state", "values")

    def __init__(self, state: SimState | None) -> None:
        self.state = state
        self.kinds = _kinds(state.snapshot) if state is not None else {}
        self.fates = dict(state.outcomes) if state is not None else {}
        #: by (token, mode, symmetry); "\x00" when the token cannot be digested
        self.values: dict[tuple[Hashable, int, bool], str] = {}


_LAST = [_Memo(None)]


def _memo(state: SimState) -> _Memo:
    """The memo of ``state``'s token values: the last state's, kept while the same state is asked about."""
    if _LAST[0].state is not state:
        _LAST[0] = _Memo(state)
    return _LAST[0]


def _kinds(snapshot: Snapshot) -> dict[tuple[str, str], list[KindRef]]:
    out: dict[tuple[str, str], list[KindRef]] = {}
    for kind in snapshot.kinds():
        out.setdefault((kind.group, kind.kind), []).append(kind)
    return out


def _pending_line(p: PendingItem, clock: int) -> str:
    """A member's pending request as the state's fingerprint holds it (sim/state.py)."""
    return "\x00".join((p.controller, p.namespace, p.name, str(p.delay(clock)), str(int(p.stable)),
                        ",".join(p.fresh), str(int(p.relist)), str(int(p.woken)), p.carried_from(clock),
                        str(max(0, p.retry_due - clock)), str(int(p.anchored))))


def _text(obj: Mapping[str, Any], mode: int, clock: int) -> str:
    """An object as the future sees it: the fingerprint's text; with the instants ``SHIFTED`` built-ins
    compare, as distances from the clock (``_UNSHIFTED`` when it holds one they would compare that
    ``_instants`` does not show); or with its timestamps (not its resourceVersion) when the future
    compared the time otherwise."""
    if mode == _PLAIN:
        return digest_text(obj)
    if mode == _SHIFTED:
        found = _instants(obj, clock)
        return _UNSHIFTED if found is None else f"{digest_text(obj)}@{found}"
    meta = obj.get("metadata")
    if isinstance(meta, Mapping):
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k not in ("resourceVersion", "managedFields")}}
    return canonical(obj)


def _instants(obj: Mapping[str, Any], clock: int) -> str | None:
    """The instants of ``obj`` a ``SHIFTED`` built-in compares the clock with, as distances from
    ``clock``: a Pod's (any object's) ``deletionTimestamp`` (the kubelet's grace period) and a
    Deployment's ``Progressing`` condition's ``lastUpdateTime`` (its progress deadline and the
    requeue for it). ``None`` for a Deployment or ReplicaSet with ``minReadySeconds``: then the
    replica set compares its Pods' readiness times with the clock, which are not shown."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    spec = obj.get("spec")
    kind = obj.get("kind")
    if kind in ("Deployment", "ReplicaSet") and isinstance(spec, Mapping) and spec.get("minReadySeconds"):
        return None
    out = [_distance(meta.get("deletionTimestamp"), clock)]
    if kind == "Deployment":
        status = obj.get("status")
        conds = status.get("conditions") if isinstance(status, Mapping) else None
        for cond in conds if isinstance(conds, list) else ():
            if isinstance(cond, Mapping) and cond.get("type") == "Progressing":
                out.append(_distance(cond.get("lastUpdateTime"), clock))
    return ",".join(out)


def _distance(text: Any, clock: int) -> str:
    """A timestamp as seconds from ``clock`` (its text when it does not parse; "-" when absent)."""
    if text is None:
        return "-"
    seconds = parse_time(text)
    return repr(text) if seconds is None else f"{seconds - clock:g}"


def _objects(state: SimState, kinds: Mapping[tuple[str, str], list[KindRef]], group: str, kind: str,
             namespace: str | None) -> list[tuple[str, Mapping[str, Any]]]:
    out: list[tuple[str, Mapping[str, Any]]] = []
    for ref in kinds.get((group, kind), ()):
        for obj in state.snapshot.objects_of(ref, namespace):
            meta = obj.get("metadata")
            name = str(meta.get("name", "")) if isinstance(meta, Mapping) else ""
            ns = str(meta.get("namespace", "")) if isinstance(meta, Mapping) else ""
            out.append((f"{ref.api_version}/{ns}/{name}", obj))
    return out


def _token_value(state: SimState, kinds: Mapping[tuple[str, str], list[KindRef]], token: Hashable, mode: int,
                 symmetry: bool, fates: Mapping[str, str]) -> str | None:
    if not isinstance(token, tuple) or not token:
        return None
    head = token[0]
    if head == "obj" and len(token) == 5:
        _, group, kind, namespace, name = token
        found = [(k, o) for k, o in _objects(state, kinds, group, kind, namespace or None)
                 if k.endswith(f"/{namespace}/{name}")]
        text = "|".join(f"{k}={_text(o, mode, state.clock)}" for k, o in found)
        fate = fates.get(f"{namespace}/{name}", "")
        siblings = ""
        if symmetry:  # the canonical renaming orders an object with every object of its generateName
            prefix = _generate_name(found[0][1]) if found else ""
            if prefix:
                siblings = "|".join(f"{k}={_text(o, mode, state.clock)}:{fates.get(k.split('/', 1)[-1], '')}"
                                    for k, o in _objects(state, kinds, group, kind, namespace or None)
                                    if _generate_name(o) == prefix)
        return f"{token!r}={text}:{fate}:{siblings}"
    if head in ("list", "label", "owned") and len(token) >= 4:
        # a list's value is its objects; a label pair's, the objects carrying it; a controller uid's,
        # the objects it controls (what a write marks: sim/footprints.py, ``write_marks``)
        _, group, kind, namespace = token[:4]
        listed = _objects(state, kinds, group, kind, None if namespace == "*" else namespace)
        if head == "label" and len(token) == 6:
            listed = [(k, o) for k, o in listed if _labels(o).get(str(token[4])) == str(token[5])]
        elif head == "owned" and len(token) == 5:
            listed = [(k, o) for k, o in listed if str(token[4]) in _controllers(o)]
        elif head != "list":
            return None
        return f"{token!r}=" + "|".join(f"{k}={_text(o, mode, state.clock)}:{fates.get(k.split('/', 1)[-1], '')}"
                                        for k, o in listed)
    if head == "counter" and len(token) == 2:
        return f"{token!r}={state.snapshot.counter(str(token[1]))}"
    if head == "memo" and len(token) == 3:
        return f"{token!r}={state.remembered(str(token[1]), str(token[2]))}"
    if head == "memo-all" and len(token) == 2:
        return f"{token!r}=" + "|".join(f"{k}={v}" for o, k, v in state.memory if o == token[1])
    if head in ("view", "budget"):
        return f"{token!r}={_faults(state.faults)}"
    return None


def _faults(book: FaultBook) -> str:
    history = ";".join(f"{kind}:" + ",".join(f"{w.type}:{w.ref}:{_maybe(w.before)}:{_maybe(w.after)}"
                                             for w in records) for kind, records in book.history)
    return f"{book.digest()}#{history}"


def _maybe(obj: Mapping[str, Any] | None) -> str:
    return "-" if obj is None else digest_text(obj)


def _generate_name(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata")
    found = meta.get("generateName") if isinstance(meta, Mapping) else None
    return found if isinstance(found, str) else ""


def _labels(obj: Mapping[str, Any]) -> dict[str, str]:
    meta = obj.get("metadata")
    found = meta.get("labels") if isinstance(meta, Mapping) else None
    return {str(k): str(v) for k, v in found.items()} if isinstance(found, Mapping) else {}


def _controllers(obj: Mapping[str, Any]) -> set[str]:
    """The uids of the object's controller ownerReferences (what an ``owned`` token is marked by)."""
    meta = obj.get("metadata")
    refs = meta.get("ownerReferences") if isinstance(meta, Mapping) else None
    return {str(r.get("uid", "")) for r in refs if isinstance(r, Mapping) and r.get("controller") is True} \
        if isinstance(refs, list) else set()
