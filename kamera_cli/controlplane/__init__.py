"""The built-in control plane (layer 2): the controllers and the node agent a real cluster runs for you.

May import: nothing else of kamera; every built-in reaches the cluster only through ``api.Cluster``.

Each built-in is written against :class:`Cluster` (the requests any client can make), so the
simulation runs it as an explored actor whose steps interleave with the users' controllers.  See
``docs/builtins.md`` for what each one models and simplifies.
"""

from __future__ import annotations

from kamera_cli.controlplane.api import NO_REQUEUE, BuiltinController, Cluster, ClusterError, Obj, Outcome, Watch
from kamera_cli.controlplane.catalog import BUILTIN_NAMES, make_builtins
from kamera_cli.controlplane.kubelet import OUTCOMES, Kubelet, PodRule
from kamera_cli.controlplane.nodes import node_manifests

__all__ = [
    "BUILTIN_NAMES",
    "NO_REQUEUE",
    "OUTCOMES",
    "BuiltinController",
    "Cluster",
    "ClusterError",
    "Kubelet",
    "Obj",
    "Outcome",
    "PodRule",
    "Watch",
    "make_builtins",
    "node_manifests",
]
