"""Containment: while active, no request of any kubernetes client leaves the process.

A real TCP listener stands for "the cluster in the user's kubeconfig".  The controller-style code
below does everything a controller might do to find its cluster; the proof is that the listener saw
zero connections and zero bytes, while the simulator saw the requests.  A control test shows the
same code does reach the listener without containment, so the check can fail.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from transport_fakes import FakeServer

from kamera_cli.apiserver.transports.containment import Containment, NetworkBlocked, PoolManagerStandIn

pytest.importorskip("kubernetes")
import urllib3
from kubernetes import client, config, watch
from kubernetes.client import rest
from kubernetes.dynamic import DynamicClient

REPO = Path(__file__).resolve().parents[2]


class Listener:
    """A bounded TCP listener on 127.0.0.1 that counts connections and bytes, then hangs up."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.05)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.bytes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            conn.settimeout(0.2)
            try:
                data = conn.recv(65536)
                self.bytes += len(data)
            except OSError:
                pass
            finally:
                conn.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    try:
        yield lst
    finally:
        lst.stop()


@pytest.fixture
def kubeconfig(tmp_path: Path, listener: Listener) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(textwrap.dedent(f"""\
        apiVersion: v1
        kind: Config
        clusters:
        - name: real
          cluster: {{server: "http://127.0.0.1:{listener.port}"}}
        users:
        - name: real
          user: {{token: secret-token}}
        contexts:
        - name: real
          context: {{cluster: real, user: real}}
        current-context: real
        """))
    return path


@pytest.fixture
def cluster_env(monkeypatch: pytest.MonkeyPatch, kubeconfig: Path, listener: Listener, tmp_path: Path) -> Path:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(listener.port))
    return kubeconfig


def _controller_code(kubeconfig: Path) -> list[str]:
    """What controllers do to find and talk to their cluster; returns the names it saw."""
    seen: list[str] = []
    config.load_kube_config()
    config.load_kube_config(config_file=str(kubeconfig))
    seen.append(client.CoreV1Api().read_namespace("default").metadata.name)
    config.load_incluster_config()
    seen.append(client.CoreV1Api(client.ApiClient()).read_namespace("default").metadata.name)
    config.load_config()
    api = config.new_client_from_config(config_file=str(kubeconfig))
    seen.append(client.CoreV1Api(api).read_namespace("default").metadata.name)
    cfg = client.Configuration.get_default_copy()
    seen.append(client.CoreV1Api(client.ApiClient(cfg)).read_namespace("default").metadata.name)
    explicit = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=explicit)
    seen.append(client.CoreV1Api(client.ApiClient(explicit)).read_namespace("default").metadata.name)
    for event in watch.Watch().stream(client.CoreV1Api().list_namespace, timeout_seconds=1):
        seen.append(event["object"].metadata.name)
    dyn = DynamicClient(client.ApiClient())
    seen.append(dyn.resources.get(api_version="v1", kind="Namespace").get(name="default").metadata.name)
    import yaml

    as_dict = yaml.safe_load(kubeconfig.read_text())
    config.load_kube_config_from_dict(as_dict)
    from_dict = config.new_client_from_config_dict(as_dict)
    seen.append(client.CoreV1Api(from_dict).read_namespace("default").metadata.name)
    _, current = config.list_kube_config_contexts()
    seen.append(current["name"])
    return seen


def _seeded() -> FakeServer:
    server = FakeServer()
    server.seed("v1", "namespaces", "", {"metadata": {"name": "default"}})
    return server


def test_nothing_leaves_the_process(cluster_env: Path, listener: Listener) -> None:
    server = _seeded()
    with Containment(server):
        seen = _controller_code(cluster_env)
    assert seen == ["default"] * 8 + ["kamera"]
    assert listener.connections == 0
    assert listener.bytes == 0
    paths = [s.path for s in server.seen]
    assert paths.count("/api/v1/namespaces/default") >= 6
    assert "/apis" in paths


def test_control_without_containment_the_listener_is_reached(kubeconfig: Path, listener: Listener) -> None:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.retries = False
    with pytest.raises(Exception):  # noqa: B017 - the listener hangs up; any client error will do
        client.CoreV1Api(client.ApiClient(cfg)).read_namespace("default", _request_timeout=2)
    assert listener.connections >= 1
    assert listener.bytes > 0


def test_in_a_fresh_process_with_kubeconfig_read_at_import(cluster_env: Path, listener: Listener) -> None:
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})
        from transport_fakes import FakeServer
        from kamera_cli.apiserver.transports.containment import Containment
        from kubernetes import client, config, watch
        from kubernetes.dynamic import DynamicClient
        assert config.KUBE_CONFIG_DEFAULT_LOCATION == {str(cluster_env)!r}
        server = FakeServer()
        server.seed("v1", "namespaces", "", {{"metadata": {{"name": "default"}}}})
        with Containment(server):
            config.load_kube_config()
            a = client.CoreV1Api().read_namespace("default").metadata.name
            config.load_config()
            b = client.CoreV1Api().read_namespace("default").metadata.name
            config.load_incluster_config()
            c = [e["object"].metadata.name for e in watch.Watch().stream(client.CoreV1Api().list_namespace,
                                                                          timeout_seconds=1)]
            d = DynamicClient(client.ApiClient()).resources.get(api_version="v1", kind="Namespace").get(
                name="default").metadata.name
        print(json.dumps([a, b, c, d, len(server.seen)]))
        """)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    a, b, c, d, requests = json.loads(proc.stdout.strip().splitlines()[-1])
    assert [a, b, c, d] == ["default", "default", ["default"], "default"]
    assert requests >= 5
    assert listener.connections == 0
    assert listener.bytes == 0


def test_clients_created_before_containment_cannot_connect(kubeconfig: Path, listener: Listener) -> None:
    cfg = client.Configuration()
    config.load_kube_config(config_file=str(kubeconfig), client_configuration=cfg)
    cfg.retries = False
    early = client.CoreV1Api(client.ApiClient(cfg))  # a real urllib3.PoolManager, made before containment
    # each refused where urllib3 opens its connection, and wrapped as urllib3 wraps a refused connect
    with Containment(_seeded()):
        with pytest.raises(urllib3.exceptions.NewConnectionError) as early_refused:
            early.read_namespace("default", _request_timeout=2)
        with pytest.raises(urllib3.exceptions.NewConnectionError):
            urllib3.PoolManager().request("GET", f"http://127.0.0.1:{listener.port}/", retries=False)
        pool = urllib3.HTTPConnectionPool("127.0.0.1", listener.port)  # a pool opens nothing by itself
        with pytest.raises(urllib3.exceptions.MaxRetryError):
            pool.request("GET", "/", retries=0)
    assert isinstance(early_refused.value.__cause__, NetworkBlocked)
    assert listener.connections == 0


def test_everything_is_restored_on_exit(cluster_env: Path) -> None:
    init = rest.RESTClientObject.__dict__["__init__"]
    pool_init = urllib3.connectionpool.HTTPConnectionPool.__dict__["__init__"]
    load_config = config.load_config
    default = client.Configuration._default
    outer = Containment(_seeded())
    with outer:
        with outer:  # re-entrant
            assert rest.RESTClientObject.__dict__["__init__"] is not init
        assert outer.active
        assert isinstance(client.ApiClient().rest_client.pool_manager, PoolManagerStandIn)
        inner = Containment(FakeServer())
        with inner:
            assert client.Configuration.get_default_copy().host == inner.host
        assert client.Configuration.get_default_copy().host == outer.host
    assert not outer.active
    assert rest.RESTClientObject.__dict__["__init__"] is init
    assert urllib3.connectionpool.HTTPConnectionPool.__dict__["__init__"] is pool_init
    assert config.load_config is load_config
    assert client.Configuration._default is default
    assert isinstance(client.ApiClient().rest_client.pool_manager, urllib3.PoolManager)


def test_each_containment_has_its_own_dummy_host() -> None:
    hosts = {Containment().host for _ in range(5)}
    assert len(hosts) == 5
    assert all(h.endswith(".invalid") for h in hosts)


def test_a_module_level_client_follows_the_running_simulation() -> None:
    first, second = _seeded(), _seeded()
    with Containment(first):
        api: Any = client.CoreV1Api()  # e.g. created at import time of the controller module
        api.read_namespace("default")
    with Containment(second):
        api.read_namespace("default")
    assert len(first.seen) == 1
    assert len(second.seen) == 1


def test_exec_over_websockets_is_refused_not_sent(listener: Listener) -> None:
    from kubernetes.stream import stream

    with Containment(_seeded()):
        api = client.CoreV1Api()
        # ws_client turns every failure into ApiException(status=0), as for an unreachable cluster.
        with pytest.raises(client.ApiException, match="not simulated"):
            stream(api.connect_get_namespaced_pod_exec, "pod", "default", command=["true"],
                   stderr=True, stdin=False, stdout=True, tty=False)
    assert listener.connections == 0


def _exec_kubeconfig(tmp_path: Path, port: int) -> tuple[Path, Path]:
    marker = tmp_path / "plugin-ran"
    credential = {"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",
                  "status": {"token": "from-plugin"}}
    code = f"open({str(marker)!r}, 'w').write('ran'); print({json.dumps(json.dumps(credential))})"
    path = tmp_path / "exec-kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "real",
        "clusters": [{"name": "real", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "contexts": [{"name": "real", "context": {"cluster": "real", "user": "real"}}],
        "users": [{"name": "real", "user": {"exec": {
            "apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
            "args": ["-c", code], "interactiveMode": "Never"}}}],
    }))
    return path, marker


def test_credential_plugins_in_a_kubeconfig_never_run(tmp_path: Path, listener: Listener) -> None:
    path, marker = _exec_kubeconfig(tmp_path, listener.port)
    with Containment(_seeded()):
        config.load_kube_config(config_file=str(path))
        assert client.CoreV1Api().read_namespace("default").metadata.name == "default"
    assert not marker.exists()
    # Control: the same kubeconfig does run its plugin when loaded outside a containment.
    config.load_kube_config(config_file=str(path), client_configuration=client.Configuration())
    assert marker.exists()
