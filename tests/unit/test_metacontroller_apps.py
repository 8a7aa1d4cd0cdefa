"""metacontroller hooks written as WSGI (Flask) and ASGI (FastAPI/Starlette) applications, called in-process.

The plain-callable tests need nothing but the standard library (``wsgiref.validate`` checks both sides
of the WSGI contract); the Flask and Starlette tests skip when those are not installed (they are not
kamera dependencies).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any
from wsgiref.validate import validator

import pytest

from kamera_cli.adapters.metacontroller import load_metacontroller, parse_manifest
from kamera_cli.adapters.metacontroller.apps import is_asgi, is_wsgi
from kamera_cli.adapters.metacontroller.hooks import HookError, HookTarget, call_hook
from kamera_cli.errors import EntrypointError


def wsgi_echo(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    """A WSGI hook: echoes what it was sent, or the status the request asks for."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    request = json.loads(environ["wsgi.input"].read(length))
    answer = (request.get("parent") or {}).get("answer", 200)
    if answer != 200:
        start_response(f"{answer} Not Now", [("Content-Type", "text/plain"), ("Retry-After", "9")])
        return [b"busy"]
    body = json.dumps({"status": {"method": environ["REQUEST_METHOD"], "path": environ["PATH_INFO"],
                                  "query": environ["QUERY_STRING"], "type": environ["CONTENT_TYPE"],
                                  "seen": request}}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body[:5], body[5:]]  # in several chunks


async def asgi_echo(scope: dict[str, Any], receive: Callable[..., Any], send: Callable[..., Any]) -> None:
    """An ASGI hook: reads the whole body (possibly in parts), echoes it."""
    assert scope["type"] == "http"
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body)
    answer = (request.get("parent") or {}).get("answer", 200)
    if answer != 200:
        await send({"type": "http.response.start", "status": answer, "headers": [(b"retry-after", b"4")]})
        await send({"type": "http.response.body", "body": b"busy"})
        return
    out = json.dumps({"status": {"method": scope["method"], "path": scope["path"],
                                 "query": scope["query_string"].decode(), "seen": request}}).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": out[:3], "more_body": True})
    await send({"type": "http.response.body", "body": out[3:]})


def test_a_wsgi_application_gets_metacontrollers_post_under_pep_3333() -> None:
    # wsgiref's validator checks the environ kamera builds and the app's answer against PEP 3333
    target = HookTarget("sync", "hooks.py:app", "wsgi", validator(wsgi_echo), "/sync%20it?x=1")
    body = call_hook(target, {"parent": {"name": "p"}}).body
    assert body == {"status": {"method": "POST", "path": "/sync it", "query": "x=1", "type": "application/json",
                               "seen": {"parent": {"name": "p"}}}}
    assert call_hook(target, {"parent": {"answer": 429}}).retry_after == 9.0
    with pytest.raises(HookError, match="HTTP 500: busy"):
        call_hook(target, {"parent": {"answer": 500}})


def test_an_asgi_application_gets_one_http_request_and_its_body() -> None:
    target = HookTarget("sync", "hooks.py:app", "asgi", asgi_echo, "/hooks/sync?x=1")
    body = call_hook(target, {"parent": {"name": "p"}}).body
    assert body == {"status": {"method": "POST", "path": "/hooks/sync", "query": "x=1",
                               "seen": {"parent": {"name": "p"}}}}
    assert call_hook(target, {"parent": {"answer": 429}}).retry_after == 4.0


def test_an_application_that_breaks_the_contract_is_a_hook_error() -> None:
    def silent(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        return []

    async def mute(scope: Any, receive: Any, send: Any) -> None:
        await receive()

    async def half(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200})
        await send({"type": "http.response.body", "body": b"{", "more_body": True})

    with pytest.raises(HookError, match="never called start_response"):
        call_hook(HookTarget("sync", "h.py:app", "wsgi", silent), {})
    with pytest.raises(HookError, match=r"without sending http\.response\.start"):
        call_hook(HookTarget("sync", "h.py:app", "asgi", mute), {})
    with pytest.raises(HookError, match="before its response body was complete"):
        call_hook(HookTarget("sync", "h.py:app", "asgi", half), {})


def test_an_exception_inside_an_application_is_the_users_not_a_hook_error() -> None:
    def broken(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        raise KeyError("children")

    with pytest.raises(KeyError):
        call_hook(HookTarget("sync", "h.py:app", "wsgi", broken), {})


class _Callable:
    def __call__(self, environ: Any, start_response: Any) -> list[bytes]:
        return []


class _AsyncCallable:
    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        return None


def test_shapes_are_told_apart_by_signature() -> None:
    def hook(request: Any) -> dict[str, Any]:
        return {}

    def hook_with_default(request: Any, extra: Any = None) -> dict[str, Any]:
        return {}

    assert is_wsgi(wsgi_echo) and is_wsgi(_Callable()) and not is_asgi(wsgi_echo)
    assert is_asgi(asgi_echo) and is_asgi(_AsyncCallable()) and not is_wsgi(asgi_echo)
    for value in (hook, hook_with_default, _Callable, 3):
        assert not is_wsgi(value) and not is_asgi(value)


# -- loading from a hook module --------------------------------------------------------------------------------
def load(tmp_path: Path, code: str, entry: str = "hook.py:app") -> Any:
    (tmp_path / "hook.py").write_text(textwrap.dedent(code))
    manifest = {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                "metadata": {"name": "c"},
                "spec": {"parentResource": {"apiVersion": "v1", "resource": "configmaps"},
                         "hooks": {"sync": {"webhook": {"service": {"name": "h", "namespace": "x"},
                                                        "path": "/sync"}}}}}
    hooks = {"sync": entry}
    spec, issues = parse_manifest(manifest, hooks)
    assert spec is not None, issues
    return load_metacontroller(spec, manifest, hooks, tmp_path, scenario="s", controller="c")


def test_a_wsgi_module_that_serves_at_import_still_loads(tmp_path: Path) -> None:
    controller = load(tmp_path, """\
        import json
        from wsgiref.simple_server import make_server
        def app(environ, start_response):
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps({"status": {"path": environ["PATH_INFO"]}}).encode()]
        make_server("", 8080, app).serve_forever()
        AFTER = True
        """)
    try:
        assert controller.targets["sync"].shape == "wsgi"
        assert controller.module.AFTER is True
        assert call_hook(controller.targets["sync"], {}).body == {"status": {"path": "/sync"}}
    finally:
        controller.unload()


def test_an_async_hook_of_one_argument_is_still_refused(tmp_path: Path) -> None:
    with pytest.raises(EntrypointError, match=r"is async.*ASGI application takes"):
        load(tmp_path, "async def app(request):\n    return {}\n")


def test_a_flask_application_and_its_app_run_at_import(tmp_path: Path) -> None:
    pytest.importorskip("flask", reason="Flask is not installed (not a kamera dependency)")
    controller = load(tmp_path, """\
        from flask import Flask, jsonify, request
        app = Flask(__name__)
        @app.route("/sync", methods=["POST"])
        def sync():
            parent = request.get_json()["parent"]
            return jsonify({"status": {"seen": parent["metadata"]["name"]}, "children": []})
        app.run(host="0.0.0.0", port=80)
        AFTER = True
        """)
    try:
        target = controller.targets["sync"]
        assert target.shape == "wsgi" and controller.module.AFTER is True
        assert call_hook(target, {"parent": {"metadata": {"name": "p"}}}).body == {
            "status": {"seen": "p"}, "children": []}
    finally:
        controller.unload()


def test_a_starlette_application(tmp_path: Path) -> None:
    pytest.importorskip("starlette", reason="Starlette is not installed (not a kamera dependency)")
    controller = load(tmp_path, """\
        from starlette.applications import Starlette
        from starlette.responses import JSONResponse
        from starlette.routing import Route
        async def sync(request):
            parent = (await request.json())["parent"]
            return JSONResponse({"status": {"seen": parent["metadata"]["name"]}})
        app = Starlette(routes=[Route("/sync", sync, methods=["POST"])])
        """)
    try:
        target = controller.targets["sync"]
        assert target.shape == "asgi"
        assert call_hook(target, {"parent": {"metadata": {"name": "p"}}}).body == {"status": {"seen": "p"}}
        with pytest.raises(HookError, match="HTTP 404"):  # the route is the manifest's path
            call_hook(HookTarget("sync", "hook.py:app", "asgi", target.target, "/other"), {})
    finally:
        controller.unload()


def test_an_asgi_module_that_runs_uvicorn_at_import_still_loads(tmp_path: Path) -> None:
    pytest.importorskip("uvicorn", reason="uvicorn is not installed (not a kamera dependency)")
    controller = load(tmp_path, """\
        import json
        import uvicorn
        from uvicorn import run
        async def app(scope, receive, send):
            await receive()
            await send({"type": "http.response.start", "status": 200})
            await send({"type": "http.response.body", "body": json.dumps({"status": {"p": scope["path"]}}).encode()})
        uvicorn.run(app, host="0.0.0.0", port=80)
        run(app)
        AFTER = True
        """)
    try:
        assert controller.targets["sync"].shape == "asgi" and controller.module.AFTER is True
        assert call_hook(controller.targets["sync"], {}).body == {"status": {"p": "/sync"}}
    finally:
        controller.unload()
    import uvicorn

    assert uvicorn.run.__module__ == "uvicorn.main"  # put back after the import


def test_a_fastapi_application_with_pydantic_models(tmp_path: Path) -> None:
    pytest.importorskip("fastapi", reason="FastAPI is not installed (not a kamera dependency)")
    controller = load(tmp_path, """\
        from fastapi import FastAPI
        from pydantic import BaseModel
        app = FastAPI()
        class SyncRequest(BaseModel):
            parent: dict
            children: dict = {}
        @app.post("/sync")
        async def sync(request: SyncRequest) -> dict:
            return {"status": {"seen": request.parent["metadata"]["name"]}, "children": []}
        """)
    try:
        target = controller.targets["sync"]
        assert target.shape == "asgi"
        assert call_hook(target, {"parent": {"metadata": {"name": "p"}}, "children": {}}).body == {
            "status": {"seen": "p"}, "children": []}
        with pytest.raises(HookError, match="HTTP 422"):  # FastAPI's validation answer, as metacontroller sees it
            call_hook(target, {"children": {}})
    finally:
        controller.unload()
