"""The HTML report: one self-contained file with the summary, the stories and the explored state graph.

Why one file with everything inlined: it is opened from a CI artifact, offline, often from a zip;
anything fetched from a network or a sibling file would be missing there.  The graph library
(Cytoscape.js, vendored under ``assets/`` with its licence) and the page's own script and style are
inlined when the file is written, and a Content-Security-Policy forbids every fetch and every script
but those exact ones (by hash), so even a string that slipped past escaping could not run.

What is rendered here and what in the browser: the summary and every counterexample timeline are
plain HTML written here (readable without JavaScript, and testable without a browser); the state
graph, the object viewer and the diffs between states are drawn by ``assets/report.js`` from a JSON
island.  Every text from users or controllers goes through ``html.escape`` here and ``textContent``
there, never through markup.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from dataclasses import replace
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from kamera_cli.model.result import Check, CheckResult, Counterexample, DiffEntry, ScenarioResult, Step, Verdict
from kamera_cli.report.json_report import graph_json
from kamera_cli.report.terminal import stats_text, summary_line
from kamera_cli.report.text import format_value, strip_ansi

#: the vendored graph library (see assets/README.md for its origin and checksum)
CYTOSCAPE_ASSET = "cytoscape-3.34.4.min.js"
CYTOSCAPE_VERSION = "3.34.4"

_MARK = {Verdict.PASSED: "✓", Verdict.FAILED: "✗", Verdict.INCONCLUSIVE: "?", Verdict.ERROR: "!"}
_OP = {"add": "+", "remove": "-", "replace": "~"}


def _asset(name: str) -> str:
    return (resources.files("kamera_cli.report") / "assets" / name).read_text(encoding="utf-8")


def _e(text: object) -> str:
    """Escaped for HTML text and attribute values; ANSI sequences dropped (they mean nothing here)."""
    return html.escape(strip_ansi(str(text)), quote=True)


def _json_island(data: Any) -> str:
    """JSON that cannot end its <script> element: <, >, & and the JS line separators as \\u escapes."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escape)
    return text


def _script_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"


# --- the data the page script reads -------------------------------------------------------------

#: scenarios are listed failing first: what a reader opens the report for
_ORDER = {Verdict.ERROR: 0, Verdict.FAILED: 1, Verdict.INCONCLUSIVE: 2, Verdict.PASSED: 3}


def failing_first(result: CheckResult) -> CheckResult:
    """The result with its scenarios in report order: errors, failures, inconclusive, passes (stable)."""
    return replace(result, scenarios=tuple(sorted(result.scenarios, key=lambda s: _ORDER[s.verdict])))


def abbreviations(actors: list[str]) -> dict[str, str]:
    """Short, distinct edge labels for a graph's actors: ``garbage-collector`` -> ``gc``.

    Why: a full controller name on every transition is unreadable at the zoom a whole graph is drawn
    at; one to three letters are, with the legend (and a hover) saying what each stands for. A name
    of at most 3 characters is kept; others take the first letter of each word (split on ``-``,
    ``_``, ``/``, ``.``, ``:`` and spaces), or their first two letters for a one-word name, with a
    number added when two would read the same.
    """
    out: dict[str, str] = {}
    taken: set[str] = set()
    for actor in sorted(set(actors), key=lambda a: (len(a) > 3, a)):  # names kept as they are claim theirs first
        words = [w for w in actor.replace("_", "-").replace("/", "-").replace(".", "-").replace(":", "-")
                 .replace(" ", "-").split("-") if w]
        short = actor if len(actor) <= 3 else ("".join(w[0] for w in words) if len(words) > 1 else actor[:2])
        candidate, n = short, 2
        while candidate in taken:
            candidate, n = f"{short}{n}", n + 1
        taken.add(candidate)
        out[actor] = candidate
    return out



def page_data(result: CheckResult) -> dict[str, Any]:
    """What ``report.js`` draws: per scenario its graph and the state ids of each counterexample."""
    scenarios = []
    for s in result.scenarios:
        paths = []
        for ci, check in enumerate(s.checks):
            for xi, cx in enumerate(check.counterexamples):
                if cx.nodes or cx.alternative_nodes:
                    paths.append({"id": f"{ci}.{xi}", "check": check.name, "kind": cx.kind, "summary": cx.summary,
                                  "nodes": list(cx.nodes), "loop_start": len(cx.steps) if cx.loop else -1,
                                  "alternative": list(cx.alternative_nodes)})
        labels = abbreviations([e.actor for e in s.graph.edges]) if s.graph is not None else {}
        scenarios.append({"name": s.name, "verdict": s.verdict.value, "paths": paths, "abbrev": labels,
                          "graph": graph_json(s.graph) if s.graph is not None else None})
    return {"scenarios": scenarios}


# --- the static part ------------------------------------------------------------------------------


def _diff_table(entries: tuple[DiffEntry, ...]) -> str:
    rows = []
    for d in entries:
        old = "" if d.op == "add" else format_value(d.old, 0)
        new = "" if d.op == "remove" else format_value(d.new, 0)
        rows.append(f'<tr class="op-{_e(d.op)}"><td class="op">{_OP.get(d.op, "?")}</td><td class="path">'
                    f'{_e(d.path)}</td><td class="old">{_e(old)}</td><td class="new">{_e(new)}</td></tr>')
    return f'<table class="diff">{"".join(rows)}</table>' if rows else ""


def _step(step: Step, node: int | None, role: str) -> str:
    attrs = f' data-node="{node}"' if node is not None else ""
    head = (f'<span class="idx">{step.index}</span> <span class="actor">{_e(step.actor)}</span> '
            f'<span class="kind">{_e(step.kind)}</span>'
            + (f' <span class="req">{_e(step.request)}</span>' if step.request else "")
            + (f' <span class="note">{_e(step.note)}</span>' if step.note else ""))
    parts = [f'<li class="step {role}"{attrs}><div class="step-head">{head}'
             + ('<button type="button" class="goto" title="select the state after this step in the graph">'
                'state ↗</button>' if node is not None else "") + "</div>"]
    if step.reads:
        items = "".join(f"<li>{_e(r)}</li>" for r in step.reads)
        parts.append(f'<details class="reads"><summary>read or wrote {len(step.reads)} '
                     f'region{"s" if len(step.reads) != 1 else ""}</summary><ul>{items}</ul></details>')
    if step.writes:
        writes = []
        for w in step.writes:
            extra = (f' <span class="dim">(+{w.defaulted} field(s) defaulted by the server)</span>'
                     if w.defaulted else "")
            writes.append(f'<div class="write"><div class="wdesc">{_e(w.describe())}{extra}</div>'
                          f"{_diff_table(w.diff)}</div>")
        parts.append(f'<div class="writes">{"".join(writes)}</div>')
    elif step.kind == "reconcile" and not step.error:
        parts.append('<div class="dim">no changes</div>')
    if step.log:
        parts.append(f'<pre class="log">{_e(step.log)}</pre>')
    if step.error:
        parts.append(f'<pre class="error">{_e(step.error)}</pre>')
    parts.append("</li>")
    return "".join(parts)


def _steps(steps: tuple[Step, ...], nodes: tuple[int, ...], offset: int, role: str) -> str:
    def node_after(i: int) -> int | None:
        at = offset + i + 1
        return nodes[at] if at < len(nodes) else None

    return "".join(_step(step, node_after(i), role) for i, step in enumerate(steps))


def _timeline_list(cx: Counterexample) -> str:
    """The counterexample's actions at a glance, one line each, before the steps in full.

    Why: the full steps carry diffs and tracebacks, so a long path takes screens; this list is the
    story's outline (who did what to which object, in order, and where a loop returns).
    """
    def items(steps: tuple[Step, ...]) -> str:
        return "".join(f'<li value="{step.index}">{_e(step.headline().partition(" ")[2])}</li>' for step in steps)

    if not (cx.steps or cx.loop or cx.alternative):
        return ""
    parts = ['<div class="actions"><h4>actions</h4>']
    if cx.alternative:
        parts.append(f'<p class="dim">path A</p><ol class="actions">{items(cx.steps)}</ol>'
                     f'<p class="dim">path B</p><ol class="actions">{items(cx.alternative)}</ol>')
    else:
        parts.append(f'<ol class="actions">{items(cx.steps)}{items(cx.loop)}</ol>')
        if cx.loop:
            parts.append(f'<p class="loop">↺ back to step {cx.loop[0].index}</p>')
    parts.append("</div>")
    return "".join(parts)


def _counterexample(cx: Counterexample, scenario: int, path_id: str) -> str:
    button = (f'<button type="button" class="show-path" data-scenario="{scenario}" data-path="{_e(path_id)}">'
              "show in graph</button>") if (cx.nodes or cx.alternative_nodes) else ""
    out = [f'<details class="cex" open><summary><span class="cex-kind">{_e(cx.kind)}</span>: {_e(cx.summary)}'
           f"</summary>{button}"]
    out.append(_timeline_list(cx))
    start = f' data-node="{cx.nodes[0]}"' if cx.nodes else ""
    if cx.alternative:
        out.append(f'<h4>path A</h4><ol class="timeline"{start}>{_steps(cx.steps, cx.nodes, 0, "path-a")}</ol>')
        out.append(f'<h4>path B</h4><ol class="timeline">'
                   f'{_steps(cx.alternative, cx.alternative_nodes, 0, "path-b")}</ol>')
    elif cx.steps:
        out.append(f'<ol class="timeline"{start}>{_steps(cx.steps, cx.nodes, 0, "path")}</ol>')
    elif not cx.loop:
        out.append('<p class="dim">(the initial state)</p>')
    if cx.loop:
        out.append(f'<h4 class="loop">loop</h4><ol class="timeline loop" start="{cx.loop[0].index}">'
                   f'{_steps(cx.loop, cx.nodes, len(cx.steps), "loop")}</ol>'
                   f'<p class="loop">↺ back to step {cx.loop[0].index}</p>')
    if cx.state_diff:
        out.append("<h4>the states differ</h4>")
        out.extend(f'<div class="write"><div class="wdesc">{_e(ref)}</div>{_diff_table(entries)}</div>'
                   for ref, entries in cx.state_diff)
    if cx.selected:
        rows = "".join(f'<tr class="{"failing" if n.failing else ""}"><td>{"✗" if n.failing else "·"}</td>'
                       f"<td>{_e(n.label)}</td><td class=\"path\">{_e(n.path)}</td></tr>" for n in cx.selected)
        out.append(f'<h4>selected nodes in the failing state</h4><table class="selected">{rows}</table>')
    if cx.details:
        out.append(f'<h4>details</h4><pre class="details">{_e(cx.details)}</pre>')
    out.append("</details>")
    return "".join(out)


def _check(check: Check, scenario: int, ci: int) -> str:
    mark = _MARK[check.verdict]
    row = (f'<tr class="check v-{check.verdict.value}"><td class="mark">{mark}</td><td class="name">{_e(check.name)}'
           f'</td><td class="msg">{_e(check.message)}</td></tr>')
    if not check.counterexamples:
        return row
    stories = "".join(_counterexample(cx, scenario, f"{ci}.{xi}") for xi, cx in enumerate(check.counterexamples))
    return row + f'<tr class="stories"><td></td><td colspan="2">{stories}</td></tr>'


def _scenario(s: ScenarioResult, index: int) -> str:
    v = s.verdict
    out = [f'<section class="scenario v-{v.value}" id="scenario-{index}" data-scenario="{index}">',
           f'<h2><span class="mark">{_MARK[v]}</span> {_e(s.name)} <span class="badge v-{v.value}">'
           f"{v.value.upper()}</span></h2>",
           f'<p class="file">{_e(s.file)}</p>']
    if s.description:
        out.append(f'<p class="desc">{_e(s.description)}</p>')
    if v is Verdict.ERROR:
        out.append(f'<pre class="error">{_e(s.error)}</pre>')
    else:
        bound = f' <span class="bound">bound hit: {_e(s.stats.bound_hit)}</span>' if s.stats.bound_hit else ""
        out.append(f'<p class="stats">{_e(stats_text(s.stats))}{bound}</p>')
    if s.notes:
        out.append('<ul class="notes">' + "".join(f"<li>{_e(n)}</li>" for n in s.notes) + "</ul>")
    checks = s.checks
    if s.graph is None:  # no graph to point into: no "show in graph" / "state ↗" buttons
        checks = tuple(replace(c, counterexamples=tuple(replace(x, nodes=(), alternative_nodes=())
                                                        for x in c.counterexamples)) for c in checks)
    rows = "".join(_check(c, index, ci) for ci, c in enumerate(checks))
    out.append(f'<table class="checks">{rows}</table>')
    if s.converged:
        outcome_node = {st.outcome: st.id for st in s.graph.states if st.outcome >= 0} if s.graph else {}
        items = []
        for k, c in enumerate(s.converged):
            node = outcome_node.get(k)
            goto = (f' <button type="button" class="goto-state" data-scenario="{index}" data-node="{node}">'
                    "state ↗</button>") if node is not None else ""
            body = yaml.safe_dump_all([dict(o) for o in c.objects], sort_keys=False, allow_unicode=True)
            items.append(f'<li><details><summary>outcome {k + 1}: {len(c.objects)} object(s), reached in '
                         f"{len(c.path)} step(s) <code>{_e(c.fingerprint[:12])}</code></summary>"
                         f'<pre class="yaml">{_e(body)}</pre></details>{goto}</li>')
        out.append(f'<h3>converged outcomes</h3><ol class="outcomes">{"".join(items)}</ol>')
    out.append("</section>")
    return "".join(out)


_EXPLORER = """<section id="explorer"><h2>State graph</h2>
<div class="toolbar">
<label>scenario <select id="graph-scenario"></select></label>
<label>collapse <select id="collapse"><option value="none">nothing</option>
<option value="depth">deeper than…</option>
<option value="objects">states with the same objects</option></select></label>
<label id="depth-label" hidden>depth <input id="depth" type="number" min="0" value="6"></label>
<label>highlight <select id="highlight"><option value="">no counterexample</option></select></label>
<button type="button" id="fit">fit</button>
<span class="legend"><i class="lg initial"></i>initial <i class="lg outcome"></i>converged
<i class="lg livelock"></i>livelock <i class="lg bad"></i>violation / error / stuck
<i class="lg unexpanded"></i>not expanded
<i class="lg path"></i>highlighted path</span>
</div>
<p id="edge-legend" class="legend"></p>
<p id="graph-note" class="graph-note"></p>
<div class="explorer-body"><div id="graph" role="img" aria-label="explored state graph"></div>
<aside id="inspector"><div id="state-panel"><p class="dim">Click a state (or a transition) to see its objects.
Drag to pan, scroll to zoom.</p></div>
<div id="compare"><h3>Compare two states</h3>
<label>A <select id="diff-a"></select></label> <label>B <select id="diff-b"></select></label>
<label><input type="checkbox" id="show-noise"> show bookkeeping</label>
<div id="diff-panel"></div></div></aside></div>
<noscript><p>The state graph needs JavaScript; the summary above does not.</p></noscript>
</section>"""


def to_html(result: CheckResult, *, generated_at: str | None = None) -> str:
    """The complete page. ``generated_at`` (ISO 8601) is shown in the header; now when omitted."""
    when = generated_at or datetime.now(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
    result = failing_first(result)
    verdict = result.verdict
    scripts = [_asset(CYTOSCAPE_ASSET), _asset("report.js")]
    csp = ("default-src 'none'; img-src data:; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
           "script-src " + " ".join(_script_hash(s) for s in scripts))
    nav = "".join(f'<li><a href="#scenario-{i}" class="v-{s.verdict.value}">{_MARK[s.verdict]} {_e(s.name)}</a></li>'
                  for i, s in enumerate(result.scenarios))
    notes = "".join(f"<li>{_e(n)}</li>" for n in result.notes)
    has_graph = any(s.graph is not None for s in result.scenarios)
    explorer = _EXPLORER if has_graph else (
        '<section id="explorer"><h2>State graph</h2><p class="dim">Not recorded: the result carries no state '
        "graph (<code>kamera check --html</code> records one).</p></section>")
    return "".join([
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{_e(csp)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>kamera: {verdict.value.upper()} — {_e(summary_line(result))}</title>",
        f"<style>{_asset('report.css')}</style></head><body>",
        f'<header><h1>kamera report <span class="badge v-{verdict.value}">{verdict.value.upper()}</span></h1>',
        f'<p class="summary">{_e(summary_line(result))}</p>',
        f'<ul class="notes">{notes}</ul>' if notes else "",
        f'<p class="meta">written {_e(when)} · kamera {_e(_version())}</p>',
        f'<nav><ul>{nav}</ul></nav></header><main><section id="scenarios">',
        "".join(_scenario(s, i) for i, s in enumerate(result.scenarios)),
        f"</section>{explorer}</main>",
        f'<footer>Graph drawing: Cytoscape.js {CYTOSCAPE_VERSION} (MIT licence, © The Cytoscape Consortium; '
        "its notice is included in this file).</footer>",
        f'<script type="application/json" id="kamera-data">{_json_island(page_data(result))}</script>',
        *(f"<script>{s}</script>" for s in scripts),
        "</body></html>\n",
    ])


def write_html(result: CheckResult, path: str | os.PathLike[str]) -> None:
    target = Path(path)
    if target.parent != Path():
        target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(to_html(result), encoding="utf-8")


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kamera-cli")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"
