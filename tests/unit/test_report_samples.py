"""Hand-built ``CheckResult`` values the report tests share (and a check that they are well-formed).

Each sample is what the runner would produce for one kind of outcome: a pass, every
counterexample kind, an inconclusive search and a scenario that cannot load.
"""

from __future__ import annotations

from kamera_cli.model.graph import GraphEdge, GraphState, StateGraph
from kamera_cli.model.objects import ObjectRef
from kamera_cli.model.result import (
    Check,
    CheckName,
    CheckResult,
    ConvergedState,
    Counterexample,
    DiffEntry,
    ScenarioResult,
    SelectedNode,
    Stats,
    Step,
    Verdict,
    Write,
)
from kamera_cli.model.scenario import Position

FILE = "scenarios/01-widget/scenario.yaml"
WIDGET = ObjectRef("example.com/v1", "Widget", "default", "demo")
CM = ObjectRef("v1", "ConfigMap", "default", "demo-cfg")

TRACEBACK = "\n".join(
    ["Traceback (most recent call last):"]
    + [
        line
        for n in range(1, 9)
        for line in (f'  File "controllers/widget.py", line {10 * n}, in frame{n}', f"    call_{n}()")
    ]
    + ["KeyError: 'replicas'"]
)


def widget_obj(phase: str = "Ready") -> dict[str, object]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "demo", "namespace": "default"},
        "spec": {"size": 2},
        "status": {"phase": phase},
    }


def cm_obj(value: str = "v") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "demo-cfg", "namespace": "default"},
        "data": {"key": value},
    }


STEP_CREATE = Step(
    1,
    "reconcile",
    "widget",
    "default/demo",
    (
        Write("created", CM, diff=(DiffEntry("add", "/data/key", new="v"),)),
        Write("patched", WIDGET, "status", diff=(DiffEntry("replace", "/status/phase", "Pending", "Ready"),)),
    ),
    reads=("example.com/v1/Widget default/demo", "list /api/v1/namespaces/default/configmaps", str(CM)),
)
STEP_SIDECAR = Step(
    2,
    "reconcile",
    "sidecar",
    "default/demo",
    (
        Write(
            "updated", CM, diff=(DiffEntry("replace", "/data/key", "v", "w"), DiffEntry("remove", "/metadata/labels/x"))
        ),
    ),
)
STEP_WIDGET_AGAIN = Step(
    3,
    "reconcile",
    "widget",
    "default/demo",
    (Write("updated", CM, diff=(DiffEntry("replace", "/data/key", "w", "v"),)),),
)


def stats(**kw: object) -> Stats:
    base: dict[str, object] = {
        "states": 412,
        "transitions": 1203,
        "reconciles": 380,
        "memo_hits": 620,
        "max_depth": 9,
        "converged_states": 1,
        "elapsed_seconds": 0.84,
    }
    base.update(kw)
    return Stats(**base)  # type: ignore[arg-type]


def passing() -> ScenarioResult:
    return ScenarioResult(
        name="widget-basic",
        file=FILE,
        verdict=Verdict.PASSED,
        checks=(
            Check(CheckName.CONVERGES, Verdict.PASSED, position=Position(FILE, 20, 5)),
            Check(CheckName.DETERMINISTIC, Verdict.PASSED, position=Position(FILE, 21, 5)),
            Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.PASSED, position=Position(FILE, 22, 5)),
            Check(CheckName.invariant("one-configmap"), Verdict.PASSED, position=Position(FILE, 25, 7)),
        ),
        stats=stats(),
        converged=(ConvergedState("3f9a0c1d2e4b5a6978", (widget_obj(), cm_obj()), (STEP_CREATE,)),),
        description="A widget owns one ConfigMap.",
        started_at="2026-01-01T00:00:00Z",
        position=Position(FILE, 1, 1),
    )


def fight_graph() -> StateGraph:
    """The livelock's graph: 0 -> 1 (widget creates), 1 -> 2 (sidecar), 2 -> 1 (widget again)."""
    objects = {"w0": widget_obj("Pending"), "w1": widget_obj(), "cv": cm_obj("v"), "cw": cm_obj("w")}
    edge = {"kind": "reconcile", "request": "default/demo"}
    return StateGraph(
        states=(
            GraphState(0, 0, "f0", ("w0",), ("initial",), pending=("widget default/demo",)),
            GraphState(1, 1, "f1", ("cv", "w1"), ("livelock",), pending=("sidecar default/demo",)),
            GraphState(2, 2, "f2", ("cw", "w1"), ("livelock",), pending=("widget default/demo",)),
        ),
        edges=(
            GraphEdge(0, 1, actor="widget", writes=(f"created {CM}", f"patched status of {WIDGET}"), **edge),
            GraphEdge(1, 2, actor="sidecar", writes=(f"updated {CM}",), **edge),
            GraphEdge(2, 1, actor="widget", writes=(f"updated {CM}",), **edge),
        ),
        objects=tuple(sorted(objects.items())),
        total_states=5,
        total_edges=8,
        depth_counts=(1, 1, 2, 1),
        limit=3,
        omitted="2 of 5 states are not recorded",
    )


def livelock() -> ScenarioResult:
    cx = Counterexample(
        "livelock",
        "widget and sidecar keep rewriting default/demo-cfg",
        steps=(STEP_CREATE,),
        loop=(STEP_SIDECAR, STEP_WIDGET_AGAIN),
        nodes=(0, 1, 2, 1),
    )
    return ScenarioResult(
        name="widget-fight",
        file=FILE,
        verdict=Verdict.FAILED,
        checks=(
            Check(
                CheckName.CONVERGES,
                Verdict.FAILED,
                "no converged state is reachable from 1 state",
                (cx,),
                Position(FILE, 20, 5),
            ),
            Check(CheckName.DETERMINISTIC, Verdict.PASSED, position=Position(FILE, 21, 5)),
        ),
        stats=stats(converged_states=0),
        started_at="2026-01-01T00:00:01Z",
        position=Position(FILE, 1, 1),
        graph=fight_graph(),
    )


def controller_error() -> ScenarioResult:
    crash = Step(2, "reconcile", "widget", "default/demo", note="raised KeyError", error=TRACEBACK)
    cx = Counterexample("controller-error", "widget raised KeyError: 'replicas'", steps=(STEP_CREATE, crash))
    return ScenarioResult(
        name="widget-crash",
        file=FILE,
        verdict=Verdict.FAILED,
        checks=(
            Check(
                CheckName.NO_CONTROLLER_ERRORS,
                Verdict.FAILED,
                "widget raised KeyError: 'replicas'",
                (cx,),
                Position(FILE, 22, 5),
            ),
        ),
        stats=stats(),
        position=Position(FILE, 1, 1),
    )


def nondeterministic() -> ScenarioResult:
    other = Step(
        1,
        "reconcile",
        "sidecar",
        "default/demo",
        (Write("created", CM, diff=(DiffEntry("add", "/data/key", new="w"),)),),
    )
    cx = Counterexample(
        "nondeterministic",
        "2 different converged states",
        steps=(STEP_CREATE,),
        alternative=(other,),
        state_diff=((CM, (DiffEntry("replace", "/data/key", "v", "w"),)),),
        nodes=(0, 1),
        alternative_nodes=(0, 2),
    )
    return ScenarioResult(
        name="widget-race",
        file=FILE,
        verdict=Verdict.FAILED,
        checks=(
            Check(
                CheckName.DETERMINISTIC,
                Verdict.FAILED,
                "the order of reconciles decides the outcome",
                (cx,),
                Position(FILE, 21, 5),
            ),
        ),
        stats=stats(converged_states=2),
        converged=(
            ConvergedState("aaaa1111bbbb2222", (cm_obj("v"),), (STEP_CREATE,)),
            ConvergedState("cccc3333dddd4444", (cm_obj("w"),), (other,)),
        ),
        position=Position(FILE, 1, 1),
    )


def invariant_failure() -> ScenarioResult:
    cx = Counterexample(
        "invariant",
        "$.objects[?@.kind == 'ConfigMap'] has 2 nodes, expected count 1",
        steps=(STEP_CREATE,),
        details=(
            "selected nodes:\n  $.objects[1]: v1/ConfigMap default/demo-cfg\n  $.objects[2]: v1/ConfigMap default/old"
        ),
        selected=(SelectedNode("$['items'][1]", "ConfigMap default/demo-cfg", True),
                  SelectedNode("$['items'][2]", "ConfigMap default/old")),
    )
    return ScenarioResult(
        name="widget-leak",
        file=FILE,
        verdict=Verdict.FAILED,
        checks=(
            Check(
                CheckName.invariant("one-configmap"),
                Verdict.FAILED,
                "expected count 1, got 2",
                (cx,),
                Position(FILE, 25, 7),
            ),
        ),
        stats=stats(),
        position=Position(FILE, 1, 1),
    )


def inconclusive() -> ScenarioResult:
    return ScenarioResult(
        name="widget-big",
        file="scenarios/02-big/scenario.yaml",
        verdict=Verdict.INCONCLUSIVE,
        checks=(
            Check(
                CheckName.CONVERGES,
                Verdict.INCONCLUSIVE,
                "no counterexample in the states explored",
                position=Position("scenarios/02-big/scenario.yaml", 14, 5),
            ),
            Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.PASSED),
        ),
        stats=stats(states=100000, transitions=250000, elapsed_seconds=12.5, bound_hit="maxStates 100000 reached"),
        position=Position("scenarios/02-big/scenario.yaml", 1, 1),
    )


def load_error() -> ScenarioResult:
    return ScenarioResult(
        name="broken",
        file="scenarios/03-broken/scenario.yaml",
        verdict=Verdict.ERROR,
        error="scenarios/03-broken/scenario.yaml:7:3: $.spec.controllers[0]: 'entrypoint' is a required property\n"
        "scenarios/03-broken/scenario.yaml:9:5: $.spec.seed: expected an array",
        position=Position("scenarios/03-broken/scenario.yaml", 7, 3),
    )


def everything() -> CheckResult:
    return CheckResult(
        (
            passing(),
            livelock(),
            controller_error(),
            nondeterministic(),
            invariant_failure(),
            inconclusive(),
            load_error(),
        )
    )


def test_samples_cover_every_verdict() -> None:
    assert {s.verdict for s in everything().scenarios} == set(Verdict)
    assert everything().verdict is Verdict.ERROR
