"""User code that starts a process is a finding; a process it may start never outlives kamera (issue #28).

Why: kamera cannot model what a child process does (its writes, its time, its network), so a
controller that shells out passed silently before; and a child that left the worker's process group
(``start_new_session=True``, a double fork, a daemon) was still running after kamera exited.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.e2e.misbehaving import scenario_with

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the process sweep reads /proc")


def kamera(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kamera_cli", "check", *args], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"})


def _survivors(marker: str) -> list[str]:
    """Command lines of live processes that carry ``marker``."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = Path(f"/proc/{entry}/stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if marker in cmd and state not in ("Z", "X"):
            out.append(f"{entry}: {cmd}")
    return out


#: (the call, what the finding names); each swallowed, so only kamera can report it
CALLS = [
    ("subprocess.Popen(['sleep', '0'])", "subprocess.Popen sleep 0"),
    ("subprocess.run('true', shell=True)", "subprocess.Popen /bin/sh -c true"),
    ("os.system('echo hi')", "os.system echo hi"),
    ("os.fork()", "os.fork()"),
    ("os.execv('/bin/true', ['true', '--x'])", "os.exec true --x"),
    ("os.posix_spawn('/bin/true', ['true'], {})", "os.posix_spawn true"),
    # os.spawn* is a fork and an exec on POSIX: the fork is refused
    ("os.spawnv(os.P_WAIT, '/bin/true', ['true', 'a b'])", "os.fork()"),
    ("pty.spawn(['true', 'a b'])", "pty.spawn true 'a b'"),
]


@pytest.mark.parametrize(("call", "named"), CALLS, ids=[c[0].split("(")[0] for c in CALLS])
def test_a_process_started_in_a_reconcile_is_a_finding_naming_the_call(call: str, named: str,
                                                                        tmp_path: Path) -> None:
    code = f"""
    import os, pty, subprocess
    try:
        {call}
    except PermissionError:
        pass
    """
    report = tmp_path / "r.json"
    proc = kamera(str(scenario_with(tmp_path, code)), "--json", str(report))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"controller 'widget' started a process: ProcessStarted: started a process: {named}" in proc.stdout
    assert "fake the tool with `fakes:`" in proc.stdout
    doc = json.loads(report.read_text())
    (errors,) = [c for c in doc["scenarios"][0]["checks"] if c["name"] == "no controller errors"]
    assert errors["verdict"] == "failed"


def test_a_process_started_at_import_is_a_load_error(tmp_path: Path) -> None:
    proc = kamera(str(scenario_with(tmp_path, "import os\nos.system('true')", at_import=True)))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "started a process: os.system true" in proc.stdout


def test_allowed_processes_run_contained_and_none_outlives_kamera(tmp_path: Path) -> None:
    """``processes: allowed``: the tool runs (here: it writes a file); whatever the controller leaves
    behind — a new session, a double fork, a daemon that closed its descriptors — is killed."""
    marker = f"300.{uuid.uuid4().int % 10**9:09d}"
    ran = tmp_path / "ran"
    code = f"""
    import os, subprocess, sys
    subprocess.run(["touch", {str(ran)!r}], check=True)
    subprocess.Popen(["sleep", {marker!r}], start_new_session=True)
    subprocess.Popen(["setsid", "sleep", {marker!r}])
    subprocess.Popen(["sh", "-c", "(sleep {marker} &) ; exit 0"])
    daemon = "import os, subprocess\\nif os.fork() == 0:\\n    os.setsid()\\n    if os.fork() == 0:\\n" \\
             "        os.closerange(0, 1024)\\n        subprocess.Popen(['sleep', {marker!r}]).wait()\\n" \\
             "    os._exit(0)\\nos._exit(0)\\n"
    subprocess.run([sys.executable, "-c", daemon])
    """
    report = tmp_path / "r.json"
    proc = kamera(str(scenario_with(tmp_path, code, processes_allowed=True)), "--json", str(report))
    notes = json.loads(report.read_text()).get("notes", [])
    if any("no network namespace" in n for n in notes):
        pytest.skip("no network namespace here: processes are refused whatever the scenario says")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ran.exists()
    time.sleep(0.5)
    assert _survivors(marker) == []
