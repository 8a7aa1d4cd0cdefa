"""The simulated Kubernetes API server, one package per job (docs/apiserver.md):

- ``registry/`` the kinds served (built-in table, CRDs, compiled schemas); ``storage/`` immutable
  snapshots, their canonical JSON and fingerprints, the external entries' format;
- ``validation/`` (with ``cel/``) what the server refuses; ``defaulting/`` what it fills in;
  ``patch/`` patch semantics and managedFields as pure functions;
- ``server/`` the session answering HTTP-shaped requests, the only package combining the ones above;
- ``transports/`` every client's HTTP routed into a bound server, and the containment;
- ``actors.py`` (GC, namespace lifecycle) and ``external_store.py`` (``ExternalStore``) drive a server
  from outside; ``errors.py`` is the ``Status`` wording all of them share.

No package below ``server/`` imports ``server/`` or ``transports/``, ``patch/`` does not import
``validation/``, and ``server/`` does not import ``transports/`` (import-linter, pyproject.toml).
Public names are re-exported here (docs/architecture.md); submodules stay importable on their own.
"""

from __future__ import annotations

from kamera_cli.apiserver.actors import ActorWork, gc_step, gc_work, namespace_step, namespace_work
from kamera_cli.apiserver.errors import ApiError, CRDError
from kamera_cli.apiserver.registry.kinds import GroupInfo, Registry, ResourceInfo
from kamera_cli.apiserver.server.session import Access, ApiServer, HttpResponse
from kamera_cli.apiserver.storage.snapshot import Snapshot, WriteRecord

__all__ = [
    "Access",
    "ActorWork",
    "ApiError",
    "ApiServer",
    "CRDError",
    "GroupInfo",
    "HttpResponse",
    "Registry",
    "ResourceInfo",
    "Snapshot",
    "WriteRecord",
    "gc_step",
    "gc_work",
    "namespace_step",
    "namespace_work",
]
