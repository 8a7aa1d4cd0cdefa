"""The cronjob and serviceaccount built-ins under the explorer: bounded runs, pinned counts."""

from __future__ import annotations

from pathlib import Path

import kamera_cli
from kamera_cli.model.result import Verdict

SCENARIO = """\
apiVersion: kamera.dev/v1alpha1
kind: Scenario
metadata: {name: cronjob-runs}
spec:
  controllers: []
  cluster:
    builtins: [cronjob, kubelet, serviceaccount]
    cronJobRuns: 2
    systemObjects: false   # the serviceaccount built-in creates the accounts itself
    pods:
      default: {outcomes: [succeeded]}
  seed:
    - apiVersion: batch/v1
      kind: CronJob
      metadata: {name: report, namespace: default}
      spec:
        schedule: "*/5 * * * *"
        jobTemplate:
          spec:
            template:
              spec:
                restartPolicy: Never
                containers: [{name: c, image: busybox}]
  invariants:
    - name: two runs, both complete
      select: "$.items[?@.kind == 'Job' && @.status.succeeded == 1]"
      expect: {count: 2}
    - name: every namespace has its default service account
      forEach: "$.items[?@.kind == 'Namespace']"
      select: >-
        $.items[?@.kind == 'ServiceAccount' && @.metadata.name == 'default'
        && @.metadata.namespace == {{ @.metadata.name }}]
      expect: {count: 1}
"""


def test_two_bounded_cronjob_runs_complete_and_every_namespace_has_its_account(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(SCENARIO)
    (result,) = kamera_cli.check(tmp_path).scenarios
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
    # 208 states unreduced (below); the generated-name symmetry, the built-ins' precise footprints and the
    # reduction leave 36 (by owned trees alone 56: the smaller of the two sets is taken)
    assert (result.stats.states, result.stats.converged_states) == (36, 1)
    jobs = sorted(o["metadata"]["name"] for o in result.converged[0].objects if o["kind"] == "Job")
    assert jobs == ["report-29453765", "report-29453770"]  # 00:05 and 00:10, by minute since the epoch


def test_the_reduced_cronjob_runs_agree_with_the_unreduced_search(tmp_path: Path) -> None:
    unreduced = SCENARIO.replace("  cluster:\n", "  explore: {reduction: none}\n  cluster:\n")
    (tmp_path / "scenario.yaml").write_text(unreduced)
    (result,) = kamera_cli.check(tmp_path).scenarios
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
    assert (result.stats.states, result.stats.converged_states) == (208, 1)
    jobs = sorted(o["metadata"]["name"] for o in result.converged[0].objects if o["kind"] == "Job")
    assert jobs == ["report-29453765", "report-29453770"]


def test_one_run_when_the_bound_says_one(tmp_path: Path) -> None:
    (tmp_path / "scenario.yaml").write_text(SCENARIO.replace("cronJobRuns: 2", "cronJobRuns: 1")
                                            .replace("expect: {count: 2}", "expect: {count: 1}"))
    (result,) = kamera_cli.check(tmp_path).scenarios
    assert result.verdict is Verdict.PASSED, [(c.name, c.message) for c in result.checks]
