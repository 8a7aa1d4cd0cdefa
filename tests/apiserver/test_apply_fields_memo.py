"""The memos of server-side apply (the checked, defaulted configuration and its field set): keyed
by the body's bytes and the resource type, a hit answers exactly as a miss, a different body misses,
and a failing apply leaves nothing behind.  (An apply body names its kind, so the same bytes cannot
address another resource type; the resource type is in the key all the same, with the schema's
lookup.)"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from kamera_cli.apiserver import ApiServer
from kamera_cli.apiserver.patch import apply as patch_ssa
from kamera_cli.apiserver.patch import managed_fields

from .conftest import make_server

APPLY = {"Content-Type": "application/apply-patch+yaml"}
PATH = "/apis/apps/v1/namespaces/default/deployments/web"


def _deployment(replicas: int = 1, ports: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    container = {"name": "web", "image": "nginx:1", "ports": ports or [{"containerPort": 80}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [container]}}}}


def _apply(server: ApiServer, body: bytes, manager: str = "me") -> tuple[int, bytes]:
    resp = server.handle("PATCH", PATH, [("fieldManager", manager), ("force", "true")], APPLY, body)
    return resp.status, resp.body


@pytest.fixture(autouse=True)
def empty_memo() -> Iterator[None]:
    _forget()
    yield
    _forget()


def _forget() -> None:
    managed_fields._APPLIED.clear()
    managed_fields._CONFIGS.clear()
    patch_ssa._FIXED.clear()


def _answers(bodies: list[bytes]) -> list[tuple[int, bytes]]:
    server = make_server()
    return [_apply(server, body, manager=f"m{i % 2}") for i, body in enumerate(bodies)]


def test_a_hit_answers_exactly_as_a_miss() -> None:
    bodies = [json.dumps(_deployment(r)).encode() for r in (1, 2, 1, 2, 3, 1)]
    cold = []
    for n in range(1, len(bodies) + 1):  # each answer computed with the memo emptied first
        _forget()
        server = make_server()
        for i, body in enumerate(bodies[:n - 1]):
            _apply(server, body, manager=f"m{i % 2}")
            _forget()
        cold.append(_apply(server, bodies[n - 1], manager=f"m{(n - 1) % 2}"))
    _forget()
    warm = _answers(bodies)
    assert len(managed_fields._APPLIED) == len(managed_fields._CONFIGS) == 3  # three distinct bodies
    assert warm == cold
    assert all(status == 200 or status == 201 for status, _ in warm)


def test_a_different_body_misses() -> None:
    server = make_server()
    _apply(server, json.dumps(_deployment(1)).encode())
    assert len(managed_fields._APPLIED) == 1
    status, body = _apply(server, json.dumps(_deployment(1, [{"containerPort": 81}])).encode())
    assert status == 200
    assert len(managed_fields._APPLIED) == 2
    ports = json.loads(body)["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 81, "protocol": "TCP"}]  # the new body's fields, not the first's
    fields = json.loads(body)["metadata"]["managedFields"][0]["fieldsV1"]
    assert 'k:{"containerPort":80,"protocol":"TCP"}' not in json.dumps(fields)


def test_errors_are_not_cached() -> None:
    server = make_server()
    broken = json.dumps(_deployment(1, [{"containerPort": 80}, {"containerPort": 80}])).encode()
    first = _apply(server, broken)
    assert first[0] == 422 and b"duplicate entries" in first[1]
    assert not managed_fields._APPLIED and not managed_fields._CONFIGS
    assert _apply(server, broken) == first
    assert not managed_fields._APPLIED and not managed_fields._CONFIGS


def test_a_remembered_body_is_still_checked_against_the_url() -> None:
    server = make_server()
    body = json.dumps(_deployment(1)).encode()
    assert _apply(server, body)[0] == 201
    assert len(managed_fields._CONFIGS) == 1
    resp = server.handle("PATCH", PATH.replace("/web", "/other"), [("fieldManager", "me")], APPLY, body)
    assert resp.status == 400 and b"does not match the name on the URL" in resp.body
    resp = server.handle("PATCH", PATH.replace("/default/", "/kube-system/"), [("fieldManager", "me")], APPLY, body)
    assert resp.status == 400 and b"namespace of the provided object does not match" in resp.body


def test_a_remembered_configuration_is_not_changed_by_applying_it() -> None:
    server = make_server()
    body = json.dumps(_deployment(2)).encode()
    _apply(server, body)
    (remembered,) = managed_fields._CONFIGS.values()
    before = json.dumps(remembered, sort_keys=True)
    for manager in ("me", "other", "me"):
        _apply(server, body, manager=manager)
    assert json.dumps(remembered, sort_keys=True) == before
    assert remembered["spec"]["template"]["spec"]["containers"][0]["ports"] == [
        {"containerPort": 80, "protocol": "TCP"}]  # kept after the key defaults


def test_large_bodies_are_not_memoised() -> None:
    assert managed_fields.applied_memo_key(b"x" * (64 * 1024 + 1), "apps/v1") is None
    assert managed_fields.applied_memo_key(None, "apps/v1") is None
    assert managed_fields.applied_memo_key(b"{}", "apps/v1") == (b"{}", "apps/v1")


def test_a_remembered_unchanged_merge_does_not_hide_another_writer_s_change() -> None:
    """The merge's memo of unchanged subtrees (``patch_ssa._FIXED``) is keyed by the live subtree's
    identity: once another writer replaced the template, re-applying the configuration merges again."""
    body = json.dumps(_deployment(2)).encode()
    image_patch = json.dumps({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:2"}]}}}})

    def run(cold: bool) -> list[tuple[int, bytes]]:
        server = make_server()
        out = []
        for step in ("apply", "apply", "patch", "apply", "apply"):
            if cold:
                _forget()
            if step == "apply":
                out.append(_apply(server, body))
                continue
            resp = server.handle("PATCH", PATH, [("fieldManager", "other")],
                                 {"Content-Type": "application/strategic-merge-patch+json"}, image_patch.encode())
            out.append((resp.status, resp.body))
        return out

    warm = run(cold=False)
    assert patch_ssa._FIXED
    assert [status for status, _ in warm] == [201, 200, 200, 200, 200]
    assert json.loads(warm[2][1])["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:2"
    assert json.loads(warm[-1][1])["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1"  # forced back
    assert warm == run(cold=True)
