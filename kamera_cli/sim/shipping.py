"""States packed for another process of a split search, with the objects in them interned.

Why intern: kamera's caches key on object identity (a stored object never changes, so its digest,
its canonical text and the replay of a memoised step from it are computed once). A state unpickled
in another process brings fresh copies of every object in it, and each copy misses every cache:
measured, a worker's step cost 1.4–1.75× a serial one's until objects were interned. So each
stored object (a dict with ``kind`` and ``metadata``) is pickled on its own, once per identity on
the sending side, and the receiving side keeps one object per distinct pickle: a state received
twice, or two states sharing an object, share it there too.
"""

from __future__ import annotations

import io
import pickle
from typing import Any

#: past this many entries a table is forgotten wholesale (crude but bounded)
_LIMIT = 100_000
_PROTOCOL = pickle.HIGHEST_PROTOCOL


class Shipping:
    """One process's tables: what it pickled (by identity) and what it received (by pickle)."""

    def __init__(self) -> None:
        self.pickled: dict[int, tuple[Any, bytes]] = {}
        self.interned: dict[bytes, Any] = {}

    def dumps(self, payload: object) -> bytes:
        buf = io.BytesIO()
        _Packer(buf, self.pickled).dump(payload)
        return buf.getvalue()

    def loads(self, blob: bytes) -> Any:
        if len(self.interned) > _LIMIT:
            self.interned.clear()
        return _Unpacker(io.BytesIO(blob), self.interned).load()


class _Packer(pickle.Pickler):
    def __init__(self, file: io.BytesIO, pickled: dict[int, tuple[Any, bytes]]) -> None:
        super().__init__(file, protocol=_PROTOCOL)
        self.pickled = pickled

    def persistent_id(self, obj: Any) -> bytes | None:
        if type(obj) is not dict or "metadata" not in obj or "kind" not in obj:
            return None
        hit = self.pickled.get(id(obj))
        if hit is not None and hit[0] is obj:
            return hit[1]
        data = pickle.dumps(obj, protocol=_PROTOCOL)
        if len(self.pickled) > _LIMIT:
            self.pickled.clear()
        self.pickled[id(obj)] = (obj, data)  # the entry keeps the object alive: its id stays its own
        return data


class _Unpacker(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, interned: dict[bytes, Any]) -> None:
        super().__init__(file)
        self.interned = interned

    def persistent_load(self, pid: Any) -> Any:
        obj = self.interned.get(pid)
        if obj is None:
            obj = self.interned[pid] = pickle.loads(pid)
        return obj
