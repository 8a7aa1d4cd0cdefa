"""Server-set metadata: uids, generated names, timestamps, generation and the status split.

Why derived from hashes: re-running the same schedule must give byte-identical objects in any
process, so nothing here may depend on randomness, the wall clock or ``hash()``.
"""

from __future__ import annotations

import datetime as _dt
import functools
import hashlib
from collections.abc import Mapping
from typing import Any

from kamera_cli.model.objects import ObjectRef

_EPOCH_2026 = 1767225600  # 2026-01-01T00:00:00Z as Unix seconds
_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # the real generateName alphabet (no vowels, no confusables)
SERVER_META = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation",
               "resourceVersion", "managedFields", "selfLink")


@functools.lru_cache(maxsize=4096)
def format_time(now: int) -> str:
    """RFC 3339, second precision. ``now`` below 10^9 counts from 2026-01-01, else from 1970 (see docs)."""
    seconds = now + _EPOCH_2026 if now < 1_000_000_000 else now
    return _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_uid(api_version: str, kind: str, namespace: str, name: str, incarnation: int) -> str:
    digest = bytearray(hashlib.sha256(f"{api_version}\0{kind}\0{namespace}\0{name}\0{incarnation}".encode()).digest())
    digest[6] = (digest[6] & 0x0F) | 0x40  # looks like a UUID4
    digest[8] = (digest[8] & 0x3F) | 0x80
    h = digest[:16].hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def name_suffix(api_version: str, kind: str, namespace: str, prefix: str, attempt: int) -> str:
    digest = hashlib.sha256(f"{api_version}\0{kind}\0{namespace}\0{prefix}\0{attempt}".encode()).digest()
    return "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:5])


def generated_from(name: str, prefix: str) -> bool:
    """Whether ``name`` is one the server makes from ``generateName: prefix`` (see ``name_suffix``)."""
    head = prefix[:58]
    return (len(name) == len(head) + 5 and name.startswith(head)
            and all(c in _ALPHABET for c in name[len(head):]))


def incarnation_key(ref: ObjectRef) -> str:
    """Snapshot counter: how many times this name was created in the lineage (feeds the uid)."""
    return f"inc\0{ref.api_version}\0{ref.kind}\0{ref.namespace}\0{ref.name}"


def generate_name_key(group: str, kind: str, namespace: str, prefix: str) -> str:
    """Snapshot counter: the next generateName attempt for this (kind, namespace, prefix)."""
    return f"gen\0{group}\0{kind}\0{namespace}\0{prefix}"


def clone(value: Any) -> Any:
    """A deep copy of a JSON value (several times faster than ``copy.deepcopy``)."""
    if isinstance(value, dict):
        return {k: clone(v) if isinstance(v, (dict, list)) else v for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def without(obj: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _equal_except(a: Mapping[str, Any], b: Mapping[str, Any], skip: tuple[str, ...]) -> bool:
    """``without(a, *skip) == without(b, *skip)``, without building either copy (every write asks)."""
    for key, value in a.items():
        if key in skip:
            continue
        other = b.get(key, _MISSING)
        if other is not value and (other is _MISSING or other != value):
            return False
    return all(key in a or key in skip for key in b)


_MISSING = object()
_NOT_METADATA = ("metadata",)
_NOT_BOOKKEEPING = ("resourceVersion", "managedFields")


def same_ignoring_bookkeeping(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal except resourceVersion and managedFields: a write that changes nothing else is a no-op."""
    if not _equal_except(a, b, _NOT_METADATA):
        return False
    return _equal_except(a.get("metadata") or {}, b.get("metadata") or {}, _NOT_BOOKKEEPING)


def spec_changed(old: Mapping[str, Any], new: Mapping[str, Any], *, status_counts: bool) -> bool:
    """Whether generation must move: anything outside metadata (and outside status, unless it counts)."""
    return not _equal_except(old, new, _NOT_METADATA if status_counts else ("metadata", "status"))
