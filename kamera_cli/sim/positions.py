"""A program's position as a state's fingerprint sees it: its input log up to renaming.

Why: a program's position is the log of inputs it consumed (docs/semantics.md, "Programs: a
position as a log of inputs"), and the log holds what the API server stamped on its answers — every
resourceVersion, every timestamp — and the virtual time each input came at. Two executions that
reach the same cluster by steps in another order (a user's delete before or after the program's
write) give the program the same answers up to those values, yet their logs differ, so their states
never merged and a program step could not be reordered with anyone's.

What is kept (docs/semantics.md, "Program positions"): every input in order, with its answers'
content; each resourceVersion is replaced by its *relation* to the state it is in — the current
resourceVersion of which objects, or the k-th other value the log holds, and whether it is the
cluster's latest — which keeps every equality the program or the server could test; RFC 3339
timestamps are blanked, as the fingerprint of the cluster blanks them; the times inputs came at
are dropped. A program whose log says it observed the clock, its random seed or the server's
history (``ProgramFactory.exact_position``) keeps its log exactly, as before.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from kamera_cli.apiserver import Snapshot
from kamera_cli.sim.traces import normal_form

__all__ = ["ENABLED", "Positions", "ProgramLogs", "Renaming"]

#: tests and benchmarks turn positions up to renaming off, to compare with exact logs (and with every
#: program step global, as before)
ENABLED = True

#: a JSON string that is exactly an RFC 3339 time (what the cluster's fingerprint blanks too)
_TIMESTAMP = re.compile(r'"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"')
#: a resourceVersion in a request's query (a watch from a list's version)
_QUERY_RV = re.compile(r"(?<=[?&])resourceVersion=(\d+)")
_PLACEHOLDER = "\x00rv"
_RV_INDEX = "kamera.sim.rv-index"


class _Entry(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def key(self) -> str: ...

    @property
    def status(self) -> int: ...

    @property
    def headers(self) -> tuple[tuple[str, str], ...]: ...

    @property
    def body(self) -> bytes: ...


class Renaming(Protocol):
    """The symmetry's renaming of generated names in one state (``symmetry.Canon``)."""

    @property
    def names(self) -> Mapping[str, str]: ...

    def rename(self, text: str) -> str: ...


class ProgramLogs(Protocol):
    """What a program's factory tells about the logs its states name (``adapters.program.factory``)."""

    def exact_position(self, digest: str) -> bool: ...

    def segments(self, digest: str) -> Sequence[tuple[str, Sequence[_Entry]]]: ...

    def step_trace(self, digest: str) -> Any: ...


@dataclass(frozen=True, slots=True)
class _Shape:
    """One log segment with its resourceVersions taken out: the digest of its text (a placeholder where
    each value was) and the values in the order of their placeholders."""

    text: bytes
    values: tuple[str, ...]


class Positions:
    """Positions of programs, by log digest and state; each log segment is shaped once.

    ``traces``: a program with threads is placed by its trace's normal form (``sim/traces.py``), not
    its log's order — on whenever the search reduces (``reduction: none`` keeps the log's order)."""

    def __init__(self, traces: bool = False) -> None:
        self.traces = traces
        self._shapes: dict[str, _Shape] = {}
        #: a log's threads in the trace's normal form (None: one thread, or the log's order counts)
        self._forms: dict[str, tuple[tuple[str, tuple[_Entry, ...]], ...] | None] = {}
        self._segment_shapes: dict[tuple[str, tuple[_Entry, ...]], _Shape] = {}

    def key(self, logs: ProgramLogs, digest: str, snapshot: Snapshot, rename: Renaming | None = None) -> str:
        """The program's position in a state with ``snapshot``: the digest itself for an exact one.

        ``rename``: the symmetry's renaming of generated names in this state (sim/symmetry.py), which
        states merged by it must agree on in what the program was told too: the log's text is renamed
        with it, and an exact position (a digest, which cannot be) carries the renaming itself, so
        that only states renamed alike merge.
        """
        if not digest:
            return digest
        if logs.exact_position(digest):
            return digest if rename is None else digest + "|" + json.dumps(sorted(rename.names.items()))
        form = self._form(logs, digest) if self.traces else None
        if form is not None:
            shapes = [self._segment_shape(thread, entries, rename) for thread, entries in form]
            tail = logs.segments(digest)[-1][1][-1]
            if tail.kind == "yield":  # the threads the state's next step chooses among
                shapes.append(_Shape(hashlib.sha256(b"yield\x00" + tail.key.encode()).digest(), ()))
        else:
            segments = logs.segments(digest)
            shapes = ([self._shape(d, entries) for d, entries in segments] if rename is None else
                      [_shaped(entries, rename.rename) for _d, entries in segments])
        current: Mapping[str, str] = snapshot.derived(_RV_INDEX, _rv_index)
        latest = str(snapshot.resource_version)
        tokens: dict[str, str] = {}
        old = 0
        h = hashlib.sha256(b"kamera-program-position")
        for shape in shapes:
            h.update(shape.text)
            for value in shape.values:
                token = tokens.get(value)
                if token is None:
                    token = current.get(value, "")
                    if token and rename is not None:
                        token = rename.rename(token)
                    if not token:
                        token, old = f"old:{old}", old + 1
                    if value == latest:
                        token += "+latest"
                    tokens[value] = token
                h.update(b"\x01" + token.encode())
        return "p:" + h.hexdigest()

    def memory(self, memory: Iterable[tuple[str, str, str]], programs: Mapping[str, ProgramLogs], snapshot: Snapshot,
               converged: bool, rename: Renaming | None = None) -> tuple[tuple[str, str, str], ...]:
        """A state's memory as its fingerprint takes it: each program's log digest replaced by its
        position; at a converged state, without the programs — nothing runs from it, so where a program
        waits can change nothing that is judged there (its cluster, its pod fates)."""
        if converged:
            return tuple(e for e in memory if e[0] not in programs)
        return tuple((owner, key, self.key(programs[owner], value, snapshot, rename) if owner in programs else value)
                     for owner, key, value in memory)

    def traced(self, logs: ProgramLogs, digest: str) -> bool:
        """Whether the program at ``digest`` is placed by its trace's normal form (not its log's order)."""
        return self.traces and not logs.exact_position(digest) and self._form(logs, digest) is not None

    def _form(self, logs: ProgramLogs, digest: str) -> tuple[tuple[str, tuple[_Entry, ...]], ...] | None:
        if digest not in self._forms:
            steps = [(entries, logs.step_trace(d)) for d, entries in logs.segments(digest)]
            form = normal_form(steps)
            self._forms[digest] = None if form is None else tuple((t, tuple(e)) for t, e in form)
        return self._forms[digest]

    def _segment_shape(self, thread: str, entries: tuple[_Entry, ...], rename: Renaming | None) -> _Shape:
        """One thread's segment: its label, then its inputs as a log segment is shaped."""
        if rename is not None:
            return _shaped(entries, rename.rename, thread)
        found = self._segment_shapes.get((thread, entries))
        if found is None:
            found = self._segment_shapes[(thread, entries)] = _shaped(entries, None, thread)
        return found

    def _shape(self, digest: str, entries: Iterable[_Entry]) -> _Shape:
        found = self._shapes.get(digest)
        if found is None:
            found = self._shapes[digest] = _shaped(entries)
        return found


def _shaped(entries: Iterable[_Entry], rename: Callable[[str], str] | None = None, thread: str = "") -> _Shape:
    values: list[str] = []
    text = "\x02".join(_entry_text(entry, values) for entry in entries)
    if thread:
        text = f"\x03{thread}\x03{text}"
    return _Shape(hashlib.sha256((text if rename is None else rename(text)).encode()).digest(), tuple(values))


def _rv_index(snapshot: Snapshot) -> dict[str, str]:
    """resourceVersion -> the objects whose current one it is (as a token)."""
    found: dict[str, list[str]] = {}
    for ref, obj in snapshot.iter_entries():
        meta = obj.get("metadata")
        rv = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
        if isinstance(rv, str):
            found.setdefault(rv, []).append(f"{ref.api_version}/{ref.kind}/{ref.namespace}/{ref.name}")
    return {rv: "cur:" + "|".join(sorted(refs)) for rv, refs in found.items()}


def _entry_text(entry: _Entry, values: list[str]) -> str:
    """An input without the time it came at, with its resourceVersions as placeholders (in ``values``)
    and its timestamps blanked."""
    key = entry.key
    if entry.kind in ("http", "open"):
        key = _request_text(key, values)
    headers = json.dumps(entry.headers)
    body = _json_text(entry.body, values) if entry.body else ""
    return _TIMESTAMP.sub('"<time>"', f"{entry.kind}\x00{key}\x00{entry.status}\x00{headers}\x00{body}")


def _request_text(signature: str, values: list[str]) -> str:
    """A request's signature (``METHOD path?query body``) with the resourceVersions it sends taken out."""
    start = min((i for i in (signature.find(" {"), signature.find(" [")) if i >= 0), default=-1)
    head, body = (signature[:start], signature[start + 1:]) if start >= 0 else (signature, "")

    def query_rv(match: re.Match[str]) -> str:
        values.append(match.group(1))
        return "resourceVersion=" + _PLACEHOLDER

    head = _QUERY_RV.sub(query_rv, head)
    return head + (" " + _json_text(body.encode(), values) if body else "")


def _json_text(raw: bytes, values: list[str]) -> str:
    try:
        doc = json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
    return json.dumps(_without_versions(doc, values, False), sort_keys=True, separators=(",", ":"))


def _without_versions(value: Any, values: list[str], metadata: bool) -> Any:
    """``value`` with every ``metadata.resourceVersion`` replaced by a placeholder, the value appended
    to ``values`` in the order the placeholders will be hashed (sorted keys, as the text is written)."""
    if isinstance(value, dict):
        out = {}
        for k in sorted(value):
            v = value[k]
            if metadata and k == "resourceVersion" and isinstance(v, str):
                values.append(v)
                out[k] = _PLACEHOLDER
            else:
                out[k] = _without_versions(v, values, k == "metadata")
        return out
    if isinstance(value, list):
        return [_without_versions(v, values, False) for v in value]
    return value
