"""Every CI recipe of docs/ci.md runs: the GitHub Action's script, GitLab's and Jenkins's commands, the
pre-commit hooks through `pre-commit try-repo`.

Nothing is installed from a registry: the recipes' `pip install ./tools/kamera` lines are checked for
their shape and skipped, and `kamera` resolves to a shim running this checkout (`python -m kamera_cli`).
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "ci.md").read_text(encoding="utf-8")
INSTALL = re.compile(r"^(\.venv/bin/)?pip install \./tools/kamera$|^python -m venv \.venv$")


def _blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", DOC, flags=re.S)


def _project(tmp_path: Path) -> Path:
    """A user's repository: one passing and one failing scenario, and a `kamera` on PATH."""
    project = tmp_path / "project"
    shutil.copytree(ROOT / "scenarios" / "quickstart", project / "scenarios" / "quickstart")
    shutil.copytree(ROOT / "scenarios" / "bugs" / "livelock", project / "scenarios" / "livelock")
    for folder in (tmp_path / "bin", project / ".venv" / "bin"):
        folder.mkdir(parents=True)
        shim = folder / "kamera"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m kamera_cli "$@"\n', encoding="utf-8")
        shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    return project


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "KAMERA_"))}
    env.update(PATH=f"{tmp_path / 'bin'}{os.pathsep}{env.get('PATH', '')}", NO_COLOR="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p))
    env.update(extra)
    return env


def _run_commands(commands: list[str], cwd: Path, env: dict[str, str]) -> list[int]:
    """Run a recipe's shell commands in order, as its CI system would, skipping the install lines."""
    codes = []
    for command in commands:
        if INSTALL.match(command):
            continue
        codes.append(subprocess.run(command, shell=True, cwd=cwd, env=env, capture_output=True, check=False).returncode)
    return codes


def test_github_action_runs_its_script_with_inputs_from_the_environment() -> None:
    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    steps = {step.get("id", step["name"]): step for step in action["runs"]["steps"]}
    check = steps["check"]
    assert check["run"] == 'python "${GITHUB_ACTION_PATH}/scripts/github_action.py"'
    assert (ROOT / "scripts" / "github_action.py").is_file()
    # every input reaches the steps through env:, never spliced into a script's text
    for step in action["runs"]["steps"]:
        assert "${{ inputs" not in step.get("run", "")
    upload = steps["Upload the reports"]
    assert upload["uses"].startswith("actions/upload-artifact@") and "always()" in upload["if"]
    # the documented use names only inputs the Action has
    used = next(b for b in _blocks("yaml") if "uses: your-org/kamera" in b)
    step = next(s for s in yaml.safe_load(used)["jobs"]["kamera"]["steps"] if "kamera@" in s.get("uses", ""))
    assert set(step["with"]) <= set(action["inputs"])


def test_github_action_script_gates_annotates_summarises_and_keeps_reports(tmp_path: Path) -> None:
    project = _project(tmp_path)
    output, summary = tmp_path / "github_output", tmp_path / "summary.md"
    env = _env(tmp_path, GITHUB_OUTPUT=str(output), GITHUB_STEP_SUMMARY=str(summary),
               KAMERA_PATHS="scenarios/quickstart\nscenarios/livelock", KAMERA_ARGS="--max-depth 20",
               KAMERA_OUTPUT_DIR="out dir")
    run = subprocess.run([sys.executable, str(ROOT / "scripts" / "github_action.py")], cwd=project, env=env,
                         capture_output=True, text=True, check=False)
    assert run.returncode == 1, run.stderr
    assert "::error file=scenarios/livelock/scenario.yaml,line=" in run.stdout
    outputs = dict(line.split("=", 1) for line in output.read_text(encoding="utf-8").splitlines())
    assert outputs == {"exit-code": "1", "junit": "out dir/kamera.xml", "html": "out dir/kamera.html",
                       "json": "out dir/kamera.json"}
    for name in ("kamera.xml", "kamera.html", "kamera.json"):
        assert (project / "out dir" / name).stat().st_size > 0
    rows = [line for line in summary.read_text(encoding="utf-8").splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| ❌ | bug-livelock | converges: 1 livelock(s)")
    assert rows[1] == "| ✅ | quickstart | — |"
    # a passing run exits 0
    env["KAMERA_PATHS"] = "scenarios/quickstart"
    ok = subprocess.run([sys.executable, str(ROOT / "scripts" / "github_action.py")], cwd=project, env=env,
                        capture_output=True, text=True, check=False)
    assert ok.returncode == 0, ok.stdout


def test_gitlab_recipe_runs_and_writes_what_it_declares(tmp_path: Path) -> None:
    job = next(yaml.safe_load(b)["kamera"] for b in _blocks("yaml") if b.startswith("kamera:"))
    project = _project(tmp_path)
    assert _run_commands(job["script"], project, _env(tmp_path)) == [1]  # the failing scenario fails the job
    assert job["artifacts"]["when"] == "always"
    for path in [*job["artifacts"]["paths"], job["artifacts"]["reports"]["junit"]]:
        assert (project / path).stat().st_size > 0


def test_jenkins_recipe_runs_and_writes_what_it_records(tmp_path: Path) -> None:
    (pipeline,) = _blocks("groovy")
    commands = re.findall(r"^\s*sh '([^']*)'$", pipeline, flags=re.M)
    assert len(commands) == 3
    project = _project(tmp_path)
    assert _run_commands(commands, project, _env(tmp_path)) == [1]
    recorded = re.findall(r"junit '([^']*)'", pipeline) + re.findall(r"archiveArtifacts artifacts: '([^']*)'", pipeline)
    assert recorded == ["kamera.xml", "kamera.html"]
    for path in recorded:
        assert (project / path).stat().st_size > 0


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def test_pre_commit_hooks_through_try_repo(tmp_path: Path) -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("pre-commit try-repo needs kamera as a git repository (this is not a clone)")
    pytest.importorskip("pre_commit", reason="pre-commit is in the test extra")
    pre_commit = str(Path(sys.executable).parent / "pre-commit")
    project = _project(tmp_path)
    broken = project / "scenarios" / "broken" / "scenario.yaml"
    broken.parent.mkdir()
    broken.write_text("apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: b}\nspec:\n  seed: []\n",
                      encoding="utf-8")
    (project / "scenarios" / "quickstart" / "notes.yaml").write_text("not: a scenario\n", encoding="utf-8")
    _git(project, "init", "-q")
    _git(project, "add", ".")
    env = _env(tmp_path, PRE_COMMIT_HOME=str(tmp_path / "pre-commit-home"), GIT_AUTHOR_NAME="t",
               GIT_AUTHOR_EMAIL="t@example.com", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.com")

    def try_repo(hook: str, *files: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([pre_commit, "try-repo", str(ROOT), hook, "--verbose", "--files", *files], cwd=project,
                              env=env, capture_output=True, text=True, check=False)

    good = try_repo("kamera-validate", "scenarios/quickstart/scenario.yaml", "scenarios/quickstart/notes.yaml")
    assert good.returncode == 0, good.stdout + good.stderr
    assert "ok scenarios/quickstart/scenario.yaml: quickstart" in good.stdout  # notes.yaml is not a scenario
    assert "notes.yaml" not in good.stdout.replace("scenarios/quickstart/notes.yaml", "")
    bad = try_repo("kamera-validate", "scenarios/broken/scenario.yaml")
    assert bad.returncode == 1
    assert "scenarios/broken/scenario.yaml:5:3: $.spec: missing required field 'controllers'" in bad.stdout
    failing = try_repo("kamera-check", "scenarios/livelock/scenario.yaml")
    assert failing.returncode == 1 and "livelock" in failing.stdout
    passing = try_repo("kamera-check", "scenarios/quickstart/scenario.yaml")
    assert passing.returncode == 0, passing.stdout
