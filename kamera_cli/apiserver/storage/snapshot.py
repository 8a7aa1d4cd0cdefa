"""Immutable cluster state with structural sharing, a cached fingerprint and a bounded write log.

Why a HAMT (``immutables.Map``): the explorer forks a state at every step; a write must cost the
same for 10 objects as for 1,000.  Why an additive fingerprint: the snapshot's fingerprint is a sum
of per-object hashes, so fingerprinting never re-serialises the cluster and does not depend on the
order objects were inserted in.  Why a lazy one: an object's digest is computed the first time a
snapshot holding it is fingerprinted, not when it is written.  A reconcile that writes an object
twice in one step, or a stale view that undoes writes, never pays for versions no state is judged
by, and a request of the API server costs what the server does, not what the model checker needs.
"""

from __future__ import annotations

import functools
import hashlib
import re
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import immutables

from kamera_cli.apiserver.storage.identity import IdentityCache, RecentCache
from kamera_cli.apiserver.storage.jsontext import canonical
from kamera_cli.model.frozen import fast_init
from kamera_cli.model.objects import KindRef, Manifest, ObjectRef

T = TypeVar("T")

#: How many writes the log keeps (watch resumption, stale views).
LOG_SIZE = 64
#: How many of the latest writes a snapshot keeps apart from the rest of its log (``Snapshot._tail``).
_TAIL = 8
_MOD = 1 << 256
_SCRUBBED_META = frozenset({"resourceVersion", "managedFields", "uid"})
_SCRUBBED_META_AND_GENERATION = _SCRUBBED_META | {"generation"}


@fast_init
@dataclass(frozen=True, slots=True)
class WriteRecord:
    """One committed write: ``type`` is ADDED, MODIFIED or DELETED; ``after`` is None for DELETED."""

    rv: int
    type: str
    ref: ObjectRef
    before: Manifest | None
    after: Manifest | None

    # states travel between the processes of a split search: a plain tuple pickles several times
    # faster than a slotted dataclass's default state (which lists its fields on every object)
    def __reduce__(self) -> tuple[Any, tuple[int, str, ObjectRef, Manifest | None, Manifest | None]]:
        return (WriteRecord, (self.rv, self.type, self.ref, self.before, self.after))


_QUOTED_TIMESTAMP = re.compile(r'"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})"')


def object_digest(obj: Manifest) -> str:
    """SHA-256 of the canonical JSON of an object without RV, managedFields, uid and timestamp values.

    Timestamps are replaced in the serialised text (a JSON string that is exactly an RFC 3339 time), which
    is several times cheaper than walking the object in Python.
    """
    return hashlib.sha256(digest_text(obj).encode()).hexdigest()


def digest_text(obj: Manifest) -> str:
    """The text ``object_digest`` hashes: what a fingerprint sees of an object (the simulation's
    symmetry reduction renames generated names in it before hashing, docs/semantics.md)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        generation = meta.get("generation")
        if isinstance(generation, int) and not isinstance(generation, bool):
            obj = _generation_relations(obj, meta, generation)
        else:
            obj = {**obj, "metadata": {k: v for k, v in meta.items() if k not in _SCRUBBED_META}}
    spec = obj.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    if isinstance(spec, dict) and isinstance(template, dict) and template and _CANONICAL.met_before(template):
        # A workload's pod template is most of its text and usually the very template its previous
        # version stored: its canonical text is cached by identity and spliced in.
        shell = _canonical({**obj, "spec": {**spec, "template": _TEMPLATE_PLACEHOLDER}})
        text = (shell.replace(_TEMPLATE_PLACEHOLDER_JSON, _CANONICAL.derive(template, _canonical))
                if shell.count(_TEMPLATE_PLACEHOLDER_JSON) == 1 else _canonical(obj))
    else:
        text = _canonical(obj)
    return text


_TEMPLATE_PLACEHOLDER = "\0kamera:template\0"
# Canonical text of pod templates that stored objects share from version to version.
_CANONICAL: IdentityCache[str] = IdentityCache(4096)


def _canonical(value: Any) -> str:
    """Sorted-key JSON with RFC 3339 time strings replaced (what the digest hashes)."""
    text = canonical(value)
    return _QUOTED_TIMESTAMP.sub('"<time>"', text) if "T" in text else text


_TEMPLATE_PLACEHOLDER_JSON = _canonical(_TEMPLATE_PLACEHOLDER)


def _relation(value: object, generation: int) -> object:
    if not isinstance(value, int) or isinstance(value, bool):
        return value
    return "=generation" if value == generation else "<generation" if value < generation else ">generation"


def _generation_relations(obj: Manifest, meta: Manifest, generation: int) -> Manifest:
    """The object with its metadata scrubbed, metadata.generation left out and its observedGeneration
    mirrors (``status`` and each ``status.conditions[]``) replaced by their relation to it: equal,
    behind or ahead.

    Why: generation counts spec writes, so a fight over the spec never repeats a state by value and
    looks like progress. Controllers compare ``observedGeneration`` with ``generation``; they do not
    do arithmetic on either. Fingerprinting the relation merges states that differ only in how many
    rounds were fought (docs/semantics.md, "Counters").
    """
    out = {**obj, "metadata": {k: v for k, v in meta.items() if k not in _SCRUBBED_META_AND_GENERATION}}
    status = obj.get("status")
    if isinstance(status, dict):
        status = dict(status)
        if "observedGeneration" in status:
            status["observedGeneration"] = _relation(status["observedGeneration"], generation)
        conditions = status.get("conditions")
        if isinstance(conditions, list):
            status["conditions"] = [
                {**c, "observedGeneration": _relation(c["observedGeneration"], generation)}
                if isinstance(c, dict) and "observedGeneration" in c else c for c in conditions]
        out["status"] = status
    return out


#: Kinds that record what happened rather than state anything controllers act on (Events).
_RECORD_KINDS = frozenset({("v1", "Event"), ("events.k8s.io/v1", "Event")})


def is_record(api_version: str, kind: str) -> bool:
    """Events: kept and queryable, but not part of the fingerprint or of what counts as a change.

    Why: an operator posts an Event on every handler run (kopf does by default), each under a fresh
    generated name, so with Events in the fingerprint no state would ever repeat — a loop would look
    like progress and a periodic timer like unending work (docs/semantics.md, "Records").
    """
    return (api_version, kind) in _RECORD_KINDS


def member(ref: ObjectRef, digest: str) -> int:
    """One object's term of a snapshot's fingerprint sum (``digest``: its ``object_digest``)."""
    return _member(ref, digest)


def fingerprint_of(count: int, acc: int) -> str:
    """A snapshot fingerprint from its object count and member sum (modulo 2^256)."""
    return hashlib.sha256(f"{count}:{acc % _MOD:064x}".encode()).hexdigest()


def _member(ref: ObjectRef, digest: str) -> int:
    key = f"{ref.api_version}\0{ref.kind}\0{ref.namespace}\0{ref.name}\0{digest}"
    return int.from_bytes(hashlib.sha256(key.encode()).digest(), "big")


_KindKey = tuple[str, str]  # (apiVersion, kind)
_NameKey = tuple[str, str]  # (namespace, name)
# [object, fingerprint member]: the member is None until a fingerprint needs it, and is then filled
# in place (see ``_settle``); records' entries (Events) hold 0, they are not weighed
_Entry = list[Any]
# Fingerprint members of objects already digested, by identity, with the key they were stored under (a
# view or a sibling that stores the very object another state was fingerprinted with does not digest
# it again).
# 1,024, not 20,000: an entry holds its object, so a larger cache kept objects of states the search
# had let go of (issue #26: webapps-2-1 at 20,000 states, 0.5 KiB per state each); oldest first
# (``RecentCache``), so that it is full within the first thousand states or so
_MEMBERS: IdentityCache[tuple[_KindKey, _NameKey, int]] = RecentCache(1024)


#: the maps' keys met lately, each its own value: a write's (apiVersion, kind) and (namespace, name)
#: are tuples made afresh, and the maps keep the key they were set with, so every state a search holds
#: kept two tuples of its own per write (issue #26: about 40 bytes per state on webapps-2-2). Bounded
#: (cleared when full) only for a search that keeps making names; the tuples themselves are shared.
_KEYS: dict[tuple[str, str], tuple[str, str]] = {}
_KEYS_LIMIT = 16_384


class _Counter(str):
    """A counter's name whose hash is the same under every PYTHONHASHSEED (a CRC-32 of its text).

    Why: the counters are a HAMT, which lays its nodes out by its keys' hashes, and a str's hash moves
    with the seed: under one seed more names shared a node's slot, each counter write copied a different
    path, and the states kept it (issue #26: webapps-2-2, 2,000->6,000 states, 2.52 KiB per state at
    PYTHONHASHSEED=0, 2.63 at 1; the counters' line alone 325 KB against 806 KB). Numbering the names
    instead (small ints in first-met order) made the layout seed-free but kept every name met for the
    process's life and cost more (2.74 at both). Equality is the str's, so a collision of two hashes
    costs a slot, never a wrong answer.
    """

    __slots__ = ()

    def __hash__(self) -> int:
        return zlib.crc32(self.encode("utf-8", "surrogatepass"))


@functools.lru_cache(maxsize=4096)
def _counter_key(name: str) -> _Counter:
    """The key object of a counter's name: equal names written by many states are one object."""
    return _Counter(name)


class Snapshot:
    """One immutable cluster state. Build new states with ``with_object``/``without_object``."""

    # No cached fingerprint text and no empty caches: a breadth-first search holds thousands of
    # snapshots it has not expanded yet (issue #26, memory per state), and the fingerprint is one
    # SHA-256 of a short text away from ``_count`` and ``_acc``.
    __slots__ = ("_acc", "_count", "_counters", "_derived", "_kinds", "_log", "_pending", "_rv", "_sorted", "_tail")

    def __init__(self, kinds: immutables.Map[Any, Any], acc: int, count: int, rv: int,
                 log: tuple[WriteRecord, ...], counters: immutables.Map[Any, Any],
                 pending: Any = None, tail: tuple[WriteRecord, ...] = ()) -> None:
        self._kinds = kinds
        # the sum of the members of the entries that are not pending (see ``_pending``)
        self._acc = acc
        # the entries written since the lineage was last fingerprinted, newest first, as a chain of
        # (kind key, name key, entry, rest): adding one costs the same however many there are. Their
        # members are not in ``_acc``, whether or not another snapshot sharing an entry filled it in
        self._pending: Any = pending
        self._count = count
        self._rv = rv
        # the write log is ``(_log + _tail)[-LOG_SIZE:]``: a write copies only the short tail (and, every
        # ``_TAIL`` writes, the rest once), so the states a search holds before expanding them do not
        # each own a tuple of up to 64 records (issue #26: about a third of a kilobyte per state)
        self._log = log
        self._tail = tail
        self._counters = counters
        self._sorted: dict[_KindKey, list[tuple[str, Manifest]]] | None = None
        # derived data as a flat (key, value, key, value, …) tuple: most snapshots hold one or two
        # values, and a dict costs 184 bytes before its first entry
        self._derived: tuple[Any, ...] = ()

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(immutables.Map(), 0, 0, 0, (), immutables.Map())

    # -- reads ---------------------------------------------------------------------------------
    @property
    def resource_version(self) -> int:
        return self._rv

    def __len__(self) -> int:
        return self._count

    def get(self, ref: ObjectRef) -> Manifest | None:
        names = self._kinds.get((ref.api_version, ref.kind))
        if names is None:
            return None
        entry: _Entry | None = names.get((ref.namespace, ref.name))
        return entry[0] if entry is not None else None

    def objects(self) -> list[Manifest]:
        """Every object, sorted by (apiVersion, kind, namespace, name)."""
        out: list[Manifest] = []
        for kind_key in sorted(self._kinds.keys()):
            names = self._kinds[kind_key]
            out.extend(names[k][0] for k in sorted(names.keys()))
        return out

    def objects_of(self, kind_ref: KindRef, namespace: str | None = None) -> list[Manifest]:
        """Objects of one kind (in one namespace when given), sorted by (namespace, name)."""
        kind_key = (kind_ref.api_version, kind_ref.kind)
        cache = self._sorted
        listing = cache.get(kind_key) if cache is not None else None
        if listing is None:
            names = self._kinds.get(kind_key)
            if names is None:
                return []
            listing = [(k[0], names[k][0]) for k in sorted(names.keys())]
            if cache is None:
                cache = self._sorted = {}
            cache[kind_key] = listing  # a snapshot never changes, so its listings can be kept
        if namespace is None:
            return [obj for _, obj in listing]
        return [obj for ns, obj in listing if ns == namespace]

    def kinds(self) -> list[KindRef]:
        return [KindRef.of(av, kind) for av, kind in sorted(self._kinds.keys()) if len(self._kinds[(av, kind)])]

    def parts(self) -> tuple[Any, ...]:
        """What a snapshot is made of (without its caches), for ``from_parts`` in another process:
        a split search ships states and interns their objects itself (``sim/shipping.py``)."""
        fp = self.fingerprint()  # first: it fills in the members of pending entries
        return (self._kinds, self._acc, self._count, self._rv, self.log(), self._counters, fp)

    @classmethod
    def from_parts(cls, kinds: immutables.Map[Any, Any], acc: int, count: int, rv: int,
                   log: tuple[WriteRecord, ...], counters: immutables.Map[Any, Any], fp: str,
                   derived: dict[str, Any]) -> Snapshot:
        """A snapshot from ``parts()``, with ``derived`` values already known (see ``cached``)."""
        # keyed as ``with_counter`` keys them, whatever the sender's map held (pickling keeps the type)
        keyed: immutables.Map[Any, Any] = immutables.Map((_counter_key(k), v) for k, v in counters.items())
        snap = cls(kinds, acc, count, rv, log, keyed)  # ``fp`` is ``fingerprint_of(count, acc)``
        snap._derived = tuple(part for pair in derived.items() for part in pair)
        return snap

    def forget_derived(self) -> None:
        """Drop the listings and derived data cached on this snapshot (recomputed if asked again):
        a state the search has expanded keeps only what its value needs."""
        self._sorted = None
        self._derived = ()

    def cached(self, key: str) -> Any | None:
        """What ``derived(key, …)`` computed on this snapshot, if it has (None otherwise)."""
        known = self._derived
        for i in range(0, len(known), 2):
            if known[i] == key:
                return known[i + 1]
        return None

    def derived(self, key: str, compute: Callable[[Snapshot], T]) -> T:
        """``compute(self)``, cached on this snapshot: it never changes, so derived data stays valid."""
        known = self._derived
        for i in range(0, len(known), 2):
            if known[i] == key:
                value: T = known[i + 1]
                return value
        value = compute(self)
        self._derived = (*self._derived, key, value)  # ``compute`` may have derived others meanwhile
        return value

    def fingerprint(self) -> str:
        if self._pending is not None:
            self._settle()
        return fingerprint_of(self._count, self._acc)

    def _settle(self) -> None:
        """Digest the entries written since the lineage was last fingerprinted and add their members.

        The snapshot's value does not change (same objects, same fingerprint as had each member been
        computed at its write). Each entry learns its member in place, so that the states derived from
        this one from now on start with nothing pending, without a copy of the map's changed paths per
        fingerprinted state. An entry on the chain that is no longer this snapshot's (written again or
        deleted since, in this lineage) was never added, and is skipped.
        """
        kinds, acc = self._kinds, self._acc
        link = self._pending
        while link is not None:
            kind_key, name_key, entry, link = link
            names = kinds.get(kind_key)
            if names is None or names.get(name_key) is not entry:
                continue  # deleted or written again since: not this snapshot's entry
            member = entry[1]
            if member is None:
                obj = entry[0]
                hit = _MEMBERS.get(obj)
                if hit is not None and hit[0] == kind_key and hit[1] == name_key:
                    member = hit[2]
                else:
                    member = _member(ObjectRef(kind_key[0], kind_key[1], name_key[0], name_key[1]),
                                     object_digest(obj))
                    _MEMBERS.put(obj, (kind_key, name_key, member))
                entry[1] = member
            acc = (acc + member) % _MOD
        self._acc, self._pending = acc, None

    def _pending_entry(self, entry: _Entry) -> bool:
        """Whether ``entry`` was written since the lineage was last fingerprinted (its member is then
        not in ``_acc``, even if another snapshot sharing it filled it in)."""
        link = self._pending
        while link is not None:
            if link[2] is entry:
                return True
            link = link[3]
        return False

    def log(self) -> tuple[WriteRecord, ...]:
        """The last ``LOG_SIZE`` writes, oldest first."""
        tail = self._tail
        if not tail:
            return self._log
        whole = self._log + tail
        return whole[-LOG_SIZE:] if len(whole) > LOG_SIZE else whole

    def weighed_members(self) -> tuple[int, int, Iterator[tuple[ObjectRef, Manifest, int]]]:
        """The fingerprint's parts: its object count, its sum and every object it sums with its member
        (``member(ref, digest_text)``); records (Events) are left out, as the fingerprint leaves them."""
        self.fingerprint()  # settles pending members

        def entries() -> Iterator[tuple[ObjectRef, Manifest, int]]:
            for (av, kind), names in self._kinds.items():
                if is_record(av, kind):
                    continue
                for (ns, name), (obj, member) in names.items():
                    yield ObjectRef(av, kind, ns, name), obj, member
        return self._count, self._acc, entries()

    def recent_writes(self, kind_ref: KindRef, n: int) -> list[WriteRecord]:
        """The last ``n`` logged writes to that kind, oldest first."""
        hits = [w for w in self.log() if w.ref.api_version == kind_ref.api_version and w.ref.kind == kind_ref.kind]
        return hits[-n:] if n > 0 else []

    def writes_since(self, rv: int) -> list[WriteRecord] | None:
        """Logged writes with an RV strictly after ``rv``; None when the log no longer reaches back."""
        if rv >= self._rv:
            return []
        log = self.log()
        if not log or log[0].rv > rv + 1:
            return None
        return [w for w in log if w.rv > rv]

    def oldest_logged_rv(self) -> int:
        log = self.log()
        return log[0].rv if log else self._rv

    def counter(self, key: str) -> int:
        value: int = self._counters.get(_counter_key(key), 0)
        return value

    def with_counter(self, key: str, value: int) -> Snapshot:
        """Bookkeeping (name incarnations, generateName attempts): not part of the fingerprint or RV."""
        name = _counter_key(key)
        if self._counters.get(name, 0) == value:
            # most calls (a memo replay sets every counter its run read): a HAMT's ``set`` copies the
            # path even for an equal value, and the state kept the copy (issue #26: webapps-2-2, 3 of 4
            # calls, 0.1 KiB per state)
            return self
        counters = self._counters.set(name, value)
        return Snapshot(self._kinds, self._acc, self._count, self._rv, self._log, counters, self._pending, self._tail)

    def iter_entries(self) -> Iterator[tuple[ObjectRef, Manifest]]:
        for (av, kind), names in self._kinds.items():
            for (ns, name), entry in names.items():
                yield ObjectRef(av, kind, ns, name), entry[0]

    def before_writes(self, kind_ref: KindRef, n: int) -> Snapshot:
        """The state a cache lagging ``n`` writes of ``kind_ref`` behind would show (for stale views).

        Those writes are undone without logging anything new; the view's resourceVersion and log end just
        before the oldest undone write, so a list from the view reports an RV older than the current one
        and a watch resumed from it replays exactly the writes the cache had missed.
        """
        return self.undoing(self.recent_writes(kind_ref, n))

    def undoing(self, writes: Sequence[WriteRecord]) -> Snapshot:
        """``before_writes`` for the given writes (the latest ones of one kind, oldest first), which the
        caller kept itself: the simulator keeps each stale-read kind's own history, which writes of
        other kinds cannot push out as they push entries out of this log."""
        if not writes:
            return self
        snap: Snapshot = self
        for w in reversed(writes):
            snap = snap.with_object(w.ref, w.before)
        cut = writes[0].rv
        log = tuple(w for w in self.log() if w.rv < cut)
        return Snapshot(snap._kinds, snap._acc, snap._count, cut - 1, log, self._counters, snap._pending)

    # -- writes --------------------------------------------------------------------------------
    def with_object(self, ref: ObjectRef, obj: Manifest | None, *, rv: int | None = None) -> Snapshot:
        """The state after storing ``obj`` (``None`` removes it); logs the write at ``rv`` (default next)."""
        rv = self._rv + 1 if rv is None else rv
        keys = _KEYS
        if len(keys) >= _KEYS_LIMIT:
            keys.clear()
        kind_key = (ref.api_version, ref.kind)
        kind_key = keys.setdefault(kind_key, kind_key)
        name_key = (ref.namespace, ref.name)
        name_key = keys.setdefault(name_key, name_key)
        names = self._kinds.get(kind_key) or immutables.Map()
        old: _Entry | None = names.get(name_key)
        acc, count, pending = self._acc, self._count, self._pending
        weighed = not is_record(ref.api_version, ref.kind)
        if old is not None and weighed:
            if not self._pending_entry(old):  # a pending member was never added
                acc = (acc - old[1]) % _MOD
            count -= 1
        if obj is None:
            if old is None:
                return self
            names = names.delete(name_key)
            kind = "DELETED"
        else:
            if weighed:
                entry: _Entry = [obj, None]
                names = names.set(name_key, entry)
                pending = (kind_key, name_key, entry, pending)
                count += 1
            else:
                names = names.set(name_key, [obj, 0])
            kind = "MODIFIED" if old is not None else "ADDED"
        kinds = self._kinds.set(kind_key, names) if len(names) else self._kinds.delete(kind_key)
        record = WriteRecord(rv, kind, ref, old[0] if old else None, obj)
        log, tail = self._log, self._tail
        if len(tail) < _TAIL:
            tail = (*tail, record)
        else:
            log, tail = (log + tail)[-LOG_SIZE:], (record,)
        return Snapshot(kinds, acc, count, rv, log, self._counters, pending, tail)
