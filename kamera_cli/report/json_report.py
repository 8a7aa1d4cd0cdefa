"""The JSON report: the complete result, versioned, in a stable byte-for-byte form.

Why complete and reversible: later tools (a replay command, a diff between runs, dashboards)
should read this file rather than re-run a search, so ``from_json(to_json(r)) == r`` holds and
``schemas/result.schema.json`` describes every field.  Derived figures (rates, the story text,
step headlines) are included for readers but ignored when reading back.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kamera_cli.errors import ExitCode, KameraError
from kamera_cli.model.graph import GraphEdge, GraphState, StateGraph
from kamera_cli.model.objects import ObjectRef, plain_json
from kamera_cli.model.result import (
    RESULT_FORMAT_VERSION,
    RESULT_FORMAT_VERSIONS_READ,
    Check,
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
from kamera_cli.report.story import story

JSONDict = dict[str, Any]


class ResultFormatError(KameraError):
    """A JSON result document that is not one kamera wrote (wrong version or shape)."""

    exit_code = ExitCode.USAGE


# --- writing --------------------------------------------------------------------------------------


def to_json(result: CheckResult) -> JSONDict:
    counts = {v.value: 0 for v in Verdict}
    for scenario in result.scenarios:
        counts[scenario.verdict.value] += 1
    doc: JSONDict = {
        "version": RESULT_FORMAT_VERSION,
        "verdict": result.verdict.value,
        "passed": result.passed,
        "summary": {
            "scenarios": len(result.scenarios),
            **counts,
            "elapsed_seconds": sum(s.stats.elapsed_seconds for s in result.scenarios),
        },
        "scenarios": [_scenario(s) for s in result.scenarios],
    }
    if result.notes:
        doc["notes"] = list(result.notes)
    out: JSONDict = _sorted(doc)
    return out


def dumps(result: CheckResult) -> str:
    """The file's exact text: sorted keys, two-space indent, UTF-8, trailing newline."""
    return json.dumps(to_json(result), sort_keys=True, indent=2, ensure_ascii=False, default=str) + "\n"


def write_json(result: CheckResult, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(dumps(result), encoding="utf-8")


def _scenario(s: ScenarioResult) -> JSONDict:
    return {
        "name": s.name,
        "file": s.file,
        "verdict": s.verdict.value,
        "description": s.description,
        "started_at": s.started_at,
        "error": s.error,
        "notes": list(s.notes),
        "position": _position(s.position),
        "stats": _stats(s.stats),
        "checks": [_check(c) for c in s.checks],
        "converged": [_converged(c) for c in s.converged],
        **({"graph": graph_json(s.graph)} if s.graph is not None else {}),
    }


def _stats(s: Stats) -> JSONDict:
    return {
        "states": s.states,
        "transitions": s.transitions,
        "reconciles": s.reconciles,
        "memo_hits": s.memo_hits,
        "max_depth": s.max_depth,
        "converged_states": s.converged_states,
        "elapsed_seconds": s.elapsed_seconds,
        "bound_hit": s.bound_hit,
        "states_per_second": round(s.states_per_second, 3),
        "memo_hit_rate": round(s.memo_hit_rate, 6),
        "global_steps": [{"cause": cause, "states": n} for cause, n in s.global_steps],
    }


def _check(c: Check) -> JSONDict:
    return {
        "name": c.name,
        "verdict": c.verdict.value,
        "message": c.message,
        "position": _position(c.position),
        "counterexamples": [_counterexample(x) for x in c.counterexamples],
    }


def _counterexample(x: Counterexample) -> JSONDict:
    return {
        "kind": x.kind,
        "summary": x.summary,
        "steps": [_step(s) for s in x.steps],
        "loop": [_step(s) for s in x.loop],
        "alternative": [_step(s) for s in x.alternative],
        "state_diff": [{"ref": _ref(ref), "diff": [_diff(d) for d in entries]} for ref, entries in x.state_diff],
        "details": x.details,
        "story": story(x, verbose=True),
        "nodes": list(x.nodes),
        "alternative_nodes": list(x.alternative_nodes),
        "selected": [{"path": n.path, "label": n.label, "failing": n.failing} for n in x.selected],
    }


def _step(s: Step) -> JSONDict:
    return {
        "index": s.index,
        "kind": s.kind,
        "actor": s.actor,
        "request": s.request,
        "note": s.note,
        "error": s.error,
        "log": s.log,
        "reads": list(s.reads),
        "writes": [_write(w) for w in s.writes],
        "headline": s.headline(),
    }


def _write(w: Write) -> JSONDict:
    return {
        "verb": w.verb,
        "ref": _ref(w.ref),
        "subresource": w.subresource,
        "refused": w.refused,
        "defaulted": w.defaulted,
        "diff": [_diff(d) for d in w.diff],
        "description": w.describe(),
    }


def _diff(d: DiffEntry) -> JSONDict:
    return {"op": d.op, "path": d.path, "old": plain_json(d.old), "new": plain_json(d.new)}


def _ref(r: ObjectRef) -> JSONDict:
    return {"api_version": r.api_version, "kind": r.kind, "namespace": r.namespace, "name": r.name}


def _position(p: Position) -> JSONDict:
    return {"file": p.file, "line": p.line, "column": p.column}


def _converged(c: ConvergedState) -> JSONDict:
    return {
        "fingerprint": c.fingerprint,
        "objects": [plain_json(o) for o in c.objects],
        "path": [_step(s) for s in c.path],
    }


def graph_json(g: StateGraph) -> JSONDict:
    """The state graph as JSON (the HTML report embeds the same form)."""
    return {
        "states": [{"id": n.id, "depth": n.depth, "fingerprint": n.fingerprint, "objects": list(n.objects),
                    "tags": list(n.tags), "outcome": n.outcome, "pending": list(n.pending)} for n in g.states],
        "edges": [{"src": e.src, "dst": e.dst, "kind": e.kind, "actor": e.actor, "request": e.request,
                   "note": e.note, "writes": list(e.writes), "error": e.error} for e in g.edges],
        "objects": {key: plain_json(obj) for key, obj in g.objects},
        "total_states": g.total_states,
        "total_edges": g.total_edges,
        "depth_counts": list(g.depth_counts),
        "limit": g.limit,
        "omitted": g.omitted,
    }


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


# --- reading --------------------------------------------------------------------------------------


def from_json(doc: Mapping[str, Any]) -> CheckResult:
    """Rebuild the ``CheckResult`` a document was written from; raises ``ResultFormatError``."""
    if not isinstance(doc, Mapping):
        raise ResultFormatError("a kamera result document is a JSON object")
    version = doc.get("version")
    if version not in RESULT_FORMAT_VERSIONS_READ:
        raise ResultFormatError(
            f"unsupported result format version {version!r}: this kamera reads "
            + " and ".join(repr(v) for v in RESULT_FORMAT_VERSIONS_READ)
        )
    try:
        return CheckResult(tuple(_read_scenario(s) for s in doc["scenarios"]),
                           notes=tuple(str(n) for n in doc.get("notes", ())))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise ResultFormatError(f"malformed kamera result document: {type(exc).__name__}: {exc}") from exc


def _read_scenario(d: Mapping[str, Any]) -> ScenarioResult:
    return ScenarioResult(
        name=str(d["name"]),
        file=str(d["file"]),
        verdict=Verdict(d["verdict"]),
        checks=tuple(_read_check(c) for c in d.get("checks", ())),
        stats=_read_stats(d.get("stats", {})),
        converged=tuple(_read_converged(c) for c in d.get("converged", ())),
        description=str(d.get("description", "")),
        started_at=str(d.get("started_at", "")),
        error=str(d.get("error", "")),
        position=_read_position(d.get("position")),
        notes=tuple(str(n) for n in d.get("notes", ())),
        graph=_read_graph(d["graph"]) if d.get("graph") is not None else None,
    )


def _read_graph(d: Mapping[str, Any]) -> StateGraph:
    return StateGraph(
        states=tuple(GraphState(id=int(n["id"]), depth=int(n["depth"]), fingerprint=str(n["fingerprint"]),
                                objects=tuple(str(k) for k in n.get("objects", ())),
                                tags=tuple(str(t) for t in n.get("tags", ())), outcome=int(n.get("outcome", -1)),
                                pending=tuple(str(p) for p in n.get("pending", ())))
                     for n in d.get("states", ())),
        edges=tuple(GraphEdge(src=int(e["src"]), dst=int(e["dst"]), kind=str(e["kind"]), actor=str(e["actor"]),
                              request=str(e.get("request", "")), note=str(e.get("note", "")),
                              writes=tuple(str(w) for w in e.get("writes", ())), error=bool(e.get("error", False)))
                    for e in d.get("edges", ())),
        objects=tuple(sorted((str(k), v) for k, v in d.get("objects", {}).items())),
        total_states=int(d.get("total_states", 0)),
        total_edges=int(d.get("total_edges", 0)),
        depth_counts=tuple(int(c) for c in d.get("depth_counts", ())),
        limit=int(d.get("limit", 0)),
        omitted=str(d.get("omitted", "")),
    )


def _read_stats(d: Mapping[str, Any]) -> Stats:
    return Stats(
        states=int(d.get("states", 0)),
        transitions=int(d.get("transitions", 0)),
        reconciles=int(d.get("reconciles", 0)),
        memo_hits=int(d.get("memo_hits", 0)),
        max_depth=int(d.get("max_depth", 0)),
        converged_states=int(d.get("converged_states", 0)),
        elapsed_seconds=float(d.get("elapsed_seconds", 0.0)),
        bound_hit=str(d.get("bound_hit", "")),
        global_steps=tuple((str(g["cause"]), int(g["states"])) for g in d.get("global_steps") or ()),
    )


def _read_check(d: Mapping[str, Any]) -> Check:
    return Check(
        name=str(d["name"]),
        verdict=Verdict(d["verdict"]),
        message=str(d.get("message", "")),
        counterexamples=tuple(_read_counterexample(x) for x in d.get("counterexamples", ())),
        position=_read_position(d.get("position")),
    )


def _read_counterexample(d: Mapping[str, Any]) -> Counterexample:
    return Counterexample(
        kind=str(d["kind"]),
        summary=str(d.get("summary", "")),
        steps=_read_steps(d.get("steps", ())),
        loop=_read_steps(d.get("loop", ())),
        alternative=_read_steps(d.get("alternative", ())),
        state_diff=tuple(
            (_read_ref(e["ref"]), tuple(_read_diff(x) for x in e.get("diff", ()))) for e in d.get("state_diff", ())
        ),
        details=str(d.get("details", "")),
        nodes=tuple(int(n) for n in d.get("nodes", ())),
        alternative_nodes=tuple(int(n) for n in d.get("alternative_nodes", ())),
        selected=tuple(SelectedNode(str(n["path"]), str(n["label"]), bool(n.get("failing", False)))
                       for n in d.get("selected", ())),
    )


def _read_steps(items: Any) -> tuple[Step, ...]:
    return tuple(
        Step(
            index=int(d["index"]),
            kind=str(d["kind"]),
            actor=str(d["actor"]),
            request=str(d.get("request", "")),
            writes=tuple(_read_write(w) for w in d.get("writes", ())),
            note=str(d.get("note", "")),
            error=str(d.get("error", "")),
            log=str(d.get("log", "")),
            reads=tuple(str(r) for r in d.get("reads", ())),
        )
        for d in items
    )


def _read_write(d: Mapping[str, Any]) -> Write:
    return Write(
        verb=str(d["verb"]),
        ref=_read_ref(d["ref"]),
        subresource=str(d.get("subresource", "")),
        diff=tuple(_read_diff(x) for x in d.get("diff", ())),
        refused=int(d.get("refused", 0)),
        defaulted=int(d.get("defaulted", 0)),
    )


def _read_diff(d: Mapping[str, Any]) -> DiffEntry:
    return DiffEntry(op=str(d["op"]), path=str(d["path"]), old=d.get("old"), new=d.get("new"))


def _read_ref(d: Mapping[str, Any]) -> ObjectRef:
    return ObjectRef(str(d["api_version"]), str(d["kind"]), str(d.get("namespace", "")), str(d["name"]))


def _read_position(d: Any) -> Position:
    if not d:
        return Position("")
    return Position(str(d.get("file", "")), int(d.get("line", 0)), int(d.get("column", 0)))


def _read_converged(d: Mapping[str, Any]) -> ConvergedState:
    return ConvergedState(
        fingerprint=str(d["fingerprint"]),
        objects=tuple(d.get("objects", ())),
        path=_read_steps(d.get("path", ())),
    )
