"""metacontroller controllers: located scenario errors, hook shapes, hook servers, crashes inside a sync."""

from __future__ import annotations

import json
import textwrap
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.metacontroller import load_metacontroller, parse_manifest
from kamera_cli.adapters.metacontroller.hooks import HookError, HookTarget, call_hook
from kamera_cli.errors import EntrypointError, ScenarioError
from kamera_cli.runner import check
from kamera_cli.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "scenarios" / "shapes" / "metacontroller"

COMPOSITE = """\
apiVersion: metacontroller.k8s.io/v1alpha1
kind: CompositeController
metadata:
  name: c
spec:
  parentResource: {apiVersion: v1, resource: configmaps}
  childResources:
    - apiVersion: v1
      resource: secrets
      updateStrategy: {method: %(method)s}
  hooks:
    sync: {webhook: {url: http://h/sync}}
%(extra)s"""


def scenario(tmp_path: Path, hooks: str, *, manifest: str | None = None, method: str = "InPlace",
             extra: str = "") -> Path:
    (tmp_path / "hooks.py").write_text("def sync(request):\n    return {}\n")
    (tmp_path / "controller.yaml").write_text(manifest if manifest is not None else
                                              COMPOSITE % {"method": method, "extra": extra})
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent(f"""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {{name: mc}}
        spec:
          controllers:
            - name: c
              metacontroller: controller.yaml
              hooks: {hooks}
          seed: [{{apiVersion: v1, kind: ConfigMap, metadata: {{name: x}}}}]
        """))
    return tmp_path / "scenario.yaml"


def problems(path: Path) -> list[str]:
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    return [p.render() for p in info.value.problems]


def test_a_valid_entry_loads_with_its_manifest_and_hooks(tmp_path: Path) -> None:
    loaded = load_scenario(scenario(tmp_path, "{sync: hooks.py:sync}"))
    (spec,) = loaded.controllers
    assert spec.metacontroller == "controller.yaml" and spec.hooks == (("sync", "hooks.py:sync"),)
    assert json.loads(spec.metacontroller_manifest)["kind"] == "CompositeController" and spec.for_kind is None


def test_a_manifest_that_is_not_a_metacontroller_controller_is_located(tmp_path: Path) -> None:
    found = problems(scenario(tmp_path, "{sync: hooks.py:sync}",
                              manifest="apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\n"))
    assert any("controller.yaml:2:7" in p and "not a metacontroller CompositeController" in p for p in found), found


def test_a_hook_of_the_manifest_without_a_python_mapping_is_located_in_the_manifest(tmp_path: Path) -> None:
    extra = "    finalize: {webhook: {url: http://h/finalize}}\n"
    found = problems(scenario(tmp_path, "{sync: hooks.py:sync}", extra=extra))
    assert any("controller.yaml:13:15" in p and "finalize hook has no Python mapping" in p for p in found), found


def test_a_mapped_hook_the_manifest_does_not_define_is_an_error(tmp_path: Path) -> None:
    found = problems(scenario(tmp_path, "{sync: hooks.py:sync, customize: hooks.py:sync}"))
    assert any("maps a customize hook the manifest does not define" in p for p in found), found


def test_an_unknown_update_method_and_a_missing_hook_file_are_located(tmp_path: Path) -> None:
    found = problems(scenario(tmp_path, "{sync: missing.py:sync}", method="Sideways"))
    assert any("controller.yaml:10:32" in p and "unknown update method 'Sideways'" in p for p in found), found
    assert any("scenario.yaml:8:" in p and "missing.py" in p for p in found), found


def test_a_missing_manifest_file_is_located(tmp_path: Path) -> None:
    path = scenario(tmp_path, "{sync: hooks.py:sync}")
    (tmp_path / "controller.yaml").unlink()
    found = problems(path)
    assert any("scenario.yaml:7:" in p and "manifest 'controller.yaml' not found" in p for p in found), found


def test_hooks_without_a_manifest_and_for_with_one_are_located(tmp_path: Path) -> None:
    path = scenario(tmp_path, "{sync: hooks.py:sync}")
    text = path.read_text()
    entry = "metacontroller: controller.yaml"
    path.write_text(text.replace(entry, entry + "\n      for: v1/Secret"))
    assert any("scenario.yaml:8:7" in p and "parent resource comes from its manifest" in p for p in problems(path))
    path.write_text(text.replace(entry, "entrypoint: hooks.py:sync\n      for: v1/Secret"))
    found = problems(path)
    assert any("'hooks' goes with 'metacontroller'" in p for p in found), found


class Echo(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = body["parent"].get("answer", 200)
        self.send_response(status)
        if status == 429:
            self.send_header("Retry-After", "7")
        self.end_headers()
        self.wfile.write(json.dumps({"children": [], "status": {"path": self.path}}).encode())

    def log_message(self, format: str, *args: Any) -> None:
        return None


def test_a_handler_class_is_called_in_process_with_metacontrollers_post() -> None:
    target = HookTarget("sync", "hooks.py:Echo", "handler", Echo, "/sync")
    assert call_hook(target, {"parent": {}}).body == {"children": [], "status": {"path": "/sync"}}
    assert call_hook(target, {"parent": {"answer": 429}}).retry_after == 7.0
    with pytest.raises(HookError, match="answered HTTP 500"):
        call_hook(target, {"parent": {"answer": 500}})


def test_a_function_hook_must_answer_a_dict() -> None:
    with pytest.raises(HookError, match="returned list, not a dict"):
        call_hook(HookTarget("sync", "h.py:f", "function", lambda request: []), {})


def load(tmp_path: Path, code: str, hooks: dict[str, str] | None = None, **parent: Any) -> Any:
    (tmp_path / "hook.py").write_text(textwrap.dedent(code))
    manifest = {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                "metadata": {"name": "c"},
                "spec": {"parentResource": {"apiVersion": "v1", "resource": "configmaps", **parent},
                         "hooks": {"sync": {"webhook": {"url": "http://h/s"}}}}}
    hooks = hooks or {"sync": "hook.py:Handler"}
    spec, issues = parse_manifest(manifest, hooks)
    assert spec is not None, issues
    return load_metacontroller(spec, manifest, hooks, tmp_path, scenario="s", controller="c")


def test_a_hook_module_that_starts_its_server_at_import_still_loads(tmp_path: Path) -> None:
    controller = load(tmp_path, """\
        import json
        from http.server import BaseHTTPRequestHandler, HTTPServer
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.send_response(200)
                self.end_headers()
                self.wfile.write(json.dumps({"status": {"greeting": self.server.greeting}}).encode())
            def log_message(self, *args):
                pass
        server = HTTPServer(("", 80), Handler)
        server.greeting = "hello"
        server.serve_forever()
        AFTER = True
        """)
    try:
        target = controller.targets["sync"]
        assert target.shape == "handler"
        assert controller.module is not None and controller.module.AFTER is True
        # the handler gets the server the module started, as ``self.server``
        assert call_hook(target, {}).body == {"status": {"greeting": "hello"}}
    finally:
        controller.unload()


@pytest.mark.parametrize(("code", "message"), [
    ("Handler = 3\n", "neither a function, a BaseHTTPRequestHandler subclass nor a WSGI or ASGI"),
    ("def Handler(a, b, c):\n    return {}\n", "a hook takes the request dict"),
    ("def Handler():\n    return {}\n", "takes no request and started no server"),
    ("def Handler():\n    raise RuntimeError('no settings')\n", r"calling Handler\(\) in hook.py raised RuntimeError"),
    ("async def Handler(request):\n    return {}\n", "is async"),
])
def test_a_hook_of_the_wrong_shape_is_a_load_error(tmp_path: Path, code: str, message: str) -> None:
    with pytest.raises(EntrypointError, match=message):
        load(tmp_path, code)


FACTORY = """\
    import json, os, sys
    from http.server import BaseHTTPRequestHandler, HTTPServer
    CALLS = []
    def server_factory(greeting):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.dumps({"status": {"greeting": greeting}}).encode()
                self.send_response(200)
                self.end_headers()
                self.wfile.write(body)
            def log_message(self, *args):
                pass
        return HTTPServer(("", 80), Handler)
    def main():
        CALLS.append(sys.argv[1:])
        server_factory(os.environ.get("GREETING", "hi")).serve_forever()
    """


def test_a_hook_server_built_by_a_function_is_served_by_its_handler_class(tmp_path: Path) -> None:
    """``main()`` builds the server (its handler class exists only inside the factory): kamera calls it
    once for every hook it serves, with servers that bind nothing, and takes the started server's class."""
    from kamera_cli.adapters.sandbox.process import ProcessView

    (tmp_path / "hook.py").write_text(textwrap.dedent(FACTORY))
    manifest = {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                "metadata": {"name": "c"},
                "spec": {"parentResource": {"apiVersion": "v1", "resource": "configmaps"},
                         "hooks": {"sync": {"webhook": {"url": "http://h/s"}},
                                   "customize": {"webhook": {"url": "http://h/c"}}}}}
    hooks = {"sync": "hook.py:main", "customize": "hook.py:main"}
    spec, issues = parse_manifest(manifest, hooks)
    assert spec is not None, issues
    view = ProcessView(env=(("GREETING", "hello"),), args=("--port", "8080"))
    controller = load_metacontroller(spec, manifest, hooks, tmp_path, scenario="s", controller="c", env=view)
    try:
        target = controller.targets["sync"]
        assert target.shape == "handler" and target.target.__qualname__ == "server_factory.<locals>.Handler"
        assert controller.targets["customize"].target is target.target
        assert controller.module is not None and controller.module.CALLS == [["--port", "8080"]]
        assert call_hook(target, {}).body == {"status": {"greeting": "hello"}}
    finally:
        controller.unload()


def test_a_function_that_starts_a_wsgi_server_is_served_by_its_application(tmp_path: Path) -> None:
    controller = load(tmp_path, """\
        from wsgiref.simple_server import make_server
        def app(environ, start_response):
            start_response("200 OK", [("Content-Type", "application/json")])
            return [b'{"status": {"from": "wsgi"}}']
        def main():
            make_server("", 80, app).serve_forever()
        """, {"sync": "hook.py:main"})
    try:
        target = controller.targets["sync"]
        assert target.shape == "wsgi" and call_hook(target, {}).body == {"status": {"from": "wsgi"}}
    finally:
        controller.unload()


def test_a_crash_can_strike_between_the_writes_of_one_sync(tmp_path: Path) -> None:
    """The fixed IndexedJob with one crash of the engine: more states, the same verdict."""
    text = (EXAMPLE / "fixed" / "scenario.yaml").read_text()
    text = text.replace("../", f"{EXAMPLE}/")
    text += "  perturbations:\n    crashes:\n      - controller: indexedjob\n        max: 1\n"
    (tmp_path / "scenario.yaml").write_text(text)
    (result,) = check(tmp_path / "scenario.yaml").scenarios
    assert result.verdict == "passed", [c.message for c in result.checks]
    assert result.stats.states > 37  # the unperturbed example explores 37


def test_a_decorator_of_several_resources_is_one_controller_per_resource(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text(textwrap.dedent("""\
        CALLS = []
        def sync(request):
            CALLS.append(request["object"]["kind"])
            return {"labels": {"seen-by": "deco", "kinds-seen": str(len(set(CALLS)))}}
        """))
    (tmp_path / "deco.yaml").write_text(textwrap.dedent("""\
        apiVersion: metacontroller.k8s.io/v1alpha1
        kind: DecoratorController
        metadata: {name: deco}
        spec:
          resources:
            - {apiVersion: v1, resource: configmaps}
            - {apiVersion: v1, resource: secrets}
          hooks:
            sync: {webhook: {url: http://h/sync}}
        """))
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: deco}
        spec:
          controllers:
            - {name: deco, metacontroller: deco.yaml, hooks: {sync: hooks.py:sync}}
          seed:
            - {apiVersion: v1, kind: ConfigMap, metadata: {name: c}}
            - {apiVersion: v1, kind: Secret, metadata: {name: s}}
          expect: {deterministic: false}
        """))
    (result,) = check(tmp_path / "scenario.yaml").scenarios
    assert result.verdict == "passed", [c.message for c in result.checks]
    labelled = {o["kind"]: o["metadata"].get("labels", {}).get("seen-by")
                for state in result.converged for o in state.objects if o["kind"] in ("ConfigMap", "Secret")}
    assert labelled == {"ConfigMap": "deco", "Secret": "deco"}
    # both controllers share the hook module (one hook server): it saw both kinds
    kinds_seen = {o["metadata"].get("labels", {}).get("kinds-seen")
                  for state in result.converged for o in state.objects if o["kind"] in ("ConfigMap", "Secret")}
    assert "2" in kinds_seen


def test_parent_events_pass_metacontrollers_filter(tmp_path: Path) -> None:
    controller = load(tmp_path, "def Handler(request):\n    return {}\n", ignoreStatusChanges=True,
                      labelSelector={"matchLabels": {"managed": "yes"}})
    try:
        events = controller.parent_events(0)
        selected = {"metadata": {"name": "p", "labels": {"managed": "yes"}, "generation": 1}}
        other = {"metadata": {"name": "p", "labels": {"managed": "no"}, "generation": 1}}
        held = {"metadata": {"name": "p", "finalizers": ["metacontroller.io/compositecontroller-c"]}}
        assert events(None, selected) == "reset" and events(None, other) == "" and events(None, held) == "reset"
        status_only = {**selected, "status": {"phase": "x"}}
        assert events(selected, status_only) == ""  # ignoreStatusChanges
        relabelled = {"metadata": {**selected["metadata"], "labels": {"managed": "yes", "x": "1"}}}
        assert events(selected, relabelled) == "reset"
        assert events(selected, None) == "reset"  # a deletion of a selected parent
    finally:
        controller.unload()


def task_scenario(tmp_path: Path, hook: str, child_rule: str, spec: str) -> Path:
    """A Task CompositeController over ConfigMaps: its hook, its child rule, and the scenario's seed and checks."""
    from tests.sim.conftest import TASK_CRD
    from tests.unit.test_metacontroller_engine import REVISION_CRD

    (tmp_path / "crds.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                                    "items": [TASK_CRD, REVISION_CRD]}))
    (tmp_path / "hooks.py").write_text(textwrap.dedent(hook))
    (tmp_path / "c.yaml").write_text(textwrap.dedent("""\
        apiVersion: metacontroller.k8s.io/v1alpha1
        kind: CompositeController
        metadata: {name: tasks}
        spec:
          parentResource: {apiVersion: example.com/v1, resource: tasks}
          hooks: {sync: {webhook: {url: http://h/sync}}}
          childResources:
        """) + f"    - {child_rule}\n")
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: tasks}
        spec:
          controllers:
            - {name: tasks, metacontroller: c.yaml, hooks: {sync: hooks.py:sync}}
          crds: [crds.json]
        """) + textwrap.indent(textwrap.dedent(spec), "  "))
    return tmp_path / "scenario.yaml"


def test_an_orphan_created_later_is_adopted_by_the_parent_whose_selector_matches(tmp_path: Path) -> None:
    path = task_scenario(tmp_path, """\
        def sync(request):
            kept = list(request["children"]["ConfigMap.v1"].values())
            return {"children": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": c["metadata"]["name"], "labels": c["metadata"]["labels"]}} for c in kept],
                    "status": {"children": len(kept)}}
        """, "{apiVersion: v1, resource: configmaps}", """\
        seed:
          - {apiVersion: example.com/v1, kind: Task, metadata: {name: t},
             spec: {selector: {matchLabels: {task: t}}}}
        actions:
          - name: an orphan appears
            apply: {apiVersion: v1, kind: ConfigMap, metadata: {name: stray, labels: {task: t}}}
        invariants:
          - name: the orphan is adopted
            select: "$.items[?@.kind == 'Task' && @.status.children == 1]"
            expect: {count: 1}
        """)
    (result,) = check(path).scenarios
    assert result.verdict == "passed", [c.message for c in result.checks]
    (state,) = result.converged
    stray = next(o for o in state.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "stray")
    assert stray["metadata"]["ownerReferences"][0]["kind"] == "Task"


def test_a_rolling_update_runs_to_the_latest_revision_in_every_interleaving(tmp_path: Path) -> None:
    path = task_scenario(tmp_path, """\
        def sync(request):
            version = request["parent"]["spec"]["version"]
            return {"children": [{"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": n, "labels": {"task": "t"}}, "data": {"version": version}}
                                 for n in ("a", "b")], "status": {"version": version}}
        """, "{apiVersion: v1, resource: configmaps, updateStrategy: {method: RollingInPlace}}", """\
        seed:
          - {apiVersion: example.com/v1, kind: Task, metadata: {name: t},
             spec: {version: v1, selector: {matchLabels: {task: t}}, template: {metadata: {labels: {task: t}}}}}
        actions:
          - name: a new version
            patch: {target: {apiVersion: example.com/v1, kind: Task, name: t}, patch: {spec: {version: v2}}}
        invariants:
          - name: every child is on the new version
            select: "$.items[?@.kind == 'ConfigMap' && @.data.version == 'v2']"
            expect: {count: 2}
          - name: the rollout is done
            select: "$.items[?@.kind == 'Task' && @.status.conditions[?@.type == 'Updated' && @.status == 'True']]"
            expect: {count: 1}
          - name: one revision is left
            select: "$.items[?@.kind == 'ControllerRevision']"
            expect: {count: 1}
        """)
    (result,) = check(path).scenarios
    assert result.verdict == "passed", [c.message for c in result.checks]


@pytest.mark.parametrize(("hook", "finding"), [
    ("    raise ValueError('broken hook')\n", "broken hook"),
    # the API server refuses the child (422): no finding, but the same rate-limited retries
    ("    return {'children': [{'apiVersion': 'v1', 'kind': 'Secret', 'metadata': {'name': 'Bad_Name'}}]}\n", ""),
])
def test_a_sync_that_keeps_failing_backs_off_on_the_virtual_clock(tmp_path: Path, hook: str, finding: str) -> None:
    """Each failure is a pending retry whose delay doubles (5 ms ... 1000 s, a virtual second at least);
    the failure count is explored state, so the search ends once it reaches the cap."""
    manifest = (COMPOSITE % {"method": "InPlace", "extra": ""}).replace("spec:\n", "spec:\n  generateSelector: true\n")
    path = scenario(tmp_path, "{sync: hooks.py:sync}", manifest=manifest)
    (tmp_path / "hooks.py").write_text("def sync(request):\n" + hook)
    (result,) = check(path).scenarios
    errors = [c.message for c in result.checks if c.name == "no controller errors" and c.verdict == "failed"]
    assert (finding in errors[0]) if finding else not errors, errors
    # one state per failure count 0..18; then the count stays at the cap and the delay at 1000 s, and
    # the state after the next failure differs only in how far the clock has got, which no step can see
    # (docs/semantics.md, "Instants no step can see": 20 states with the exact fingerprint)
    assert result.stats.states == 19, result.stats


DECORATED = """\
apiVersion: metacontroller.k8s.io/v1alpha1
kind: DecoratorController
metadata: {name: deco}
spec:
  resyncPeriodSeconds: 60
  resources:
    - apiVersion: v1
      resource: configmaps
      labelSelector: {matchLabels: {managed: "yes"}}
  hooks:
    sync: {webhook: {url: http://h/sync}}
"""


def test_a_restart_and_the_resync_enqueue_only_selected_parents(tmp_path: Path) -> None:
    """Found on Kubeflow Pipelines' profile controller (a DecoratorController over Namespaces): after a
    crash kamera enqueued every Namespace, and each unselected one's no-op sync set a resync timer —
    980 states where 11 do. metacontroller's informer (its first list, as its periodic resync) hands
    every parent to ``enqueueParentObject``, which drops the unselected ones."""
    (tmp_path / "hooks.py").write_text("def sync(request):\n    return {'labels': {'seen': 'yes'}}\n")
    (tmp_path / "deco.yaml").write_text(DECORATED)
    picked = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "picked", "labels": {"managed": "yes"}}}
    spec = {
        "controllers": [{"name": "deco", "metacontroller": "deco.yaml", "hooks": {"sync": "hooks.py:sync"}}],
        "seed": [picked, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other"}}],
        "actions": [{"name": "the picked config map leaves the selection",
                     "patch": {"target": {"apiVersion": "v1", "kind": "ConfigMap", "name": "picked"},
                               "patch": {"metadata": {"labels": {"managed": "no"}}}}}],
        "perturbations": {"crashes": [{"controller": "deco", "max": 1}]},
    }
    (tmp_path / "scenario.yaml").write_text(json.dumps({"apiVersion": "kamera.dev/v1alpha1", "kind": "Scenario",
                                                        "metadata": {"name": "deco"}, "spec": spec}))
    from kamera_cli.runner import Overrides, explore

    result = explore(load_scenario(tmp_path / "scenario.yaml"), overrides=Overrides(graph_states=10_000)).result
    assert result.verdict == "passed", [c.message for c in result.checks]
    assert result.graph is not None and not result.graph.omitted
    synced = {e.request for e in result.graph.edges if e.kind == "reconcile"}
    assert synced == {"default/picked"}
    # once unselected, its pending resync finds it ignored and sets no further one
    notes = {e.note for e in result.graph.edges if e.kind == "reconcile"}
    assert notes == {"requeue after 60s", "crashed after write 0", ""}


def test_the_servers_warnings_are_logged_as_client_go_logs_them(capsys: pytest.CaptureFixture[str]) -> None:
    """Kubeflow Pipelines' profile decorator answers a status field a Namespace does not have: the
    server drops it and says so in a ``Warning`` header, which metacontroller's client-go logs."""
    from urllib3 import HTTPHeaderDict

    from kamera_cli.adapters.metacontroller.rest import _log_warnings

    class Response:
        headers = HTTPHeaderDict()

    Response.headers.add("Warning", '299 - "unknown field \\"status.ready\\"", 299 - "second"')
    _log_warnings(Response())
    assert capsys.readouterr().err.splitlines() == ['W warnings.go:70] unknown field "status.ready"',
                                                    "W warnings.go:70] second"]
