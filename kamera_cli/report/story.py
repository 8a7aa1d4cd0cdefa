"""A counterexample told as a numbered story: what each step did, then what each write changed.

Why a story: a model checker's answer is only useful if a person can replay it in their head.
Like Hypothesis printing the failing program, each step is one line (``Step.headline()``) and
the writes it made follow as a compact diff.  The terminal indents and colours these lines; the
JUnit reporter embeds them verbatim without colour.
"""

from __future__ import annotations

from collections.abc import Iterable

from kamera_cli.model.result import Counterexample, DiffEntry, Step
from kamera_cli.report.style import PLAIN, Style
from kamera_cli.report.text import clean, format_change, format_value, label, one_line, plural

#: diff entries shown per write (or per object of a state diff) unless verbose
DIFF_LIMIT = 12
#: traceback lines shown unless verbose (the last ones: the frames nearest the raise)
TRACEBACK_LIMIT = 12


def diff_line(entry: DiffEntry, style: Style = PLAIN, *, width: int = 60) -> str:
    """``+ /data/key: "v"``, ``~ /status/phase: "A" → "B"``, ``- /metadata/labels/x``."""
    path = label(entry.path)
    if entry.op == "add":
        return style(f"+ {path}: {label(format_value(entry.new, width))}", "green")
    if entry.op == "remove":
        return style(f"- {path}", "red")
    old, new = (label(text) for text in format_change(entry.old, entry.new, width))
    return style(f"~ {path}: {old} → {new}", "yellow")


def diff_lines(entries: Iterable[DiffEntry], style: Style = PLAIN, *, verbose: bool = False) -> list[str]:
    entries = tuple(entries)
    width = 0 if verbose else 60
    shown = entries if verbose else entries[:DIFF_LIMIT]
    lines = [diff_line(e, style, width=width) for e in shown]
    if len(shown) < len(entries):
        lines.append(style(f"… {plural(len(entries) - len(shown), 'more change')}", "dim"))
    return lines


def traceback_lines(error: str, *, verbose: bool = False) -> list[str]:
    lines = clean(error).rstrip("\n").splitlines()
    if verbose or len(lines) <= TRACEBACK_LIMIT:
        return lines
    start = len(lines) - (TRACEBACK_LIMIT - 1)
    # begin the kept tail at a frame's "File ..." line, not at the source line under it
    while start < len(lines) - 1 and not lines[start].lstrip().startswith("File "):
        start += 1
    return [lines[0], f"  … {start - 1} lines omitted", *lines[start:]]


def step_lines(step: Step, style: Style = PLAIN, *, verbose: bool = False,
               seen: dict[str, int] | None = None) -> list[str]:
    """The headline, then (indented under its text) each write's diff and the traceback.

    ``seen`` maps the tracebacks already told on this path to the step that told them: a step that
    raised the same one again shows its first line and refers back (a retried handler failing the
    same way six times is one traceback, not six).
    """
    headline = label(step.headline())
    number, _, rest = headline.partition(" ")
    lines = [f"{style(number, 'bold')} {rest}"]
    pad = " " * (len(number) + 1)
    with_diff = [w for w in step.writes if w.diff]
    for write in with_diff:
        folded = [style(f"(+{write.defaulted} field(s) defaulted by the server)", "dim")] if write.defaulted else []
        if len(step.writes) == 1:
            lines.extend(pad + line for line in [*diff_lines(write.diff, style, verbose=verbose), *folded])
        else:
            lines.append(pad + style(f"{label(str(write.ref))}:", "dim"))
            lines.extend(pad + "  " + line for line in [*diff_lines(write.diff, style, verbose=verbose), *folded])
    if step.log:
        lines.extend(pad + style("│ " + line, "dim") for line in clean(step.log).splitlines())
    if step.error:
        told = None if seen is None else seen.get(step.error)
        if told is not None:
            first = label(clean(step.error).strip().splitlines()[0])
            lines.append(pad + style(first, "red") + style(f" (the same traceback as step {told})", "dim"))
        else:
            lines.extend(pad + style(line, "red") for line in traceback_lines(step.error, verbose=verbose))
            if seen is not None:
                seen[step.error] = step.index
    return lines


#: a path longer than this is shown as its first and last PATH_EDGE steps unless verbose
PATH_LIMIT = 16
PATH_EDGE = 6


def path_lines(steps: Iterable[Step], style: Style = PLAIN, *, verbose: bool = False,
               seen: dict[str, int] | None = None) -> list[str]:
    """One path's steps; ``seen`` (tracebacks told so far, see ``step_lines``) runs on into its loop."""
    seen = {} if seen is None else seen
    shown = list(steps)
    lines: list[str] = []
    if not verbose and len(shown) > PATH_LIMIT:
        skipped = len(shown) - 2 * PATH_EDGE
        for step in shown[:PATH_EDGE]:
            lines.extend(step_lines(step, style, verbose=verbose, seen=seen))
        lines.append(style(f"… {skipped} more steps (all of them with -v, in --json and in JUnit) …", "dim"))
        shown = shown[-PATH_EDGE:]
    for step in shown:
        lines.extend(step_lines(step, style, verbose=verbose, seen=seen))
    return lines or [style("(the initial state)", "dim")]


def story_lines(cx: Counterexample, style: Style = PLAIN, *, verbose: bool = False) -> list[str]:
    """The whole counterexample, unindented: header, path(s), loop, state diff, details."""
    summary = clean(one_line(cx.summary))
    kind = label(cx.kind)
    lines = [style(f"{kind}: ", "bold", "red") + summary if summary else style(kind, "bold", "red")]
    if cx.alternative:  # two paths: each tells its own tracebacks
        lines.append(style("path A:", "bold"))
        lines.extend("  " + line for line in path_lines(cx.steps, style, verbose=verbose))
        lines.append(style("path B:", "bold"))
        lines.extend("  " + line for line in path_lines(cx.alternative, style, verbose=verbose))
    seen: dict[str, int] = {}
    if not cx.alternative and (cx.steps or not cx.loop):
        lines.extend(path_lines(cx.steps, style, verbose=verbose, seen=seen))
    if cx.loop:
        lines.append(style("loop:", "bold", "magenta"))
        lines.extend("  " + line for line in path_lines(cx.loop, style, verbose=verbose, seen=seen))
        lines.append("  " + style(f"↺ back to step {cx.loop[0].index}", "magenta"))
    if cx.state_diff:
        lines.append(style("the states differ:", "bold"))
        for ref, entries in cx.state_diff:
            lines.append(f"  {label(str(ref))}")
            lines.extend("    " + line for line in diff_lines(entries, style, verbose=verbose))
    if cx.details:
        lines.append(style("details:", "bold"))
        lines.extend("  " + line for line in clean(cx.details).rstrip("\n").splitlines())
    return lines


def story(cx: Counterexample, *, verbose: bool = True) -> str:
    """The uncoloured story as one text block (JUnit failure text, annotations, JSON)."""
    return "\n".join(story_lines(cx, PLAIN, verbose=verbose))
