"""The standard library's HTTP client (``http.client``, ``urllib.request``) under fakes by URL and the
simulated cluster, without a scenario: what a controller reads, how HTTP errors surface, framing
(chunked, keep-alive, HEAD), a refused path, a proxy in the environment, the kamera host, and that a
host nobody fakes is left to the real connect (which the sandbox's fence refuses in a scenario).

Scenario-level behaviour (the fence's findings, explored state, the CLI) is
``tests/e2e/test_service_fakes.py``.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest

from kamera_cli.apiserver import ApiServer, Registry, Snapshot
from kamera_cli.apiserver.transports.containment import Containment, NetworkBlocked
from kamera_cli.apiserver.transports.http_client import parse_request, response_bytes
from kamera_cli.apiserver.transports.services import absolute_url, install_routes
from kamera_cli.model.services import ServiceRequest, ServiceResponse, parse_url_pattern
from tests.e2e.test_supervisor import Listener


def _service(request: ServiceRequest) -> ServiceResponse:
    if request.path.endswith("/moved"):
        return ServiceResponse(302, (("Location", "/api/target"),), b"")
    if request.path.endswith("/away"):
        return ServiceResponse(302, (("Location", "http://elsewhere.example/x"),), b"")
    if request.path.endswith("/missing"):
        return ServiceResponse.of_json({"error": "no such worker"}, status=404, headers=[("X-Why", "gone")])
    if request.path.endswith("/boom"):
        raise RuntimeError("the fake failed")
    return ServiceResponse.of_json({"method": request.method, "url": request.url, "body": request.text(),
                                    "chunked": request.header("transfer-encoding")},
                                   headers=[("X-Served-By", "fake"), ("Transfer-Encoding", "chunked")])


@pytest.fixture
def routed() -> Iterator[None]:
    undo = install_routes([(parse_url_pattern("http://sched.default.svc:8786/api/**"), _service),
                           (parse_url_pattern("https://vault.internal/v1/**"), _service)])
    with Containment():
        yield
    undo()


def test_urlopen_reads_the_fakes_answer(routed: None) -> None:
    with urllib.request.urlopen("http://sched.default.svc:8786/api/workers?idle=1", data=b"hi") as response:
        assert response.status == 200 and response.reason == "OK"
        assert response.getheader("x-served-by") == "fake"
        assert response.getheader("Content-Type") == "application/json"
        assert response.getheader("Transfer-Encoding") is None  # the body is framed by its length
        assert response.url == "http://sched.default.svc:8786/api/workers?idle=1"
        answer = json.load(response)
    assert answer == {"method": "POST", "url": "http://sched.default.svc:8786/api/workers?idle=1", "body": "hi",
                      "chunked": None}


def test_an_error_status_raises_http_error_as_urllib_does(routed: None) -> None:
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen("http://sched.default.svc:8786/api/missing")
    assert info.value.code == 404 and info.value.headers["X-Why"] == "gone"
    assert json.load(info.value) == {"error": "no such worker"}


def test_a_fake_that_raises_raises_into_the_caller(routed: None) -> None:
    with pytest.raises(RuntimeError, match="the fake failed"):
        urllib.request.urlopen("http://sched.default.svc:8786/api/boom")


def test_urlopen_follows_a_redirect_to_a_faked_url_and_is_refused_elsewhere(routed: None) -> None:
    with urllib.request.urlopen("http://sched.default.svc:8786/api/moved") as response:
        assert response.url == "http://sched.default.svc:8786/api/target"
        assert json.load(response)["url"] == "http://sched.default.svc:8786/api/target"
    # a redirect to a host no pattern names reaches the real connect, which a step's fence refuses
    # (stood in for here, so that nothing is resolved or sent)
    with pytest.MonkeyPatch.context() as patched:
        def fence(*args: object, **kwargs: object) -> None:
            raise ConnectionRefusedError("fenced")

        patched.setattr(socket, "create_connection", fence)
        with pytest.raises(urllib.error.URLError, match="fenced"):
            urllib.request.urlopen("http://sched.default.svc:8786/api/away")


def test_https_over_urlopen_and_https_connection(routed: None) -> None:
    with urllib.request.urlopen(urllib.request.Request("https://vault.internal/v1/secret/a", method="PUT",
                                                       data=b"s3cr3t")) as response:
        assert json.load(response)["url"] == "https://vault.internal/v1/secret/a"
    conn = http.client.HTTPSConnection("vault.internal")
    conn.request("GET", "/v1/secret/b")
    assert json.loads(conn.getresponse().read())["url"] == "https://vault.internal/v1/secret/b"


def test_one_connection_carries_several_requests_chunked_and_low_level(routed: None) -> None:
    conn = http.client.HTTPConnection("sched.default.svc", 8786)
    conn.request("POST", "/api/a", body=iter([b"ch", b"unk", b"ed"]), encode_chunked=True)
    first = conn.getresponse()
    assert json.loads(first.read()) | {"url": ""} == {"method": "POST", "url": "", "body": "chunked",
                                                      "chunked": "chunked"}
    conn.putrequest("PATCH", "/api/b")  # the same connection (keep-alive), by the low-level calls
    conn.putheader("Content-Length", "5")
    conn.endheaders()
    conn.send(b"he")
    conn.send(b"llo")
    second = conn.getresponse()
    assert (second.status, json.loads(second.read())["body"]) == (200, "hello")
    conn.request("HEAD", "/api/c")
    head = conn.getresponse()
    assert (head.status, head.read(), head.getheader("X-Served-By")) == (200, b"", "fake")
    conn.close()


def test_what_is_not_a_complete_request_is_answered_as_a_server_would(routed: None) -> None:
    conn = http.client.HTTPConnection("sched.default.svc", 8786)
    conn.connect()
    conn.send(b"nonsense\r\n\r\n")  # not HTTP: a 400, no fake asked
    response = http.client.HTTPResponse(conn.sock)  # type: ignore[arg-type]
    response.begin()
    assert response.status == 400 and b"is not 'METHOD target HTTP/1.x'" in response.read()
    conn.putrequest("POST", "/api/short")  # a body shorter than its Content-Length: a server still waits
    conn.putheader("Content-Length", "10")
    conn.endheaders(b"abc")
    with pytest.raises(TimeoutError, match="before the request was complete"):
        conn.getresponse()


def test_a_faked_host_at_a_path_no_pattern_matches_is_refused(routed: None) -> None:
    conn = http.client.HTTPConnection("sched.default.svc", 8786)
    with pytest.raises(NetworkBlocked, match=r"sched\.default\.svc:8786") as info:
        conn.request("GET", "/health")
    assert info.value.blocked_address == "sched.default.svc:8786"
    with pytest.raises(urllib.error.URLError) as wrapped:  # urllib wraps it as it wraps a refused connection
        urllib.request.urlopen("http://sched.default.svc:8786/health")
    assert isinstance(wrapped.value.reason, NetworkBlocked)


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


def test_a_proxy_in_the_environment_is_not_taken(routed: None, listener: Listener,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{listener.port}")
    opener = urllib.request.build_opener()  # reads the environment's proxies now
    with opener.open("http://sched.default.svc:8786/api/x") as response:
        assert json.load(response)["url"] == "http://sched.default.svc:8786/api/x"
    with opener.open("https://vault.internal/v1/y") as response:
        assert json.load(response)["url"] == "https://vault.internal/v1/y"
    time.sleep(0.3)
    assert (listener.connections, listener.bytes) == (0, 0)


def test_a_faked_address_on_a_real_listener_is_never_reached(listener: Listener) -> None:
    undo = install_routes([(parse_url_pattern(f"http://127.0.0.1:{listener.port}/faked/**"), _service)])
    try:
        with Containment():
            with urllib.request.urlopen(f"http://127.0.0.1:{listener.port}/faked/x") as response:
                assert json.load(response)["method"] == "GET"
            conn = http.client.HTTPConnection("127.0.0.1", listener.port)
            conn.request("POST", "/faked/y", body=b"z")
            assert json.loads(conn.getresponse().read())["body"] == "z"
            with pytest.raises(NetworkBlocked):
                conn.request("GET", "/real")
        time.sleep(0.3)
        assert (listener.connections, listener.bytes) == (0, 0)
        # control: the same address, not faked, is left to the real connect (the fence's to refuse)
        with Containment():
            conn = http.client.HTTPConnection("localhost", listener.port, timeout=2)
            conn.request("GET", "/faked/x")
            conn.close()
        deadline = time.monotonic() + 2
        while listener.connections == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert listener.connections == 1
    finally:
        undo()


def test_the_simulated_api_server_through_urllib() -> None:
    """A hand-written client at the URL the official client's configuration names lands in the simulation."""
    server = ApiServer(Registry.builtin(), Snapshot.empty(), now=lambda: 0)
    server.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
    with Containment(server) as containment:
        from kubernetes import client, config

        config.load_kube_config()
        host = client.Configuration.get_default_copy().host
        assert host == containment.host
        body = json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "by-hand"},
                           "data": {"a": "1"}}).encode()
        created = urllib.request.Request(f"{host}/api/v1/namespaces/default/configmaps", data=body,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(created) as response:
            assert response.status == 201
        with urllib.request.urlopen(f"{host}/api/v1/namespaces/default/configmaps") as response:
            names = [item["metadata"]["name"] for item in json.load(response)["items"]]
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{host}/api/v1/namespaces/default/configmaps/absent")
    assert names == ["by-hand"]
    assert info.value.code == 404 and json.load(info.value)["reason"] == "NotFound"
    assert [o["metadata"]["name"] for o in server.snapshot.objects() if o["kind"] == "ConfigMap"] == ["by-hand"]


# -- the wire, piece by piece ----------------------------------------------------------------------


def test_a_request_is_parsed_once_complete() -> None:
    data = bytearray(b"POST /a?x=1 HTTP/1.1\r\nHost: s\r\nContent-Length: 5\r\n\r\nhel")
    assert parse_request(data) is None
    data += b"lo" + b"GET /b HTTP/1.1\r\nHost: s\r\n\r\n"
    assert parse_request(data) == ("POST", "/a?x=1", (("Host", "s"), ("Content-Length", "5")), b"hello")
    assert parse_request(data) == ("GET", "/b", (("Host", "s"),), b"")
    assert data == bytearray()


def test_a_chunked_body_with_trailers() -> None:
    data = bytearray(b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\n")
    assert parse_request(data) is None
    data += b"X-Sum: 5\r\n\r\n"
    assert parse_request(data) == ("PUT", "/", (("Transfer-Encoding", "chunked"),), b"abcde")


@pytest.mark.parametrize(("sent", "message"), [
    (b"nonsense\r\n\r\n", "is not 'METHOD target HTTP/1.x'"),
    (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", "has no name"),
    (b"GET / HTTP/1.1\r\nContent-Length: x\r\n\r\n", "is not a number"),
    (b"PUT / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "is not hexadecimal"),
])
def test_what_is_not_a_request_says_why(sent: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_request(bytearray(sent))


def test_an_ipv6_address_is_bracketed_in_a_url() -> None:
    assert absolute_url("http", "::1", 8080, "/x") == "http://[::1]:8080/x"
    assert absolute_url("https", "fd00::2", 443, "/") == "https://[fd00::2]/"


def test_a_response_is_framed_by_its_body() -> None:
    assert response_bytes(201, [("Transfer-Encoding", "chunked"), ("Content-Length", "99"), ("X", "y")], b"ab") \
        == b"HTTP/1.1 201 Created\r\nX: y\r\nContent-Length: 2\r\n\r\nab"
    assert response_bytes(200, [("Content-Length", "99")], b"ignored", head=True) \
        == b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n"
    assert response_bytes(599, [], b"").startswith(b"HTTP/1.1 599 \r\n")
    with pytest.raises(ValueError, match="line break"):
        response_bytes(200, [("X", "a\r\nSet-Cookie: b")], b"")


def test_the_standard_library_is_put_back_when_the_last_containment_exits() -> None:
    originals = (http.client.HTTPConnection.connect, http.client.HTTPSConnection.connect,
                 urllib.request.proxy_bypass)
    with Containment():
        assert http.client.HTTPConnection.connect is not originals[0]
        assert urllib.request.proxy_bypass is not originals[2]
    assert (http.client.HTTPConnection.connect, http.client.HTTPSConnection.connect,
            urllib.request.proxy_bypass) == originals
