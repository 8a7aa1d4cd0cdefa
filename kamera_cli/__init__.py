"""kamera: model-check Kubernetes controllers written with the official Python client.

The public names are loaded lazily so that ``import kamera_cli`` stays cheap and never imports the
kubernetes client before the simulation's containment is in place.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["ExternalStore", "NoSimulation", "Request", "Result", "ServiceRequest", "ServiceResponse", "VersionConflict",
           "__version__", "check"]


def __getattr__(name: str) -> Any:
    if name in ("Request", "Result"):
        from kamera_cli.adapters.sandbox import values as reconcile

        return getattr(reconcile, name)
    if name in ("ExternalStore", "NoSimulation", "VersionConflict"):
        from kamera_cli.apiserver import external_store

        return getattr(external_store, name)
    if name in ("ServiceRequest", "ServiceResponse"):  # what a fake by URL is called with and answers
        from kamera_cli.model import services

        return getattr(services, name)
    if name == "check":
        from kamera_cli import runner

        return runner.check
    if name == "explore":
        # the explorer's package, which binds this name as soon as anything imports it; the runner's
        # ``explore`` function is ``kamera_cli.runner.explore`` (it was once answered here, until then)
        import importlib

        return importlib.import_module("kamera_cli.explore")
    raise AttributeError(f"module 'kamera_cli' has no attribute {name!r}")
