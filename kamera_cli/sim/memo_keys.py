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
from collections.abc import Mapping, Sequence
from typing import Any

from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.defaulting.metadata import generate_name_key, incarnation_key
from kamera_cli.apiserver.server.selectors import SelectorError, field_matcher, label_matcher
from kamera_cli.model.objects import KindRef, ObjectRef


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
#: let go of (issue #26: webapps-2-2 at 1,500 states, about 0.6 KiB per state)
_DIGESTS_LIMIT = 16_384


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
    if len(_DIGESTS) >= _DIGESTS_LIMIT:
        _DIGESTS.clear()
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
