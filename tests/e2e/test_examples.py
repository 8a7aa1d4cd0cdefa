"""Every example scenario through the real CLI: exit code, which checks fail, and state counts.

Why pin state counts: like Stateright's examples, an exact count is a regression test for the
explorer, the triggers and the API server at once — any change in semantics moves it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from kamera_cli.adapters.kopf.events import supported as kopf_supported
from kamera_cli.cli import app

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = ROOT / "scenarios"

# path -> (exit code, failing checks, states, converged states), with partial-order reduction on (the
# default); tests/e2e/test_reduction.py checks every example against the unreduced search. Issue 26's
# footprints (owned children, claims, the clock window, the orphans watch) lowered the counts of the
# examples with ownerReferences or built-ins; verdicts, failing checks and converged states are as before.
# Perturbations in footprints (sim/perturbing.py) lowered those of the examples with crashes (before:
# kopf/restart-settings 15, /fixed 19; shapes/credential-leak 96, /fixed 80; shapes/http-fake-urllib 80,
# /fixed 80). A crash "after write 0" of a run that writes nothing restarts (re-imports) the process like
# any crash (before, it only re-listed): kopf/restart-settings 13 -> 14 (unreduced 15 -> 16)
# A kopf timer's tick runs at the instant it was due (docs/semantics.md, "kopf", *Its instant*):
# kopf/timer-before-child/fixed 19 -> 15, both searches (its retried tick no longer wakes before kopf's
# `delayed` and sleeps again)

EXPECTED: dict[str, tuple[int, set[str], int, int]] = {
    "quickstart": (0, set(), 5, 1),
    "bugs/order-dependent": (1, {"deterministic"}, 7, 2),
    "bugs/livelock": (1, {"converges"}, 5, 0),
    # generation grows on every write; fingerprinted by its relation to observedGeneration (issue 11)
    "bugs/generation-fight": (1, {"converges"}, 9, 0),
    "bugs/invariant-at-convergence": (1, {"invariant: every app has credentials"}, 4, 1),
    "bugs/always-intermediate": (1, {"invariant: ready apps have credentials"}, 3, 1),
    "bugs/exception-one-ordering": (1, {"no controller errors"}, 13, 1),
    "bugs/orphaned-child": (1, {"invariant: no orphaned secrets"}, 4, 1),
    "bugs/orphaned-child/fixed": (0, set(), 7, 1),
    # issue 28: a write handed to a background thread is refused and reported, so the backup never exists
    "bugs/stray-thread": (1, {"no controller errors", "invariant: every wanted backup exists"}, 2, 1),
    "bugs/stray-thread/fixed": (0, set(), 3, 1),
    # perturbation examples (issue 5): fails with its perturbation, passes without, fixed passes with it
    "bugs/crash-between-writes": (1, {"deterministic", "invariant: provisioned apps have credentials"}, 8, 2),
    "bugs/crash-between-writes/unperturbed": (0, set(), 3, 1),
    "bugs/crash-between-writes/fixed": (0, set(), 7, 1),
    "bugs/stale-read": (1, {"deterministic", "invariant: one token per app"}, 6, 2),
    "bugs/stale-read/unperturbed": (0, set(), 3, 1),
    "bugs/stale-read/fixed": (0, set(), 4, 1),
    "bugs/swallowed-conflict": (1, {"deterministic", "invariant: the app is configured"}, 4, 2),
    "bugs/swallowed-conflict/unperturbed": (0, set(), 3, 1),
    "bugs/swallowed-conflict/fixed": (0, set(), 6, 1),
    "bugs/action-mid-chain": (1, {"deterministic", "invariant: the copy follows the app"}, 10, 2),
    "bugs/action-mid-chain/unperturbed": (0, set(), 4, 1),
    "bugs/action-mid-chain/fixed": (0, set(), 9, 1),
    # an audit log imported (kamera import --audit, issue 14): the same bug in production's timeline
    "import/incident": (1, {"deterministic", "invariant: the copy follows the app"}, 13, 2),
    "import/incident/fixed": (0, set(), 11, 1),
    # an async def reconcile on kubernetes_asyncio: the quickstart's counts exactly
    "asyncio": (0, set(), 5, 1),
    # kopf operators, run by kopf's own event processing (issue 9)
    "kopf/create-child": (0, set(), 3, 1),
    "kopf/duplicate-child": (1, {"deterministic", "invariant: one config map per widget"}, 6, 2),
    "kopf/duplicate-child/fixed": (0, set(), 6, 1),
    "kopf/conflict-forever": (1, {"converges", "no controller errors"}, 15, 1),
    "kopf/conflict-forever/fixed": (0, set(), 6, 1),
    "kopf/orphan": (1, {"invariant: no orphaned config maps"}, 5, 1),
    "kopf/orphan/fixed": (0, set(), 7, 1),
    "kopf/self-trigger": (1, {"converges"}, 11, 0),
    "kopf/self-trigger/fixed": (0, set(), 6, 1),
    "kopf/timer-before-child": (1, {"no controller errors"}, 13, 1),
    "kopf/async-client": (1, {"invariant: the config map follows the widget"}, 6, 1),
    "kopf/async-client/fixed": (0, set(), 7, 1),
    "kopf/timer-before-child/fixed": (0, set(), 13, 1),
    # kopf's view of resources from discovery: a CRD without a status subresource, names by short name (issue 27)
    "kopf/discovered": (0, set(), 9, 1),
    # login and startup handlers run as kopf runs them; the login handler configures the asyncio client
    "kopf/login": (0, set(), 7, 1),
    # the operator stopped gracefully at each converged state: its @kopf.on.cleanup handler fails where a
    # user deleted a widget's config map (issue 27); the fix skips it. The stop adds no state
    "kopf/cleanup": (1, {"no controller errors"}, 9, 2),
    "kopf/cleanup/fixed": (0, set(), 9, 2),
    # a crash restarts the operator after an admin deleted the settings its startup handler needs: it never
    # starts again on that path (no more steps of it there), and its Widget keeps no config map
    "kopf/restart-settings": (1, {"no controller errors", "invariant: every widget has its config map"}, 14, 2),
    "kopf/restart-settings/fixed": (0, set(), 18, 2),
    # a timer stops at the event that leaves its filters unmatched, as kopf's match_daemons stops it (41
    # states when it ran on to its next tick and ended there)
    "kopf/timer-filters": (0, set(), 21, 2),
    "kopf/polling-timer": (0, set(), 14, 1),
    # a cleanup timer on a stale list of Pods: the perturbation names the operator, which covers its timer
    "kopf/namespace-cleanup": (1, {"deterministic", "invariant: no namespace is deleted while it holds a pod"}, 155, 2),
    # operators over the built-in control plane (issue 10): deployment/replicaset/job/kubelet actors
    # pods of one ReplicaSet are interchangeable (symmetry of generated names): 1,769 states without
    "workloads/wait-for-deployment": (0, set(), 91, 1),
    "workloads/conditions-no-null-check": (0, set(), 35, 1),
    "workloads/job-failure-ignored": (1, {"invariant: every task ends"}, 22, 2),
    "workloads/job-failure-ignored/fixed": (0, set(), 23, 2),
    # the Job's failure backoff (10 s on the virtual clock) before the retried pod, which may succeed
    "workloads/job-retry-seen-as-failure": (1, {"invariant: a failed task's job failed"}, 41, 3),
    "workloads/job-retry-seen-as-failure/fixed": (0, set(), 42, 3),
    # activeDeadlineSeconds as a timer on the virtual clock: the running pod is stopped, the Job Failed
    "workloads/job-deadline-unseen": (1, {"invariant: every task ends"}, 24, 2),
    "workloads/job-deadline-unseen/fixed": (0, set(), 25, 2),
    "workloads/scale-down-before-move": (1, {"invariant: every shard's pod exists"}, 11, 1),
    "workloads/scale-down-before-move/fixed": (0, set(), 10, 1),
    # issue 27: a CronJob's report script, first run at its first schedule point (no false alarm), and
    # the same script as a sweep ticking at the start, before the Deployment controller's first sync
    "workloads/cron-report": (0, set(), 78, 1),
    "workloads/cron-report/at-start": (1, {"no controller errors"}, 223, 1),
    # the quickstart controller on the other clients, routed in-process (issue 12): its counts exactly
    "shapes/kr8s": (0, set(), 5, 1),
    "shapes/kr8s/asyncio": (0, set(), 5, 1),
    "shapes/lightkube": (0, set(), 5, 1),
    "shapes/lightkube/asyncio": (0, set(), 5, 1),
    "shapes/pykube": (0, set(), 5, 1),
    # a fake of AWS IAM whose keys are explored state (issue 12): a crash between minting and storing leaks one
    "shapes/credential-leak": (1, {"deterministic", "invariant: one access key per namespace"}, 44, 2),
    "shapes/credential-leak/fixed": (0, set(), 43, 1),
    # a fake by URL (a Dask scheduler's HTTP API): a crash between its retirement and the Pod's deletion
    "shapes/http-fake": (1, {"deterministic", "invariant: every worker Pod is a running worker of the scheduler"},
                         9, 2),
    "shapes/http-fake/fixed": (0, set(), 7, 1),
    # the same through urllib.request (issue 27): a crash between Grafana's folder and its record, then 409 forever
    "shapes/http-fake-urllib": (1, {"no controller errors"}, 43, 1),
    "shapes/http-fake-urllib/fixed": (0, set(), 43, 1),
    # metacontroller (issue 12): the IndexedJob example's hook server, stuck on a failed pod, and its fix
    "shapes/metacontroller": (1, {"invariant: a settled job has finished"}, 48, 4),
    "shapes/metacontroller/fixed": (0, set(), 31, 3),
    # 83 before: a sync that found its parent deleted or unselected set a resync (metacontroller's
    # informer never resyncs those); same verdicts, same converged state
    "shapes/metacontroller/decorator": (0, set(), 42, 1),
    # a WSGI hook server, children by server-side apply: an emptied source breaks the sync, which is
    # retried through the rate-limited queue (the failure count bounded at 18), and its fix
    "shapes/metacontroller/propagation": (1, {"no controller errors"}, 23, 0),
    "shapes/metacontroller/propagation/fixed": (0, set(), 7, 1),
    # issue 27: the fixed hook server built by a function (main() -> server_factory(...)): the fixed counts
    "shapes/metacontroller/propagation/factory": (0, set(), 7, 1),
    # programs (issue 12): a watch loop that acts on a half-delivered listing, its fix, a sweep, a handler
    "shapes/program/mirror": (1, {"invariant: a copy exists while its source does"}, 9, 1),
    "shapes/program/mirror/fixed": (0, set(), 5, 1),
    # the mirror as an async def main() on kubernetes_asyncio: the same graph, the same finding
    "shapes/program/mirror-async": (1, {"invariant: a copy exists while its source does"}, 9, 1),
    # worker threads fed by a watch through a queue.Queue: a lost update when they interleave, and its fix
    # (2679 states each before issue 26 merged converged states whatever their program's position; 1794
    # and 1792 before orders of the threads that are one trace were one position: sim/traces.py)
    "shapes/program/workqueue": (1, {"deterministic", "invariant: the index records every owner"}, 474, 3),
    "shapes/program/workqueue/fixed": (0, set(), 472, 1),
    "shapes/program/sweep": (0, set(), 9, 1),
    # a script whose top level is the watch loop (program: inventory.py): a deleted pod stays listed
    "shapes/program/script": (1, {"deterministic", "invariant: the inventory lists the pods that exist"}, 10, 2),
    "shapes/program/script/fixed": (0, set(), 9, 1),
    # issue 27: a program's own command line (args:), and files mounted from a seeded ConfigMap
    "shapes/program/argv": (0, set(), 7, 1),
    "shapes/program/cleanup": (0, set(), 5, 1),
    # a user's create that may be refused (mayFail): both outcomes of the race are explored
    "shapes/program/cleanup/race": (0, set(), 12, 2),
    # a fresh cluster's node Lease keeps kube-node-lease from looking empty (spec.cluster.systemObjects)
    "shapes/program/cleanup/node-lease": (0, set(), 5, 1),
    "shapes/program/handler": (0, set(), 15, 1),
}

# examples that need an optional client: folder prefix -> (module, extra); without it they are refused
# (exit 2, tests/e2e/test_extras.py), never checked
OPTIONAL_CLIENTS = {"asyncio": ("kubernetes_asyncio", "asyncio"),
                    "shapes/program/mirror-async": ("kubernetes_asyncio", "asyncio"),
                    "kopf/async-client": ("kubernetes_asyncio", "asyncio"),
                    "kopf/login": ("kubernetes_asyncio", "asyncio"), "shapes/kr8s": ("kr8s", "kr8s"),
                    "shapes/lightkube": ("lightkube", "lightkube"), "shapes/pykube": ("pykube", "pykube")}


def missing_client(rel: str) -> str | None:
    """Why the example ``rel`` cannot run here (its client is not installed), or None."""
    for prefix, (module, extra) in OPTIONAL_CLIENTS.items():
        if (rel == prefix or rel.startswith(prefix + "/")) and importlib.util.find_spec(module) is None:
            return f"{module} is not installed (pip install 'kamera-cli[{extra}]')"
    return None


def _scenario_file(rel: str) -> Path:
    return SCENARIOS / rel / "scenario.yaml"


def test_every_example_is_pinned() -> None:
    found = {str(p.parent.relative_to(SCENARIOS)) for p in SCENARIOS.rglob("scenario.yaml")}
    assert found == set(EXPECTED), "add new examples to EXPECTED (exit code, failing checks, counts)"


@pytest.mark.parametrize("rel", sorted(EXPECTED))
def test_example_through_the_cli(rel: str, tmp_path: Path) -> None:
    if rel.startswith("kopf/") and (reason := kopf_supported()) is not None:
        pytest.skip(reason)
    if (reason := missing_client(rel)) is not None:
        pytest.skip(reason)
    code, failing, states, converged = EXPECTED[rel]
    out_json = tmp_path / "result.json"
    junit = tmp_path / "junit.xml"
    result = CliRunner().invoke(
        app, ["check", str(_scenario_file(rel)), "--json", str(out_json), "--junit", str(junit)],
        env={"NO_COLOR": "1", "COLUMNS": "120"},
    )
    assert result.exit_code == code, result.output
    doc = json.loads(out_json.read_text())
    (scenario,) = doc["scenarios"]
    failed = {c["name"] for c in scenario["checks"] if c["verdict"] == "failed"}
    assert failed == failing, result.output
    if states >= 0:
        assert scenario["stats"]["states"] == states
    assert scenario["stats"]["converged_states"] == converged
    assert junit.read_text().startswith("<?xml")
    for name in failing:
        assert f"✗ {name}" in result.output


def test_a_fight_that_raises_the_generation_is_a_livelock_with_its_loop() -> None:
    result = CliRunner().invoke(app, ["check", str(_scenario_file("bugs/generation-fight"))],
                                env={"NO_COLOR": "1", "COLUMNS": "120"})
    assert result.exit_code == 1, result.output
    assert "livelock" in result.output and "loop:" in result.output and "↺ back to step" in result.output
    assert "/metadata/generation" in result.output
