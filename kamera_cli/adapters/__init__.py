"""Loading users' controllers and calling one reconcile at a time, deterministically.

One package per controller shape — ``reconcile/``, ``kopf/``, ``program/``, ``metacontroller/``, which
do not import each other — over ``sandbox/`` (fence, audit hooks, entry points, module loading,
fakes, the ``Request``/``Result`` values), with ``asyncio/`` (coroutines inside a step) between: every
shape may use it, it uses only the sandbox (import-linter contracts in pyproject.toml).

Public surface (see ``docs/controllers.md`` for the user's side of the contract):

* :func:`check_entrypoint` — static check of an entry point (``kamera validate``), imports nothing;
* :func:`load_reconciler` / :class:`ReconcilerFactory` and :func:`load_mapper` / :class:`Mapper`;
* :func:`run_reconcile` / :class:`ReconcileOutcome` and :func:`run_mapper` / :class:`MapOutcome`;
* :class:`Request`, :class:`Result` (also ``kamera_cli.Request``/``kamera_cli.Result``);
* :class:`VirtualClock` (and :class:`WatchedClock`, which notes who read it) and :class:`ReconcileAbort`
  (the base of the simulator's crash aborts).
"""

from __future__ import annotations

from kamera_cli.adapters.reconcile.running import (
    ErrorInfo,
    MapOutcome,
    OutcomeKind,
    ReconcileAbort,
    ReconcileOutcome,
    run_mapper,
    run_reconcile,
)
from kamera_cli.adapters.sandbox.audit_hooks import install_audit_fence
from kamera_cli.adapters.sandbox.clockwatch import WatchedClock
from kamera_cli.adapters.sandbox.entrypoints import check_entrypoint
from kamera_cli.adapters.sandbox.fence import NetworkBlocked, VirtualClock
from kamera_cli.adapters.sandbox.loading import Mapper, ReconcilerFactory, load_mapper, load_reconciler
from kamera_cli.adapters.sandbox.values import (
    InvalidMapping,
    InvalidResult,
    Request,
    Result,
    normalise_result,
    requests_from_mapping,
)

__all__ = [
    "ErrorInfo",
    "InvalidMapping",
    "InvalidResult",
    "MapOutcome",
    "Mapper",
    "NetworkBlocked",
    "OutcomeKind",
    "ReconcileAbort",
    "ReconcileOutcome",
    "ReconcilerFactory",
    "Request",
    "Result",
    "VirtualClock",
    "WatchedClock",
    "check_entrypoint",
    "install_audit_fence",
    "load_mapper",
    "load_reconciler",
    "normalise_result",
    "requests_from_mapping",
    "run_mapper",
    "run_reconcile",
]
