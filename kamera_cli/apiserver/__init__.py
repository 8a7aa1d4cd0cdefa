"""The simulated Kubernetes API server: registry, snapshots, request handling, GC and namespace actors.

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
