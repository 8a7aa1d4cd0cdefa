"""The wheel the README tells users to build installs a working kamera: its name is the one the README
gives, it declares every extra, and, unpacked on its own (no source tree, no editable install), it
finds its schemas and report assets and checks the quickstart.

Built with the installed hatchling (in the test extra) and no build isolation, so nothing is fetched.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling", reason="building the wheel offline needs hatchling (the test extra)")
    out = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, timeout=300)
    (built,) = out.glob("*.whl")
    return built


def test_the_wheel_is_the_one_the_readme_names_and_declares_every_extra(wheel: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"dist/{wheel.name}" in readme
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    assert re.search(r"^Name: kamera-cli$", metadata, flags=re.M)
    extras = set(re.findall(r"^Provides-Extra: (\S+)$", metadata, flags=re.M))
    assert extras >= {"kopf", "asyncio", "kr8s", "lightkube", "pykube", "cel", "programs", "inspect", "ray", "test"}
    assert {"kamera_cli/schemas/scenario.schema.json", "kamera_cli/schemas/result.schema.json", "kamera_cli/py.typed",
            "kamera_cli/report/assets/report.js"} <= names


def test_the_unpacked_wheel_alone_checks_the_quickstart(wheel: Path, tmp_path: Path) -> None:
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(wheel)], check=True, capture_output=True, timeout=300)
    # the wheel's kamera_cli first on the path; its dependencies from this environment
    env = {**os.environ, "PYTHONPATH": str(target), "NO_COLOR": "1", "GITHUB_ACTIONS": ""}
    where = subprocess.run([sys.executable, "-c", "import kamera_cli; print(kamera_cli.__file__)"], env=env,
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.strip()
    assert where.startswith(str(target))
    schema = subprocess.run([sys.executable, "-m", "kamera_cli", "schema", "scenario"], env=env, cwd=tmp_path,
                            capture_output=True, text=True, check=False)
    assert schema.returncode == 0 and '"$schema"' in schema.stdout
    check = subprocess.run([sys.executable, "-m", "kamera_cli", "check", str(ROOT / "scenarios" / "quickstart"),
                            "--html", str(tmp_path / "r.html")], env=env, cwd=tmp_path, capture_output=True,
                           text=True, check=False, timeout=600)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "✓ quickstart PASSED" in check.stdout and (tmp_path / "r.html").stat().st_size > 400_000
