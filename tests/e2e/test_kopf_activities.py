"""kopf's start under kamera: login and startup handlers run as ``kopf run`` runs them, with the
controller's ``env:``; their failure is the operator's error (a finding naming the handler and its
line), never kamera's.  The example is scenarios/kopf/login.
"""

from __future__ import annotations

import importlib.util
import shutil
import textwrap
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Verdict

reason = supported()
pytestmark = [pytest.mark.skipif(reason is not None, reason=reason or ""),
              pytest.mark.skipif(importlib.util.find_spec("kubernetes_asyncio") is None,
                                 reason="the example needs kubernetes_asyncio (pip install 'kamera-cli[asyncio]')")]

LOGIN = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "login"


def run(tmp_path: Path, operator: str, env: str = "{WIDGET_FINALIZER: widgets.example.com/config}") -> ScenarioResult:
    shutil.copytree(LOGIN.parent / "create-child", tmp_path / "create-child")
    (tmp_path / "case").mkdir()
    (tmp_path / "case" / "operator.py").write_text(textwrap.dedent(operator))
    (tmp_path / "case" / "scenario.yaml").write_text(
        (LOGIN / "scenario.yaml").read_text().replace("env: {WIDGET_FINALIZER: widgets.example.com/config}",
                                                       f"env: {env}"))
    (result,) = kamera_cli.check(tmp_path / "case").scenarios
    return result


def errors(result: ScenarioResult) -> tuple[Verdict, str, str]:
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    return check.verdict, check.message, "".join(c.details + "".join(s.error for s in c.steps)
                                                 for c in check.counterexamples)


def test_the_login_handler_configures_the_client_the_handlers_use() -> None:
    (result,) = kamera_cli.check(LOGIN).scenarios
    assert result.verdict is Verdict.PASSED, result.checks
    assert (result.stats.states, result.stats.converged_states) == (7, 1)


def test_without_the_login_handler_the_blocked_call_names_what_is_missing(tmp_path: Path) -> None:
    text = (LOGIN / "operator.py").read_text().replace("@kopf.on.login()", "")
    verdict, _message, detail = errors(run(tmp_path, text))
    assert verdict is Verdict.FAILED
    assert "a URL without a host (/api/v1/namespaces/default/configmaps)" in detail
    assert "@kopf.on.login" in detail and "load_kube_config()" in detail


def test_env_applies_while_startup_handlers_run(tmp_path: Path) -> None:
    result = run(tmp_path, (LOGIN / "operator.py").read_text(), env="{OTHER: x}")
    verdict, message, detail = errors(result)
    assert verdict is Verdict.FAILED and result.verdict is Verdict.FAILED
    assert message.startswith("@kopf.on.startup handler 'configure' failed at operator.py:27:")
    assert "KeyError: 'WIDGET_FINALIZER'" in detail
    # the operator never started: no finalizer held the widget back, no config map was made
    assert not [o for o in result.converged[0].objects if o["kind"] in ("Widget", "ConfigMap")]


def test_a_startup_handler_kopf_retries_may_succeed_later(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        tries = []
        @kopf.on.startup()
        def warm_up(settings, **_):
            tries.append(1)
            if len(tries) < 3:
                raise kopf.TemporaryError("the cache is cold", delay=5)
            settings.persistence.finalizer = "widgets.example.com/config"
        @kopf.on.create("widgets")
        def create_config(name, namespace, **_):
            from kubernetes import client, config
            config.load_kube_config()
            client.CoreV1Api().create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-config"}})
        @kopf.on.delete("widgets")
        def farewell(name, namespace, **_):
            from kubernetes import client
            client.CoreV1Api().delete_namespaced_config_map(f"{name}-config", namespace)
    """)
    assert result.verdict is Verdict.PASSED, result.checks


def test_a_login_handler_returning_nothing_means_the_operator_never_starts(tmp_path: Path) -> None:
    verdict, message, detail = errors(run(tmp_path, """
        import kopf
        @kopf.on.login()
        def login(**_):
            return None
        @kopf.on.create("widgets")
        def create_config(**_):
            pass
    """))
    assert verdict is Verdict.FAILED
    assert message.startswith("no @kopf.on.login handler returned credentials")
    assert "'login'" in detail


def test_a_failing_login_handler_is_named(tmp_path: Path) -> None:
    verdict, message, detail = errors(run(tmp_path, """
        import kopf
        @kopf.on.login(retries=2)
        def login(**_):
            raise kopf.LoginError("no token")
        @kopf.on.create("widgets")
        def create_config(**_):
            pass
    """))
    assert verdict is Verdict.FAILED
    assert message.startswith("@kopf.on.login handler 'login' failed at operator.py:5:"), message
    assert "no token" in detail


def test_what_a_startup_handler_writes_is_in_the_cluster_the_search_starts_from(tmp_path: Path) -> None:
    """`kopf run` runs startup handlers before its first watch, against the cluster: an operator that
    creates its own namespace and settings there finds them when its handlers run."""
    result = run(tmp_path, """
        import kopf
        from kubernetes import client, config
        @kopf.on.startup()
        def install(settings, **_):
            settings.persistence.finalizer = "widgets.example.com/config"
            config.load_kube_config()
            core = client.CoreV1Api()
            core.create_namespace({"metadata": {"name": "widgets-system"}})
            core.create_namespaced_config_map("widgets-system", {"metadata": {"name": "settings"},
                                                                 "data": {"colour": "blue"}})
        @kopf.on.create("widgets")
        def create_config(name, namespace, **_):
            core = client.CoreV1Api()
            colour = core.read_namespaced_config_map("settings", "widgets-system").data["colour"]
            core.create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-config"},
                                                          "data": {"colour": colour}})
        @kopf.on.delete("widgets")
        def farewell(name, namespace, **_):
            client.CoreV1Api().delete_namespaced_config_map(f"{name}-config", namespace)
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    (converged,) = result.converged
    kept = {(o["kind"], o["metadata"]["name"]) for o in converged.objects}
    assert {("Namespace", "widgets-system"), ("ConfigMap", "settings")} <= kept
