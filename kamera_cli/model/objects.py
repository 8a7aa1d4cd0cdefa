"""Names for Kubernetes kinds and objects, as values.

Why here: the scenario loader, the simulator, the invariants and the reporters all talk about
"example.com/v1/Widget" and "default/demo"; one spelling, parsed in one place, keeps them agreeing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from kamera_cli.model.frozen import fast_init

JSON = Any  # a JSON value: dict, list, str, int, float, bool or None
Manifest = Mapping[str, Any]  # one Kubernetes object as JSON; never mutated once shared
#: ``isinstance(x, MAPPING)`` is ``isinstance(x, Mapping)``, but a dict (what JSON gives) answers at
#: the first, exact check instead of through the ABC's ``__instancecheck__``, a Python-level call
#: that cost ~20 of them per Deployment write.
MAPPING: Final = (dict, Mapping)


@dataclass(frozen=True, slots=True, order=True)
class KindRef:
    """A group/version/kind, written ``group/version/Kind`` (core kinds: ``v1/Kind``)."""

    group: str
    version: str
    kind: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @classmethod
    def parse(cls, text: str) -> KindRef:
        """Parse ``example.com/v1/Widget`` or ``v1/ConfigMap``; raises ValueError with the reason."""
        parts = text.split("/")
        if len(parts) == 2 and all(parts):
            return cls("", parts[0], parts[1])
        if len(parts) == 3 and all(parts):
            return cls(parts[0], parts[1], parts[2])
        raise ValueError(
            f"{text!r} is not a kind reference: write apiVersion/Kind, e.g. example.com/v1/Widget or v1/ConfigMap"
        )

    @classmethod
    def of(cls, api_version: str, kind: str) -> KindRef:
        group, _, version = api_version.rpartition("/")
        return cls(group, version, kind)

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind}"


@fast_init
@dataclass(frozen=True, slots=True, order=True)
class ObjectRef:
    """One object's identity. ``namespace`` is "" for cluster-scoped objects."""

    api_version: str
    kind: str
    namespace: str
    name: str

    def __reduce__(self) -> tuple[type[ObjectRef], tuple[str, str, str, str]]:
        return (ObjectRef, (self.api_version, self.kind, self.namespace, self.name))  # fast pickling

    @property
    def kind_ref(self) -> KindRef:
        return KindRef.of(self.api_version, self.kind)

    @property
    def key(self) -> str:
        """``namespace/name``, or just ``name`` for cluster-scoped objects."""
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    @classmethod
    def of(cls, obj: Manifest) -> ObjectRef:
        meta = obj.get("metadata") or {}
        return cls(
            str(obj.get("apiVersion", "")),
            str(obj.get("kind", "")),
            str(meta.get("namespace") or ""),
            str(meta.get("name") or ""),
        )

    def __str__(self) -> str:
        return f"{self.api_version}/{self.kind} {self.key}"


def plain_json(value: Any) -> Any:
    """Mappings and sequences (an immutables.Map, a tuple) as plain JSON containers (dict, list)."""
    if isinstance(value, Mapping):
        return {str(k): plain_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_json(v) for v in value]
    return value
