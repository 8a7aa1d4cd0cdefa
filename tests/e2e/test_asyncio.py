"""async def reconciles on kubernetes_asyncio: routed in-process, on virtual time, contained."""

from __future__ import annotations

import importlib.util
import shutil
import time
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.model.result import Verdict
from tests.e2e.test_clients import check_against_the_environment_s_cluster

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
    _, connections, received = check_against_the_environment_s_cluster(EXAMPLE, tmp_path)
    assert (connections, received) == (0, 0)
