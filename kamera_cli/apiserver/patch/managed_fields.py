"""Server-side apply and managedFields bookkeeping: a documented simplification of
structured-merge-diff (SMD), the library behind the real apiserver's field manager.

What is modelled (see docs/patching.md for the exact differences):

* ownership is a set of field paths per manager (leaves, atomic values, list items keyed by their
  list-map keys or set values), stored in real FieldsV1 notation;
* apply merges the configuration into the live object (maps key by key, ``map`` and ``set`` lists
  item by item in SMD's order, atomic values wholesale), removes what the manager applied last
  time, dropped now, and nobody else owns, and refuses (409) to change a value another manager
  owns unless forced, in which case ownership moves;
* a non-apply write moves every field it added or changed to its manager, and a removed field
  leaves every manager.

List and map semantics come from the ``FieldLookup`` (list type, map keys, map type), falling back
to the patch merge key as the apiserver's schema converter does.  Objects are never mutated.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kamera_cli.apiserver.errors import go_quote
from kamera_cli.apiserver.patch.apply import (
    Diff,
    WalkContext,
    diff_objects,
    merge_applied,
    merge_config,
    prune,
    without_removed,
    zero_top_level,
)
from kamera_cli.apiserver.patch.errors import PatchError, bad_request
from kamera_cli.apiserver.patch.fieldmeta import FieldLookup, FieldMeta
from kamera_cli.apiserver.patch.fieldsv1 import (
    Path,
    decode_fields_v1_cached,
    encode_fields_v1,
    path_string,
    prefixes,
)
from kamera_cli.apiserver.patch.typed import typed_nodes
from kamera_cli.model.frozen import fast_init
from kamera_cli.model.objects import MAPPING

__all__ = ["applied_memo_key", "remember_configuration", "remembered_configuration", "server_side_apply",
           "update_managed_fields"]

# Metadata the server owns: an apply configuration cannot change it.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "generation", "selfLink", "managedFields",
                    "deletionTimestamp", "deletionGracePeriodSeconds")


# -- managers -------------------------------------------------------------------------------------


@fast_init
@dataclass(frozen=True, slots=True)
class _Entry:
    manager: str
    operation: str
    api_version: str
    time: str | None
    subresource: str
    fields: frozenset[Path]

    def with_fields(self, fields: frozenset[Path]) -> _Entry:
        return _Entry(self.manager, self.operation, self.api_version, self.time, self.subresource, fields)

    @property
    def key(self) -> tuple[str, str, str, str]:
        # The apiserver identifies an applier without its apiVersion, an updater with it.
        version = self.api_version if self.operation != "Apply" else ""
        return (self.manager, self.operation, version, self.subresource)

    def describe(self) -> str:
        text = go_quote(self.manager)
        if self.subresource:
            text += f" with subresource {go_quote(self.subresource)}"
        if self.operation == "Update":
            text += f" using {self.api_version}"
        return text

    def render(self) -> dict[str, Any]:
        out: dict[str, Any] = {"manager": self.manager, "operation": self.operation, "apiVersion": self.api_version}
        if self.time is not None:
            out["time"] = self.time
        out["fieldsType"] = "FieldsV1"
        out["fieldsV1"] = encode_fields_v1(self.fields)
        if self.subresource:
            out["subresource"] = self.subresource
        return out


_Managers = dict[tuple[str, str, str, str], _Entry]


_DECODED_LIMIT = 4096
# Decoded managedFields lists by identity (each entry keeps its list alive, so ids are not reused):
# stored objects are immutable and pass their managedFields list on from write to write.
# The flag says the list is one ``_render`` made (so rendering its entries again gives it back).
_DECODED: dict[int, tuple[list[Any], _Managers | None, bool]] = {}


def _decode_entries(raw: Any) -> _Managers | None:
    """The managers recorded in a managedFields list; None when it is absent, empty or malformed.

    The answer is a fresh dict (callers may change it); its entries are immutable.
    """
    if not isinstance(raw, list) or not raw:
        return None
    hit = _DECODED.get(id(raw))
    if hit is None or hit[0] is not raw:
        if len(_DECODED) >= _DECODED_LIMIT:
            _DECODED.clear()
        hit = _DECODED[id(raw)] = (raw, _decode_list(raw), False)
    return None if hit[1] is None else dict(hit[1])


def _rendered_here(raw: Any) -> bool:
    hit = _DECODED.get(id(raw))
    return hit is not None and hit[0] is raw and hit[2]


def _decode_list(raw: list[Any]) -> _Managers | None:
    managers: _Managers = {}
    for item in raw:
        if not isinstance(item, MAPPING):
            return None
        try:
            fields = decode_fields_v1_cached(item.get("fieldsV1", {}))
        except ValueError:
            return None
        manager, operation = item.get("manager", ""), item.get("operation", "")
        time, version, sub = item.get("time"), item.get("apiVersion", ""), item.get("subresource", "")
        if not all(isinstance(x, str) for x in (manager, operation, version, sub)):
            return None
        entry = _Entry(manager, operation, version, time if isinstance(time, str) else None, sub, fields)
        previous = managers.get(entry.key)
        if previous is not None:
            entry = entry.with_fields(entry.fields | previous.fields)
        managers[entry.key] = entry
    return managers


def _managed(obj: Mapping[str, Any] | None) -> Any:
    if not obj:
        return None
    meta = obj.get("metadata")
    return meta.get("managedFields") if isinstance(meta, MAPPING) else None


_RENDERED_LIMIT = 4096
# Rendered lists by their entries: equal entries give an equal list, and stored objects never change
# theirs, so objects written with the same ownership (creates of the same shape by the same manager
# at the same virtual second, in one branch or in sibling branches) share one list -- and the JSON
# of an answer splices that list's text from the cache instead of encoding it again.
_RENDERED: dict[tuple[_Entry, ...], list[dict[str, Any]]] = {}


def _render(managers: _Managers) -> list[dict[str, Any]]:
    entries = [e for e in managers.values() if e.fields]
    entries.sort(key=lambda e: (e.operation, e.time or "", e.manager, e.api_version, e.subresource))
    if not entries:
        return []
    key = tuple(entries)
    out = _RENDERED.get(key)
    if out is None:
        out = [e.render() for e in entries]
        if len(_RENDERED) >= _RENDERED_LIMIT:
            _RENDERED.clear()
        _RENDERED[key] = out
    if not _rendered_here(out):
        # The list is what gets stored; the next write of the object decodes it again, so note now
        # what decoding it gives (the entries, in list order; their keys are distinct).
        if len(_DECODED) >= _DECODED_LIMIT:
            _DECODED.clear()
        _DECODED[id(out)] = (out, {e.key: e for e in entries}, True)
    return out


def _with_managed_fields(obj: dict[str, Any], rendered: list[dict[str, Any]], owned: bool = False) -> dict[str, Any]:
    """``obj`` with these managedFields; ``owned``: ``obj`` and its metadata are this request's own
    copies (nothing else holds them), so they are changed in place instead of copied again."""
    if owned and isinstance(obj.get("metadata"), dict):
        out, meta = obj, obj["metadata"]
    else:
        meta = dict(obj.get("metadata") or {})
        out = dict(obj)
        out["metadata"] = meta
    if rendered:
        meta["managedFields"] = rendered
    else:
        meta.pop("managedFields", None)
    return out


def _strip_managed(obj: Mapping[str, Any]) -> dict[str, Any]:
    meta = obj.get("metadata")
    if isinstance(meta, MAPPING) and "managedFields" in meta:
        out = dict(obj)
        out["metadata"] = {k: v for k, v in meta.items() if k != "managedFields"}
        return out
    return dict(obj)


# -- update ---------------------------------------------------------------------------------------


def update_managed_fields(before: dict[str, Any] | None, after: dict[str, Any], *, manager: str, operation: str,
                          now: str, api_version: str, subresource: str = "",
                          fields: FieldLookup | None = None,
                          zero: frozenset[Path] | None = None) -> list[dict[str, Any]]:
    """managedFields after a non-apply write: what the write added or changed moves to ``manager``.

    As in the apiserver, managedFields sent in ``after`` (a client writing them on purpose) are the
    starting point when present; otherwise those of ``before``.  ``[{}]`` resets them to nothing.
    ``zero``: the field paths the kind's Go zero value has (``Registry.zero_fields``; empty for a
    custom resource); a create is compared with that value (``patch_typed.typed_nodes``), and a
    later write that adds a top-level map the zero value lacks (a custom resource's ``spec`` or
    ``status``) records its ``.``.  Without it, no ``.`` is recorded for ``metadata``, ``spec`` and
    ``status`` and one for every other new map.
    """
    sent = _managed(after)
    if isinstance(sent, list) and len(sent) == 1 and sent[0] == {}:
        return []
    source = sent
    managers = _decode_entries(sent)
    if managers is None:
        source = _managed(before)
        managers = _decode_entries(source) or {}
        if not managers and before is not None and _has_uid(before):
            # The apiserver does not start tracking an existing object on a non-apply write (its
            # skipNonAppliedManager); only a create or an apply gives it managedFields.
            return []
    # metadata.managedFields is among the paths every diff leaves out, so neither side needs stripping.
    lookup = fields if fields is not None else _no_fields
    if before is None:  # a create: every node is added
        diff = Diff(typed_nodes(after, lookup, WalkContext(lookup), zero), set(), set())
    else:
        ctx = WalkContext(lookup) if zero is None else WalkContext(lookup, zero_top_level(zero))
        diff = diff_objects(before, after, ctx)
    changed = diff.added | diff.modified
    self_entry = _Entry(manager, operation, api_version, now, subresource, frozenset())
    self_key = self_entry.key  # a property that builds a tuple: read once
    if not diff.removed and _rendered_here(source) and _unchanged_ownership(managers, self_entry, self_key,
                                                                             changed):
        shared: list[dict[str, Any]] = source
        return shared  # the same entries would be rendered again: share the stored list
    result: _Managers = {}
    for key, entry in managers.items():
        if key != self_key:
            _keep_unchanged(result, key, entry, changed, diff.removed)
    previous = managers.get(self_key)
    if changed:
        own = (without_removed(previous.fields, diff.removed) if previous else frozenset()) | changed
        result[self_key] = self_entry.with_fields(frozenset(own))
    elif previous is not None:
        kept = without_removed(previous.fields, diff.removed)
        if kept:
            result[self_key] = previous.with_fields(kept)
    return _render(result)


def _keep_unchanged(result: _Managers, key: tuple[str, str, str, str], entry: _Entry, changed: set[Path],
                    removed: set[Path]) -> None:
    """Another manager's entry after a write: without what the write changed or removed.

    An entry the write did not touch is kept as it is (the usual case: a controller's write and the
    creator's fields are disjoint), so no new field set is built and the comparison with the stored
    entries meets the very same objects.
    """
    if not removed and entry.fields.isdisjoint(changed):
        if entry.fields:
            result[key] = entry
        return
    kept = without_removed(entry.fields - changed, removed)
    if kept:
        result[key] = entry.with_fields(kept)


def _unchanged_ownership(managers: _Managers, me: _Entry, me_key: tuple[str, str, str, str],
                         changed: set[Path]) -> bool:
    """Whether a write that removed nothing leaves every entry as it is: it changed nothing, or only
    fields its manager (``me``, keyed ``me_key``) already owns alone, with its entry already stamped ``now``."""
    if not changed:
        return True
    previous = managers.get(me_key)
    if previous is None or previous.time != me.time or not changed <= previous.fields:
        return False
    return all(entry.fields.isdisjoint(changed) for key, entry in managers.items() if key != me_key)


def _has_uid(obj: Mapping[str, Any]) -> bool:
    meta = obj.get("metadata")
    return isinstance(meta, MAPPING) and bool(meta.get("uid"))


def _no_fields(_path: tuple[str, ...]) -> FieldMeta | None:
    """The lookup of a write without a schema: every list atomic, no atomic map."""
    return None


# -- apply ----------------------------------------------------------------------------------------

_APPLIED_LIMIT = 256
_APPLIED_BODY_LIMIT = 64 * 1024
# What an apply body becomes, by the caller's key for it (its bytes and the resource type, see
# ``applied_memo_key``): the configuration after the caller's parsing, checks and key defaults
# (``_CONFIGS``), and the field set it owns under a schema (``_APPLIED``, by key and field lookup,
# the lookup held by identity: a changed CRD schema gets a new lookup).  Controllers apply the same
# configuration again and again, and both are pure functions of the key.  Only what an apply
# computed without error is kept; each is forgotten wholesale past the limit.  Configurations are
# shared between requests, so, like stored objects, they are never mutated.
_APPLIED: dict[tuple[Hashable, FieldLookup], frozenset[Path]] = {}
_CONFIGS: dict[Hashable, dict[str, Any]] = {}


def remembered_configuration(memo_key: Hashable | None) -> dict[str, Any] | None:
    """The configuration ``remember_configuration`` kept for this key, if any."""
    return None if memo_key is None else _CONFIGS.get(memo_key)


def remember_configuration(memo_key: Hashable | None, applied: dict[str, Any]) -> None:
    """Keep ``applied`` (checked and defaulted, applied without error) for later bodies of this key."""
    if memo_key is None:
        return
    if len(_CONFIGS) >= _APPLIED_LIMIT:
        _CONFIGS.clear()
    _CONFIGS[memo_key] = applied


def applied_memo_key(body: bytes | None, *parts: Hashable) -> Hashable | None:
    """The memo key of an apply request's configuration: its body's bytes and whatever else the
    caller's parsing and defaulting of it depend on (``parts``); None (no memo) for large bodies."""
    if body is None or len(body) > _APPLIED_BODY_LIMIT:
        return None
    return (body, *parts)


def _merge_and_own(base: dict[str, Any], applied: dict[str, Any], ctx: WalkContext, fields: FieldLookup,
                   memo_key: Hashable | None) -> tuple[Any, frozenset[Path]]:
    """The merged object and the applied field set: the set from the memo when the configuration was
    met before (the merge alone then walks it), else both in one walk and the set remembered."""
    if memo_key is None:
        return merge_applied(base, applied, ctx)
    key = (memo_key, fields)
    paths = _APPLIED.get(key)
    if paths is not None:
        # The configuration passed config_fields' checks when it was memoised, so the merge's own
        # (a subset) pass again.
        return merge_config(base, applied, None, (), (), ctx), paths
    merged, paths = merge_applied(base, applied, ctx)
    if len(_APPLIED) >= _APPLIED_LIMIT:
        _APPLIED.clear()
    _APPLIED[key] = paths
    return merged, paths



def server_side_apply(live: dict[str, Any] | None, applied: dict[str, Any], *, manager: str, force: bool,
                      fields: FieldLookup, now: str, api_version: str, subresource: str = "",
                      memo_key: Hashable | None = None) -> dict[str, Any]:
    """The object after ``manager`` applies ``applied`` (``live`` None creates), with managedFields.

    ``memo_key`` (see ``applied_memo_key``) identifies ``applied`` for the field-set memo: the same
    key must always come with the same configuration.
    """
    if not isinstance(applied, dict):
        raise bad_request("the apply configuration must be a YAML or JSON object")
    for required in ("apiVersion", "kind"):
        if not isinstance(applied.get(required), str) or not applied[required]:
            raise bad_request(f"Object '{'Kind' if required == 'kind' else required}' is missing in the apply "
                              "configuration")
    meta = applied.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request("metadata in the apply configuration must be an object")
    if isinstance(meta, dict) and meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    ctx = WalkContext(fields)
    base = _strip_managed(live) if live is not None else {}
    source = _managed(live) if live is not None else None
    managers = (_decode_entries(source) or {}) if live is not None else {}
    stored = dict(managers)
    if live is not None and not managers:
        # An object nobody manages yet: as the apiserver does, everything in it is first credited to
        # a "before-first-apply" updater, so the apply conflicts with values it would change.
        adopted = diff_objects({}, base, ctx).added
        if adopted:
            first = _Entry("before-first-apply", "Update", api_version, now, "", frozenset(adopted))
            managers[first.key] = first
    merged, applied_paths = _merge_and_own(base, applied, ctx, fields, memo_key)
    assert isinstance(merged, dict)
    me = _Entry(manager, "Apply", api_version, now, subresource, applied_paths)
    me_key = me.key  # a property that builds a tuple: read once
    previous = managers.get(me_key)
    kept = _keep_server_metadata(merged, base)
    fresh = kept is not merged  # fresh copies of the object and its metadata (prune below copies on write)
    merged = kept
    managers[me_key] = me
    dropped = previous.fields - me.fields if previous is not None else frozenset()
    if dropped:
        owned = prefixes(p for e in managers.values() for p in e.fields)
        doomed = {p for p in dropped if p not in owned}
        merged = prune(merged, doomed, ctx, owned)
    diff = diff_objects(base, merged, ctx)
    changed = diff.added | diff.modified
    conflicts: list[tuple[_Entry, Path]] = []
    for key, entry in managers.items():
        if key != me_key:
            conflicts.extend((entry, path) for path in entry.fields & changed)
    if conflicts and not force:
        raise _conflict_error(conflicts)
    result: _Managers = {}
    for key, entry in managers.items():
        if key == me_key:
            # The apiserver stamps the applier's time only when the object changed.
            touched = bool(changed or diff.removed) or previous is None
            if touched or previous is None:
                result[key] = me
            else:
                result[key] = _Entry(me.manager, me.operation, me.api_version, previous.time, me.subresource,
                                     me.fields)
            continue
        _keep_unchanged(result, key, entry, changed, diff.removed)
    if result == stored and _rendered_here(source):
        # The usual re-apply of an unchanged configuration at the same time: every entry would render
        # as it is stored, so the stored list is shared (no FieldsV1 encoding, no new list).
        assert isinstance(source, list)
        return _with_managed_fields(merged, source, fresh)
    return _with_managed_fields(merged, _render(result), fresh)


def _keep_server_metadata(merged: dict[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    merged_meta = merged.get("metadata")
    if not isinstance(merged_meta, dict):
        return merged
    live_meta = live.get("metadata") if isinstance(live.get("metadata"), MAPPING) else {}
    assert isinstance(live_meta, MAPPING)
    meta = dict(merged_meta)
    for name in _SERVER_METADATA:
        if name in live_meta:
            meta[name] = live_meta[name]
        else:
            meta.pop(name, None)
    out = dict(merged)
    out["metadata"] = meta
    return out


def _conflict_error(conflicts: Iterable[tuple[_Entry, Path]]) -> PatchError:
    ordered = sorted(conflicts, key=lambda c: (c[0].manager, c[0].key, path_string(c[1])))
    causes = [{"type": "FieldManagerConflict", "message": f"conflict with {entry.describe()}",
               "field": path_string(path)} for entry, path in ordered]
    if len(ordered) == 1:
        entry, path = ordered[0]
        message = f"Apply failed with 1 conflict: conflict with {entry.describe()}: {path_string(path)}"
    else:
        lines: list[str] = []
        current: str | None = None
        for entry, path in ordered:
            who = entry.describe()
            if who != current:
                lines.append(f"conflicts with {who}:")
                current = who
            lines.append(f"- {path_string(path)}")
        message = f"Apply failed with {len(ordered)} conflicts: " + "\n".join(lines)
    return PatchError(409, "Conflict", message, causes)
