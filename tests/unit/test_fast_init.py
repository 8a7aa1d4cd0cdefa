"""``model.frozen.fast_init`` must leave a frozen dataclass behaving exactly as the generated ``__init__`` did."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from kamera_cli.apiserver.server.base import Access, HttpResponse
from kamera_cli.apiserver.storage.snapshot import WriteRecord
from kamera_cli.model.frozen import fast_init
from kamera_cli.model.objects import ObjectRef


@fast_init
@dataclass(frozen=True, slots=True, order=True)
class _Point:
    x: int
    y: int = 2
    label: str = "p"


def test_construction_defaults_keywords_and_replace() -> None:
    assert _Point(1) == _Point(x=1, y=2, label="p")
    assert _Point(1, 5, label="q") == _Point(1, 5, "q")
    assert dataclasses.replace(_Point(1), y=7) == _Point(1, 7)
    assert repr(_Point(1)) == "_Point(x=1, y=2, label='p')"
    with pytest.raises(TypeError):
        _Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        _Point(1, z=3)  # type: ignore[call-arg]


def test_frozen_hashable_ordered_and_picklable() -> None:
    point = _Point(1, 3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        point.x = 2  # type: ignore[misc]
    assert hash(point) == hash(_Point(1, 3)) and _Point(1, 2) < point
    assert pickle.loads(pickle.dumps(point)) == point


def test_the_records_the_server_builds_per_request_keep_their_fields() -> None:
    ref = ObjectRef("v1", "ConfigMap", "default", "a")
    assert (ref.api_version, ref.kind, ref.namespace, ref.name) == ("v1", "ConfigMap", "default", "a")
    assert pickle.loads(pickle.dumps(ref)) == ref and hash(ref) == hash(ObjectRef("v1", "ConfigMap", "default", "a"))
    access = Access("GET", "get", None, "default", "a", "", (), None)
    assert (access.status, access.response, access.after, access.dry_run) == (0, None, None, False)
    assert HttpResponse(200, {}, b"").stream is None
    assert WriteRecord(1, "ADDED", ref, None, {}).after == {}


def test_unsupported_classes_are_refused() -> None:
    @dataclass(frozen=True, slots=True)
    class WithFactory:
        items: list[int] = field(default_factory=list)

    @dataclass(slots=True)
    class NotFrozen:
        x: int

    @dataclass(frozen=True, slots=True, kw_only=True)
    class KeywordOnly:
        x: int

    for cls in (WithFactory, NotFrozen, KeywordOnly):
        with pytest.raises(TypeError):
            fast_init(cls)
