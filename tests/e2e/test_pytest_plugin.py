"""`pytest --kamera PATH`: each scenario check becomes a pytest item, failures carry the story."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_plugin_is_off_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    proc = run_pytest(tmp_path)
    assert proc.returncode == 0
    assert "1 passed" in proc.stdout


def test_scenario_checks_become_items(tmp_path: Path) -> None:
    junit = tmp_path / "junit.xml"
    proc = run_pytest(tmp_path, "--kamera", str(ROOT / "scenarios" / "quickstart"),
                      "--kamera", str(ROOT / "scenarios" / "bugs" / "livelock"), f"--junitxml={junit}")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "1 failed, 7 passed" in proc.stdout
    assert "livelock" in proc.stdout and "back to step" in proc.stdout
    assert "scenario 'bug-livelock': converges failed:" in proc.stdout  # the failure names its scenario
    text = junit.read_text()
    assert 'name="converges"' in text and 'name="invariant: every widget is ready"' in text


def test_collect_only_and_bad_paths(tmp_path: Path) -> None:
    proc = run_pytest(tmp_path, "--kamera", str(ROOT / "scenarios" / "quickstart"), "--co")
    assert proc.returncode == 0
    assert "5 tests collected" in proc.stdout
    bad = run_pytest(tmp_path, "--kamera", str(tmp_path / "nope"))
    assert bad.returncode == 4  # pytest's usage error
    assert "--kamera: no such file or folder" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_second_path_after_kamera_is_checked_too(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    proc = run_pytest(tmp_path, "--kamera", str(ROOT / "scenarios" / "quickstart"),
                      str(ROOT / "scenarios" / "bugs" / "livelock"), str(tmp_path / "test_x.py"), "--co")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "9 tests collected" in proc.stdout  # 5 + 3 scenario checks, and the ordinary test
