"""A program given as a script (``program: watch.py``): its top level is the program, run as
``python watch.py`` runs it — many small operators are a watch loop at module level, with no
function to name. Loading compiles it without running it; each start executes it afresh."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.program import parking as program_parking
from kamera_cli.errors import EntrypointError, ScenarioError
from kamera_cli.model.result import Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario

pytestmark = pytest.mark.skipif(not program_parking.available(),
                                reason="greenlet is not installed (kamera-cli[programs])")

COPIER = """
from kubernetes import client, config, watch
{imports}
config.load_kube_config()
v1 = client.CoreV1Api()
for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
    cm = event["object"]
    if event["type"] == "DELETED" or cm.metadata.name.endswith("-copy"):
        continue
    {count}
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=cm.metadata.name + "-copy"), data=cm.data)
    try:
        v1.create_namespaced_config_map("default", body)
    except client.ApiException as exc:
        if exc.status != 409:
            raise
"""


def _write(tmp_path: Path, code: str, *, program: str = "watch.py", extra: str = "") -> Path:
    (tmp_path / "watch.py").write_text(textwrap.dedent(code))
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent(f"""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {{name: script}}
        spec:
          controllers:
            - {{name: copier, program: {program}, watches: [v1/ConfigMap]}}
          seed:
            - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: a, namespace: default}}, data: {{k: v}}}}
            - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: b, namespace: default}}, data: {{k: w}}}}
          invariants:
            - name: every map has its copy
              select: "$.items[?@.kind == 'ConfigMap' && search(@.metadata.name, '-copy$')]"
              expect: {{count: 2}}
        """) + extra)
    return path


def _run(path: Path) -> Any:
    return explore(load_scenario(path)).result


def _check(result: Any, name: str) -> Any:
    return next(c for c in result.checks if c.name == name)


def test_a_top_level_watch_loop_runs_unmodified(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, COPIER.format(imports="", count="")))
    assert result.verdict == Verdict.PASSED, [c.message for c in result.checks]
    assert result.stats.states > 3  # the events of two maps, one step each


def test_a_main_guard_runs_as_under_python(tmp_path: Path) -> None:
    guarded = "def main():\n" + textwrap.indent(COPIER.format(imports="", count=""), "    ") + \
        "\n\nif __name__ == '__main__':\n    main()\n"
    assert _run(_write(tmp_path, guarded)).verdict == Verdict.PASSED


def test_every_start_imports_the_script_s_modules_afresh(tmp_path: Path) -> None:
    """A module the script imports keeps a count at module level: a crash restart (or a replay) is a
    new process, so the count starts again; the copies it makes name the count it saw."""
    (tmp_path / "counter.py").write_text("seen = []\n")
    code = COPIER.format(imports="import counter", count="counter.seen.append(cm.metadata.name)\n    "
                         "assert len(counter.seen) <= 2, counter.seen")
    result = _run(_write(tmp_path, code, extra="  perturbations:\n    crashes: [{controller: copier}]\n"))
    assert _check(result, "no controller errors").verdict == Verdict.PASSED, \
        _check(result, "no controller errors").message


def test_a_script_that_ends_is_a_finding_naming_the_script(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, "print('nothing to do')\n"))
    check = _check(result, "no controller errors")
    assert check.verdict == Verdict.FAILED
    assert "the script watch.py ran to its end" in check.message


def test_sys_exit_with_a_failing_code_is_a_crash(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, "import sys\nsys.exit(3)\n"))
    check = _check(result, "no controller errors")
    assert check.verdict == Verdict.FAILED
    assert "the script watch.py called sys.exit(3)" in check.message


def test_loading_does_not_run_the_script(tmp_path: Path) -> None:
    """Its top level is the program: an import-time check that ran it would block on the watch, or
    here write a file at load time."""
    marker = tmp_path / "ran"
    scenario = load_scenario(_write(tmp_path, f"open({str(marker)!r}, 'w').close()\n"))
    from kamera_cli.sim.bootstrap import Simulation
    with Simulation(scenario):
        assert not marker.exists()


def test_a_syntax_error_is_located(tmp_path: Path) -> None:
    with pytest.raises(EntrypointError, match=r"watch\.py has a syntax error at line 2"):
        explore(load_scenario(_write(tmp_path, "x = 1\nfor\n")))


def test_a_missing_script_is_a_located_scenario_error(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(_write(tmp_path, "", program="missing.py"))
    text = str(info.value)
    assert "program script 'missing.py' not found" in text and "scenario.yaml:6" in text


def test_a_sweep_runs_the_script_once_per_tick(tmp_path: Path) -> None:
    (tmp_path / "watch.py").write_text(textwrap.dedent("""\
        from kubernetes import client, config
        config.load_kube_config()
        core = client.CoreV1Api()
        for cm in core.list_namespaced_config_map("default").items:
            if not (cm.metadata.labels or {}).get("team"):
                core.patch_namespaced_config_map(cm.metadata.name, "default", {"metadata": {"labels": {"team": "x"}}})
        """))
    path = tmp_path / "scenario.yaml"
    path.write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: sweep}
        spec:
          controllers:
            - {name: labeler, program: watch.py, every: 30s, watches: [v1/ConfigMap]}
          seed:
            - {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}
          invariants:
            - name: labelled
              select: "$.items[?@.kind == 'ConfigMap'].metadata.labels.team"
              expect: {equals: x}
        """))
    result = _run(path)
    assert result.verdict == Verdict.PASSED, [c.message for c in result.checks]


def test_a_crash_s_story_shows_the_user_s_error_not_kamera_s_wrapper(tmp_path: Path) -> None:
    result = _run(_write(tmp_path, "import json\njson.loads('{')\n"))
    check = _check(result, "no controller errors")
    step = check.counterexamples[0].steps[-1]
    assert "its process exits" in step.note and "requeue" not in step.note
    assert 'File "watch.py", line 2, in <module>' in step.error and "JSONDecodeError" in step.error
    assert "ProgramCrashed" not in step.error and "direct cause" not in step.error
