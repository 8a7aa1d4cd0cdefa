"""The terminal report: one line per scenario, one per check, and a story per counterexample.

Why a pure function returning text: the CLI decides where it goes (stdout), whether it is
coloured (isatty, NO_COLOR) and whether GitHub annotations follow; tests pin the exact text.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from kamera_cli.model.objects import Manifest, ObjectRef
from kamera_cli.model.result import Check, CheckResult, ConvergedState, ScenarioResult, Stats, Verdict
from kamera_cli.report.story import story, story_lines
from kamera_cli.report.style import Style
from kamera_cli.report.text import clean, format_duration, format_rate, label, one_line, plural

QUIET = -1
NORMAL = 0
VERBOSE = 1

#: lines of a counterexample story carried inside one GitHub annotation
ANNOTATION_STORY_LINES = 40

_MARK = {
    Verdict.PASSED: ("✓", "green"),
    Verdict.FAILED: ("✗", "red"),
    Verdict.INCONCLUSIVE: ("?", "yellow"),
    Verdict.ERROR: ("!", "red"),
}


def render(result: CheckResult, *, color: bool = False, verbosity: int = NORMAL, github: bool = False) -> str:
    """The whole report, ending with the summary line (and annotations when ``github``)."""
    style = Style(color)
    lines: list[str] = []
    spaced = False
    for scenario in result.scenarios:
        if verbosity <= QUIET and scenario.verdict is Verdict.PASSED:
            continue
        block = scenario_lines(scenario, style, verbosity=verbosity)
        # a scenario with more than check lines (a story, an error, a converged list) gets blank
        # lines around it so the next header stands out; those extra lines are indented deeper
        roomy = any(line.startswith("    ") for line in block)
        if lines and (roomy or spaced):
            lines.append("")
        lines.extend(block)
        spaced = roomy
    if lines:
        lines.append("")
    lines.extend(style("note: " + clean(note), "yellow") for note in result.notes)
    lines.append(summary_line(result, style))
    if github:
        lines.extend(github_annotations(result))
    return "\n".join(lines) + "\n"


def scenario_lines(scenario: ScenarioResult, style: Style, *, verbosity: int = NORMAL) -> list[str]:
    mark, colour = _MARK[scenario.verdict]
    verdict = style(scenario.verdict.value.upper(), colour, "bold")
    head = f"{style(mark, colour)} {style(label(scenario.name), 'bold')} {verdict}"
    if scenario.verdict is Verdict.ERROR:
        lines = [f"{head} {style(label(scenario.file), 'dim')}"]
        lines.extend("    " + line for line in clean(scenario.error or "could not be loaded").rstrip("\n").splitlines())
        return lines
    lines = [f"{head} {style(stats_text(scenario.stats), 'dim')}"]
    lines.extend("  " + style("warning: " + clean(note), "yellow") for note in scenario.notes)
    if verbosity >= VERBOSE and scenario.description:
        lines.extend("    " + style(line, "dim") for line in clean(scenario.description).strip().splitlines())
    for check in scenario.checks:
        if verbosity <= QUIET and check.verdict is Verdict.PASSED:
            continue
        lines.extend(check_lines(check, style, verbose=verbosity >= VERBOSE))
    if verbosity >= VERBOSE:
        lines.extend(converged_lines(scenario.converged, style))
    return lines


def stats_text(stats: Stats) -> str:
    parts = [
        plural(stats.states, "state"),
        plural(stats.transitions, "transition"),
        plural(stats.reconciles, "reconcile"),
        f"memo {stats.memo_hit_rate * 100:.1f}%",
        f"{stats.converged_states} converged",
        f"depth {stats.max_depth}",
        format_duration(stats.elapsed_seconds),
        f"{format_rate(stats.states_per_second)} states/s",
    ]
    if stats.bound_hit:
        parts.append(f"bound hit: {label(stats.bound_hit)}")
    if stats.global_steps:
        total = sum(n for _cause, n in stats.global_steps)
        why = "; ".join(f"{cause}: {n}" for cause, n in stats.global_steps)
        parts.append(f"{plural(total, 'state')} expanded fully ({why})")
    return ", ".join(parts)


def check_lines(check: Check, style: Style, *, verbose: bool = False) -> list[str]:
    mark, colour = _MARK[check.verdict]
    line = f"  {style(mark, colour)} {label(check.name)}"
    if check.message:
        line += f" — {clean(one_line(check.message))}"
    lines = [line]
    for cx in check.counterexamples:
        lines.extend("    " + text if text else "" for text in story_lines(cx, style, verbose=verbose))
    return lines


def converged_lines(converged: Iterable[ConvergedState], style: Style) -> list[str]:
    states = tuple(converged)
    if not states:
        return []
    lines = [f"  {style('converged states', 'bold')} ({len(states)}):"]
    for number, state in enumerate(states, 1):
        lines.append(
            f"    {number}. {label(state.fingerprint[:12])} "
            + style(f"(reached in {plural(len(state.path), 'step')}, {plural(len(state.objects), 'object')})", "dim")
        )
        refs = sorted(label(_describe(obj)) for obj in state.objects)
        lines.extend(f"       {ref}" for ref in refs)
    return lines


def _describe(obj: Manifest) -> str:
    """``apiVersion/Kind ns/name`` of a stored object, tolerating a malformed one."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    return str(ObjectRef.of({**obj, "metadata": meta}))


def summary_line(result: CheckResult, style: Style | None = None) -> str:
    """``3 scenarios: 1 passed, 1 failed, 1 inconclusive (12.3s)``."""
    style = style or Style(False)
    counts = {v: 0 for v in Verdict}
    for scenario in result.scenarios:
        counts[scenario.verdict] += 1
    total = len(result.scenarios)
    parts = [
        style(f"{counts[v]} {'errors' if v is Verdict.ERROR and counts[v] > 1 else v.value}", _MARK[v][1])
        for v in (Verdict.PASSED, Verdict.FAILED, Verdict.INCONCLUSIVE, Verdict.ERROR)
        if counts[v]
    ]
    elapsed = sum(s.stats.elapsed_seconds for s in result.scenarios)
    body = ", ".join(parts) if parts else "nothing checked"
    return f"{plural(total, 'scenario')}: {body} ({elapsed:.1f}s)"


def progress_line(states: int, depth: int, states_per_second: float, elapsed: float) -> str:
    """The live progress line the CLI redraws on stderr while a search runs."""
    return (
        f"exploring: {plural(states, 'state')}, depth {depth}, "
        f"{format_rate(states_per_second)} states/s, {format_duration(elapsed)}"
    )


# --- GitHub workflow commands -------------------------------------------------------------------


def escape_data(text: str) -> str:
    """Escape a workflow command's message (GitHub's rules: %, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value (data rules plus ':' and ',')."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(result: CheckResult) -> list[str]:
    """``::error`` per failed check and unloadable scenario, ``::warning`` per inconclusive check.

    Each points at the check's line in the scenario file, so the annotation lands on the
    declaration that failed; the message carries the one-line reason and the story.
    """
    out: list[str] = []
    for scenario in result.scenarios:
        if scenario.verdict is Verdict.ERROR:
            out.append(
                _annotation(
                    "error",
                    scenario.position.file or scenario.file,
                    scenario.position.line,
                    f"{scenario.name}: load",
                    clean(scenario.error or "the scenario could not be loaded"),
                )
            )
            continue
        for check in scenario.checks:
            if check.verdict not in (Verdict.FAILED, Verdict.INCONCLUSIVE):
                continue
            message = clean(one_line(check.message)) or check.verdict.value
            if check.counterexamples:
                lines = story(check.counterexamples[0], verbose=False).splitlines()
                if len(lines) > ANNOTATION_STORY_LINES:
                    lines = [*lines[:ANNOTATION_STORY_LINES], "…"]
                message += "\n\n" + "\n".join(lines)
            if check.position.file and check.position.line:
                file, line = check.position.file, check.position.line
            else:
                file, line = scenario.file, check.position.line or scenario.position.line
            out.append(
                _annotation(
                    "error" if check.verdict is Verdict.FAILED else "warning",
                    file,
                    line,
                    f"{scenario.name}: {check.name}",
                    message,
                )
            )
    return out


def _annotation(level: str, file: str, line: int, title: str, message: str) -> str:
    props = []
    if file:
        props.append(f"file={escape_property(clean(file))}")
    if line > 0:
        props.append(f"line={line}")
    props.append(f"title={escape_property(clean(title))}")
    return f"::{level} {','.join(props)}::{escape_data(message)}"
