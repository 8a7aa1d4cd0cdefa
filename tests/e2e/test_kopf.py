"""kopf operators under kamera: kopf's own processing, step by step, with exact counts.

Each case writes a small operator next to the shared Widget CRD and checks it through the library
API (supervision is covered elsewhere); what is pinned is what kopf itself does — the stored
last-handled configuration and handler results, retries on the virtual clock, the finalizer of a
delete handler — and how kamera judges it.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Verdict

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

CREATE_CHILD = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "create-child"


def run(tmp_path: Path, operator: str, extra: str = "", more_seed: str = "") -> ScenarioResult:
    shutil.copytree(CREATE_CHILD / "crds", tmp_path / "crds")
    shutil.copytree(CREATE_CHILD / "manifests", tmp_path / "manifests")
    if more_seed:
        (tmp_path / "manifests" / "widget.yaml").write_text(
            (CREATE_CHILD / "manifests" / "widget.yaml").read_text() + "---\n" + textwrap.dedent(more_seed))
    (tmp_path / "operator.py").write_text(textwrap.dedent(operator))
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: kopf-case}
        spec:
          controllers:
            - {name: op, kopf: operator.py, for: example.com/v1/Widget, owns: [v1/ConfigMap]}
          crds: [crds/widget.yaml]
          seed: [manifests/widget.yaml]
        """) + textwrap.indent(textwrap.dedent(extra).strip("\n") + "\n", "  "))
    (result,) = kamera_cli.check(tmp_path).scenarios
    return result


def widget(result: ScenarioResult, index: int = 0) -> dict:  # type: ignore[type-arg]
    (obj,) = [o for o in result.converged[index].objects if o["kind"] == "Widget"]
    return dict(obj)


def checks(result: ScenarioResult) -> dict[str, Verdict]:
    return {c.name: c.verdict for c in result.checks}


def test_create_handler_result_and_diff_base_are_stored_by_kopf(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets")
        def hello(spec, **_):
            return {"said": spec["message"]}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    obj = widget(result)
    assert obj["status"] == {"hello": {"said": "hello"}}
    assert obj["metadata"]["annotations"]["kopf.zalando.org/last-handled-configuration"].startswith('{"spec":')
    assert (result.stats.states, result.stats.converged_states) == (3, 1)


def test_a_temporary_error_is_a_retry_on_the_virtual_clock(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets")
        def slow(retry, **_):
            if retry < 2:
                raise kopf.TemporaryError("not ready yet", delay=30)
            return {"attempts": retry + 1}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    obj = widget(result)
    assert obj["status"] == {"slow": {"attempts": 3}}
    notes = [s.note for s in result.converged[0].path]
    # kopf stored "delayed until now+30s" in its progress annotation on the failing step; the next
    # step (one virtual second later) found 29 s left and ended as a pending retry, not a sleep
    assert notes.count("retry after 29s") == 2
    assert result.stats.states == 7


def test_a_pending_retry_is_not_convergence(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets", retries=100)
        def never(**_):
            raise kopf.TemporaryError("the database never answers", delay=10)
    """, extra="""
        explore: {maxDepth: 12}
    """)
    assert checks(result)["converges"] is Verdict.FAILED
    assert result.stats.converged_states == 0


def test_a_handler_exception_kopf_only_logs_is_a_finding(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets", retries=1)
        def broken(spec, **_):
            return {"n": int(spec["message"])}
    """)
    assert checks(result)["no controller errors"] is Verdict.FAILED
    (check,) = [c for c in result.checks if c.name == "no controller errors"]
    text = check.message + "".join(s.error for c in check.counterexamples for s in c.steps)
    assert "invalid literal for int()" in text and "broken" in text
    # the finding names the handler's exception, not kamera's wrapper of what kopf logged
    assert check.message.startswith("controller 'op' raised ValueError: Handler 'broken' failed"), check.message


def test_a_delete_handler_runs_and_kopf_removes_its_finalizer(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        from kubernetes import client, config
        config.load_kube_config()
        @kopf.on.create("example.com", "v1", "widgets")
        def made(**_):
            return "made"
        @kopf.on.delete("example.com", "v1", "widgets")
        def gone(name, namespace, **_):
            client.CoreV1Api().create_namespaced_config_map(
                namespace, {"metadata": {"name": f"{name}-tombstone"}, "data": {"deleted": "yes"}})
    """, extra="""
        actions:
          - name: delete the widget
            at: converged
            delete: {apiVersion: example.com/v1, kind: Widget, namespace: default, name: demo}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    kinds = {(o["kind"], o["metadata"]["name"]) for o in result.converged[0].objects}
    assert ("Widget", "demo") not in kinds  # the finalizer was added, the handler ran, kopf released it
    assert ("ConfigMap", "demo-tombstone") in kinds


def test_an_operator_without_handlers_for_the_kind_is_a_load_error(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "gadgets")
        def other(**_):
            pass
    """)
    assert result.verdict is Verdict.ERROR
    assert "has no handler for example.com/v1/Widget" in result.error


RESUMING = """
    import kopf
    from kubernetes import client, config
    config.load_kube_config()
    @kopf.on.create("example.com", "v1", "widgets")
    def made(**_):
        return "made"
    @kopf.on.resume("example.com", "v1", "widgets")
    def resumed(name, namespace, **_):
        client.CoreV1Api().create_namespaced_config_map(namespace, {"metadata": {"name": f"{name}-resumed"}})
"""


def test_a_restart_delivers_kopf_s_initial_listing_so_resume_handlers_run(tmp_path: Path) -> None:
    result = run(tmp_path, RESUMING, extra="""
        perturbations:
          crashes:
            - {controller: op, afterWrites: [1]}
    """)
    names = [{o["metadata"]["name"] for o in c.objects if o["kind"] == "ConfigMap"} for c in result.converged]
    # the crash strikes after kopf stored the diff base (write 1) and before the handler results;
    # the restart delivers a listing with nothing changed since: kopf resumes instead of creating
    assert sorted(map(sorted, names)) == [[], ["demo-resumed"]]


def test_without_a_restart_no_resume_handler_runs(tmp_path: Path) -> None:
    result = run(tmp_path, RESUMING)
    assert result.verdict is Verdict.PASSED, result.checks
    assert not [o for o in result.converged[0].objects if o["kind"] == "ConfigMap"]


def _unbound(tmp_path: Path, operator: str | None, more_crds: list[str] | None = None,
             entry: str = "operator.py", more: str = "") -> ScenarioResult:
    """The result of a scenario whose one controller entry names a kopf operator and no ``for:``
    (``operator``: the text of ``operator.py`` in the folder; None when ``entry`` names a module elsewhere;
    ``more``: lines added to its spec)."""
    (tmp_path / "crds").mkdir(parents=True, exist_ok=True)
    shutil.copy(CREATE_CHILD / "crds" / "widget.yaml", tmp_path / "crds" / "widget.yaml")
    shutil.copytree(CREATE_CHILD / "manifests", tmp_path / "manifests")
    if operator is not None:
        (tmp_path / "operator.py").write_text(textwrap.dedent(operator))
    crds = ", ".join(["crds/widget.yaml", *(more_crds or ())])
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: kopf-unbound}
        spec:
          controllers: [{name: op, kopf: ENTRY}]
          crds: [CRDS]
          seed: [manifests/widget.yaml]
        """).replace("CRDS", crds).replace("ENTRY", entry) + more)
    (result,) = kamera_cli.check(tmp_path).scenarios
    return result


def test_an_operator_handling_several_resources_runs_as_one_controller_per_resource(tmp_path: Path) -> None:
    """No ``for:`` and handlers for two resources: one controller per resource, ``op/<Kind>``, as one entry
    per resource written by hand would give (it used to be an error asking for that)."""
    result = _unbound(tmp_path, """
        import kopf, kubernetes
        kubernetes.config.load_kube_config()
        core = kubernetes.client.CoreV1Api()
        @kopf.on.create("example.com", "v1", "widgets")
        def widget(name, namespace, **_):
            core.create_namespaced_config_map(namespace, {"metadata": {"name": f"from-{name}"}})
        @kopf.on.create("v1", "configmaps")
        def configmap(name, namespace, **_):
            core.patch_namespaced_config_map(name, namespace, {"metadata": {"annotations": {"seen": "yes"}}})
    """)
    assert result.verdict is Verdict.PASSED, (result.error, [c.message for c in result.checks])
    (state,) = result.converged
    seen = {(o["kind"], o["metadata"]["name"]): o["metadata"].get("annotations", {}).get("seen")
            for o in state.objects if o["kind"] in ("ConfigMap", "Widget")}
    assert seen[("ConfigMap", "from-demo")] == "yes"  # the ConfigMap part handled what the Widget part made
    actors = {step.actor for step in state.path}
    assert {"op/Widget", "op/ConfigMap"} <= actors, actors


def test_a_part_that_changes_a_module_global_says_the_other_parts_do_not_see_it(tmp_path: Path) -> None:
    """The shape of an operator that keeps its custom resources' specs in a module-level dict for its
    Namespace or Secret handlers (failk8s-operator's secret copier): in kopf's one process the other
    part reads what the first put there; in kamera each part has its own copy of the modules, so the
    result may be false, and a note says which global and which parts."""
    result = _unbound(tmp_path, """
        import kopf, kubernetes
        kubernetes.config.load_kube_config()
        known = {}
        settings = {"prefix": "from-"}  # read, never changed: no note
        @kopf.on.create("example.com", "v1", "widgets")
        def widget(name, namespace, **_):
            known[name] = namespace
            kubernetes.client.CoreV1Api().create_namespaced_config_map(
                namespace, {"metadata": {"name": settings["prefix"] + name}})
        @kopf.on.create("v1", "configmaps")
        def configmap(name, namespace, **_):
            if known:
                kubernetes.client.CoreV1Api().patch_namespaced_config_map(
                    name, namespace, {"metadata": {"annotations": {"seen": "yes"}}})
    """)
    assert result.verdict is Verdict.PASSED, (result.error, [c.message for c in result.checks])
    (note,) = [n for n in result.notes if "module-level" in n]
    assert note.startswith("controller 'op/Widget' changed the module-level operator.known, which the operator's "
                           "other parts (op/ConfigMap) do not see: kopf runs them in one process"), note
    assert "settings" not in note


def test_an_operator_installed_as_a_package_runs_from_a_scenario_elsewhere(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kopf run -m widgetop.main`` of an operator installed in site-packages, checked from a scenario
    folder of its own (how a user checks a public operator): it used to be shared as a library, its
    handlers registered once into the first registry, and every part said "no handler found"."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "widgetop").mkdir(parents=True)
    (site / "widgetop" / "__init__.py").write_text("")
    (site / "widgetop" / "main.py").write_text(textwrap.dedent("""\
        import kopf, kubernetes
        kubernetes.config.load_kube_config()
        @kopf.on.create("example.com", "v1", "widgets")
        def widget(name, namespace, **_):
            kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, {"metadata": {"name": name}})
        @kopf.on.create("v1", "configmaps")
        def configmap(name, namespace, **_):
            kubernetes.client.CoreV1Api().patch_namespaced_config_map(
                name, namespace, {"metadata": {"annotations": {"seen": "yes"}}})
        """))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    result = _unbound(tmp_path / "scenario", None, entry="widgetop.main")
    assert result.verdict is Verdict.PASSED, (result.error, [c.message for c in result.checks])
    (state,) = result.converged
    assert {"op/Widget", "op/ConfigMap"} <= {step.actor for step in state.path}


def test_a_fake_of_a_name_inside_an_installed_operator_reaches_every_part(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``replace:`` of a function inside the operator's own package (dask-kubernetes' retire_workers, which
    asks the scheduler): each part imports the package afresh, and the fake is put in each copy, where
    the handlers' module bound it by ``from ... import`` (it used to be refused: it reached no copy)."""
    site = tmp_path / "venv" / "lib" / "site-packages"
    (site / "widgetop").mkdir(parents=True)
    (site / "widgetop" / "__init__.py").write_text("")
    (site / "widgetop" / "logic.py").write_text("def verdict(name):\n    raise ConnectionError('a real service')\n")
    (site / "widgetop" / "main.py").write_text(textwrap.dedent("""\
        import kopf, kubernetes
        from widgetop.logic import verdict
        kubernetes.config.load_kube_config()
        @kopf.on.create("example.com", "v1", "widgets")
        def widget(name, namespace, **_):
            kubernetes.client.CoreV1Api().create_namespaced_config_map(
                namespace, {"metadata": {"name": name}, "data": {"verdict": verdict(name)}})
        @kopf.on.create("v1", "configmaps")
        def configmap(name, namespace, **_):
            kubernetes.client.CoreV1Api().patch_namespaced_config_map(
                name, namespace, {"metadata": {"annotations": {"seen": verdict(name)}}})
        """))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p))
    (tmp_path / "scenario" / "fakes").mkdir(parents=True)
    (tmp_path / "scenario" / "fakes" / "logic.py").write_text("def verdict(name):\n    return f'faked {name}'\n")
    result = _unbound(tmp_path / "scenario", None, entry="widgetop.main", more=(
        "  fakes:\n  - {replace: widgetop.logic.verdict, with: fakes/logic.py:verdict}\n"))
    assert result.verdict is Verdict.PASSED, (result.error, [c.message for c in result.checks])
    (state,) = result.converged
    (made,) = [o for o in state.objects if o["kind"] == "ConfigMap" and o["metadata"].get("annotations")]
    assert made["data"] == {"verdict": f"faked {made['metadata']['name']}"}
    assert made["metadata"]["annotations"]["seen"] == f"faked {made['metadata']['name']}"


def test_parts_of_kinds_with_the_same_name_are_told_apart_by_group(tmp_path: Path) -> None:
    crd = (CREATE_CHILD / "crds" / "widget.yaml").read_text()
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "maps.yaml").write_text(
        crd.replace("widgets.example.com", "configmaps.example.com").replace("plural: widgets", "plural: configmaps")
        .replace("singular: widget", "singular: configmap").replace("kind: Widget", "kind: ConfigMap")
        .replace("listKind: WidgetList", "listKind: ConfigMapList"))
    result = _unbound(tmp_path, """
        import kopf, kubernetes
        kubernetes.config.load_kube_config()
        @kopf.on.create("example.com", "v1", "widgets")
        def widget(name, namespace, **_):
            kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, {"metadata": {"name": name}})
        @kopf.on.create("example.com", "v1", "configmaps")
        def theirs(**_):
            pass
        @kopf.on.create("v1", "configmaps")
        def ours(**_):
            pass
    """, more_crds=["crds/maps.yaml"])
    assert result.verdict is Verdict.PASSED, (result.error, [c.message for c in result.checks])
    (state,) = result.converged
    assert {"op/Widget", "op/ConfigMap.core"} <= {step.actor for step in state.path}


def test_an_operator_whose_handlers_select_no_served_resource_is_told_what_they_select(tmp_path: Path) -> None:
    """A handler's group that no CRD serves (a public operator's handlers and CRD disagreed): kopf would
    run and handle nothing; kamera says what the handlers select and what the scenario serves."""
    result = _unbound(tmp_path, """
        import kopf
        @kopf.on.create("example.org", "v1", "widget")
        def widget(**_):
            pass
        @kopf.timer("example.org", "v1", "widget", interval=60)
        def tick(**_):
            pass
    """)
    assert result.verdict is Verdict.ERROR
    assert ("handles no resource of this scenario: its handlers select example.org/v1 'widget'; the scenario's "
            "custom resources are example.com/v1 'widgets' (Widget)") in result.error, result.error


def test_events_kopf_posts_are_stored_as_v1_events_but_are_not_state(tmp_path: Path) -> None:
    """kopf.info/warn/event inside a handler post real Events (they used to fail with a LookupError)."""
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("example.com", "v1", "widgets")
        def hello(body, retry, **_):
            kopf.warn(body, reason="Odd", message=f"attempt {retry}")
            if retry < 1:
                raise kopf.TemporaryError("again", delay=5)
            return {"ok": 1}
    """, extra="""
        invariants:
          - name: the handler warned about its widget
            forEach: "$.items[?@.kind == 'Widget']"
            select: >-
              $.items[?@.kind == 'Event' && @.type == 'Warning' && @.involvedObject.name == {{ @.metadata.name }}]
            expect: {count: 2}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    events = [o for o in result.converged[0].objects if o["kind"] == "Event"]
    assert sorted(e["message"] for e in events) == ["attempt 0", "attempt 1"]
    assert {e["reason"] for e in events} == {"Odd"}
    assert all(e["metadata"]["name"].startswith("kopf-event-") for e in events)
    # two Events more are no change: the same states as without them
    assert (result.stats.states, result.stats.converged_states) == (5, 1)


def test_indices_hold_every_object_of_the_indexed_resource(tmp_path: Path) -> None:
    """@kopf.index handlers see the cluster as kopf's watch streams would have delivered it."""
    result = run(tmp_path, """
        import kopf
        @kopf.index("", "v1", "configmaps")
        def by_widget(labels, name, **_):
            return {labels["widget"]: name} if "widget" in labels else None
        @kopf.on.create("example.com", "v1", "widgets")
        def count(name, by_widget, **_):
            return {"configMaps": sorted(by_widget.get(name, []))}
    """, more_seed="""\
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: a, namespace: default, labels: {widget: demo}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: b, namespace: default, labels: {widget: demo}}
        ---
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: c, namespace: default, labels: {widget: other}}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["count"] == {"configMaps": ["a", "b"]}


def test_what_startup_puts_in_memo_every_object_s_memo_starts_with(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.startup()
        def configure(memo, **_):
            memo.greeting = "hello from startup"
        @kopf.on.create("example.com", "v1", "widgets")
        def hello(memo, **_):
            return {"greeting": memo.greeting}
    """)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["hello"] == {"greeting": "hello from startup"}


COUNTING = """
    import kopf
    @kopf.on.create("example.com", "v1", "widgets")
    def count(memo, retry, **_):
        memo["tries"] = memo.get("tries", 0) + 1
        if retry < 2:
            raise kopf.TemporaryError("again", delay=5)
        return {"tries": memo["tries"]}
"""


def test_an_object_s_memo_is_kept_between_its_steps(tmp_path: Path) -> None:
    """kopf keeps each object's memo in memory for the operator's life: a retry sees what the
    attempt before it put there (it used to start empty at every step)."""
    result = run(tmp_path, COUNTING)
    assert result.verdict is Verdict.PASSED, result.checks
    assert widget(result)["status"]["count"] == {"tries": 3}


def test_a_crash_forgets_every_memo_of_the_operator(tmp_path: Path) -> None:
    result = run(tmp_path, COUNTING, extra="""
        perturbations:
          crashes:
            - {controller: op, afterWrites: [0]}
    """)
    tries = sorted({widget(result, i)["status"]["count"]["tries"] for i in range(len(result.converged))})
    # a crash before an attempt's write loses the memo but not the retry count kopf stored: the
    # restarted operator counts from zero at the retry it had reached (3: the crash before the first)
    assert tries == [1, 2, 3]


def test_a_handler_traceback_shows_the_operators_own_frames() -> None:
    """kopf calls a handler from dozens of frames of its own (and the client raises from a dozen
    more): the report keeps the operator's file, relative to the scenario, and none of kopf's,
    the client library's or kamera's (a trial on public operators found the user's line cut off)."""
    example = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "conflict-forever"
    (scenario,) = kamera_cli.check(example / "scenario.yaml").scenarios
    errors = [s.error for c in scenario.checks for x in c.counterexamples for s in x.steps if s.error]
    assert errors
    for error in errors:
        frames = [line.strip() for line in error.splitlines() if line.strip().startswith("File ")]
        assert frames and all(f.startswith('File "operator.py", line ') for f in frames), error
        assert "site-packages" not in error and "kamera_cli" not in error.split("\n", 1)[1], error
