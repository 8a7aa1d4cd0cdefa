"""An extra may add a shape or speed, never change a verdict (issue #28).

Each optional package kamera can use is blocked in a fresh process (``sys.modules[name] = None``, as if
it were not installed) and the examples that need it are checked: every one is refused (exit 2) with a
message naming what to install, none is checked without it; an example that needs none of them keeps its
pinned verdict and counts with all of them blocked.  cel-python's refusal is tested where CRDs are
(tests/apiserver/test_crd_fidelity.py): no example declares CEL rules.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

#: module -> (examples that need it, what the refusal names)
NEEDS = {
    "greenlet": (("shapes/program/mirror", "shapes/program/workqueue"), "a program needs greenlet"),
    "kopf": (("kopf/create-child",), "pip install 'kamera-cli[kopf]'"),
    "kubernetes_asyncio": (("asyncio", "shapes/program/mirror-async"), "install 'kubernetes_asyncio'"),
    "kr8s": (("shapes/kr8s",), "install 'kr8s'"),
    "lightkube": (("shapes/lightkube",), "install 'lightkube'"),
    "pykube": (("shapes/pykube",), "install 'pykube'"),
}
ALL = (*NEEDS, "celpy")


def _check(blocked: tuple[str, ...], scenarios: list[Path], report: Path) -> subprocess.CompletedProcess[str]:
    code = ("import sys\n"
            f"for name in {blocked!r}:\n    sys.modules[name] = None\n"
            "from kamera_cli.cli import main\n"
            f"sys.argv = ['kamera', 'check', *{[str(s) for s in scenarios]!r}, '--json', {str(report)!r}]\n"
            "main()\n")
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600,
                          cwd=ROOT)


@pytest.mark.parametrize("module", sorted(NEEDS))
def test_an_example_that_needs_a_missing_package_is_refused_naming_it(module: str, tmp_path: Path) -> None:
    examples, named = NEEDS[module]
    report = tmp_path / "r.json"
    proc = _check((module,), [SCENARIOS / rel for rel in examples], report)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    doc = json.loads(report.read_text())
    assert doc["scenarios"], proc.stdout
    for scenario in doc["scenarios"]:
        assert scenario["verdict"] == "error", scenario["name"]
        assert named in scenario["error"], scenario["error"]
        # nothing was checked without it: the one check is the load that refused it
        assert [c["name"] for c in scenario["checks"]] == ["load"], scenario["name"]


def test_an_example_that_needs_none_of_them_keeps_its_verdict_and_counts(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    proc = _check(ALL, [SCENARIOS / "quickstart", SCENARIOS / "bugs" / "stale-read"], report)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    by_name = {s["name"]: s for s in json.loads(report.read_text())["scenarios"]}
    assert by_name["quickstart"]["verdict"] == "passed"
    assert by_name["quickstart"]["stats"]["states"] == 5  # with partial-order reduction (9 unreduced)
    assert by_name["bug-stale-read"]["verdict"] == "failed"
    assert by_name["bug-stale-read"]["stats"]["states"] == 6
