"""Symmetry: objects the server named from one ``generateName`` are interchangeable.

Why: a ReplicaSet's pods, a Job's pods, an Endpoints controller's slices are created from one template
under ``generateName``, and on a cluster their suffixes are random. Two states that differ only by
*which* generated name got which fate (this pod scheduled first, that one ready first) are the same
situation under another draw of the random suffixes, and everything after them is the same up to that
renaming. Exploring both multiplies the states by the number of orders in which interchangeable pods
progress (docs/semantics.md, "Symmetry").

How: a state's fingerprint is taken of its *canonical form*. Each group of generated names — the
objects of one kind and namespace whose ``metadata.name`` the server made from their
``metadata.generateName`` — is ordered by the digest of its members' text with every generated name
blinded (so the order depends on content, not on suffixes); the i-th member's name becomes
``<prefix>\\0<i>\\0`` everywhere it occurs in the state's text (its own key, other objects' fields, the
pending requests, the recorded pod fates). The renaming is a bijection on names and the canonical
tokens hold a NUL, which no object's JSON text holds, so equal canonical forms mean the two states are
one renaming of generated names apart: that is the only thing the reduction assumes the controllers
and invariants do not look at (the soundness argument and what breaks it are in docs/semantics.md).

Names the scenario itself spells out — an invariant, an action or a controller's source naming
``web-7d9f-x2kqp`` literally — are kept as they are (``Symmetry.pinned``): such a name is not
interchangeable with its siblings, and the run's notes say so.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kamera_cli.apiserver.defaulting.metadata import generated_from
from kamera_cli.apiserver.storage.identity import IdentityCache, TextCache
from kamera_cli.apiserver.storage.snapshot import Snapshot, digest_text, fingerprint_of, member
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.scenario import Scenario
from kamera_cli.sim.state import SimState

#: prepared snapshots kept (past this they are forgotten wholesale)
_PREPARED_LIMIT = 4096
_SUFFIX = "bcdfghjklmnpqrstvwxz2456789"
#: a token of a text that could be a name made from generateName: "<prefix>-<5 suffix characters>"
_LOOKALIKE = re.compile(rf"(?<![-a-z0-9.])[a-z0-9][-a-z0-9.]*-[{_SUFFIX}]{{5}}(?![-a-z0-9.])")
# an object's fingerprint text, by identity (objects never change; most states share most of them);
# bounded by the texts' length too: 20,000 texts of workloads (a few KiB each) held tens of MiB, with
# the objects of states the search had let go of (issue #26, as the JSON cache in encoding.py)
_TEXTS: TextCache[str] = TextCache(20_000, budget=2 << 20)


def _text(obj: Any) -> str:
    return _TEXTS.derive(obj, digest_text)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class Canon:
    """A snapshot's canonical form: its fingerprint and the renaming that made it."""

    fingerprint: str
    #: generated name -> canonical token, longest names first (empty: nothing was renamed)
    names: Mapping[str, str]
    _pattern: re.Pattern[str] | None = None

    def rename(self, text: str) -> str:
        """``text`` with every generated name replaced by its canonical token."""
        if self._pattern is None:
            return text
        names = self.names
        return self._pattern.sub(lambda m: names[m.group(0)], text)

    def canonical_name(self, token: str) -> str | None:
        """The generated name this canonical form wrote as ``token`` (None: no such token)."""
        for name, canon in self.names.items():
            if canon == token:
                return name
        return None


@dataclass(frozen=True)
class Group:
    """The objects of one kind and namespace named from one ``generateName`` prefix."""

    api_version: str
    kind: str
    namespace: str
    prefix: str
    names: tuple[str, ...]


def generated_groups(snapshot: Snapshot, pinned: frozenset[str] = frozenset()) -> list[Group]:
    """Every group of generated names in ``snapshot`` (pinned names left out), in key order."""
    found: dict[tuple[str, str, str, str], list[str]] = {}
    _count, _acc, entries = snapshot.weighed_members()
    for ref, obj, _member in entries:
        prefix = _PREFIXES.derive(obj, _generated_prefix)
        if prefix and ref.name not in pinned:
            found.setdefault((ref.api_version, ref.kind, ref.namespace, prefix), []).append(ref.name)
    return [Group(*key, names=tuple(sorted(names))) for key, names in sorted(found.items())]


def _generated_prefix(obj: Any) -> str:
    """The object's ``generateName`` when its name was made from it, else ""."""
    meta = obj.get("metadata")
    prefix = meta.get("generateName") if isinstance(meta, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return prefix if isinstance(prefix, str) and isinstance(name, str) and generated_from(name, prefix) else ""


# whether (and from what) an object's name was generated, by identity
_PREFIXES: IdentityCache[str] = IdentityCache(20_000)


@functools.lru_cache(maxsize=1024)
def _compiled(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(re.escape(n) for n in names))


def _alternation(names: Iterable[str]) -> re.Pattern[str]:
    """One pattern matching any of ``names``, the longest first (states share their name sets, so the
    compiled patterns are kept)."""
    return _compiled(tuple(sorted(names, key=lambda n: (-len(n), n))))


@dataclass(frozen=True)
class _Prepared:
    """What a snapshot's canonical forms share, whatever else the state holds (cached per snapshot)."""

    groups: tuple[Group, ...]
    pattern: re.Pattern[str] | None
    #: generated name -> digest of its object's text with every generated name blinded
    blind: Mapping[str, str]
    #: values the cluster derived from a generated object's identity (``_aliases``): alias -> (name, tag)
    aliases: Mapping[str, tuple[str, str]]
    count: int
    acc: int
    #: the objects whose fingerprint term a renaming can change: (ref, text, term)
    touched: tuple[tuple[ObjectRef, str, int], ...]


class Symmetry:
    """The canonical forms of one simulation's states."""

    def __init__(self, pinned: frozenset[str] = frozenset()) -> None:
        #: names the scenario spells out: never renamed
        self.pinned = pinned
        self._by_fingerprint: dict[str, _Prepared] = {}

    def generated(self, snapshot: Snapshot) -> Mapping[str, str]:
        """The snapshot's renamable generated names, each with its blinded digest (empty: none)."""
        return self._prepared(snapshot).blind

    def canon(self, snapshot: Snapshot, notes: Mapping[str, str] | None = None) -> Canon:
        """The canonical form of a state with this snapshot. ``notes`` says, per generated name, what
        else the state holds about it (its pending requests, its fate) with the name left out: members
        of a group are ordered by their blinded text, then by their notes, so two pods that differ only
        in which one still has work pending are told apart by that, not by their suffixes."""
        prep = self._prepared(snapshot)
        if prep.pattern is None:
            return Canon(snapshot.fingerprint(), {})
        notes = notes or {}
        names: dict[str, str] = {}
        for g in prep.groups:
            ranked = sorted(g.names, key=lambda n: (prep.blind[n], notes.get(n, ""), n))
            for i, name in enumerate(ranked):
                names[name] = f"{g.prefix}\0{i}\0"
        names.update((alias, f"{names[name]}{tag}\0") for alias, (name, tag) in prep.aliases.items())
        ordered = {n: names[n] for n in sorted(names, key=lambda n: (-len(n), n))}
        canon = Canon("", ordered, prep.pattern)
        acc = prep.acc
        for ref, text, old in prep.touched:
            new_ref = ObjectRef(ref.api_version, ref.kind, ref.namespace, names.get(ref.name, ref.name))
            acc = acc - old + member(new_ref, _sha(canon.rename(text)))
        return Canon(fingerprint_of(prep.count, acc), ordered, prep.pattern)

    def _prepared(self, snapshot: Snapshot) -> _Prepared:
        # by the snapshot's fingerprint: what is prepared is a function of the texts the fingerprint
        # digests, and a search meets the same cluster in many states (with other pending work)
        fp = snapshot.fingerprint()
        hit = self._by_fingerprint.get(fp)
        if hit is None:
            if len(self._by_fingerprint) >= _PREPARED_LIMIT:
                self._by_fingerprint.clear()
            hit = self._by_fingerprint[fp] = self._prepare(snapshot)
        return hit

    def _prepare(self, snapshot: Snapshot) -> _Prepared:
        groups = generated_groups(snapshot, self.pinned)
        count, acc, entries = snapshot.weighed_members()
        if not groups:
            return _Prepared((), None, {}, {}, count, acc, ())
        members = {(g.api_version, g.kind, g.namespace, n) for g in groups for n in g.names}
        placeholder = {n: f"{g.prefix}\0*\0" for g in groups for n in g.names}
        aliases = _aliases(snapshot, groups)
        placeholder.update((alias, f"{placeholder[name]}{tag}\0") for alias, (name, tag) in aliases.items())
        pattern = _alternation(placeholder)
        prefixes = tuple({g.prefix[:58] for g in groups})
        blind: dict[str, str] = {}
        touched = []
        for ref, obj, term in entries:
            text = _text(obj)
            mine = (ref.api_version, ref.kind, ref.namespace, ref.name) in members
            if mine or (any(p in text for p in prefixes) and pattern.search(text)):
                touched.append((ref, text, term))
            if mine:
                blind[ref.name] = _blind(obj, text, pattern, placeholder)
        return _Prepared(tuple(groups), pattern, blind, aliases, count, acc, tuple(touched))


# a member's blinded digest, by identity, with the pattern it was blinded by (the same in most states)
_BLINDED: IdentityCache[tuple[re.Pattern[str], str]] = IdentityCache(20_000)


def _blind(obj: Any, text: str, pattern: re.Pattern[str], placeholder: Mapping[str, str]) -> str:
    hit = _BLINDED.get(obj)
    if hit is not None and hit[0] is pattern:
        return hit[1]
    digest = _sha(pattern.sub(lambda m: placeholder[m.group(0)], text))
    _BLINDED.put(obj, (pattern, digest))
    return digest


def _aliases(snapshot: Snapshot, groups: Sequence[Group]) -> dict[str, tuple[str, str]]:
    """Values the simulated cluster derives from a generated object's name and uid, which stand for it
    as its name does: a pod's IP (``podIP``/``podIPs``, which Endpoints copy) and its containers' IDs.
    Renamed with their object (tagged), so two pods whose IPs and container IDs differ only because
    their names do are still interchangeable. Alias -> (generated name, tag)."""
    out: dict[str, tuple[str, str]] = {}
    shared: set[str] = set()  # a value two objects have (a hashed IP can collide) stands for neither
    for g in groups:
        if g.api_version != "v1" or g.kind != "Pod":
            continue
        for name in g.names:
            pod = snapshot.get(ObjectRef("v1", "Pod", g.namespace, name))
            status = pod.get("status") if pod is not None else None
            if not isinstance(status, dict):
                continue
            found = [(status.get("podIP"), "ip")]
            for field in ("initContainerStatuses", "containerStatuses", "ephemeralContainerStatuses"):
                found.extend((cs.get("containerID"), "c" + str(cs.get("name", "")))
                             for cs in status.get(field) or () if isinstance(cs, dict))
            for value, tag in found:
                if not isinstance(value, str) or not value:
                    continue
                if value in out and out[value][0] != name:
                    shared.add(value)
                out[value] = (name, tag)
    return {value: who for value, who in out.items() if value not in shared}


def lookalikes(texts: Iterable[str]) -> frozenset[str]:
    """Tokens of ``texts`` shaped like a name made from generateName (``web-7d9f-x2kqp``)."""
    return frozenset(m.group(0) for text in texts for m in _LOOKALIKE.finditer(text))


def for_scenario(scenario: Scenario) -> tuple[Symmetry, list[str]]:
    """The symmetry of a scenario's run, with the names its invariants, actions and controllers' entry
    files spell out pinned, and the notes that say which (seed objects are not scanned: being seeded
    under a generated name says nothing about being looked up by it)."""
    texts = [(f"{Path(scenario.file).name}'s invariants", repr(scenario.invariants)),
             (f"{Path(scenario.file).name}'s actions", repr(scenario.actions))]
    for c in scenario.controllers:
        for ref in (c.entrypoint, c.kopf, c.program, c.handler, *(h for _n, h in c.hooks)):
            if ref:
                texts.extend(_file_text(scenario.base_dir, ref.rsplit(":", 1)[0] if ":" in ref else ref))
    found: dict[str, str] = {}
    for file, text in texts:
        for name in sorted(lookalikes([text])):
            found.setdefault(name, file)
    return Symmetry(frozenset(found)), pinning_notes(found)


def _file_text(base_dir: str, rel: str) -> list[tuple[str, str]]:
    path = Path(rel) if Path(rel).is_absolute() else Path(base_dir) / rel
    try:
        return [(path.name, path.read_text(errors="replace"))] if path.is_file() else []
    except OSError:
        return []


def pinning_notes(found: Mapping[str, str]) -> list[str]:
    """The run's notes for names kept out of the symmetry reduction (name -> file that spells it)."""
    return [f"symmetry: '{name}' (in {file}) looks like a name made from generateName: an object "
            "with exactly that name is not treated as interchangeable with its siblings"
            for name, file in sorted(found.items())]


def translate(rename_from: Canon, rename_to: Canon, name: str) -> str:
    """The name in the second state that plays the part ``name`` plays in the first (the identity for
    names that are not generated)."""
    token = rename_from.names.get(name)
    if token is None:
        return name
    return rename_to.canonical_name(token) or name


def state_notes(state: SimState, generated: Mapping[str, str]) -> dict[str, str]:
    """Per generated name, what a state holds about it besides the cluster: its pending requests (with
    their delays and flags) and its recorded fate, the name itself left out."""
    if not generated:
        return {}
    notes: dict[str, list[str]] = {}
    clock = state.clock
    for p in state.pending:
        if p.name in generated:
            notes.setdefault(p.name, []).append(
                f"{p.controller}\0{p.delay(clock)}\0{int(p.stable)}\0{','.join(p.fresh)}\0"
                f"{int(p.relist)}{int(p.woken)}\0{p.carried_from(clock)}")
    for key, fate in state.outcomes:
        name = key.rpartition("/")[2]
        if name in generated:
            notes.setdefault(name, []).append("fate\0" + fate)
    return {name: "\1".join(sorted(lines)) for name, lines in notes.items()}
