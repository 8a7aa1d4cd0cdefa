"""The fake nodes a scenario's ``cluster.nodes: N`` asks for.

Why real Node objects: the scheduler filters on their labels, taints and Ready condition, and
operators read them (a DaemonSet's one-pod-per-node, a zone label).  Their status is what a
healthy kubelet reports; nothing heartbeats, so they stay Ready for the whole exploration.
"""

from __future__ import annotations

from kamera_cli.controlplane.api import Obj

#: ``status.nodeInfo.kubeletVersion`` of the fake nodes: the release whose controllers kamera follows
KUBE_VERSION = "v1.34.0"


def node_manifest(index: int) -> Obj:
    """Node ``node-<index>`` (1-based), Ready, with the well-known labels a kubelet sets on itself."""
    name = f"node-{index}"
    address = f"10.0.0.{index + 1}"
    resources = {"cpu": "4", "memory": "16Gi", "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64"}},
        "spec": {"podCIDR": f"10.244.{index}.0/24", "podCIDRs": [f"10.244.{index}.0/24"]},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure"},
                {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID"},
                {"type": "Ready", "status": "True", "reason": "KubeletReady",
                 "message": "kubelet is posting ready status"},
            ],
            "addresses": [{"type": "InternalIP", "address": address}, {"type": "Hostname", "address": name}],
            "nodeInfo": {"kubeletVersion": KUBE_VERSION, "operatingSystem": "linux", "architecture": "amd64",
                         "containerRuntimeVersion": "containerd://2.1.0", "kernelVersion": "6.8.0",
                         "osImage": "kamera simulated node", "machineID": "", "systemUUID": "", "bootID": "",
                         "kubeProxyVersion": ""},
        },
    }


def node_manifests(count: int) -> list[Obj]:
    return [node_manifest(i) for i in range(1, count + 1)]
