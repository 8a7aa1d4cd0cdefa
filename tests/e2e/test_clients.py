"""The examples on kr8s, lightkube and pykube-ng through the real CLI, with the environment naming a real cluster.

``KUBECONFIG``, ``KUBERNETES_SERVICE_HOST``/``PORT`` (and pykube's ``PYKUBE_KUBERNETES_SERVICE_*``)
point at a real 127.0.0.1 listener, and the network namespace is off (``KAMERA_NO_NETNS=1``), so
only kamera's routing stands between each client and that listener: the example must pass and the
listener must see zero connections and zero bytes.  The state counts are pinned in
``test_examples.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.test_examples import missing_client
from tests.e2e.test_supervisor import Listener

SHAPES = Path(__file__).resolve().parents[2] / "scenarios" / "shapes"
EXAMPLES = ["kr8s", "kr8s/asyncio", "lightkube", "lightkube/asyncio", "pykube"]


def check_against_the_environment_s_cluster(scenario: Path, tmp_path: Path) -> tuple[str, int, int]:
    """``kamera check scenario`` with every cluster setting naming a real listener: its output and what reached it."""
    listener = Listener()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{listener.port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u, namespace: elsewhere}}}}]
current-context: x
""")
        port = str(listener.port)
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": port, "PYKUBE_KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "PYKUBE_KUBERNETES_SERVICE_PORT": port, "KAMERA_NO_NETNS": "1", "NO_COLOR": "1"}
        proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(scenario)],
                              capture_output=True, text=True, timeout=180, env=env)
        time.sleep(0.5)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return proc.stdout, listener.connections, listener.bytes
    finally:
        listener.close()


@pytest.mark.parametrize("rel", EXAMPLES)
def test_the_environment_s_cluster_receives_nothing(rel: str, tmp_path: Path) -> None:
    if (reason := missing_client(f"shapes/{rel}")) is not None:
        pytest.skip(reason)
    output, connections, received = check_against_the_environment_s_cluster(SHAPES / rel / "scenario.yaml", tmp_path)
    assert "5 states" in output, output
    assert (connections, received) == (0, 0)
