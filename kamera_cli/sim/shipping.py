"""States packed for another process of a split search, with the objects in them interned.

Why intern: kamera's caches key on object identity (a stored object never changes, so its digest,
its canonical text and the replay of a memoised step from it are computed once). A state unpickled
in another process brings fresh copies of every object in it, and each copy misses every cache:
measured, a worker's step cost 1.4–1.75× a serial one's until objects were interned. So each
stored object is pickled on its own, once per identity on the sending side, and the receiving side
keeps one object per distinct pickle: a state received twice, or two states sharing an object,
share it there too.

Why the state is taken apart here rather than by a ``persistent_id`` hook: the pickler calls such a
hook for every object it meets (~575 per state of ten ConfigMaps, strings included), and those
Python calls cost more than the rest of the pickling. A state's stored objects sit in two known
places (the snapshot's entries and its write log), so the packer replaces them by their pickles and
hands the pickler nothing but tuples, strings and numbers.
"""

from __future__ import annotations

import pickle
from operator import attrgetter
from typing import Any

import immutables

from kamera_cli.apiserver.storage.snapshot import Snapshot, WriteRecord
from kamera_cli.model.objects import ObjectRef
from kamera_cli.sim.state import FaultBook, PendingItem, SimState, pending_values

#: past this many entries a table is forgotten wholesale (crude but bounded)
_LIMIT = 100_000
_PROTOCOL = pickle.HIGHEST_PROTOCOL
_ref_values = attrgetter("api_version", "kind", "namespace", "name")


class Shipping:
    """One process's tables: what it pickled (by identity) and what it received (by pickle)."""

    def __init__(self, derived: tuple[str, ...] = ()) -> None:
        #: the snapshot's ``derived`` values that travel with it, when computed (cheap to pickle,
        #: dear to recompute: a receiver would otherwise rescan every shipped state)
        self.derived = derived
        self.pickled: dict[int, tuple[Any, bytes]] = {}
        self.interned: dict[bytes, Any] = {}
        #: write records likewise: consecutive states share most of their logs (a sliding window)
        self.records_pickled: dict[int, tuple[WriteRecord, bytes]] = {}
        self.records: dict[bytes, WriteRecord] = {}

    def dumps(self, state: SimState, extra: object = None) -> bytes:
        """``state`` (and ``extra``, pickled as it is) as bytes for ``loads`` in another process."""
        blob = self._blob
        kinds, acc, count, rv, log, counters, fp = state.snapshot.parts()
        entries = [(kind, [(name, blob(entry[0]), entry[1]) for name, entry in names.items()])
                   for kind, names in kinds.items()]
        writes = [self._record_blob(w) for w in log]
        faults = state.faults
        snapshot = state.snapshot
        derived = [(key, value) for key in self.derived if (value := snapshot.cached(key)) is not None]
        payload = (entries, acc, count, rv, writes, tuple(counters.items()), fp, derived,
                   [pending_values(p) for p in state.pending], state.clock, state.next_action,
                   state.steps_since_action,
                   (faults.crashes, faults.conflicts, faults.lags,
                    tuple((kind, tuple(map(self._record_blob, records))) for kind, records in faults.history)),
                   state.halted,
                   state.extra, state.outcomes, state.memory, state._fp, extra)
        return pickle.dumps(payload, protocol=_PROTOCOL)

    def loads(self, data: bytes) -> tuple[SimState, Any]:
        if len(self.interned) > _LIMIT:
            self.interned.clear()
        if len(self.records) > _LIMIT:
            self.records.clear()
        (entries, acc, count, rv, writes, counters, fp, derived, pending, clock, next_action, steps, faults, halted,
         extra_fp, outcomes, memory, state_fp, extra) = pickle.loads(data)
        obj = self._object
        kinds = immutables.Map({kind: immutables.Map({name: [obj(b), member] for name, b, member in names})
                                for kind, names in entries})
        log = tuple(map(self._record, writes))
        snapshot = Snapshot.from_parts(kinds, acc, count, rv, log, immutables.Map(counters), fp,
                                       dict(derived))
        crashes, conflicts, lags, history = faults
        book = FaultBook(crashes, conflicts, lags,
                         tuple((kind, tuple(map(self._record, records))) for kind, records in history))
        state = SimState(snapshot, tuple(PendingItem(*p) for p in pending), clock, next_action, steps,
                         book, halted, extra_fp, outcomes, memory)
        if state_fp:
            object.__setattr__(state, "_fp", state_fp)
        return state, extra

    def _blob(self, obj: Any) -> bytes | None:
        if obj is None:
            return None
        hit = self.pickled.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = pickle.dumps(obj, protocol=_PROTOCOL)
        if len(self.pickled) > _LIMIT:
            self.pickled.clear()
        self.pickled[id(obj)] = (obj, data)  # the entry keeps the object alive: its id stays its own
        return data

    def _object(self, data: bytes | None) -> Any:
        if data is None:
            return None
        obj = self.interned.get(data)
        if obj is None:
            obj = self.interned[data] = pickle.loads(data)
        return obj

    def _record_blob(self, record: WriteRecord) -> bytes:
        hit = self.records_pickled.get(id(record))
        if hit is not None and hit[0] is record:
            return hit[1]
        blob = self._blob
        data = pickle.dumps((record.rv, record.type, _ref_values(record.ref), blob(record.before),
                             blob(record.after)), protocol=_PROTOCOL)
        if len(self.records_pickled) > _LIMIT:
            self.records_pickled.clear()
        self.records_pickled[id(record)] = (record, data)
        return data

    def _record(self, data: bytes) -> WriteRecord:
        record = self.records.get(data)
        if record is None:
            rv, kind, ref, before, after = pickle.loads(data)
            obj = self._object
            record = self.records[data] = WriteRecord(rv, kind, ObjectRef(*ref), obj(before), obj(after))
        return record
