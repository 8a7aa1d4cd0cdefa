"""Discovery paths are delegated to discovery.respond (another module); 404 while it is absent."""

from __future__ import annotations

import sys
import types

import pytest


@pytest.mark.parametrize("path", ["/version", "/api", "/apis", "/api/v1", "/apis/apps", "/apis/apps/v1"])
def test_discovery_paths_go_to_discovery_respond(server, monkeypatch, path):
    seen = []
    fake = types.ModuleType("kamera_cli.apiserver.server.discovery")
    fake.respond = lambda registry, p: seen.append(p) or (200, {"kind": "Fake", "path": p})  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kamera_cli.apiserver.server.discovery", fake)
    monkeypatch.delattr("kamera_cli.apiserver.server.discovery", raising=False)
    resp = server.handle("GET", path, [], {}, None)
    assert resp.status == 200 and resp.json() == {"kind": "Fake", "path": path}
    assert seen == [path]


def test_unknown_discovery_path_is_404(server, monkeypatch):
    fake = types.ModuleType("kamera_cli.apiserver.server.discovery")
    fake.respond = lambda registry, p: None  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "kamera_cli.apiserver.server.discovery", fake)
    assert server.handle("GET", "/apis/nope.io", [], {}, None).status == 404
