"""async def reconciles on kubernetes_asyncio: routed in-process, on virtual time, contained."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.model.result import Verdict
from tests.e2e.test_supervisor import Listener

pytestmark = pytest.mark.skipif(importlib.util.find_spec("kubernetes_asyncio") is None,
                                reason="kubernetes_asyncio is not installed (pip install 'kamera-cli[asyncio]')")

EXAMPLE = Path(__file__).resolve().parents[2] / "scenarios" / "asyncio"


def test_an_hour_of_asyncio_sleep_costs_no_wall_clock_time(tmp_path: Path) -> None:
    target = tmp_path / "s"
    shutil.copytree(EXAMPLE, target)
    ctrl = target / "controllers" / "widget.py"
    ctrl.write_text(ctrl.read_text().replace("await asyncio.sleep(5)", "await asyncio.sleep(3600)"))
    started = time.monotonic()
    (result,) = kamera_cli.check(target).scenarios
    assert result.verdict is Verdict.PASSED, [c.message for c in result.checks]
    assert time.monotonic() - started < 20


def test_the_kubeconfig_s_server_receives_nothing(tmp_path: Path) -> None:
    listener = Listener()
    try:
        kubeconfig = tmp_path / "kubeconfig"
        kubeconfig.write_text(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{listener.port}"}}}}]
users: [{{name: u, user: {{token: t}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "KUBERNETES_SERVICE_HOST": "127.0.0.1",
               "KUBERNETES_SERVICE_PORT": str(listener.port), "KAMERA_NO_NETNS": "1", "NO_COLOR": "1"}
        proc = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(EXAMPLE)], capture_output=True,
                              text=True, timeout=120, env=env)
        time.sleep(0.5)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert (listener.connections, listener.bytes) == (0, 0)
    finally:
        listener.close()
