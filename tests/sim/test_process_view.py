"""A controller's command line (``args:``) and files (``files:``): what its code sees, and the errors."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from kamera_cli.adapters.sandbox.process import SERVICE_ACCOUNT_DIR, ProcessView, process_scope
from kamera_cli.errors import ScenarioError
from kamera_cli.model.result import CheckName, Verdict
from kamera_cli.runner import explore
from kamera_cli.scenario import load_scenario
from tests.sim.test_programs import HEAD

#: a sweep that records what it saw in a ConfigMap ``seen`` (one key per probe)
RECORDER = """
import json, os, sys
from pathlib import Path
from kubernetes import client, config

AT_IMPORT = list(sys.argv)

def probes():
    return {PROBES}

def main():
    config.load_kube_config()
    v1 = client.CoreV1Api()
    data = {{k: json.dumps(v) for k, v in probes().items()}}
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="seen"), data=data)
    try:
        v1.create_namespaced_config_map("default", body)
    except client.ApiException:
        v1.replace_namespaced_config_map("seen", "default", body)
"""


def _scenario(tmp_path: Path, controller: str, probes: str, rest: str = "") -> Path:
    (tmp_path / "prog.py").write_text(RECORDER.replace("{PROBES}", probes).replace("{{", "{").replace("}}", "}"))
    body = f"controllers:\n  - {{name: rec, program: prog.py:main, every: 60s, watches: [v1/ConfigMap]{controller}}}\n"
    rest = textwrap.dedent(rest) if "seed:" in rest else "seed: []\n" + textwrap.dedent(rest)
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(body + rest, "  "))
    return path


def _run_seen(tmp_path: Path, controller: str, probes: str, rest: str = "") -> dict[str, Any]:
    import json

    result = explore(load_scenario(_scenario(tmp_path, controller, probes, rest))).result
    errors = next(c for c in result.checks if c.name == CheckName.NO_CONTROLLER_ERRORS)
    assert errors.verdict is Verdict.PASSED, errors.message
    (converged,) = result.converged
    seen = next(o for o in converged.objects if o["kind"] == "ConfigMap" and o["metadata"]["name"] == "seen")
    return {k: json.loads(v) for k, v in seen["data"].items()}


def test_a_program_sees_its_file_and_args_as_sys_argv_at_import_and_in_main(tmp_path: Path) -> None:
    kamera_argv = list(sys.argv)
    seen = _run_seen(tmp_path, ", args: [--namespace, shop, -v]",
                     '{"import": AT_IMPORT, "main": list(sys.argv)}')
    argv = ["prog.py", "--namespace", "shop", "-v"]
    assert seen == {"import": argv, "main": argv}
    assert sys.argv == kamera_argv


def test_without_args_a_program_sees_only_its_file(tmp_path: Path) -> None:
    seen = _run_seen(tmp_path, "", '{"main": list(sys.argv)}')
    assert seen == {"main": ["prog.py"]}


def test_files_from_the_scenario_inline_and_seeded_objects_are_served_from_memory(tmp_path: Path) -> None:
    (tmp_path / "settings.yaml").write_text("mode: fast\n")
    files = (", files: {/config/settings.yaml: settings.yaml, /etc/app/motd: {content: hello},"
             " /etc/cm: {fromConfigMap: conf, namespace: ops}, /etc/token: {fromSecret: creds, key: token}}")
    probes = """{
        "settings": Path("/config/settings.yaml").read_text(),
        "motd": open("/etc/app/motd").read(),
        "cm": sorted(os.listdir("/etc/cm")),
        "cm_a": open("/etc/cm/a", "rb").read().decode(),
        "bin": Path("/etc/cm/b").read_bytes().decode(),
        "token": Path("/etc/token").read_text(),
        "exists": [os.path.exists("/etc/cm/a"), os.path.isdir("/etc/cm"), Path("/etc/cm/zzz").exists()],
        "namespace": open("/var/run/secrets/kubernetes.io/serviceaccount/namespace").read(),
    }"""
    rest = """
        seed:
          - {apiVersion: v1, kind: Namespace, metadata: {name: ops}}
          - apiVersion: v1
            kind: ConfigMap
            metadata: {name: conf, namespace: ops}
            data: {a: one}
            binaryData: {b: dHdv}
          - {apiVersion: v1, kind: Secret, metadata: {name: creds, namespace: default}, data: {token: czNjcjN0}}
        """
    seen = _run_seen(tmp_path, files, probes, rest)
    assert seen == {"settings": "mode: fast\n", "motd": "hello", "cm": ["a", "b"], "cm_a": "one", "bin": "two",
                    "token": "s3cr3t", "exists": [True, True, False], "namespace": "default"}
    assert not Path("/config/settings.yaml").exists()


def test_a_mounted_file_is_read_only_and_other_paths_are_the_real_ones(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("on disk")
    view = ProcessView(files=(("/etc/app/motd", b"hello"),))
    with process_scope(view, "prog.py"):
        with pytest.raises(OSError, match="Read-only"):
            open("/etc/app/motd", "w")  # noqa: SIM115
        with pytest.raises(IsADirectoryError):
            open("/etc/app")  # noqa: SIM115
        assert real.read_text() == "on disk"
        assert os.stat("/etc/app/motd").st_size == 5
        assert os.access("/etc/app/motd", os.R_OK) and not os.access("/etc/app/motd", os.W_OK)
    assert not os.path.exists("/etc/app/motd")
    import builtins
    import io

    assert builtins.open is io.open and os.stat.__module__ == "posix"


def test_the_service_account_namespace_can_be_given(tmp_path: Path) -> None:
    files = f", files: {{{SERVICE_ACCOUNT_DIR}/namespace: {{content: ops}}}}"
    seen = _run_seen(tmp_path, files, f'{{"ns": open("{SERVICE_ACCOUNT_DIR}/namespace").read(), '
                                      f'"token": os.path.isfile("{SERVICE_ACCOUNT_DIR}/token")}}')
    assert seen == {"ns": "ops", "token": True}


@pytest.mark.parametrize(("controller", "rest", "message"), [
    (", files: {config/settings.yaml: {content: x}}", "", "is not an absolute path"),
    (", files: {/config/a: missing.yaml}", "", "cannot read 'missing.yaml'"),
    (", files: {/config: {fromConfigMap: nope}}", "", "no ConfigMap default/nope in the seed"),
    (", files: {/config/a: {fromSecret: creds, key: other}}",
     "seed:\n  - {apiVersion: v1, kind: Secret, metadata: {name: creds}, data: {token: czNjcjN0}}\n",
     "Secret default/creds has no key 'other'"),
    (", files: {/config/a: {content: x, file: y}}", "", "files"),
])
def test_bad_files_are_located_errors(tmp_path: Path, controller: str, rest: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(tmp_path, controller, "{}", rest))
    text = str(info.value)
    assert message in text and "scenario.yaml:" in text, text


def test_args_are_for_programs_only(tmp_path: Path) -> None:
    (tmp_path / "c.py").write_text("def reconcile(request):\n    pass\n")
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + "  controllers:\n"
                    "    - {name: c, entrypoint: c.py:reconcile, for: v1/ConfigMap, args: [-v]}\n  seed: []\n")
    with pytest.raises(ScenarioError, match=r"scenario.yaml:6:.*'args' is a program's command line"):
        load_scenario(path)


HEALTH = """
import socketserver
import threading
from kubernetes import client, config, watch

def main():
    # a health endpoint nothing can reach (http.server's HTTPServer is this, plus a getfqdn)
    server = socketserver.TCPServer(("", 8080), socketserver.BaseRequestHandler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config.load_kube_config()
    v1 = client.CoreV1Api()
    for event in watch.Watch().stream(v1.list_namespaced_config_map, "default"):
        cm = event["object"]
        if event["type"] != "DELETED" and cm.metadata.name != "seen" and not (cm.metadata.labels or {}).get("seen"):
            v1.patch_namespaced_config_map(cm.metadata.name, "default", {"metadata": {"labels": {"seen": "yes"}}})
"""


def test_a_programs_own_server_binds_nothing_and_does_not_block(tmp_path: Path) -> None:
    (tmp_path / "prog.py").write_text(HEALTH)
    path = tmp_path / "scenario.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent("""\
        controllers:
          - {name: p, program: prog.py:main, watches: [v1/ConfigMap]}
        seed: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a}}]
        invariants:
          - {name: labelled, select: "$.items[?@.kind == 'ConfigMap'].metadata.labels.seen", expect: {equals: "yes"}}
        """), "  "))
    result = explore(load_scenario(path)).result
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
