"""The command line as users and CI see it: exit codes, messages, reports, options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kamera_cli import __version__
from kamera_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"
ENV = {"NO_COLOR": "1", "COLUMNS": "120", "GITHUB_ACTIONS": ""}


def invoke(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={**ENV, **(env or {})})
    return result.exit_code, result.stdout, result.stderr


def test_version() -> None:
    code, out, _ = invoke("--version")
    assert (code, out.strip()) == (0, f"kamera {__version__}")


@pytest.mark.parametrize("which", ["scenario", "result"])
def test_schema_prints_a_json_schema(which: str) -> None:
    code, out, _ = invoke("schema", which)
    assert code == 0
    doc = json.loads(out)
    assert doc["$schema"].startswith("https://json-schema.org/draft/2020-12")


def test_schema_unknown_is_a_usage_error() -> None:
    code, _, err = invoke("schema", "bogus")
    assert code == 2
    assert "unknown schema 'bogus'" in err


def test_validate_every_example() -> None:
    code, out, _ = invoke("validate", str(SCENARIOS))
    assert code == 0
    assert out.count("ok ") == len(list(SCENARIOS.rglob("scenario.yaml")))


def test_invalid_scenario_is_exit_2_with_positions_and_a_hint(tmp_path: Path) -> None:
    bad = tmp_path / "scenario.yaml"
    bad.write_text(
        "apiVersion: kamera.dev/v1alpha1\n"
        "kind: Scenario\n"
        "metadata: {name: bad}\n"
        "spec:\n"
        "  controllers:\n"
        "    - name: c\n"
        "      entrypoint: ctrl.py:reconcile\n"
        "      for: v1/ConfigMap\n"
        "  seed: []\n"
        "  explor: {maxDepth: 3}\n"
    )
    (tmp_path / "ctrl.py").write_text("def reconcile(request):\n    return None\n")
    code, _, err = invoke("validate", str(bad))
    assert code == 2
    assert f"{bad}:10:3: $.spec" in err
    assert "explore" in err  # did you mean
    code, out, _ = invoke("check", str(bad))
    assert code == 2
    assert "ERROR" in out and "unknown field 'explor' (did you mean 'explore'?)" in out


def test_missing_path_is_a_usage_error(tmp_path: Path) -> None:
    code, _, err = invoke("check", str(tmp_path / "nope"))
    assert code == 2
    assert "nope" in err


def test_inconclusive_is_exit_4() -> None:
    code, out, _ = invoke("check", str(SCENARIOS / "quickstart"), "--max-states", "3")
    assert code == 4, out
    assert "maxStates 3" in out


def test_bad_timeout_is_a_usage_error() -> None:
    code, _, err = invoke("check", str(SCENARIOS / "quickstart"), "--timeout", "soon")
    assert code == 2
    assert "--timeout" in err


def test_internal_error_is_exit_3_with_a_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kamera_cli import runner

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(runner, "check_file", broken)  # runs in the (forked) worker process
    monkeypatch.chdir(tmp_path)
    code, _, err = invoke("check", str(SCENARIOS / "quickstart"))
    assert code == 3
    assert "bug in kamera" in err
    (report,) = tmp_path.glob("kamera-internal-error-*.txt")
    assert "RuntimeError: boom" in report.read_text()


def test_fail_fast_stops_after_the_first_failure(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    code, _, _ = invoke("check", str(SCENARIOS / "bugs" / "livelock"), str(SCENARIOS / "bugs" / "order-dependent"),
                        "--fail-fast", "--json", str(out_json))
    assert code == 1
    first, second = json.loads(out_json.read_text())["scenarios"]
    assert first["verdict"] == "failed"
    assert second["verdict"] == "inconclusive"  # listed, never silently dropped
    assert "not checked: --fail-fast" in second["checks"][0]["message"]


def test_workers_give_the_same_verdicts_as_one_process(tmp_path: Path) -> None:
    paths = [str(SCENARIOS / "bugs" / "livelock"), str(SCENARIOS / "bugs" / "order-dependent")]
    one, two = tmp_path / "1.json", tmp_path / "2.json"
    assert invoke("check", *paths, "--json", str(one))[0] == 1
    assert invoke("check", *paths, "--workers", "2", "--json", str(two))[0] == 1

    def summary(p: Path) -> list[tuple[str, str, int, list[tuple[str, str]]]]:
        return [(s["name"], s["verdict"], s["stats"]["states"], [(c["name"], c["verdict"]) for c in s["checks"]])
                for s in json.loads(p.read_text())["scenarios"]]

    assert summary(one) == summary(two)


def test_github_annotations_point_at_the_failing_check() -> None:
    code, out, _ = invoke("check", str(SCENARIOS / "bugs" / "invariant-at-convergence"),
                          env={"GITHUB_ACTIONS": "true"})
    assert code == 1
    lines = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(lines) == 1  # one failing check, one annotation
    assert "invariant-at-convergence/scenario.yaml" in lines[0] and "line=" in lines[0]


def test_no_colour_without_a_terminal() -> None:
    _, out, _ = invoke("check", str(SCENARIOS / "bugs" / "livelock"))
    assert "\x1b[" not in out


def test_a_folder_mixing_good_and_broken_scenarios(tmp_path: Path) -> None:
    shutil.copytree(SCENARIOS / "quickstart", tmp_path / "good")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "scenario.yaml").write_text("apiVersion: kamera.dev/v1alpha1\nkind: Scenario\n")
    junit = tmp_path / "junit.xml"
    code, _out, _ = invoke("check", str(tmp_path), "--junit", str(junit))
    assert code == 2  # an invalid scenario wins over passing ones
    text = junit.read_text()
    assert 'name="load"' in text and 'type="invalid-scenario"' in text
    assert 'name="converges"' in text


def test_progress_line_goes_to_stderr(monkeypatch: pytest.MonkeyPatch) -> None:
    import io
    import sys

    from kamera_cli import cli

    err = io.StringIO()
    monkeypatch.setattr(sys, "stderr", err)
    cli._progress_printer()("quickstart", 1234, 7, 987.0, 2.5)
    text = err.getvalue()
    assert text.startswith("\r")
    assert "quickstart: exploring: 1234 states, depth 7, 987 states/s" in text


def test_a_seed_object_the_server_refuses_points_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("def reconcile(request):\n    return None\n")
    scenario = tmp_path / "scenario.yaml"
    scenario.write_text(
        "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: sd}\nspec:\n"
        "  controllers:\n    - {name: c, entrypoint: c.py:reconcile, for: v1/ConfigMap}\n"
        "  seed:\n    - {apiVersion: v1, kind: ConfigMap, metadata: {name: ok}}\n"
        "    - {apiVersion: apps/v1, kind: Deployment, metadata: {name: bad}, spec: {replicas: 1}}\n"
    )
    code, out, _ = invoke("check", str(scenario))
    assert code == 2
    assert "scenario.yaml:9:7: $.spec.seed: cannot create apps/v1/Deployment default/bad: 422 Invalid" in out


def test_timeout_accepts_plain_seconds() -> None:
    code, out, _ = invoke("check", str(SCENARIOS / "quickstart"), "--timeout", "120")
    assert code == 0, out


def test_fail_fast_stops_the_search_at_the_first_finding(tmp_path: Path) -> None:
    out_json = tmp_path / "r.json"
    code, _, _ = invoke("check", str(SCENARIOS / "bugs" / "exception-one-ordering"), "--fail-fast",
                        "--json", str(out_json))
    assert code == 1
    (scenario,) = json.loads(out_json.read_text())["scenarios"]
    assert scenario["stats"]["states"] < 28  # the whole space has 28 states
    assert scenario["stats"]["bound_hit"].startswith("stopped at the first problem")
    assert {c["name"]: c["verdict"] for c in scenario["checks"]}["no controller errors"] == "failed"
