"""kopf operators searched in two processes report what the serial search reports (issue #26).

Why a test of its own: a kopf state carries more than a cluster — each object's memo
(``SimState.memory``), a timer's carried retry state and its own schedule (``PendingItem.carry``,
``anchored``) — and the reduction reads windows and footprints that the kopf adapter computes from
clock reads. A split search ships states between processes and runs steps in another process's
copy of the operator, so each of those must travel with the state or be recomputed identically.
Every successor is shipped (``_move_all``): a search this small would otherwise stay in one process.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import CheckResult
from kamera_cli.report.json_report import to_json
from kamera_cli.runner import Overrides, check_file
from tests.e2e.jsonstable import stable
from tests.sim.test_reduction_kopf import create_handler

ROOT = Path(__file__).resolve().parents[2]
reason = supported()
pytestmark = [pytest.mark.skipif(not hasattr(os, "fork"), reason="a parallel search forks its workers"),
              pytest.mark.skipif(reason is not None, reason=reason or "")]

HEAD = "apiVersion: kamera.dev/v1alpha1\nkind: Scenario\nmetadata: {name: %s}\nspec:\n  explore: {timeout: 120}\n"

TIMER = '''
import kopf
from kubernetes import client, config
config.load_kube_config()
core = client.CoreV1Api()


@kopf.timer("", "v1", "namespaces", interval=60, labels={"team": kopf.PRESENT})
def count(name, meta, **_):
    found = str(len(core.list_namespaced_config_map(name).items))
    if (meta.get("annotations") or {}).get("example.com/config-maps") != found:
        core.patch_namespace(name, {"metadata": {"annotations": {"example.com/config-maps": found}}})
'''

CREATE_CHILD = create_handler("    if retry == 0 and name == 'w1':\n"
                              "        raise kopf.TemporaryError('not yet', delay=4)\n") + '''

@kopf.timer("example.com", "v1", "widgets", interval=30, id="audit")
def audit(name, namespace, patch, memo, **_):
    memo.audited = True
    try:
        core.read_namespaced_config_map(f"{name}-child", namespace)
    except ApiException:
        return  # the next tick looks again
    patch.metadata.annotations["example.com/audited"] = "yes"
'''


def timer_scenario(folder: Path) -> Path:
    (folder / "operator.py").write_text(textwrap.dedent(TIMER))
    text = HEAD % "kopf-timer-namespaces" + "  controllers:\n    - {name: counter, kopf: operator.py}\n  seed:\n"
    for i in range(3):
        text += (f"    - {{apiVersion: v1, kind: Namespace, metadata: {{name: team{i}, labels: {{team: t{i}}}}}}}\n"
                 f"    - {{apiVersion: v1, kind: ConfigMap, metadata: {{name: settings, namespace: team{i}}}}}\n")
    text += ("  invariants:\n    - {name: counted, select: \"$.items[?@.kind == 'Namespace' && @.metadata.labels.team]"
             ".metadata.annotations['example.com/config-maps']\", expect: {equals: '1'}}\n")
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


def create_child_scenario(folder: Path) -> Path:
    shutil.copytree(ROOT / "scenarios" / "kopf" / "create-child" / "crds", folder / "crds")
    (folder / "operator.py").write_text(textwrap.dedent(CREATE_CHILD))
    text = HEAD % "kopf-create-child" + (
        "  controllers:\n    - {name: op, kopf: operator.py, for: example.com/v1/Widget, owns: [v1/ConfigMap]}\n"
        "  crds: [crds/widget.yaml]\n  seed:\n")
    text += "".join(f"    - {{apiVersion: example.com/v1, kind: Widget, metadata: {{name: w{i}, namespace: default}}, "
                    f"spec: {{message: m{i}}}}}\n" for i in range(2))
    (folder / "scenario.yaml").write_text(text)
    return folder / "scenario.yaml"


@pytest.mark.parametrize("build", [timer_scenario, create_child_scenario], ids=["timer", "create-child"])
def test_a_kopf_search_split_over_two_processes_reports_what_one_does(
        build: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kamera_cli.explore import parallel

    monkeypatch.setattr(parallel._Coordinator, "_move_all", True)
    assert callable(build)
    path = build(tmp_path)
    serial = check_file(path, Overrides(graph_states=50))
    split = check_file(path, Overrides(graph_states=50, search_workers=2))
    assert serial.stats.states > 10  # a search with something to split
    assert list(split.notes) == list(serial.notes)
    assert stable(to_json(CheckResult((split,)))) == stable(to_json(CheckResult((serial,))))
