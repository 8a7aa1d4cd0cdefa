"""The model's steps as values: what the explorer enumerates, labels and ships between processes."""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass

from kamera_cli.sim.runs import Fault


@dataclass(frozen=True, slots=True, order=True)
class Act:
    """One enabled step."""

    kind: str  # reconcile | actor | action
    controller: str = ""
    namespace: str = ""
    name: str = ""
    index: int = 0  # action index
    fault: Fault | None = None
    #: the branch a built-in took among its possible outcomes (a pod's fate), "" when it had none
    choice: str = ""

    def __reduce__(self) -> tuple[type[Act], tuple[str, str, str, str, int, Fault | None, str]]:
        # a split search's workers send every expansion's actions: a tuple pickles several times faster
        return (Act, (self.kind, self.controller, self.namespace, self.name, self.index, self.fault, self.choice))

    def describe(self) -> str:
        if self.kind == "reconcile":
            req = f"{self.namespace}/{self.name}" if self.namespace else self.name
            return (f"{self.controller} reconcile {req}" + (f" [{self.fault.describe()}]" if self.fault else "")
                    + (f" [outcome: {self.choice}]" if self.choice else ""))
        if self.kind == "actor":
            return self.controller
        return f"action #{self.index + 1}"


GC = "garbage-collector"
NS = "namespace-controller"
#: the reduction's processes of the collector and the namespace controller (``KubeModel.process``)
ACTORS: frozenset[Hashable] = frozenset({("actor", GC, "0"), ("actor", NS, "0")})


def join_notes(a: str, b: str) -> str:
    """Two notes of a step's label as one ("" for a missing one)."""
    return f"{a}; {b}" if a and b else a or b
