"""Which built-ins a scenario may name in ``spec.cluster.builtins``, and building them."""

from __future__ import annotations

from collections.abc import Sequence

from kamera_cli.controlplane.api import BuiltinController
from kamera_cli.controlplane.cronjob import CronJobController
from kamera_cli.controlplane.daemonset import DaemonSetController
from kamera_cli.controlplane.deployment import DeploymentController
from kamera_cli.controlplane.endpoints import EndpointsController, EndpointSliceController
from kamera_cli.controlplane.job import JobController
from kamera_cli.controlplane.kubelet import Kubelet, PodRule
from kamera_cli.controlplane.replicaset import ReplicaSetController
from kamera_cli.controlplane.rootca import RootCAPublisher
from kamera_cli.controlplane.serviceaccount import ServiceAccountController
from kamera_cli.controlplane.statefulset import StatefulSetController
from kamera_cli.controlplane.volumes import PVCBinder

#: every name ``builtins:`` accepts (``all`` stands for all of them)
BUILTIN_NAMES = ("deployment", "replicaset", "statefulset", "daemonset", "job", "cronjob", "endpoints",
                 "endpointslice", "pvc-binder", "serviceaccount", "root-ca-publisher", "kubelet")


def make_builtins(names: Sequence[str], *, rules: Sequence[PodRule] = (),
                  default_outcomes: tuple[str, ...] = ("ready",), cronjob_runs: int = 2) -> list[BuiltinController]:
    """The built-in controllers for ``names`` (already validated), sorted by name."""
    chosen = set(BUILTIN_NAMES) if "all" in names else set(names)
    out: list[BuiltinController] = []
    for name in sorted(chosen):
        if name == "kubelet":
            out.append(Kubelet(rules=tuple(rules), default=default_outcomes))
        elif name == "replicaset":
            out.append(ReplicaSetController())
        elif name == "deployment":
            out.append(DeploymentController())
        elif name == "job":
            out.append(JobController())
        elif name == "cronjob":
            out.append(CronJobController(runs=cronjob_runs))
        elif name == "serviceaccount":
            out.append(ServiceAccountController())
        elif name == "root-ca-publisher":
            out.append(RootCAPublisher())
        elif name == "statefulset":
            out.append(StatefulSetController())
        elif name == "pvc-binder":
            out.append(PVCBinder())
        elif name == "daemonset":
            out.append(DaemonSetController())
        elif name == "endpoints":
            out.append(EndpointsController())
        elif name == "endpointslice":
            out.append(EndpointSliceController())
    return out
