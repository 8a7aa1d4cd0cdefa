"""The Kubernetes model the explorer checks: states, enabled steps and their successors.

``kube.py`` is the explorer's protocol; ``reconciling.py`` a reconcile step; ``outside.py`` the
built-in actors' and users' steps; ``core.py`` what they share; ``acts.py`` the steps as values.
"""

from kamera_cli.sim.journal import journal_writes, object_names, perform_action, same_content
from kamera_cli.sim.model.acts import Act
from kamera_cli.sim.model.kube import KubeModel
from kamera_cli.sim.runs import Fault, ReconcileRun

__all__ = ["Act", "Fault", "KubeModel", "ReconcileRun", "journal_writes", "object_names", "perform_action",
           "same_content"]
