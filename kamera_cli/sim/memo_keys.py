"""What a memoised step read, as digests: its read regions and their content on a snapshot.

Why apart from the runtime: the memo's soundness rests on these keys alone — two states whose
regions digest the same must give the step the same answers — so the rules for what counts (server
counters and timestamps set aside unless a step read the clock, list queries by their selectors)
live in one place that the runtime and the footprints both read.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
import json
import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.defaulting.metadata import generate_name_key, incarnation_key
from kamera_cli.apiserver.server.selectors import SelectorError, field_matcher, label_matcher
from kamera_cli.model.objects import KindRef, ObjectRef
from kamera_cli.sim.labels import WriteRec


def read_regions(server: ApiServer) -> tuple[tuple[Any, ...], ...]:
    seen: dict[tuple[Any, ...], None] = {}
    for acc in server.journal:
        if acc.resource is None:
            continue
        res = acc.resource
        api_version = f"{res.group}/{res.version}" if res.group else res.version
        if acc.name:
            seen[("obj", ObjectRef(api_version, res.kind, acc.namespace or "", acc.name))] = None
            for before, after in ((acc.before, acc.after),):
                for obj in (before, after):
                    if obj is not None:
                        seen[("obj", ObjectRef.of(obj))] = None
        elif acc.verb in ("list", "watch", "deletecollection"):
            query = tuple(sorted((k, v) for k, v in (acc.query or ())
                                 if k in ("labelSelector", "fieldSelector")))
            seen[("list", collection_path(acc), query)] = None
        elif acc.verb == "create" and acc.after is not None:
            seen[("obj", ObjectRef.of(acc.after))] = None
        elif acc.verb == "create":
            # a refused create (409 AlreadyExists, 422...) still depended on its target's existence
            meta = acc.request_body.get("metadata") if isinstance(acc.request_body, dict) else None
            name = meta.get("name") if isinstance(meta, dict) else None
            if isinstance(name, str) and name:
                api_version = f"{res.group}/{res.version}" if res.group else res.version
                seen[("obj", ObjectRef(api_version, res.kind, acc.namespace if res.namespaced else "", name))] = None
        if acc.verb == "create":
            meta = (acc.request_body or {}).get("metadata") if isinstance(acc.request_body, dict) else None
            prefix = (meta or {}).get("generateName") if isinstance(meta, dict) else None
            if prefix and not (meta or {}).get("name"):
                ns = acc.namespace if res.namespaced else ""
                seen[("counter", generate_name_key(res.group, res.kind, ns, prefix))] = None
    return tuple(seen)


def draw_counter_key(controller: str, namespace: str, name: str) -> str:
    """Snapshot counter: how many steps of this controller's request drew random values and wrote
    (seeds its next step's draws; bookkeeping like the other counters, not part of the fingerprint)."""
    return f"draws\0{controller}\0{namespace}\0{name}"


def counter_keys(regions: Sequence[tuple[Any, ...]]) -> list[str]:
    keys = []
    for region in regions:
        if region[0] == "counter":
            keys.append(region[1])
        elif region[0] == "obj":
            keys.append(incarnation_key(region[1]))
    return keys


#: replay variants kept per memo entry and starting resourceVersion (a bound on the cache, not on results)
def list_scope(registry: Registry, path: str) -> tuple[Any, str] | None:
    """The kind (registry entry) and namespace ("" for all) a collection path lists; None if unknown."""
    parts = path.strip("/").split("/")
    if len(parts) >= 3 and parts[0] == "api":
        group, version, rest = "", parts[1], parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return None
    if len(rest) == 3 and rest[0] == "namespaces":
        namespace, plural = rest[1], rest[2]
    elif len(rest) == 1:
        namespace, plural = "", rest[0]
    else:
        return None
    info = registry.lookup_plural(group, version, plural)
    if info is None or (namespace and not info.namespaced):
        return None
    return info, namespace


def snapshot_list_digest(registry: Registry, snapshot: Snapshot, path: str,
                          query: tuple[tuple[str, str], ...], exact: bool = False) -> str | None:
    """A list region's digest read straight from the snapshot's stored objects (no request).

    Why: a memo lookup digests every list region it holds; answering each through the server (encode
    the list, decode it, scrub its timestamps) was most of the search time for controllers that list
    pods. The digest only has to be the same function at recording and at lookup, and a function of
    exactly what the list would answer: the stored objects of the collection that pass the selectors.
    None (use the request path) for anything unusual: an unknown collection or a bad selector.
    """
    scope = list_scope(registry, path)
    if scope is None:
        return None
    info, namespace = scope
    params = dict(query)
    try:
        labels = label_matcher(params.get("labelSelector", ""))
        fields = field_matcher(params.get("fieldSelector", ""), info)
    except SelectorError:
        return None
    kind_ref = KindRef(info.group, info.storage_version or info.version, info.kind)
    h = hashlib.sha256(b"snapshot-list")
    for obj in snapshot.objects_of(kind_ref, namespace or None):
        if (labels is None or labels(obj)) and (fields is None or fields(obj)):
            h.update(content_digest(obj, exact).encode())
    return h.hexdigest()


def collection_path(acc: Any) -> str:
    res = acc.resource
    base = f"/apis/{res.group}/{res.version}" if res.group else f"/api/{res.version}"
    if acc.namespace:
        return f"{base}/namespaces/{acc.namespace}/{res.plural}"
    return f"{base}/{res.plural}"


def obj_digest(snapshot: Snapshot, ref: ObjectRef, exact: bool = False) -> str:
    obj = snapshot.get(ref)
    if obj is None:
        return f"absent#{snapshot.counter(incarnation_key(ref))}"
    return content_digest(obj, exact)


_DIGESTS: dict[tuple[int, bool], tuple[Mapping[str, Any], str]] = {}
#: an entry keeps its object alive: with 200,000 the table held the objects of states the search had
#: let go of (issue #26: webapps-2-2 at 1,500 states, about 0.6 KiB per state); its oldest entries go
#: first, so that it is full within the first thousand states or so and then holds as many objects
#: (forgotten wholesale at 16,384, it grew by 0.07 KiB per state over 2,000->6,000 on webapps-2-2)
_DIGESTS_LIMIT = 1024
#: the index entries' digests (``IndexReads.entries``): keyed by content, holding no object, so kept at
#: the 16,384 the memo's digests had before they were cut to 1,024
_ENTRIES_LIMIT = 16_384


def content_digest(obj: Mapping[str, Any], exact: bool = False) -> str:
    """An object's memo digest: without resourceVersion and managedFields, and (unless ``exact``)
    with every timestamp equal, as the fingerprint sees them."""
    hit = _DIGESTS.get((id(obj), exact))
    if hit is not None and hit[0] is obj:
        return hit[1]
    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in ("resourceVersion", "managedFields")}
    body = {k: v for k, v in obj.items() if k != "metadata"}
    content = [meta, body] if exact else _scrub_times([meta, body])
    digest = hashlib.sha256(json.dumps(content, sort_keys=True, separators=(",", ":"),
                                       default=str).encode()).hexdigest()
    while len(_DIGESTS) >= _DIGESTS_LIMIT:
        del _DIGESTS[next(iter(_DIGESTS))]  # the oldest (a dict keeps insertion order)
    _DIGESTS[(id(obj), exact)] = (obj, digest)
    return digest


_TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$")


def _scrub_times(value: Any) -> Any:
    """Timestamps are equal for memoization as they are for fingerprints (see docs/semantics.md)."""
    if isinstance(value, str):
        return "<time>" if len(value) >= 20 and _TIMESTAMP.match(value) else value
    if isinstance(value, dict):
        return {k: _scrub_times(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub_times(v) for v in value]
    return value


#: how programs commonly print the time (RFC 3339 with and without its zone, http.server's access
#: log, logging's asctime, ctime), each with a pattern that finds it in printed text
_PRINTED_TIMES = {
    "rfcz": ("%Y-%m-%dT%H:%M:%SZ", r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z"),
    "rfc": ("%Y-%m-%dT%H:%M:%S", r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}"),
    "access": ("%d/%b/%Y %H:%M:%S", r"\d{2}/[A-Z][a-z]{2}/\d{4} \d{2}:\d{2}:\d{2}"),
    "asctime": ("%Y-%m-%d %H:%M:%S", r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}"),
    "ctime": ("%a %b %d %H:%M:%S %Y", r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} \d{4}"),
}
_PRINTED_TIME = re.compile("|".join(f"(?P<{name}>{pattern})" for name, (_fmt, pattern) in _PRINTED_TIMES.items()))


#: how far past the step's start its printed times are re-rendered (seconds)
_PRINTED_WINDOW = 120


@functools.lru_cache(maxsize=4096)
def retimed_output(text: str, then: int, now: int) -> str:
    """What a memoised step printed at virtual second ``then``, as a fresh run at ``now`` would print it.

    Why: a hook server's access log or a logging handler stamps each line with the (virtual) time,
    and a replay must not depend on which equal state was met first — a split search's processes meet
    them in other orders. The clock's instant is re-rendered in the common formats (the sandbox runs
    in UTC); a time printed in another format keeps the first run's value (docs/explorer.md). Cached:
    a memoised step is replayed many times, at few instants.
    """
    if then == now or not text:
        return text
    was = _instant(then)
    if str(was.year) not in text:
        return text
    shift = _dt.timedelta(seconds=now - then)

    def moved(match: re.Match[str]) -> str:
        fmt = _PRINTED_TIMES[match.lastgroup or ""][0]
        try:
            at = _dt.datetime.strptime(match.group(0), fmt).replace(tzinfo=_dt.timezone.utc)
        except ValueError:
            return match.group(0)
        # the step's own time may have moved on while it ran (a sleep, a timeout): a window from ``then``
        late = (at - was).total_seconds()
        return (at + shift).strftime(fmt) if 0 <= late < _PRINTED_WINDOW else match.group(0)

    # one pass: a time re-rendered is never re-rendered again by a later (overlapping) one
    return _PRINTED_TIME.sub(moved, text)


def _instant(clock: int) -> _dt.datetime:
    """The virtual clock's reading as a time (as ``format_time`` reads it: small values count from 2026)."""
    seconds = clock + _EPOCH_2026 if clock < 1_000_000_000 else clock
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc)


_EPOCH_2026 = 1767225600


#: what an object absent from an index puts in it
_NO_ENTRIES = ""


@dataclass
class IndexReads:
    """The kopf operators' index reads (docs/semantics.md, "kopf": *Index reads*): which of a step's
    list regions are its indexing's, what each object puts in an operator's indices, and so the
    memo digest of an index region and the index tokens a write marks.

    Why here: the memo's and the footprint's soundness rest on one rule — a step that read an index
    read its content (each object's entries, ``KopfOperator.index_entries``), not the listed objects —
    so both read it from one place. An object whose entries cannot be told alone (None) counts by its
    whole content, as a list region's object does.
    """

    registry: Registry
    bind: Callable[[ApiServer | None], None]
    #: owner (the kopf controller whose steps index) -> (its operator, its call budget)
    readers: dict[str, tuple[Any, float]] = field(default_factory=dict)
    #: owner -> collection path -> (group, kind) listed there
    paths: dict[str, dict[str, tuple[str, str]]] = field(default_factory=dict)
    #: (owner, exact content digest) -> a digest of the object's entries, None: not the object's alone
    _entries: dict[tuple[str, str], str | None] = field(default_factory=dict)

    def add(self, owner: str, operator: Any, budget_seconds: float) -> None:
        paths = dict(operator.index_paths())
        if paths:
            self.readers[owner] = (operator, budget_seconds)
            self.paths[owner] = paths

    def regions(self, owner: str, regions: tuple[tuple[Any, ...], ...], journal: Sequence[Any]) -> tuple[
            tuple[Any, ...], ...]:
        """``regions`` with the step's indexing lists read as index regions ``("index", path, owner)``.

        The indexing lists each indexed collection once, with no selector (``build_indexers``); a
        collection listed so more than once was also listed by a handler, whose list stays a list.
        """
        paths = self.paths.get(owner)
        if not paths:
            return regions
        counts: dict[str, int] = {}
        for acc in journal:
            if acc.resource is not None and acc.verb in ("list", "watch", "deletecollection") and not any(
                    k in ("labelSelector", "fieldSelector") for k, _v in acc.query or ()):
                path = collection_path(acc)
                counts[path] = counts.get(path, 0) + 1
        return tuple(("index", r[1], owner) if r[0] == "list" and r[1] in paths and not r[2] and counts.get(r[1]) == 1
                     else r for r in regions)

    def entries(self, owner: str, obj: Mapping[str, Any] | None) -> str | None:
        """A digest of what ``obj`` puts in ``owner``'s indices (``_NO_ENTRIES`` when absent), or None."""
        if obj is None:
            return _NO_ENTRIES
        key = (owner, content_digest(obj, True))
        if key in self._entries:
            return self._entries[key]
        operator, budget = self.readers[owner]
        server = ApiServer(self.registry, Snapshot.empty(), now=lambda: 0)
        self.bind(server)  # a handler's request lands here, and makes the entries not the object's alone
        try:
            text = operator.index_entries(obj, budget)
        finally:
            self.bind(None)
        found = None if text is None or server.journal else (
            _NO_ENTRIES if not text else hashlib.sha256(text.encode()).hexdigest())
        if len(self._entries) >= _ENTRIES_LIMIT:
            self._entries.clear()  # told again when met again (the same text: a function of the content)
        self._entries[key] = found
        return found

    def digest(self, snapshot: Snapshot, region: tuple[Any, ...], exact: bool) -> str | None:
        """An index region's memo digest: each object's entries (its whole content where they are not
        its alone), by name; None for an unknown collection."""
        _, path, owner = region
        scope = list_scope(self.registry, path)
        if scope is None:
            return None
        info, namespace = scope
        h = hashlib.sha256(b"index")
        for obj in snapshot.objects_of(KindRef(info.group, info.storage_version or info.version, info.kind),
                                       namespace or None):
            found = self.entries(owner, obj)
            if found == _NO_ENTRIES:
                continue  # nothing in any index: as if not listed
            meta = obj.get("metadata") or {}
            h.update(f"{meta.get('namespace') or ''}/{meta.get('name') or ''}\0".encode())
            h.update((found if found is not None else "object:" + content_digest(obj, exact)).encode())
        return h.hexdigest()

    def marks(self, write: WriteRec) -> set[Hashable]:
        """The index tokens ``write`` changes: an owner's, for a kind it indexes, when the object's
        entries before and after differ, or either is not the object's alone."""
        out: set[Hashable] = set()
        group, kind = write.ref.kind_ref.group, write.ref.kind
        for owner, paths in self.paths.items():
            if (group, kind) not in paths.values():
                continue
            before, after = self.entries(owner, write.before), self.entries(owner, write.after)
            if before is None or after is None or before != after:
                out.add(index_token(owner, group, kind))
        return out


def index_token(owner: str, group: str, kind: str) -> tuple[str, ...]:
    """What reading ``owner``'s index of a kind is, as a footprint token: a list token of the kind
    extended by the owner, so that only ``IndexReads.marks`` marks it (a write's list marks do not),
    and whatever values a list token by its objects values it too (a finer value: sound)."""
    return ("list", group, kind, "*", "index", owner)
