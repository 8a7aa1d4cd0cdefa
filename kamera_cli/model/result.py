"""The result of checking scenarios: what every reporter (terminal, JUnit, JSON) reads.

Why a plain model: reporters must not know how the search works.  Everything a user sees —
verdicts, counterexample stories, converged states, statistics — is here as frozen values, and
``report/`` imports nothing else.  The JSON form is versioned (``schemas/result.schema.json``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kamera_cli.model.graph import StateGraph
from kamera_cli.model.objects import Manifest, ObjectRef
from kamera_cli.model.scenario import Position

#: v1alpha2 added ``Step.reads``, ``Counterexample.nodes``/``alternative_nodes``/``selected`` and
#: ``ScenarioResult.graph``
RESULT_FORMAT_VERSION = "kamera.dev/result/v1alpha2"
#: the versions ``from_json`` reads (an older document reads with the newer fields empty)
RESULT_FORMAT_VERSIONS_READ = ("kamera.dev/result/v1alpha1", RESULT_FORMAT_VERSION)


class Verdict(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    #: a bound (states, depth, time) was hit before the search finished and nothing failed
    INCONCLUSIVE = "inconclusive"
    #: the scenario could not be loaded; nothing was explored
    ERROR = "error"


class CheckName:
    """The fixed check names (JUnit testcase names)."""

    CONVERGES = "converges"
    DETERMINISTIC = "deterministic"
    NO_CONTROLLER_ERRORS = "no controller errors"
    LOAD = "load"

    @staticmethod
    def invariant(name: str) -> str:
        return f"invariant: {name}"


@dataclass(frozen=True, slots=True)
class DiffEntry:
    """One change to one object: ``path`` is a JSON Pointer inside the object."""

    op: str  # add | remove | replace
    path: str
    old: Any = None
    new: Any = None


@dataclass(frozen=True, slots=True)
class Write:
    """One write a step made, as the story shows it."""

    #: created | updated | patched | deleted | marked for deletion | removed | status updated | status patched | applied
    verb: str
    ref: ObjectRef
    subresource: str = ""
    diff: tuple[DiffEntry, ...] = ()
    #: HTTP status when the write was refused (e.g. 409); 0 when it was applied
    refused: int = 0
    #: for a create: how many fields the server filled in beyond what was sent (not in ``diff``)
    defaulted: int = 0

    def describe(self) -> str:
        if self.subresource == "binding":
            node = next((d.new for d in self.diff if d.path == "/spec/nodeName"), None)
            what = f"bound {self.ref} to node {node}" if isinstance(node, str) else f"bound {self.ref}"
        else:
            what = f"{self.verb} status of {self.ref}" if self.subresource == "status" else f"{self.verb} {self.ref}"
        if self.refused:
            what += f" (refused: {self.refused})"
        return what


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a path: one reconcile, one built-in actor step, one external action or a time jump."""

    index: int  # 1-based position in the path
    #: reconcile | garbage-collector | namespace-controller | action | stop (a graceful stop: kopf cleanup)
    kind: str
    actor: str  # controller name, "garbage-collector", action name, ...
    request: str = ""  # "default/demo" for reconciles
    writes: tuple[Write, ...] = ()
    #: a short note: "requeue", "requeue after 30s", "raised KeyError", "crashed after write 1",
    #: "stale view of v1/Pod (1 behind)"
    note: str = ""
    #: the controller's traceback when it raised
    error: str = ""
    #: what the controller printed during the step (stdout and stderr), escaped and bounded
    log: str = ""
    #: what the step's outcome depends on: the objects it read or wrote (``apiVersion/Kind ns/name``)
    #: and the collections it listed or watched (``list <path>[?selector]``), in first-access order
    reads: tuple[str, ...] = ()

    def headline(self) -> str:
        head = f"{self.index}. {self.actor}"
        if self.kind == "reconcile":
            head += f" reconcile {self.request}"
        elif self.request:
            head += f" {self.request}"
        if self.note:
            head += f" — {self.note}"
        if self.writes:
            head += " → " + "; ".join(w.describe() for w in self.writes)
        elif self.kind == "reconcile" and not self.error:
            head += " → no changes"
        return head


@dataclass(frozen=True, slots=True)
class SelectedNode:
    """A node an invariant's query (forEach, else select) picked in the failing state."""

    path: str  # RFC 9535 normalized path into the state document
    label: str  # "ConfigMap default/web" for an object, else "node <path>"
    failing: bool = False  # the invariant fails for this node


@dataclass(frozen=True, slots=True)
class Counterexample:
    """A shortest path that shows a check failing, replayed once before it is reported."""

    #: not-converged | livelock | nondeterministic | controller-error | nondeterministic-controller |
    #: invariant | action-failed
    kind: str
    summary: str  # one line
    steps: tuple[Step, ...] = ()
    #: livelock: the loop (steps after ``steps`` that return to the loop's first state)
    loop: tuple[Step, ...] = ()
    #: nondeterminism: a path to a second converged state, and the diff between the two states
    alternative: tuple[Step, ...] = ()
    state_diff: tuple[tuple[ObjectRef, tuple[DiffEntry, ...]], ...] = ()
    #: free text shown under the story (e.g. the failing invariant nodes, a traceback)
    details: str = ""
    #: the search's state ids along ``steps`` then ``loop`` (one more than their steps: the state
    #: each starts from, then the state after each step); empty when the failure has no path
    nodes: tuple[int, ...] = ()
    #: the same along ``alternative``
    alternative_nodes: tuple[int, ...] = ()
    #: an invariant's selected nodes in the failing state (at most 50, failing ones first)
    selected: tuple[SelectedNode, ...] = ()


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    verdict: Verdict
    message: str = ""  # one line, for JUnit failure@message and the terminal
    counterexamples: tuple[Counterexample, ...] = ()
    #: where in the scenario the check is declared (for ::error annotations)
    position: Position = Position("")


@dataclass(frozen=True, slots=True)
class Stats:
    states: int = 0
    transitions: int = 0
    reconciles: int = 0  # reconcile executions (code actually run)
    memo_hits: int = 0
    max_depth: int = 0
    converged_states: int = 0
    elapsed_seconds: float = 0.0
    #: why the search stopped early ("maxStates 100000 reached", ...); "" when it finished
    bound_hit: str = ""
    #: states partial-order reduction expanded fully because a step was global, by cause, most first
    #: (what made the search fall back to every order; empty without reduction or in a split search)
    global_steps: tuple[tuple[str, int], ...] = ()

    @property
    def states_per_second(self) -> float:
        return self.states / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    @property
    def memo_hit_rate(self) -> float:
        total = self.reconciles + self.memo_hits
        return self.memo_hits / total if total else 0.0


@dataclass(frozen=True, slots=True)
class ConvergedState:
    fingerprint: str
    objects: tuple[Manifest, ...]
    #: one shortest path that reaches it
    path: tuple[Step, ...] = ()


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    name: str
    file: str
    verdict: Verdict
    checks: tuple[Check, ...] = ()
    stats: Stats = Stats()
    converged: tuple[ConvergedState, ...] = ()
    description: str = ""
    #: ISO 8601 UTC start time (JUnit timestamp)
    started_at: str = ""
    #: the load error text when verdict is ERROR
    error: str = ""
    position: Position = Position("")
    #: located warnings about the scenario's input (e.g. a seed field the API server dropped)
    notes: tuple[str, ...] = ()
    #: the explored state graph, bounded; None unless the run was asked to record it (``--html``)
    graph: StateGraph | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of ``kamera check`` over one or more scenarios."""

    scenarios: tuple[ScenarioResult, ...]
    #: run-level remarks a reader must see: weaker containment than usual, an interruption
    notes: tuple[str, ...] = ()

    @property
    def verdict(self) -> Verdict:
        verdicts = {s.verdict for s in self.scenarios}
        for v in (Verdict.ERROR, Verdict.FAILED, Verdict.INCONCLUSIVE):
            if v in verdicts:
                return v
        return Verdict.PASSED

    @property
    def passed(self) -> bool:
        return self.verdict is Verdict.PASSED
