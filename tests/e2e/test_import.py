"""``kamera import`` through the command line: import a dump, fill in a real controller, check it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kamera_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "import"
QUICKSTART = ROOT / "scenarios" / "quickstart"
ENV = {"NO_COLOR": "1", "COLUMNS": "200", "GITHUB_ACTIONS": ""}
WIDGET = """  controllers:
    - name: widget
      entrypoint: controllers/widget.py:reconcile
      for: example.com/v1/Widget
      owns: [v1/ConfigMap]"""


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=ENV)
    assert not isinstance(result.exception, Exception) or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_import_then_check_with_the_quickstart_controller(tmp_path: Path) -> None:
    out = tmp_path / "shop"
    code, stdout, stderr = invoke("import", str(FIXTURES / "cluster.yaml"), str(FIXTURES / "crds.yaml"),
                                  "-o", str(out))
    assert code == 0, stderr
    assert "7 object(s) of 6 kind(s), 1 CRD(s) in 4 file(s)" in stdout
    assert "warning: " in stderr and "owner ReplicaSet 'web-6d4cf56db6'" in stderr
    assert "note: skipped 1 object(s): Events" in stderr

    # the scaffold as written runs at once: the built-ins for the imported Deployment and Pod
    assert "it runs now with the built-in controllers deployment, kubelet: kamera check" in stdout
    code, stdout, _ = invoke("validate", str(out))
    assert code == 0 and "ok " in stdout
    code, stdout, stderr = invoke("check", str(out))
    assert code == 0, stdout + stderr
    assert "✓ shop PASSED" in stdout and "1 converged" in stdout

    scenario = out / "scenario.yaml"
    scenario.write_text(scenario.read_text(encoding="utf-8").replace("  controllers: []", WIDGET),
                        encoding="utf-8")
    shutil.copytree(QUICKSTART / "controllers", out / "controllers")
    code, stdout, stderr = invoke("check", str(out))
    assert code == 0, stdout + stderr
    assert "✓ shop PASSED" in stdout and "1 converged" in stdout


def test_import_refuses_bad_input_and_a_non_empty_folder(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n", encoding="utf-8")
    code, stdout, stderr = invoke("import", str(bad), "-o", str(tmp_path / "out"))
    assert code == 2 and "Traceback" not in stdout + stderr
    assert f"{bad}:4:1: $: invalid YAML" in stderr
    assert not (tmp_path / "out").exists()

    code, _, stderr = invoke("import", str(FIXTURES / "cluster.yaml"), "-o", str(FIXTURES))
    assert code == 2 and "not empty" in stderr and "--force" in stderr
    code, _, stderr = invoke("import", str(FIXTURES / "cluster.yaml"))
    assert code == 2 and "missing -o/--output" in stderr
    code, _, stderr = invoke("import", "-o", str(tmp_path / "o2"))
    assert code == 2 and "nothing to import" in stderr


def test_import_an_audit_log_and_replay_it_against_the_controller(tmp_path: Path) -> None:
    out = tmp_path / "incident"
    code, stdout, stderr = invoke("import", str(FIXTURES / "cluster.yaml"), str(FIXTURES / "crds.yaml"),
                                  "--audit", str(FIXTURES / "audit.log"), "-o", str(out))
    assert code == 0, stderr
    assert "7 user action(s)" in stdout
    assert "audit.log:9:1: $.level: carol patch ConfigMap shop/demo-config: not replayed" in stderr
    text = (out / "scenario.yaml").read_text(encoding="utf-8")
    assert "  # not replayed: " in text and "deletecollection" in text
    assert "  explore:\n    maxDepth: 120\n" in text  # 50 + 10 per action: room for the whole timeline
    assert "  # cluster:\n  #   builtins: [deployment, kubelet]\n" in text  # offered, not enabled, with actions
    (out / "scenario.yaml").write_text(text.replace("  controllers: []", WIDGET), encoding="utf-8")
    shutil.copytree(QUICKSTART / "controllers", out / "controllers")
    code, stdout, stderr = invoke("check", str(out))
    assert code == 0, stdout + stderr
    # every placement of the 7 replayed writes among the widget controller's reconciles, one outcome
    assert "✓ incident PASSED 25 states, 29 transitions" in stdout
    assert "1 converged" in stdout and "✓ deterministic" in stdout
    assert "✓ actions apply — all 7 action(s) applied without an error" in stdout


def test_import_audit_options_are_checked(tmp_path: Path) -> None:
    code, _, stderr = invoke("import", "--audit", str(FIXTURES / "audit.log"), "--at", "later", "-o", str(tmp_path))
    assert code == 2 and "invalid value for --at: 'later'" in stderr
    code, _, stderr = invoke("import", "--audit", str(FIXTURES / "audit.log"), "--since", "noon", "-o", str(tmp_path))
    assert code == 2 and "--since 'noon': not an RFC 3339 time (e.g. 2025-11-20T10:00:00Z)" in stderr
    code, _, stderr = invoke("import", "--audit", str(FIXTURES / "audit.log"), "--since", "2025-11-20T11:00:00Z",
                             "--until", "2025-11-20T10:00:00Z", "-o", str(tmp_path))
    assert code == 2 and "the window is empty" in stderr
    code, _, stderr = invoke("import", str(FIXTURES / "cluster.yaml"), "--until", "2025-11-20T10:00:00Z",
                             "-o", str(tmp_path))
    assert code == 2 and "give --audit" in stderr
    bad = tmp_path / "bad.log"
    bad.write_text('{"kind": "Event"\n', encoding="utf-8")
    code, stdout, stderr = invoke("import", "--audit", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2 and f"{bad}:1:17: $: invalid JSON" in stderr and "Traceback" not in stdout + stderr


def test_the_incident_example_is_what_the_import_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """scenarios/import/incident: seed, explore bound, comments and actions exactly as imported."""
    example = ROOT / "scenarios" / "import" / "incident"
    shutil.copytree(example / "input", tmp_path / "input")
    monkeypatch.chdir(tmp_path)
    code, stdout, stderr = invoke("import", "input/cluster.yaml", "--audit", "input/audit.log", "-o", "incident")
    assert code == 0, stderr
    assert "2 user action(s)" in stdout
    written = (tmp_path / "incident" / "scenario.yaml").read_text(encoding="utf-8")
    committed = (example / "scenario.yaml").read_text(encoding="utf-8")
    tail = written[written.index("  seed:\n"):]
    assert committed.endswith(tail)
    for seed in ("_cluster.yaml", "shop.yaml"):
        assert (tmp_path / "incident" / "seed" / seed).read_bytes() == (example / "seed" / seed).read_bytes()
    fixed = (example / "fixed" / "scenario.yaml").read_text(encoding="utf-8")
    assert fixed.endswith(tail[tail.index("  # The default 50 steps"):])
