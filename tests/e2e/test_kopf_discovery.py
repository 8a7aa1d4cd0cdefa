"""kopf's view of a resource is discovered from the simulated API, as kopf's scanning does.

What is pinned: handlers that name a resource by its singular name, short name or category select
it (kopf's ``Selector.check`` against what ``scan_resources`` read), and on a CRD without a status
subresource kopf's handler results land in the object (kopf's ``patch_obj`` patches ``/status`` only
where discovery lists it).
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

import kamera_cli
from kamera_cli.adapters.kopf.events import supported
from kamera_cli.model.result import ScenarioResult, Verdict

reason = supported()
pytestmark = pytest.mark.skipif(reason is not None, reason=reason or "")

DISCOVERED = Path(__file__).resolve().parents[2] / "scenarios" / "kopf" / "discovered"


def run(tmp_path: Path, operator: str, controllers: str) -> ScenarioResult:
    shutil.copy(DISCOVERED / "crd.yaml", tmp_path / "crd.yaml")
    shutil.copy(DISCOVERED / "seed.yaml", tmp_path / "seed.yaml")
    (tmp_path / "operator.py").write_text(textwrap.dedent(operator))
    (tmp_path / "scenario.yaml").write_text(textwrap.dedent("""\
        apiVersion: kamera.dev/v1alpha1
        kind: Scenario
        metadata: {name: kopf-discovery-case}
        spec:
          crds: [crd.yaml]
          seed: [seed.yaml]
          controllers:
        """) + textwrap.indent(textwrap.dedent(controllers).strip("\n") + "\n", "    "))
    (result,) = kamera_cli.check(tmp_path).scenarios
    return result


def converged_object(result: ScenarioResult, kind: str) -> dict:  # type: ignore[type-arg]
    (obj,) = [o for o in result.converged[0].objects if o["kind"] == kind]
    return dict(obj)


def test_the_example_passes_and_stores_results_in_an_object_without_a_status_subresource() -> None:
    (result,) = kamera_cli.check(DISCOVERED).scenarios
    assert result.verdict is Verdict.PASSED, result.checks
    backup = converged_object(result, "Backup")
    assert backup["status"]["schedule"] == {"schedule": "@daily"}
    assert backup["status"]["reschedule/spec.schedule"] == {"schedule": "@hourly", "was": "@daily"}
    assert converged_object(result, "ConfigMap")["metadata"]["annotations"]["backup.example.com/protected"] == "true"


@pytest.mark.parametrize("selector", ['"backup.example.com"', '"bk"', '"backups"', '"Backup"',
                                      'category="storage"', '"example.com", "v1", "backups"'])
def test_every_name_discovery_publishes_selects_the_resource(tmp_path: Path, selector: str) -> None:
    result = run(tmp_path, f"""
        import kopf
        @kopf.on.create({selector})
        def hello(**_):
            return {{"said": "hi"}}
    """, "- {name: op, kopf: operator.py}")
    assert result.verdict is Verdict.PASSED, result.checks
    assert converged_object(result, "Backup")["status"] == {"hello": {"said": "hi"}}


def test_a_built_in_s_singular_and_short_name_select_it(tmp_path: Path) -> None:
    for selector in ('"configmap"', '"cm"'):
        result = run(tmp_path, f"""
            import kopf
            @kopf.on.create({selector})
            def hello(patch, **_):
                patch.metadata.labels["seen"] = "yes"
        """, "- {name: op, kopf: operator.py}")
        assert result.verdict is Verdict.PASSED, result.checks
        assert converged_object(result, "ConfigMap")["metadata"]["labels"]["seen"] == "yes"


def test_a_name_nothing_serves_is_still_a_load_error(tmp_path: Path) -> None:
    result = run(tmp_path, """
        import kopf
        @kopf.on.create("gadget.example.com")
        def hello(**_):
            pass
    """, "- {name: op, kopf: operator.py, for: example.com/v1/Backup}")
    assert result.verdict is Verdict.ERROR
    assert "has no handler for example.com/v1/Backup" in (result.error or "")
