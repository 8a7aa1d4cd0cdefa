"""The README's own commands run as it shows them.

Every shell line of its ```sh blocks is run (the `kamera` ones, in a copy of the examples, with the
test fixtures standing in for what `kubectl get` would print) or, when it cannot run offline, checked
for what can be checked: a `pip install` names only extras pyproject.toml has, and the wheel's file
name is the one `pip wheel` writes for this version. The counterexample the README prints is compared
with a real run, timings aside.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from kamera_cli import __version__

tomllib = pytest.importorskip("tomllib", reason="Python 3.11 or later reads pyproject.toml")

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])
FIXTURES = ROOT / "tests" / "fixtures" / "import"


def _blocks(language: str) -> list[str]:
    """The README's fenced blocks of one language ("" for a bare fence), in order."""
    return [body for lang, body in re.findall(r"^```(\w*)\n(.*?)^```$", README, flags=re.S | re.M) if lang == language]


def _sh_lines() -> list[str]:
    lines = []
    for block in _blocks("sh"):
        for line in block.splitlines():
            command = line.split("  #", 1)[0].strip()
            if command:
                lines.extend(part.strip() for part in command.split("&&"))
    return lines


def _run(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    args = shlex.split(command)
    assert args[0] == "kamera"
    env = {**os.environ, "NO_COLOR": "1", "GITHUB_ACTIONS": "",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)}
    return subprocess.run([sys.executable, "-m", "kamera_cli", *args[1:]], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600, check=False)


def test_every_extra_the_readme_names_exists() -> None:
    named = set()
    for spec in re.findall(r"(?:kamera-cli|\.|\.whl)\[([a-z0-9,-]+)\]", README):
        named |= set(spec.split(","))
    assert named, "the README names no extras"
    assert named <= EXTRAS, f"extras the README names that pyproject.toml lacks: {sorted(named - EXTRAS)}"
    table = set(re.findall(r"^\| `([a-z0-9-]+)`", README, flags=re.M)) | {
        name for row in re.findall(r"^\| (`[a-z0-9-]+`(?:, `[a-z0-9-]+`)+) \|", README, flags=re.M)
        for name in re.findall(r"`([a-z0-9-]+)`", row)}
    assert table >= EXTRAS, f"extras missing from the table: {sorted(EXTRAS - table)}"


def test_install_lines_name_this_distribution_and_version() -> None:
    assert PYPROJECT["project"]["name"] == "kamera-cli"
    wheels = set(re.findall(r"kamera_cli-([0-9][^-]*)-py3-none-any\.whl", README))
    assert wheels == {PYPROJECT["project"]["version"]} == {__version__}


def test_the_readme_shell_commands_run(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "scenarios", tmp_path / "scenarios")
    for name in ("cluster.yaml", "crds.yaml", "audit.log"):  # what the README's kubectl lines would write
        shutil.copy(FIXTURES / name, tmp_path / name)
    ran, skipped = [], []
    for command in _sh_lines():
        if command.startswith(("python -m venv", ". .venv", "kubectl ")):
            skipped.append(command)  # an environment of its own, or a live cluster
        elif re.match(r"python -m pip (install|wheel)\b", command):
            skipped.append(command)  # a registry; its extras and file names are checked above
        elif command == "python -m pytest -q":
            skipped.append(command)  # the whole suite, of which this test is a part
        else:
            result = _run(command, tmp_path)
            # 0: passed; 1: a check failed (the bug examples are meant to)
            assert result.returncode in (0, 1), f"{command}: exit {result.returncode}\n{result.stdout}{result.stderr}"
            ran.append((command, result.returncode))
    assert ("kamera check scenarios/quickstart", 0) in ran
    assert {c for c, _ in ran} >= {"kamera check scenarios/quickstart",
                                    "kamera import cluster.yaml crds.yaml --namespace shop -o scenarios/shop"}
    assert (tmp_path / "scenarios" / "shop" / "scenario.yaml").is_file()
    assert len(ran) >= 3, (ran, skipped)


def test_the_readme_counterexample_is_what_kamera_prints(tmp_path: Path) -> None:
    block = next(b for b in _blocks("") if b.startswith("$ kamera check"))
    command, *expected = block.rstrip("\n").splitlines()
    result = _run(command[2:], ROOT)
    assert result.returncode == 1

    def timeless(line: str) -> str:
        return re.sub(r"[0-9.]+s, [0-9.]+ states/s", "<time>", line)

    got = [timeless(line) for line in result.stdout.splitlines()[: len(expected)]]
    assert got == [timeless(line) for line in expected]


@pytest.mark.parametrize("needle", ["docs/builtins.md", "docs/ci.md", "docs/index.md", "scenarios/README.md"])
def test_the_readme_points_at(needle: str) -> None:
    assert f"]({needle}" in README
