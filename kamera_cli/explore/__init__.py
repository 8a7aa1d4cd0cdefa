"""A generic explicit-state model checker (layer 2); it knows nothing of Kubernetes.

``search(model, ...)`` explores every state a ``Model`` can reach (breadth-first by default),
deduplicated by fingerprint, and reports converged states, depth cuts, deadlocks, livelocks
(closed bottom SCCs without a converged state), transition findings and property violations.
Its settings are one frozen ``SearchSettings`` value (``settings``) that the serial search
(``checker``), the split one (``parallel*``) and remote workers share; ``problems`` is what both
searches count and how they read the result off the graph (``result``). See docs/explorer.md.

May import: ``errors`` and the standard library only (the contract "the explorer knows nothing of
Kubernetes" forbids ``kubernetes`` and ``model.objects``/``model.scenario``).
"""

from __future__ import annotations

from kamera_cli.explore.checker import search, search_with, serve_search
from kamera_cli.explore.model import (
    ALWAYS,
    CONVERGED,
    ExploreError,
    Footprint,
    Model,
    Property,
    PropertyKind,
    Settle,
    Tallied,
    Transition,
)
from kamera_cli.explore.parallel import WorkerDied
from kamera_cli.explore.problems import finding_key
from kamera_cli.explore.rederive import Rederive
from kamera_cli.explore.reduction import NONE, PERSISTENT, Reducible, Reduction
from kamera_cli.explore.result import (
    Edge,
    FindingRecord,
    Graph,
    Livelock,
    ProcessLoad,
    Progress,
    SearchResult,
    Stats,
    Strategy,
    Violation,
)
from kamera_cli.explore.scc import find_livelocks, strongly_connected_components
from kamera_cli.explore.settings import SearchSettings
from kamera_cli.explore.trace import first_divergence, replay

__all__ = [
    "ALWAYS",
    "CONVERGED",
    "NONE",
    "PERSISTENT",
    "Edge",
    "ExploreError",
    "FindingRecord",
    "Footprint",
    "Graph",
    "Livelock",
    "Model",
    "ProcessLoad",
    "Progress",
    "Property",
    "PropertyKind",
    "Rederive",
    "Reducible",
    "Reduction",
    "SearchResult",
    "SearchSettings",
    "Settle",
    "Stats",
    "Strategy",
    "Tallied",
    "Transition",
    "Violation",
    "WorkerDied",
    "find_livelocks",
    "finding_key",
    "first_divergence",
    "replay",
    "search",
    "search_with",
    "serve_search",
    "strongly_connected_components",
]
