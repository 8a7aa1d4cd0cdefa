"""What kamera prints and writes stays readable whatever the controller's error text holds."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.misbehaving import QUICKSTART, scenario_with

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="the supervisor needs fork (POSIX)")


def kamera(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kamera_cli", *args], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "NO_COLOR": "1"})


def test_a_lone_surrogate_and_control_characters_do_not_break_the_reports(tmp_path: Path) -> None:
    scenario = scenario_with(tmp_path, r'raise RuntimeError("bad \ud800 text\x1b[31m\u2028end")')
    proc = kamera("check", str(scenario), "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    text = json.dumps(doc)
    assert "bad \\\\ud800 text\\\\x1b[31m\\\\u2028end" in text
    assert "\x1b" not in proc.stdout
    assert (tmp_path / "r.xml").read_bytes().startswith(b"<?xml")


def test_a_chained_exception_shows_its_cause(tmp_path: Path) -> None:
    code = """
    try:
        {}["missing"]
    except KeyError as err:
        raise RuntimeError("could not build the child") from err
    """
    proc = kamera("check", str(scenario_with(tmp_path, code)), "-v")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "KeyError: 'missing'" in proc.stdout
    assert "The above exception was the direct cause of the following exception:" in proc.stdout


def test_unwritable_report_paths_are_usage_errors_before_the_search(tmp_path: Path) -> None:
    proc = kamera("check", str(QUICKSTART), "--junit", str(tmp_path))
    assert proc.returncode == 2 and "is a folder" in proc.stderr
    blocker = tmp_path / "file"
    blocker.write_text("x")
    proc = kamera("check", str(QUICKSTART), "--json", str(blocker / "r.json"))
    assert proc.returncode == 2 and "cannot write there" in proc.stderr
    assert "quickstart" not in proc.stdout  # refused before anything ran


def test_a_closed_stdout_ends_quietly_and_keeps_the_reports(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "kamera_cli", "check", str(QUICKSTART), "-v", "--json",
                             str(tmp_path / "r.json")], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader went away, like `| head -0`
    err = proc.stderr.read().decode()
    assert proc.wait(60) == 0
    assert "Traceback" not in err and "internal error" not in err
    assert json.loads((tmp_path / "r.json").read_text())["verdict"] == "passed"


def test_help_lists_exit_codes_and_examples() -> None:
    proc = kamera("check", "--help")
    assert "Exit codes:" in proc.stdout and "4  inconclusive" in proc.stdout
    assert "Examples:" in proc.stdout
    assert "--fail-fast  <bool>" not in proc.stdout


def test_print_output_goes_into_the_step_log(tmp_path: Path) -> None:
    code = """
    print("looking at", request.name)
    import sys
    print("to stderr", file=sys.stderr)
    raise RuntimeError("boom")
    """
    proc = kamera("check", str(scenario_with(tmp_path, code)), "--json", str(tmp_path / "r.json"))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    logged = [line for line in lines if "│ looking at" in line]
    assert logged, proc.stdout  # shown with its step ...
    assert not any(line.startswith("looking at") for line in lines)  # ... never raw
    doc = json.loads((tmp_path / "r.json").read_text())
    steps = [s for c in doc["scenarios"][0]["checks"] for x in c["counterexamples"] for s in x["steps"]]
    assert any(s["log"].startswith("looking at demo\nto stderr") for s in steps), steps
