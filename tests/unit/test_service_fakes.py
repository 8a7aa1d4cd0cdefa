"""Fakes by URL, piece by piece: the pattern syntax, the request/response values, the three shapes, the loader.

End to end (every client library, the fence, the explored state) is ``tests/e2e/test_service_fakes.py``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters import check_entrypoint
from kamera_cli.adapters.sandbox.services import FakeServiceError, handler_for, shape_of
from kamera_cli.model.services import ServiceRequest, ServiceResponse, parse_url_pattern
from kamera_cli.scenario import load_scenario
from tests.unit.test_scenario_errors import HEAD, problems_of

# -- the pattern ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("pattern", "url", "matched"), [
    ("http://*-scheduler.*.svc:8787/**", "http://dask-scheduler.default.svc:8787/api/v1/retire_workers", True),
    ("http://*-scheduler.*.svc:8787/**", "http://dask-scheduler.default.svc:8787/", True),
    ("http://*-scheduler.*.svc:8787/**", "http://dask-scheduler.default.svc.cluster.local:8787/", False),
    ("http://*-scheduler.*.svc:8787/**", "http://dask-scheduler.default.svc:8786/", False),
    ("http://*-scheduler.*.svc:8787/**", "https://dask-scheduler.default.svc:8787/", False),
    ("http://*.svc", "http://scheduler.svc/anything/at/all?x=1", True),
    ("http://*.svc", "http://a.b.svc/", False),  # '*' stays within one label
    ("http://**.svc", "http://a.b.svc/", True),
    ("http://**.svc", "http://svc/", False),  # '**' is at least one label
    ("http://API.Example.com/v1/*", "http://api.example.COM/v1/items", True),
    ("http://api.example.com/v1/*", "http://api.example.com/v1/items/3", False),  # '*' within one segment
    ("http://api.example.com/v1/**/status", "http://api.example.com/v1/a/b/status", True),
    ("http://api.example.com/v1/**/status", "http://api.example.com/v1/status", True),  # '**': also none
    ("http://api.example.com/v1/**/status", "http://api.example.com/v1/a/b/state", False),
    ("http://api.example.com/", "http://api.example.com/", True),
    ("http://api.example.com/", "http://api.example.com/x", False),  # a lone '/' is the root only
    ("http://api.example.com", "http://api.example.com:80/x", True),  # the default port, spelt out
    ("http://api.example.com", "http://api.example.com:8080/x", False),
    ("http://api.example.com:*", "http://api.example.com:8080/x", True),
    ("https://vault.internal/v1/*", "https://vault.internal:443/v1/secret", True),
    ("http://api.example.com/items/w*", "http://api.example.com/items/worker-1", True),
    ("http://api.example.com/a%20b", "http://api.example.com/a%20b", False),  # requests are compared unquoted
    ("http://api.example.com/a b".replace(" ", "*"), "http://api.example.com/a%20b", True),
    # aiohttp speaks HTTP to tcp:// (dask-kubernetes' scheduler API): a tcp pattern matches tcp URLs only
    ("tcp://*-scheduler.*:8787/api/**", "tcp://simple-scheduler.default:8787/api/v1/retire_workers", True),
    ("tcp://*-scheduler.*:8787/api/**", "http://simple-scheduler.default:8787/api/v1/retire_workers", False),
    ("http://*-scheduler.*:8787/api/**", "tcp://simple-scheduler.default:8787/api/v1/retire_workers", False),
])
def test_a_pattern_matches_as_documented(pattern: str, url: str, matched: bool) -> None:
    assert parse_url_pattern(pattern).matches(url) is matched


@pytest.mark.parametrize(("pattern", "message"), [
    ("scheduler.svc:8786", "has no scheme"),
    ("ftp://scheduler.svc:8786", "the scheme 'ftp' is not http, https or tcp"),
    ("tcp://scheduler.svc/api", "a tcp:// pattern names its port (tcp has no default port)"),
    ("http://", "has no host"),
    ("http://sched uler.svc", "contains whitespace"),
    ("http://scheduler.svc:99999", "the port '99999' is not a number from 1 to 65535 or '*'"),
    ("http://scheduler.svc:http", "the port 'http' is not a number"),
    ("http://scheduler.svc/x?y=1", "has a query or fragment"),
    ("http://user@scheduler.svc/", "has user information"),
    ("http://sched**.svc/", "the host label 'sched**'"),
    ("http://scheduler.svc/a**/b", "'**' must be a whole path segment"),
    ("http://scheduler.svc/a//b", "has an empty path segment"),
    ("http://sched..svc/", "the host label ''"),
])
def test_a_bad_pattern_says_what_is_wrong(pattern: str, message: str) -> None:
    with pytest.raises(ValueError, match=None) as info:
        parse_url_pattern(pattern)
    assert message in str(info.value), str(info.value)


def test_a_pattern_tells_hosts_it_could_serve() -> None:
    pattern = parse_url_pattern("http://*.svc:8786/workers")
    assert pattern.matches_host("http", "sched.svc", 8786)
    assert not pattern.matches_host("http", "sched.svc", None)  # 80
    assert not pattern.matches_host("https", "sched.svc", 8786)


# -- the values -------------------------------------------------------------------------------------


def test_a_request_reads_as_a_fake_wants_it() -> None:
    request = ServiceRequest("POST", "http://sched.svc:8786/workers/retire?names=a&names=b&x=",
                             (("Content-Type", "application/json"), ("X-Trace", "1")), b'{"n": 2}')
    assert request.path == "/workers/retire" and request.host == "sched.svc"
    assert request.query == {"names": ["a", "b"], "x": [""]}
    assert request.header("content-type") == "application/json" and request.header("nope") is None
    assert request.json() == {"n": 2} and request.text() == '{"n": 2}'
    assert ServiceRequest("GET", "http://a/").json() is None


def test_a_response_is_a_value() -> None:
    answer = ServiceResponse.of_json({"b": 1, "a": [2]}, status=201, headers={"X-Id": "7"})
    assert answer.status == 201 and answer.body == b'{"a":[2],"b":1}'
    assert answer.header("content-type") == "application/json" and answer.header("x-id") == "7"
    text: Any = "plain"
    assert ServiceResponse(200, [("A", "1")], text) == ServiceResponse(200, (("A", "1"),), b"plain")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not an HTTP status"):
        ServiceResponse(42)


# -- the three shapes -------------------------------------------------------------------------------


def wsgi_app(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    seen = {"method": environ["REQUEST_METHOD"], "path": environ["PATH_INFO"], "query": environ["QUERY_STRING"],
            "type": environ.get("CONTENT_TYPE"), "trace": environ.get("HTTP_X_TRACE"),
            "host": environ["HTTP_HOST"], "body": environ["wsgi.input"].read().decode()}
    start_response("202 Accepted", [("Content-Type", "application/json"), ("X-App", "wsgi")])
    return [json.dumps(seen, sort_keys=True).encode()]


async def asgi_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    message = await receive()
    seen = {"method": scope["method"], "path": scope["path"], "query": scope["query_string"].decode(),
            "headers": sorted(k.decode() for k, _ in scope["headers"]), "body": message["body"].decode()}
    await send({"type": "http.response.start", "status": 200, "headers": [(b"x-app", b"asgi")]})
    await send({"type": "http.response.body", "body": json.dumps(seen, sort_keys=True).encode()})


def function(request: ServiceRequest) -> ServiceResponse:
    return ServiceResponse.of_json({"path": request.path}, status=404)


async def async_function(request: ServiceRequest) -> dict[str, str]:
    return {"async": request.method}


REQUEST = ServiceRequest("PUT", "http://sched.svc:8786/w%20x?y=1",
                         (("Content-Type", "text/plain"), ("X-Trace", "t"), ("Host", "ignored")), b"hello")


def test_a_wsgi_app_answers() -> None:
    handler = handler_for(wsgi_app, "wsgi")
    assert handler is not None and shape_of(wsgi_app) == "wsgi"
    answer = handler(REQUEST)
    assert answer.status == 202 and answer.header("x-app") == "wsgi"
    assert json.loads(answer.body) == {"method": "PUT", "path": "/w x", "query": "y=1", "type": "text/plain",
                                       "trace": "t", "host": "sched.svc:8786", "body": "hello"}


def test_a_web_app_behind_a_tcp_url_sees_plain_http() -> None:
    """aiohttp sends a ``tcp://`` URL's request as plain HTTP: the server sees scheme http, and the port."""
    def scheme_of(environ: dict[str, Any], start_response: Any) -> list[bytes]:
        start_response("200 OK", [])
        return [f"{environ['wsgi.url_scheme']} {environ['HTTP_HOST']} {environ['SERVER_PORT']}".encode()]

    async def asgi_scheme(scope: dict[str, Any], receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": f"{scope['scheme']} {scope['server'][1]}".encode()})

    request = ServiceRequest("POST", "tcp://simple-scheduler.default:8787/api/v1/retire_workers", (), b"{}")
    wsgi, asgi = handler_for(scheme_of, "wsgi"), handler_for(asgi_scheme, "asgi")
    assert wsgi is not None and asgi is not None
    assert wsgi(request).body == b"http simple-scheduler.default:8787 8787"
    assert asgi(request).body == b"http 8787"


def test_an_asgi_app_answers() -> None:
    handler = handler_for(asgi_app, "asgi")
    assert handler is not None and shape_of(asgi_app) == "asgi"
    answer = handler(REQUEST)
    assert answer.status == 200 and answer.header("x-app") == "asgi"
    assert json.loads(answer.body) == {"method": "PUT", "path": "/w x", "query": "y=1", "body": "hello",
                                       "headers": ["content-length", "content-type", "host", "x-trace"]}


def test_an_asgi_app_answers_from_inside_a_running_loop() -> None:
    """aiohttp and httpx.AsyncClient ask from the step's own loop: the app runs beside it, not in it."""
    import asyncio

    handler = handler_for(asgi_app, "asgi")
    assert handler is not None

    async def ask() -> ServiceResponse:
        return handler(REQUEST)

    assert asyncio.run(ask()).status == 200


def test_functions_answer_and_a_dict_is_json() -> None:
    sync, coroutine = handler_for(function, "f"), handler_for(async_function, "g")
    assert sync is not None and coroutine is not None
    assert sync(REQUEST) == ServiceResponse.of_json({"path": "/w%20x"}, status=404)
    assert coroutine(REQUEST) == ServiceResponse.of_json({"async": "PUT"})


def test_a_function_answering_something_else_is_the_fakes_error() -> None:
    handler = handler_for(lambda request: "ok", "'fakes/x.py:f'")
    assert handler is not None
    with pytest.raises(FakeServiceError, match=r"the fake 'fakes/x\.py:f' returned str, not a kamera_cli\.ServiceResp"):
        handler(REQUEST)


@pytest.mark.parametrize("value", [42, "app", ServiceResponse, lambda a, b, c: None, lambda: None])
def test_what_is_none_of_the_three_shapes(value: Any) -> None:
    assert handler_for(value, "x") is None


# -- the loader -------------------------------------------------------------------------------------


def _scenario(fakes: str) -> str:
    return HEAD + "  seed: []\n  fakes:\n" + fakes


def _files(tmp_path: Path) -> None:
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "scheduler.py").write_text("def app(environ, start_response):\n    return []\n")
    (tmp_path / "app.py").write_text("def reconcile(request):\n    return None\n")


def test_a_url_fake_is_loaded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    (tmp_path / "scenario.yaml").write_text(_scenario(
        "    - {url: 'http://*-scheduler.*.svc:8787/**', with: fakes/scheduler.py:app}\n"
        "    - {replace: boto3.client, with: fakes/scheduler.py:app}\n"))
    monkeypatch.chdir(tmp_path)
    scenario = load_scenario("scenario.yaml", known_kind=lambda kind: True)
    assert [(f.url, f.replace, f.with_) for f in scenario.fakes] == [
        ("http://*-scheduler.*.svc:8787/**", "", "fakes/scheduler.py:app"),
        ("", "boto3.client", "fakes/scheduler.py:app")]
    assert scenario.fakes[0].position.line == 8


@pytest.mark.parametrize(("entry", "expected"), [
    ("{url: 'ws://sched.svc:8786', with: fakes/scheduler.py:app}",
     "scenario.yaml:8:13: $.spec.fakes[0].url: url 'ws://sched.svc:8786': the scheme 'ws' is not http, https or tcp"),
    ("{url: 'tcp://sched.svc', with: fakes/scheduler.py:app}",
     "scenario.yaml:8:13: $.spec.fakes[0].url: url 'tcp://sched.svc': a tcp:// pattern names its port"),
    ("{url: 'http://sched.svc:8786/a**', with: fakes/scheduler.py:app}",
     "scenario.yaml:8:13: $.spec.fakes[0].url: url 'http://sched.svc:8786/a**': '**' must be a whole path segment"),
    ("{url: 'http://sched.svc', replace: requests.get, with: fakes/scheduler.py:app}",
     "scenario.yaml:8:13: $.spec.fakes[0].url: a fake has either 'replace' or 'url', not both"),
    ("{with: fakes/scheduler.py:app}",
     "scenario.yaml:8:7: $.spec.fakes[0]: a fake needs 'replace' (a Python name) or 'url' (an HTTP service)"),
    ("{url: 'http://sched.svc', with: fakes/nope.py:app}",
     "scenario.yaml:8:39: $.spec.fakes[0].with: fake 'fakes/nope.py:app': file 'fakes/nope.py' not found"),
    ("{url: 'http://sched.svc', with: 'kamera_no_such_fake:app'}",
     "scenario.yaml:8:39: $.spec.fakes[0].with: fake 'kamera_no_such_fake:app': module 'kamera_no_such_fake' "
     "not found"),
    ("{url: 'http://sched.svc', with: fakes/scheduler.py}",
     "scenario.yaml:8:39: $.spec.fakes[0].with: with 'fakes/scheduler.py' names a module; a fake by URL names "
     "an object"),
    ("{url: 42, with: fakes/scheduler.py:app}",
     "scenario.yaml:8:13: $.spec.fakes[0].url: expected string, got integer 42"),
])
def test_a_bad_url_fake_is_located(entry: str, expected: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": _scenario(f"    - {entry}\n")},
                      check_entrypoint=check_entrypoint)
    assert len(got) == 1 and got[0].startswith(expected), got


def test_the_same_url_faked_twice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _files(tmp_path)
    got = problems_of(tmp_path, monkeypatch, {"scenario.yaml": _scenario(
        "    - {url: 'http://sched.svc', with: fakes/scheduler.py:app}\n"
        "    - {url: 'http://sched.svc', with: fakes/scheduler.py:app}\n")})
    assert got == ["scenario.yaml:9:13: $.spec.fakes[1].url: url 'http://sched.svc' is already faked by "
                   "spec.fakes[0] (fake each URL once)"]


# -- real frameworks (not kamera dependencies: .ci/run installs them for the tests named after them) -----


def _ask(handler: Any, method: str, url: str, body: bytes = b"") -> ServiceResponse:
    answer: ServiceResponse = handler(ServiceRequest(method, url, (("Content-Type", "application/json"),), body))
    return answer


def test_a_flask_app_as_a_fake() -> None:
    pytest.importorskip("flask", reason="Flask is not installed (not a kamera dependency)")
    from flask import Flask, jsonify, request

    app = Flask("scheduler")

    @app.post("/api/v1/retire_workers")
    def retire() -> Any:
        return jsonify({"workers": [f"worker-{n}" for n in range(request.get_json()["n"])]})

    handler = handler_for(app, "flask")
    assert handler is not None and shape_of(app) == "wsgi"
    answer = _ask(handler, "POST", "http://dask-scheduler.default.svc:8787/api/v1/retire_workers", b'{"n": 2}')
    assert (answer.status, json.loads(answer.body)) == (200, {"workers": ["worker-0", "worker-1"]})
    assert _ask(handler, "GET", "http://dask-scheduler.default.svc:8787/nowhere").status == 404


def test_a_starlette_app_as_a_fake_also_from_a_running_loop() -> None:
    pytest.importorskip("starlette", reason="Starlette is not installed (not a kamera dependency)")
    import asyncio

    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def workers(request: Request) -> JSONResponse:
        return JSONResponse({"path": request.url.path, "idle": request.query_params.get("idle")})

    app = Starlette(routes=[Route("/api/v1/workers", workers)])
    handler = handler_for(app, "starlette")
    assert handler is not None and shape_of(app) == "asgi"
    url = "http://dask-scheduler.default.svc:8787/api/v1/workers?idle=1"
    assert json.loads(_ask(handler, "GET", url).body) == {"path": "/api/v1/workers", "idle": "1"}

    async def from_a_coroutine() -> ServiceResponse:  # as aiohttp and httpx.AsyncClient ask
        return _ask(handler, "GET", url)

    assert json.loads(asyncio.run(from_a_coroutine()).body)["idle"] == "1"


def test_a_fastapi_app_as_a_fake() -> None:
    pytest.importorskip("fastapi", reason="FastAPI is not installed (not a kamera dependency)")
    from fastapi import FastAPI

    app = FastAPI()

    @app.post("/api/v1/retire_workers")
    async def retire(body: dict[str, int]) -> dict[str, list[str]]:
        return {"workers": [f"worker-{n}" for n in range(body["n"])]}

    handler = handler_for(app, "fastapi")
    assert handler is not None and shape_of(app) == "asgi"
    answer = _ask(handler, "POST", "http://dask-scheduler.default.svc:8787/api/v1/retire_workers", b'{"n": 1}')
    assert (answer.status, json.loads(answer.body)) == (200, {"workers": ["worker-0"]})
