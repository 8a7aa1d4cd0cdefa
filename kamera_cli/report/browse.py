"""The result as a tree to browse: what ``kamera inspect`` shows, without the terminal UI.

Why separate from the UI: what an entry says (the story of a counterexample, a step's reads and
diffs, an outcome's objects) is the product; the TUI library only draws the tree and scrolls the
text.  Keeping the content here makes it testable without a terminal and reusable by any front end.
Every text goes through the same hygiene as the terminal report (``clean``/``label``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import yaml

from kamera_cli.model.graph import StateGraph
from kamera_cli.model.result import CheckResult, ConvergedState, Counterexample, ScenarioResult, Step, Verdict
from kamera_cli.report.story import diff_lines, story, traceback_lines
from kamera_cli.report.terminal import stats_text, summary_line
from kamera_cli.report.text import clean, label, one_line

_MARK = {Verdict.PASSED: "✓", Verdict.FAILED: "✗", Verdict.INCONCLUSIVE: "?", Verdict.ERROR: "!"}
#: recorded states listed under "state graph" (the rest are counted in one entry)
STATES_LISTED = 300


@dataclass(frozen=True)
class Entry:
    """One line of the tree, the text shown when it is selected, and (lazily) what is under it."""

    label: str
    detail: str
    more: Callable[[], tuple[Entry, ...]] | None = None

    def children(self) -> tuple[Entry, ...]:
        return self.more() if self.more is not None else ()


def outline(result: CheckResult) -> Entry:
    """The root: the run's summary, with one entry per scenario under it."""
    notes = "".join(f"\nnote: {clean(n)}" for n in result.notes)
    return Entry(label(summary_line(result)), f"{label(summary_line(result))}{notes}",
                 lambda: tuple(_scenario(s) for s in result.scenarios))


def _scenario(s: ScenarioResult) -> Entry:
    head = f"{_MARK[s.verdict]} {label(s.name)} {s.verdict.value.upper()}"
    lines = [head, f"file: {label(s.file)}"]
    if s.description:
        lines.append(clean(s.description).strip())
    if s.verdict is Verdict.ERROR:
        lines.append(clean(s.error))
    else:
        lines.append(stats_text(s.stats) + (f"; bound hit: {clean(s.stats.bound_hit)}" if s.stats.bound_hit else ""))
    lines.extend(f"warning: {clean(n)}" for n in s.notes)

    def under() -> tuple[Entry, ...]:
        out = [_check_entry(c.name, c.verdict, c.message, c.counterexamples) for c in s.checks]
        if s.converged:
            out.append(Entry(f"converged outcomes ({len(s.converged)})",
                             f"{len(s.converged)} distinct converged state(s)",
                             lambda: tuple(_outcome(i, c) for i, c in enumerate(s.converged))))
        if s.graph is not None:
            out.append(_graph(s.graph))
        return tuple(out)

    return Entry(head, "\n".join(lines), under)


def _check_entry(name: str, verdict: Verdict, message: str, cexs: tuple[Counterexample, ...]) -> Entry:
    head = f"{_MARK[verdict]} {label(name)}" + (f" — {label(one_line(message))}" if message else "")
    more = (lambda: tuple(_counterexample(x) for x in cexs)) if cexs else None
    return Entry(head, f"{head}\n\n{clean(message)}", more)


def _counterexample(cx: Counterexample) -> Entry:
    def under() -> tuple[Entry, ...]:
        out: list[Entry] = []
        prefix = "A " if cx.alternative else ""
        out.extend(_step(s, prefix, _after(cx.nodes, i)) for i, s in enumerate(cx.steps))
        out.extend(_step(s, "loop ", _after(cx.nodes, len(cx.steps) + i)) for i, s in enumerate(cx.loop))
        out.extend(_step(s, "B ", _after(cx.alternative_nodes, i)) for i, s in enumerate(cx.alternative))
        if cx.state_diff:
            text = "\n".join(f"{label(str(ref))}\n" + "\n".join("  " + x for x in diff_lines(d, verbose=True))
                             for ref, d in cx.state_diff)
            out.append(Entry("the states differ", text))
        if cx.selected:
            text = "\n".join(f"{'✗' if n.failing else '·'} {label(n.label)}  {label(n.path)}" for n in cx.selected)
            out.append(Entry(f"selected nodes ({len(cx.selected)})", "in the failing state:\n" + text))
        return tuple(out)

    return Entry(f"{label(cx.kind)}: {label(one_line(cx.summary))}", story(cx, verbose=True), under)


def _after(nodes: tuple[int, ...], index: int) -> int | None:
    return nodes[index + 1] if index + 1 < len(nodes) else None


def _step(step: Step, prefix: str, node: int | None) -> Entry:
    lines = [label(step.headline())]
    if node is not None:
        lines.append(f"leads to state {node}")
    if step.reads:
        lines.append("read or wrote:")
        lines.extend(f"  {label(r)}" for r in step.reads)
    for w in step.writes:
        folded = f" (+{w.defaulted} field(s) defaulted by the server)" if w.defaulted else ""
        lines.append(label(w.describe()) + folded)
        lines.extend("  " + x for x in diff_lines(w.diff, verbose=True))
    if step.log:
        lines.append("printed:")
        lines.extend("  │ " + x for x in clean(step.log).splitlines())
    if step.error:
        lines.extend(traceback_lines(step.error, verbose=True))
    return Entry(prefix + label(step.headline()), "\n".join(lines))


def _yaml(obj: object) -> str:
    return clean(yaml.safe_dump(obj, sort_keys=False, allow_unicode=True))


def _outcome(i: int, c: ConvergedState) -> Entry:
    def under() -> tuple[Entry, ...]:
        steps = [_step(s, "", None) for s in c.path]
        objs = [Entry(_ref(o), _yaml(dict(o))) for o in c.objects]
        return (Entry(f"path ({len(c.path)} steps)", "one shortest path to this outcome", lambda: tuple(steps)),
                Entry(f"objects ({len(c.objects)})", "the cluster at this outcome", lambda: tuple(objs)))

    detail = (f"outcome {i + 1}: fingerprint {c.fingerprint}\n"
              f"{len(c.objects)} object(s), reached in {len(c.path)} step(s)")
    return Entry(f"outcome {i + 1} ({len(c.objects)} objects)", detail, under)


def _ref(obj: object) -> str:
    if not isinstance(obj, dict):
        return "object"
    meta = obj.get("metadata") or {}
    ns = meta.get("namespace") or ""
    return label(f"{obj.get('apiVersion', '')}/{obj.get('kind', '')} {ns + '/' if ns else ''}{meta.get('name', '')}")


def _graph(g: StateGraph) -> Entry:
    objects = dict(g.objects)
    out_edges: dict[int, list[str]] = {}
    in_edges: dict[int, list[str]] = {}
    for e in g.edges:
        step = f"{e.actor} {e.request}".strip() + (f" → {'; '.join(e.writes)}" if e.writes else "")
        out_edges.setdefault(e.src, []).append(f"{label(step)} → state {e.dst}")
        in_edges.setdefault(e.dst, []).append(f"from state {e.src}: {label(step)}")

    def state(sid: int) -> Entry:
        st = next(s for s in g.states if s.id == sid)
        lines = [f"state {st.id}, depth {st.depth}" + (f", outcome {st.outcome + 1}" if st.outcome >= 0 else ""),
                 "tags: " + (", ".join(st.tags) or "none"), "pending: " + (", ".join(map(label, st.pending)) or "none"),
                 "reached by:", *("  " + x for x in in_edges.get(st.id, ["(an initial state)"])),
                 "next steps:", *("  " + x for x in out_edges.get(st.id, ["(none recorded)"]))]
        objs = tuple(Entry(_ref(objects[k]), _yaml(objects[k])) for k in st.objects if k in objects)
        tags = f" [{', '.join(st.tags)}]" if st.tags else ""
        return Entry(f"state {st.id} (depth {st.depth}){tags}", "\n".join(lines), lambda: objs)

    listed = g.states[:STATES_LISTED]
    detail = (f"{len(g.states):,} of {g.total_states:,} explored states recorded, {len(g.edges):,} of "
              f"{g.total_edges:,} transitions" + (f"\nnot recorded: {clean(g.omitted)}" if g.omitted else ""))

    def under() -> tuple[Entry, ...]:
        entries = [state(s.id) for s in listed]
        if len(g.states) > len(listed):
            entries.append(Entry(f"… {len(g.states) - len(listed):,} more recorded states",
                                 "open the HTML report (kamera check --html) to browse them all"))
        return tuple(entries)

    return Entry(f"state graph ({len(g.states):,} of {g.total_states:,} states)", detail, under)
