"""Scenarios checked on a Ray cluster (``kamera check --ray auto|local|ADDRESS``).

Why a layer above the supervisor: a scenario checked on a Ray node must keep every guarantee of a
local run — its own supervised worker process, the network namespace, the budgets, nothing lost
when user code kills its process — so each Ray task runs the supervisor on one scenario, and only
the judged ``ScenarioResult`` travels back. Results come back in discovery order whatever order the
tasks finish in, so the output is the local one.

What is not distributed yet: the frontier of one search (``--workers`` splits it across local
processes, see docs/explorer.md). The scenario files must be readable at the same path on every Ray
node (a shared checkout or file system); ``local`` starts a Ray instance on this machine.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from kamera_cli import runner, supervisor
from kamera_cli.errors import UsageError
from kamera_cli.model.result import CheckResult, ScenarioResult, Verdict

__all__ = ["check_on_ray", "ray_missing"]


def ray_missing() -> str | None:
    """Why ``--ray`` cannot work here (None: it can)."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed: pip install 'kamera-cli[ray]'"
    return None


def _check_one(path: str, overrides: runner.Overrides, options: supervisor.Options) -> CheckResult:
    return supervisor.supervise([Path(path)], overrides=overrides, options=options)


def check_on_ray(paths: Sequence[Path], *, address: str, overrides: runner.Overrides | None = None,
                 options: supervisor.Options | None = None) -> CheckResult:
    """Every scenario under ``paths`` as one Ray task each; ``address``: ``auto`` (the running cluster),
    ``local`` (a new instance on this machine), or a cluster address (``ray://host:10001``)."""
    why = ray_missing()
    if why is not None:
        raise UsageError(f"--ray {address}: {why}")
    import ray

    from kamera_cli.scenario import discover

    files = discover(list(paths))
    overrides = overrides or runner.Overrides()
    options = options or supervisor.Options()
    started_here = not ray.is_initialized()
    if started_here:
        try:
            if address == "local":
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--ray {address}: cannot connect to a Ray cluster: {exc}") from exc
    try:
        task: Any = ray.remote(max_retries=0)(_check_one)
        # one supervised worker per task: the Ray task is the unit of parallelism
        # (a swarm's members are runs of their own: each carries its member in its overrides)
        each = replace(options, workers=1, swarm=0)
        runs = runner.units(files, overrides, options.swarm)
        pending = [task.remote(str(f.resolve()), o, each) for f, o in runs]
        results: list[ScenarioResult] = []
        notes = [f"checked on Ray ({address}): {len(runs)} run(s) of {len(files)} scenario(s), one task each"]
        for ref in pending:
            checked: CheckResult = ray.get(ref)
            results.extend(checked.scenarios)
            notes.extend(n for n in checked.notes if n not in notes)
            if options.fail_fast and checked.verdict in (Verdict.FAILED, Verdict.ERROR):
                for other in pending[len(results):]:
                    ray.cancel(other)
                break
        return CheckResult(tuple(runner.dedupe_names(results)), notes=tuple(notes))
    finally:
        if started_here:
            ray.shutdown()
