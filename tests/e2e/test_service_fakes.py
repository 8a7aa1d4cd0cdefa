"""Fakes by URL end to end: every client library reaches the fake, what no fake matches stays fenced,
nothing reaches a real listener, and the fake's state is explored state.

Each case is a real scenario checked in-process (``kamera_cli.check``, no network namespace: only the
in-process fence stands between the controller and the listener), plus one supervised ``kamera check``.
The examples (``scenarios/shapes/http-fake``, and ``http-fake-urllib`` over ``urllib.request``) are pinned in
``test_examples.py``.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.model.result import Verdict
from tests.e2e.test_supervisor import Listener

#: each client, and the library it needs
CLIENTS = {"requests": "requests", "urllib3": "urllib3", "httpx": "httpx", "httpx_async": "httpx",
           "aiohttp": "aiohttp", "urllib": "urllib", "http_client": "http"}
SHAPES = ("app", "asgi", "handle")

FAKE = '''
"""A scheduler: each request is recorded under its path; the three shapes answer alike."""
import json

from kamera_cli import ExternalStore, ServiceResponse

asked = ExternalStore("scheduler")


def _answer(method, path, body):
    asked.put(path, {"method": method, "body": body})
    return {"method": method, "path": path, "body": body}


def app(environ, start_response):
    size = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(size).decode()
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(_answer(environ["REQUEST_METHOD"], environ["PATH_INFO"], body)).encode()]


async def asgi(scope, receive, send):
    message = await receive()
    payload = json.dumps(_answer(scope["method"], scope["path"], message["body"].decode())).encode()
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": payload})


def handle(request):
    return ServiceResponse.of_json(_answer(request.method, request.path, request.text()))
'''

CONTROLLER = '''
import asyncio
import json

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
CLIENT = "{client}"


def ask(url, body):
    if CLIENT == "urllib":
        import urllib.request
        with urllib.request.urlopen(url, data=body.encode()) as response:
            return json.load(response)
    if CLIENT == "http_client":
        import http.client
        from urllib.parse import urlsplit
        parts = urlsplit(url)
        connection = http.client.HTTPConnection(parts.hostname, parts.port)
        connection.request("POST", parts.path, body=body)
        return json.loads(connection.getresponse().read())
    if CLIENT == "requests":
        import requests
        return requests.post(url, data=body, timeout=5).json()
    if CLIENT == "urllib3":
        import urllib3
        return json.loads(urllib3.PoolManager().request("POST", url, body=body).data)
    if CLIENT == "httpx":
        import httpx
        with httpx.Client() as http:
            return http.post(url, content=body).json()
    if CLIENT == "httpx_async":
        import httpx

        async def go():
            async with httpx.AsyncClient() as http:
                return (await http.post(url, content=body)).json()
        return asyncio.run(go())
    import aiohttp

    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.post(url, data=body) as response:
                return await response.json()
    return asyncio.run(go())


def reconcile(request):
    if not request.name.startswith("team-"):
        return
    {before}
    answer = ask(f"http://{{request.name}}-scheduler.default.svc:8786/api/v1/teams/{{request.name}}", request.name)
    try:
        core.create_namespaced_config_map(request.name, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="answer"), data={{"answer": json.dumps(answer, sort_keys=True)}}))
    except ApiException as exc:
        if exc.status != 409:
            raise
'''

SCENARIO = '''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: services}}
spec:
  controllers:
    - {{name: teams, entrypoint: "controller.py:reconcile", for: v1/Namespace, owns: [v1/ConfigMap]}}
  fakes:
    - url: "{url}"
      with: fakes/scheduler.py:{shape}
  seed:
    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team-a}}}}
  invariants:
    - name: the fake answered
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'answer'].data.answer"
      expect: {{equals: '{{"body": "team-a", "method": "POST", "path": "/api/v1/teams/team-a"}}'}}
    - name: the fake recorded it
      select: "$.external.scheduler['/api/v1/teams/team-a'].body"
      expect: {{equals: team-a}}
'''


def _needs(library: str) -> None:
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed (pip install {library}): its routing cannot be checked")


def _scenario(tmp_path: Path, client: str, *, shape: str = "app", url: str = "http://*-scheduler.*.svc:8786/api/**",
              before: str = "pass") -> Path:
    (tmp_path / "fakes").mkdir(exist_ok=True)
    (tmp_path / "fakes" / "scheduler.py").write_text(FAKE)
    (tmp_path / "controller.py").write_text(CONTROLLER.format(client=client, before=before))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(url=url, shape=shape))
    return path


def _failed(path: Path) -> tuple[Verdict, list[str]]:
    (result,) = kamera_cli.check(path).scenarios
    return result.verdict, [f"{c.name}: {c.message}" for c in result.checks if c.verdict is not Verdict.PASSED]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("client", CLIENTS)
def test_every_client_reaches_every_shape_of_fake(tmp_path: Path, client: str, shape: str) -> None:
    _needs(CLIENTS[client])
    assert _failed(_scenario(tmp_path, client, shape=shape)) == (Verdict.PASSED, [])


@pytest.mark.parametrize("client", CLIENTS)
def test_a_proxy_in_the_environment_is_not_taken(tmp_path: Path, client: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """requests (and httpx, aiohttp where told to trust the environment) would send to a proxy: not to a fake's."""
    _needs(CLIENTS[client])
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.setenv(name, "http://proxy.example:3128")
    assert _failed(_scenario(tmp_path, client)) == (Verdict.PASSED, [])


@pytest.mark.parametrize("client", CLIENTS)
def test_what_no_fake_matches_stays_fenced(tmp_path: Path, client: str) -> None:
    """The faked host at a path no pattern matches, and a host no pattern names: refused as before."""
    _needs(CLIENTS[client])
    for url, address in (("http://*-scheduler.*.svc:8786/health", "team-a-scheduler.default.svc:8786"),
                         ("http://*-scheduler.*.svc:8787/**", "team-a-scheduler.default.svc:8786")):
        verdict, failed = _failed(_scenario(tmp_path, client, url=url))
        assert verdict is Verdict.FAILED
        (finding,) = (m for m in failed if m.startswith("no controller errors"))
        assert "opened a network connection of its own" in finding and address in finding, failed


LISTENED = '''
import asyncio, json
ADDR = "http://127.0.0.1:{port}"
def attempt(fn):
    try:
        return fn()
    except Exception as exc:
        return type(exc).__name__
def via_requests(path):
    import requests
    return requests.get(ADDR + path, timeout=2).text
def via_urllib3(path):
    import urllib3
    return urllib3.request("GET", ADDR + path).data.decode()
def via_httpx(path):
    import httpx
    return httpx.get(ADDR + path).text
def via_httpx_async(path):
    import httpx
    async def go():
        async with httpx.AsyncClient() as http:
            return (await http.get(ADDR + path)).text
    return asyncio.run(go())
def via_urllib(path):
    import urllib.request
    with urllib.request.urlopen(ADDR + path, timeout=2) as response:
        return response.read().decode()
def via_http_client(path):
    import http.client
    connection = http.client.HTTPConnection(ADDR.split("//")[1], timeout=2)
    connection.request("GET", path)
    return connection.getresponse().read().decode()
def via_aiohttp(path):
    import aiohttp
    async def go():
        async with aiohttp.ClientSession() as session:
            async with session.get(ADDR + path) as response:
                return await response.text()
    return asyncio.run(go())
seen = {{}}
for name, fn in sorted(dict(locals()).items()):
    if name.startswith("via_"):
        seen[name] = [attempt(lambda: fn("/faked/x")), attempt(lambda: fn("/real"))]
'''


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()


def _listened(tmp_path: Path, port: int) -> Path:
    for library in ("requests", "httpx", "aiohttp"):
        _needs(library)
    (tmp_path / "fakes").mkdir(exist_ok=True)
    (tmp_path / "fakes" / "scheduler.py").write_text(FAKE)
    code = LISTENED.format(port=port).replace("\n", "\n    ")
    (tmp_path / "controller.py").write_text(
        "import json\nfrom kubernetes import client, config\nconfig.load_kube_config()\ncore = client.CoreV1Api()\n"
        f"def reconcile(request):\n    if request.name != 'team-a':\n        return\n{code}\n"
        # answered: the fake's JSON for /faked/x; refused: the name of the client's own error for a refused
        # connect, for /real (http.client does not wrap it: the ConnectionRefusedError itself)
        "    refused = {'via_requests': 'ConnectionError', 'via_urllib3': 'MaxRetryError',\n"
        "               'via_httpx': 'ConnectError', 'via_httpx_async': 'ConnectError',\n"
        "               'via_aiohttp': 'ClientConnectorError',\n"
        "               'via_urllib': 'URLError', 'via_http_client': 'NetworkBlocked'}\n"
        "    ok = len(seen) == 7 and all(json.loads(a)['path'] == '/faked/x' and b == refused[name]\n"
        "             for name, (a, b) in seen.items())\n"
        "    core.create_namespaced_config_map('team-a', client.V1ConfigMap(metadata=client.V1ObjectMeta("
        "name='seen'), data={'ok': str(ok), 'seen': json.dumps(seen, sort_keys=True)}))\n")
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(url=f"http://127.0.0.1:{port}/faked/**", shape="app").split("  invariants:")[0]
                    + "  invariants:\n    - name: every client was answered by the fake, and refused elsewhere\n"
                    "      select: \"$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'seen'].data.ok\"\n"
                    "      expect: {equals: 'True'}\n")
    return path


def test_a_matched_url_on_a_real_listener_never_reaches_it(tmp_path: Path, listener: Listener) -> None:
    """In-process (no network namespace): the fake answers /faked/x for every client, /real is refused
    (each client's own error, which the controller catches) and is the controller's finding all the
    same; the listener at that very address sees zero connections and zero bytes."""
    verdict, failed = _failed(_listened(tmp_path, listener.port))
    assert verdict is Verdict.FAILED
    (finding,) = failed  # the invariant holds: every client was answered, and refused elsewhere
    assert finding.startswith("no controller errors") and (
        f"NetworkAccess: tried to open a network connection to 127.0.0.1:{listener.port}") in finding, failed
    time.sleep(0.5)
    assert (listener.connections, listener.bytes) == (0, 0)


@pytest.mark.parametrize("client", ["urllib", "http_client"])
def test_a_host_no_pattern_names_meets_the_fence_at_a_real_listener(tmp_path: Path, listener: Listener,
                                                                    client: str) -> None:
    """The standard library's clients at the listener by a name no pattern matches (``localhost``, not the
    faked ``127.0.0.1``): the socket fence's finding, as before fakes by URL, and not a byte sent."""
    path = _scenario(tmp_path, client, url=f"http://127.0.0.1:{listener.port}/**")
    controller = tmp_path / "controller.py"
    controller.write_text(controller.read_text().replace(
        'ask(f"http://{request.name}-scheduler.default.svc:8786/api/v1/teams/{request.name}"',
        f'ask(f"http://localhost:{listener.port}/api/v1/teams/{{request.name}}"'))
    verdict, failed = _failed(path)
    time.sleep(0.5)
    assert (listener.connections, listener.bytes) == (0, 0)
    assert verdict is Verdict.FAILED
    (finding,) = (m for m in failed if m.startswith("no controller errors"))
    assert ("opened a network connection of its own: NetworkAccess: tried to open a network connection to "
            f"localhost:{listener.port}") in finding, failed


def test_supervised_no_byte_reaches_a_real_listener(tmp_path: Path, listener: Listener) -> None:
    path = _listened(tmp_path, listener.port)
    proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1", "KAMERA_NO_NETNS": "1"})
    time.sleep(0.5)
    assert (listener.connections, listener.bytes) == (0, 0), proc.stdout
    assert proc.returncode == 1, proc.stdout + proc.stderr  # the refused /real is a finding
    assert "✓ invariant: every client was answered by the fake, and refused elsewhere" in proc.stdout, proc.stdout
    assert f"NetworkAccess: tried to open a network connection to 127.0.0.1:{listener.port}" in proc.stdout


ORDER_FAKE = '''
from kamera_cli import ExternalStore

log = ExternalStore("log")


def handle(request):
    order = log.get("order", [])
    log.put("order", [*order, request.json()["who"]])
    return {"place": len(order) + 1}
'''

ORDER_CONTROLLER = '''
import requests
from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()
CLIENT = "{client}"


def _enqueue(who):
    if CLIENT == "urllib":
        import json
        import urllib.request
        asked = urllib.request.Request("http://queue.default.svc/enqueue", data=json.dumps({"who": who}).encode(),
                                       headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(asked, timeout=5) as response:
            return json.load(response)["place"]
    return requests.post("http://queue.default.svc/enqueue", json={"who": who}, timeout=5).json()["place"]


def _once(request, who):
    if request.name != "team-a":
        return
    try:
        core.read_namespaced_config_map(who, "team-a")
        return
    except ApiException as exc:
        if exc.status != 404:
            raise
    place = _enqueue(who)
    core.create_namespaced_config_map("team-a", client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=who), data={"place": str(place)}))


def first(request):
    _once(request, "first")


def second(request):
    _once(request, "second")
'''


@pytest.mark.parametrize("client", ["requests", "urllib"])
def test_the_fakes_state_is_explored_state(tmp_path: Path, client: str) -> None:
    """Two controllers call one fake: the two orders leave it (and the cluster) in two states, told
    apart by their fingerprints, and the counterexample replays to the state it names."""
    _needs("requests")
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "queue.py").write_text(ORDER_FAKE)
    (tmp_path / "controller.py").write_text(ORDER_CONTROLLER.replace("{client}", client))
    path = tmp_path / "scenario.yaml"
    path.write_text(SCENARIO.format(url="http://queue.*.svc/enqueue", shape="handle").split("  fakes:")[0]
                    .replace('    - {name: teams, entrypoint: "controller.py:reconcile", for: v1/Namespace, '
                             'owns: [v1/ConfigMap]}',
                             '    - {name: first, entrypoint: "controller.py:first", for: v1/Namespace}\n'
                             '    - {name: second, entrypoint: "controller.py:second", for: v1/Namespace}')
                    + "  fakes:\n    - {url: 'http://queue.*.svc/enqueue', with: fakes/queue.py:handle}\n"
                    "  seed:\n    - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}\n"
                    "  invariants:\n    - name: first was enqueued first\n"
                    "      select: \"$.external.log.order[0]\"\n      expect: {equals: first}\n")
    (result,) = kamera_cli.check(path).scenarios
    checks = {c.name: c for c in result.checks}
    assert checks["converges"].verdict is Verdict.PASSED, checks["converges"].message
    assert "2 converged state" in checks["converges"].message
    assert checks["deterministic"].verdict is Verdict.FAILED
    (cex,) = checks["invariant: first was enqueued first"].counterexamples
    assert [step.actor for step in cex.steps if step.writes][:1] == ["second"], cex.steps  # second asked first
    (differ,) = checks["deterministic"].counterexamples
    assert any(ref.kind == "Entry" and ref.name == "log:order" for ref, _ in differ.state_diff), differ.state_diff
    # every counterexample replayed to the state it names (a replay that diverges is a finding of its own)
    assert not [c for check in result.checks for c in check.counterexamples if c.kind == "nondeterministic-controller"]


@pytest.mark.parametrize(("attr", "message"), [
    ("Scheduler", "spec.fakes url 'http://*-scheduler.*.svc:8786/api/**': with 'fakes/scheduler.py:Scheduler' is "
                  "type, none of the shapes a fake by URL may have"),
    ("WORKERS", "with 'fakes/scheduler.py:WORKERS' is list, none of the shapes"),
    ("missing", "has no attribute 'missing'"),
])
def test_a_with_of_the_wrong_shape_is_a_located_usage_error(tmp_path: Path, attr: str, message: str) -> None:
    path = _scenario(tmp_path, "requests", shape=attr)
    (tmp_path / "fakes" / "scheduler.py").write_text(FAKE + "\nclass Scheduler:\n    pass\n\nWORKERS = []\n")
    proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(path)], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"})
    text = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 2, text
    assert f" {path}:9: spec.fakes url " in text and message in text, text  # the entry's file:line, then what
    if attr != "missing":
        assert "a WSGI application (environ, start_response), an ASGI application" in text, text


def test_validate_accepts_the_example() -> None:
    example = Path(__file__).resolve().parents[2] / "scenarios" / "shapes" / "http-fake"
    proc = subprocess.run([sys.executable, "-m", "kamera_cli", "validate", str(example)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NO_COLOR": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr


KOPF_OPERATOR = '''
"""The dask-kubernetes shape: a kopf handler asks a scheduler over aiohttp, the client kopf itself uses."""
import aiohttp
import kopf


@kopf.on.create("v1", "configmaps", labels={"dask": "group"})
async def ask_scheduler(name, patch, **_):
    async with aiohttp.ClientSession() as session:
        async with session.post(f"http://{name}-scheduler.default.svc:8786/api/v1/teams/{name}", data=name) as answer:
            answer.raise_for_status()
            patch["data"] = {"answer": (await answer.json())["path"]}
'''


KOPF_URLLIB_OPERATOR = '''
"""A sync kopf handler asking the scheduler with the standard library alone (kopf runs it in a thread)."""
import json
import urllib.request

import kopf


@kopf.on.create("v1", "configmaps", labels={"dask": "group"})
def ask_scheduler(name, patch, **_):
    url = f"http://{name}-scheduler.default.svc:8786/api/v1/teams/{name}"
    with urllib.request.urlopen(url, data=name.encode()) as answer:
        patch["data"] = {"answer": json.load(answer)["path"]}
'''


@pytest.mark.parametrize("operator", [KOPF_OPERATOR, KOPF_URLLIB_OPERATOR], ids=["aiohttp", "urllib"])
def test_a_kopf_handler_asks_a_fake(tmp_path: Path, operator: str) -> None:
    """kopf's own requests still reach the simulated API server; the handler's reach the fake, over
    aiohttp (the client kopf itself uses) or urllib.request."""
    _needs("kopf")
    (tmp_path / "fakes").mkdir()
    (tmp_path / "fakes" / "scheduler.py").write_text(FAKE)
    (tmp_path / "operator.py").write_text(operator)
    path = tmp_path / "scenario.yaml"
    path.write_text('''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: kopf-service}
spec:
  controllers:
    - {name: groups, kopf: operator.py}
  fakes:
    - {url: "http://*-scheduler.*.svc:8786/api/**", with: fakes/scheduler.py:asgi}
  seed:
    - {apiVersion: v1, kind: ConfigMap, metadata: {name: team-a, namespace: default, labels: {dask: group}}}
  invariants:
    - name: the handler was answered by the fake
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'team-a'].data.answer"
      expect: {equals: /api/v1/teams/team-a}
    - name: the fake recorded it
      select: "$.external.scheduler['/api/v1/teams/team-a'].body"
      expect: {equals: team-a}
''')
    assert _failed(path) == (Verdict.PASSED, [])


KOPF_DASK_OPERATOR = '''
"""dask-kubernetes' scale-down: resolve the scheduler's Service on the loop's executor, then post to its
dashboard API at a tcp:// URL with aiohttp (which speaks plain HTTP to it)."""
import asyncio

import aiohttp
import kopf


@kopf.on.create("v1", "configmaps", labels={"dask": "group"})
async def ask_scheduler(name, namespace, patch, **_):
    host = f"{name}-scheduler.{namespace}"
    await asyncio.get_running_loop().getaddrinfo(host, 8787)
    async with aiohttp.ClientSession() as session:
        async with session.post(f"tcp://{host}:8787/api/v1/teams/{name}", json={"n": 1}) as answer:
            patch["data"] = {"answer": (await answer.json())["path"]}
'''


@pytest.mark.parametrize("faked", [True, False])
def test_an_installed_operator_resolves_its_scheduler_and_asks_it_at_a_tcp_url(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, faked: bool) -> None:
    """The operator installed as a package, the scenario in a folder of its own: with a ``tcp://`` fake
    of the scheduler the name resolves and aiohttp's request is answered; without one, the resolution is
    the step's network finding, as before."""
    _needs("kopf")
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "kamera_daskop").mkdir(parents=True)
    (site / "kamera_daskop" / "__init__.py").write_text("")
    (site / "kamera_daskop" / "operator.py").write_text(KOPF_DASK_OPERATOR)
    monkeypatch.syspath_prepend(str(site))
    folder = tmp_path / "scenario"
    (folder / "fakes").mkdir(parents=True)
    (folder / "fakes" / "scheduler.py").write_text(FAKE)
    fake = (f'    - {{url: "{"tcp://*-scheduler.*:8787/api/v1/**" if faked else "http://unused.svc"}", '
            'with: fakes/scheduler.py:handle}')
    path = folder / "scenario.yaml"
    path.write_text(f'''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {{name: kopf-tcp-service}}
spec:
  controllers:
    - {{name: groups, kopf: kamera_daskop.operator}}
  fakes:
{fake}
  seed:
    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: team-a, namespace: default, labels: {{dask: group}}}}}}
  invariants:
    - name: the handler was answered by the fake
      select: "$.items[?@.kind == 'ConfigMap' && @.metadata.name == 'team-a'].data.answer"
      expect: {{equals: /api/v1/teams/team-a}}
''')
    verdict, failed = _failed(path)
    if faked:
        assert (verdict, failed) == (Verdict.PASSED, [])
    else:
        assert verdict is Verdict.FAILED
        assert any("team-a-scheduler.default:8787" in message for message in failed), failed


BY_HAND = '''
"""A hand-written client: the official client only tells it where the cluster is; urllib.request does the rest."""
import json
import urllib.error
import urllib.request

from kubernetes import client, config

config.load_kube_config()
HOST = client.Configuration.get_default_copy().host


def _api(method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    asked = urllib.request.Request(HOST + path, method=method, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(asked) as response:
        return json.load(response)


def reconcile(request):
    if not request.name.startswith("team-"):
        return
    path = f"/api/v1/namespaces/{request.name}/configmaps"
    try:
        _api("GET", f"{path}/marker")
        return
    except urllib.error.HTTPError as exc:
        if exc.code != 404:
            raise
    _api("POST", path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "marker"},
                        "data": {"by": "urllib"}})
'''

BY_HAND_SCENARIO = '''
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: by-hand}
spec:
  controllers:
    - {name: marker, entrypoint: "controller.py:reconcile", for: v1/Namespace}
  seed:
    - {apiVersion: v1, kind: Namespace, metadata: {name: team-a}}
    - {apiVersion: v1, kind: Namespace, metadata: {name: team-b}}
  invariants:
    - name: every team has its marker, written over urllib
      forEach: "$.items[?@.kind == 'Namespace' && match(@.metadata.name, 'team-.*')]"
      select: "$.items[?@.metadata.namespace == {{ @.metadata.name }} && @.data.by == 'urllib']"
      expect: {count: 1}
  perturbations:
    crashes:
      - {controller: marker, max: 1}
'''


def test_the_api_server_through_urllib_is_explored_like_any_client(tmp_path: Path) -> None:
    """The simulated API server at the URL the official client's configuration names, over
    urllib.request: nothing is blocked, and its writes are the step's (they interleave, a crash can
    strike after one, and the restarted controller reads it)."""
    (tmp_path / "controller.py").write_text(BY_HAND)
    path = tmp_path / "scenario.yaml"
    path.write_text(BY_HAND_SCENARIO)
    (result,) = kamera_cli.check(path).scenarios
    assert (result.verdict, [f"{c.name}: {c.message}" for c in result.checks if c.verdict is not Verdict.PASSED]) \
        == (Verdict.PASSED, [])
    (invariant,) = (c for c in result.checks if c.name.startswith("invariant:"))
    assert " 0 node(s) selected" not in invariant.message, invariant.message  # both teams were looked at
    unperturbed = path.with_name("unperturbed.yaml")
    unperturbed.write_text(BY_HAND_SCENARIO.split("  perturbations:")[0])
    (plain,) = kamera_cli.check(unperturbed).scenarios
    assert plain.verdict is Verdict.PASSED
    # the crash after each write is explored: more states than without crashes
    assert result.stats.states > plain.stats.states, (result.stats.states, plain.stats.states)
