"""The external store a fake keeps its state in: a versioned key/value store inside the explored snapshot.

What is checked: reads and writes land in the running step's snapshot and journal (so memoization,
the determinism check and stories see them), versions and compare-and-set, copies in and out, the
crash hook refusing a write before anything is stored, fingerprints that ignore versions as they
ignore resourceVersions, and the state document showing entries under ``external``, not ``items``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kamera_cli import ExternalStore, NoSimulation, VersionConflict
from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.storage.external import EXTERNAL_CRD, with_entries
from kamera_cli.apiserver.transports.containment import Containment
from kamera_cli.errors import KameraError
from kamera_cli.invariants import state_document


@pytest.fixture
def server() -> Iterator[ApiServer]:
    server = ApiServer(Registry.builtin().with_crds([EXTERNAL_CRD]), Snapshot.empty(), now=lambda: 0)
    with Containment(server):
        yield server


def test_put_get_delete_and_versions(server: ApiServer) -> None:
    keys = ExternalStore("aws")
    assert keys.get("AKIA1") is None and keys.version("AKIA1") == 0 and "AKIA1" not in keys
    v1 = keys.put("AKIA1", {"UserName": "team-a"})
    assert keys.get("AKIA1") == {"UserName": "team-a"} and keys.version("AKIA1") == v1 and "AKIA1" in keys
    v2 = keys.put("AKIA1", {"UserName": "team-b"}, version=v1)
    assert v2 > v1
    with pytest.raises(VersionConflict):
        keys.put("AKIA1", {"UserName": "team-c"}, version=v1)
    with pytest.raises(VersionConflict):
        keys.put("AKIA2", {}, version=7)
    keys.put("AKIA0", [1, 2])
    assert keys.items() == [("AKIA0", [1, 2]), ("AKIA1", {"UserName": "team-b"})]
    assert keys.keys() == list(keys) == ["AKIA0", "AKIA1"]
    assert ExternalStore("gcp").items() == []  # stores do not see each other's keys
    assert keys.delete("AKIA0") is True and keys.delete("AKIA0") is False
    assert [(a.verb, a.name, a.status) for a in server.journal if a.verb != "get"] == [
        ("create", "aws:AKIA1", 200), ("apply", "aws:AKIA1", 200), ("create", "aws:AKIA0", 200),
        ("list", "", 200), ("list", "", 200), ("list", "", 200), ("list", "", 200),
        ("delete", "aws:AKIA0", 200), ("delete", "aws:AKIA0", 404)]


def test_values_are_json_and_copied(server: ApiServer) -> None:
    keys = ExternalStore("aws")
    value: dict[str, Any] = {"tags": ["a"]}
    keys.put("k", value)
    value["tags"].append("b")
    got = keys.get("k")
    got["tags"].append("c")
    assert keys.get("k") == {"tags": ["a"]}
    with pytest.raises(TypeError, match="not JSON"):
        keys.put("k", {"when": object()})
    with pytest.raises(TypeError, match="not JSON"):
        keys.put("k", float("nan"))
    with pytest.raises(TypeError, match="non-empty string"):
        keys.put("", 1)
    with pytest.raises(ValueError, match="store's name"):
        ExternalStore("a/b")


def test_a_refused_write_stores_nothing(server: ApiServer) -> None:
    class Crash(BaseException):
        pass

    def crash(access: Any) -> None:
        raise Crash()

    keys = ExternalStore("aws")
    server.before_write = crash
    with pytest.raises(Crash):
        keys.put("k", 1)
    server.before_write = None
    assert keys.get("k") is None and len(server.snapshot) == 0


def test_fingerprints_see_values_not_versions(server: ApiServer) -> None:
    keys = ExternalStore("aws")
    keys.put("k", 1)
    first = server.snapshot.fingerprint()
    keys.put("k", 1)
    assert server.snapshot.fingerprint() == first
    keys.put("k", 2)
    assert server.snapshot.fingerprint() != first


def test_the_state_document_shows_entries_under_external(server: ApiServer) -> None:
    ExternalStore("aws").put("AKIA2", {"UserName": "b"})
    ExternalStore("aws").put("AKIA1", {"UserName": "a"})
    ExternalStore("vault").put("secret/app", "s3cr3t")
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}}
    doc = state_document([*server.snapshot.objects(), cm])
    assert doc["items"] == [cm]
    assert doc["external"] == {"aws": {"AKIA1": {"UserName": "a"}, "AKIA2": {"UserName": "b"}},
                               "vault": {"secret/app": "s3cr3t"}}
    assert list(doc["external"]["aws"]) == ["AKIA1", "AKIA2"]
    assert "external" not in state_document([cm])


def test_outside_a_simulation_with_fakes_the_store_says_so() -> None:
    with pytest.raises(NoSimulation, match="outside a kamera simulation step") as info:
        ExternalStore("aws").get("k")
    assert isinstance(info.value, KameraError)
    plain = ApiServer(Registry.builtin(), Snapshot.empty(), now=lambda: 0)
    with Containment(plain), pytest.raises(NoSimulation):
        ExternalStore("aws").put("k", 1)


def test_only_entries_are_carried_into_the_initial_state(server: ApiServer) -> None:
    start = server.snapshot
    ExternalStore("aws").put("user", {"UserName": "existing"})
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "made-at-import"}})
    initial = with_entries(start, server.snapshot)
    assert [o["metadata"]["name"] for o in initial.objects()] == ["aws:user"]
    (entry,) = initial.objects()
    assert entry["metadata"]["resourceVersion"] == str(initial.resource_version)
