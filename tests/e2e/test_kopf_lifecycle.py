"""kopf's stop and restart under kamera: ``@kopf.on.cleanup`` handlers run when the operator stops
gracefully at each converged state (with the controller's ``env:``), and a login or startup handler
that fails when a crash restarts the operator is a finding on that path, which then goes on without
the operator.  A failing handler is always the operator's error, named with its line, never kamera's.
Examples: scenarios/kopf/cleanup, scenarios/kopf/restart-settings.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import Check, ScenarioResult, Verdict

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

KOPF = Path(__file__).resolve().parents[2] / "scenarios" / "kopf"


def errors(result: ScenarioResult) -> Check:
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    return check


def case(tmp_path: Path, example: str, operator: str, replace: tuple[tuple[str, str], ...] = ()) -> ScenarioResult:
    """The example's scenario with ``operator`` as its operator module (and ``replace`` applied)."""
    shutil.copytree(KOPF / "create-child", tmp_path / "create-child")
    (tmp_path / "case").mkdir()
    (tmp_path / "case" / "operator.py").write_text(textwrap.dedent(operator))
    text = (KOPF / example / "scenario.yaml").read_text()
    text = text.replace("kopf: operator_buggy.py", "kopf: operator.py")
    for old, new in replace:
        assert old in text, old
        text = text.replace(old, new)
    (tmp_path / "case" / "scenario.yaml").write_text(text)
    (result,) = kamera_cli.check(tmp_path / "case").scenarios
    return result


# -- cleanup --------------------------------------------------------------------------------------------------

def test_a_cleanup_handler_failing_where_an_execution_ends_is_named_with_its_stop() -> None:
    (result,) = kamera_cli.check(KOPF / "cleanup" / "scenario.yaml").scenarios
    check = errors(result)
    assert check.verdict is Verdict.FAILED
    (cex,) = check.counterexamples
    assert cex.summary.startswith("@kopf.on.cleanup handler 'hand_over_buggy' failed at operators.py:32:"), cex.summary
    *path, stop = cex.steps
    # the path to the converged state where the config map is gone, then the graceful stop there
    assert [s.actor for s in path] == ["widgets", 'action "a user deletes the widget\'s config map"', "widgets"]
    assert (stop.kind, stop.actor) == ("stop", "widgets")
    assert "SIGTERM" in stop.request and "NotFoundException" in stop.error
    assert stop.writes and all(w.refused == 404 for w in stop.writes)  # kopf retried the handler
    # the stop is not explored: two converged states, as without the cleanup handler
    assert (result.stats.states, result.stats.converged_states) == (9, 2)


def test_a_cleanup_handler_that_copes_passes() -> None:
    (result,) = kamera_cli.check(KOPF / "cleanup" / "fixed").scenarios
    assert result.verdict is Verdict.PASSED, result.checks


CLEANUP_ENV = """
    import os
    import kopf
    from kubernetes import client, config
    @kopf.on.create("widgets")
    def create(namespace, **_):
        config.load_kube_config()
        client.CoreV1Api().create_namespaced_config_map(namespace, {"metadata": {"name": "demo-config"}})
    @kopf.on.cleanup()
    def farewell(**_):
        if os.environ["HANDOVER_ANNOTATION"] != "widgets.example.com/handover":
            raise ValueError("not the Deployment's environment")
"""


def test_env_applies_while_cleanup_handlers_run(tmp_path: Path) -> None:
    result = case(tmp_path, "cleanup", CLEANUP_ENV)
    assert errors(result).verdict is Verdict.PASSED, errors(result)


def test_without_env_the_cleanup_handler_fails_at_its_line(tmp_path: Path) -> None:
    result = case(tmp_path, "cleanup", CLEANUP_ENV, (
        ("env: {HANDOVER_ANNOTATION: widgets.example.com/handover}", "env: {OTHER: x}"),))
    check = errors(result)
    assert check.verdict is Verdict.FAILED
    (cex,) = check.counterexamples
    # the same failure at both converged states: one counterexample, counting them
    assert cex.summary.startswith("@kopf.on.cleanup handler 'farewell' failed at operator.py:11:"), cex.summary
    assert cex.summary.endswith("(at 2 converged states)")
    assert "KeyError: 'HANDOVER_ANNOTATION'" in cex.steps[-1].error


def test_a_cleanup_handler_raising_what_kopf_does_not_catch_is_a_finding(tmp_path: Path) -> None:
    result = case(tmp_path, "cleanup", """
        import sys
        import kopf
        @kopf.on.create("widgets")
        def create(**_):
            pass
        @kopf.on.cleanup()
        def bye(**_):
            sys.exit(3)
    """)
    (cex,) = errors(result).counterexamples
    assert cex.summary.startswith("a @kopf.on.cleanup handler failed at operator.py:9: it raised SystemExit"), \
        cex.summary


def test_a_cleanup_handler_that_never_returns_is_stopped_at_the_controller_s_budget(tmp_path: Path) -> None:
    result = case(tmp_path, "cleanup", """
        import kopf
        @kopf.on.create("widgets")
        def create(**_):
            pass
        @kopf.on.cleanup()
        def drain(**_):
            while True:
                pass
    """, (("env: {HANDOVER_ANNOTATION: widgets.example.com/handover}", "timeout: 1s"),))
    (cex,) = errors(result).counterexamples
    assert cex.summary.startswith("a @kopf.on.cleanup handler did not return within 1 s of wall-clock time"), \
        cex.summary
    assert 'operator.py", line 8, in drain' in cex.steps[-1].error


def test_an_operator_that_never_started_runs_no_cleanup(tmp_path: Path) -> None:
    result = case(tmp_path, "cleanup", """
        import kopf
        @kopf.on.startup()
        def configure(**_):
            raise kopf.PermanentError("no settings")
        @kopf.on.create("widgets")
        def create(**_):
            pass
        @kopf.on.cleanup()
        def farewell(**_):
            raise ValueError("never called")
    """)
    (cex,) = errors(result).counterexamples
    assert cex.summary.startswith("@kopf.on.startup handler 'configure' failed"), cex.summary


# -- a start that fails after a crash -------------------------------------------------------------------------

def test_a_startup_handler_failing_after_a_restart_is_named_on_its_path() -> None:
    (result,) = kamera_cli.check(KOPF / "restart-settings" / "scenario.yaml").scenarios
    check = errors(result)
    (cex,) = check.counterexamples
    assert cex.summary.startswith("after a crash of 'widgets', its restart: @kopf.on.startup handler "
                                  "'load_settings' failed at operators.py:22:"), cex.summary
    assert [s.actor for s in cex.steps] == ["action 'an admin deletes the settings'", "widgets"]
    assert cex.steps[-1].note.startswith("crashed after write 0; restarted, but its start failed")
    assert "NotFoundException" in cex.details
    # the operator is down on that path only: where the restart came before the delete, or the
    # config map was made before the crash, every widget has its config map
    (invariant,) = [c for c in result.checks if c.name.startswith("invariant:")]
    assert invariant.verdict is Verdict.FAILED
    kept = [s for s in result.converged if any(o["kind"] == "ConfigMap" and o["metadata"]["name"] == "demo-config"
                                               for o in s.objects)]
    assert kept and len(kept) < len(result.converged)


def test_the_fix_restarts_as_before() -> None:
    (result,) = kamera_cli.check(KOPF / "restart-settings" / "fixed").scenarios
    assert result.verdict is Verdict.PASSED, result.checks


def test_a_login_handler_failing_after_a_restart_is_named_on_its_path(tmp_path: Path) -> None:
    result = case(tmp_path, "restart-settings", """
        import kopf
        from kubernetes import client, config
        @kopf.on.login()
        def login(**kwargs):
            config.load_kube_config()
            client.CoreV1Api().read_namespaced_config_map("widgets-settings", "default")  # the operator's token
            return kopf.login_via_client(**kwargs)
        @kopf.on.create("example.com", "v1", "widgets")
        def create(name, namespace, **_):
            body = {"metadata": {"name": f"{name}-config", "labels": {"widget": name}}}
            client.CoreV1Api().create_namespaced_config_map(namespace, body)
    """, (("../create-child", "../create-child"),))
    check = errors(result)
    summaries = [c.summary for c in check.counterexamples]
    assert summaries == ["after a crash of 'widgets', its restart: @kopf.on.login handler 'login' failed at "
                         "operator.py:7: kopf cannot log in, so the operator never starts (seen 2 times)"], summaries
    # twice: after the crash of the create that writes the child, and of a later run that writes nothing
