"""The ``kamera`` command line.

Why this module is the only one importing typer and the only one choosing exit codes: every other
layer raises ``KameraError`` subclasses or returns a result model, so there is exactly one table
from outcomes to process exit codes, and it is here.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import traceback
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from kamera_cli import __version__
from kamera_cli.errors import ExitCode, KameraError, ScenarioError, UsageError
from kamera_cli.model.graph import DEFAULT_GRAPH_STATES
from kamera_cli.model.result import CheckResult, Verdict

app = typer.Typer(
    name="kamera",
    help="Model-check Kubernetes controllers: every interleaving, against a simulated API server.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"kamera {__version__}")
        raise typer.Exit(int(ExitCode.OK))


@app.callback()
def _main(
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
) -> None:
    """kamera explores every interleaving of your controllers' reconciles and reports every outcome."""


def _use_color(stream: Any) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _parse_duration(text: str | None, option: str = "--timeout") -> float | None:
    if text is None:
        return None
    from kamera_cli.scenario import parse_duration

    try:
        return parse_duration(text)
    except ValueError as exc:
        raise UsageError(f"invalid value for {option}: {exc}") from exc


_CHECK_EPILOG = """\b
Examples:
  kamera check scenarios/                      every scenario under a folder
  kamera check scenario.yaml --junit k.xml     a JUnit report for CI
  kamera check scenarios/ --html report.html   a report to open in a browser
  kamera check scenarios/ --timeout 2m --workers 2

\b
Exit codes:
  0  every check of every scenario passed
  1  a check failed (a counterexample was found)
  2  usage error, or a scenario that cannot be loaded
  3  internal error (a bug in kamera; a report file is written)
  4  inconclusive: a bound, the time or memory limit was hit, or the run was interrupted
"""


@app.command(epilog=_CHECK_EPILOG)
def check(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files, or folders searched for scenario.yaml.")],
    junit: Annotated[Path | None, typer.Option("--junit", help="Write a JUnit XML report to FILE.")] = None,
    json_out: Annotated[Path | None, typer.Option("--json", help="Write the full JSON result to FILE.")] = None,
    html_out: Annotated[Path | None, typer.Option(
        "--html", help="Write a self-contained HTML report (summary, stories, state graph) to FILE.")] = None,
    graph_states: Annotated[int | None, typer.Option(
        "--graph-states", min=0, max=1_000_000,
        help=f"Record up to N explored states of each search in the results (--html draws them, --json and "
             f"kamera inspect carry them); default {DEFAULT_GRAPH_STATES} with --html, else 0 (none).",
    )] = None,
    max_depth: Annotated[
        int | None, typer.Option("--max-depth", min=1, max=100_000, help="Override spec.explore.maxDepth.")
    ] = None,
    max_states: Annotated[
        int | None, typer.Option("--max-states", min=1, max=1_000_000_000, help="Override spec.explore.maxStates.")
    ] = None,
    timeout: Annotated[
        str | None, typer.Option("--timeout", help="Override spec.explore.timeout (e.g. 30s, 10m).")
    ] = None,
    workers: Annotated[int, typer.Option(
        "--workers", min=1,
        help="Check scenarios in N parallel processes; fewer scenarios: split each search over the rest.")] = 1,
    fail_fast: Annotated[bool, typer.Option(
        "--fail-fast", metavar="",
        help="Stop at the first finding: the search ends there and later scenarios are listed as not checked.",
    )] = False,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", metavar="", help="Print only failures and the summary.")
    ] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", metavar="", help="Also print converged states.")] = False,
    reconcile_timeout: Annotated[
        str | None,
        typer.Option("--reconcile-timeout", help="Every controller's budget for one reconcile (e.g. 2s)."),
    ] = None,
    max_memory: Annotated[
        str | None,
        typer.Option("--max-memory", help="Resident memory the search may use (e.g. 4G); default half the machine."),
    ] = None,
    import_timeout: Annotated[
        str | None,
        typer.Option("--import-timeout", help="How long importing a scenario's controllers may take (default 60s)."),
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray", metavar="auto|local|ADDRESS",
                     help="Check each scenario as a task on a Ray cluster (needs kamera-cli[ray]); with --workers N "
                          "above the number of scenarios, split each search over Ray actors too."),
    ] = None,
    swarm: Annotated[int, typer.Option(
        "--swarm", min=0, max=10_000, metavar="K",
        help="Run each scenario as K seeded random searches (seeds seed..seed+K-1), spread over --workers "
             "(or Ray): not exhaustive, for spaces too big for their bounds.")] = 0,
) -> None:
    """Explore every scenario and report pass/fail for each check."""
    from kamera_cli import runner, supervisor
    from kamera_cli.report import terminal

    def body() -> int:
        if quiet and verbose:
            raise UsageError("--quiet and --verbose contradict each other: choose one")
        overrides = runner.Overrides(max_depth=max_depth, max_states=max_states, timeout=_parse_duration(timeout),
                                     reconcile_timeout=_parse_duration(reconcile_timeout, "--reconcile-timeout"),
                                     stop_on_first=fail_fast, graph_states=_graph_states(graph_states, html_out))
        try:
            memory = None if max_memory is None else supervisor.parse_size(max_memory)
        except ValueError as exc:
            raise UsageError(f"invalid value for --max-memory: {exc}") from exc
        junit_path, json_path = _report_path(junit, "--junit"), _report_path(json_out, "--json")
        html_path = _report_path(html_out, "--html")
        progress = _progress_printer() if _use_color(sys.stderr) or sys.stderr.isatty() else None
        imports = _parse_duration(import_timeout, "--import-timeout")
        if imports is None:
            imports = supervisor.IMPORT_BUDGET_SECONDS
        options = supervisor.Options(workers=workers, fail_fast=fail_fast, max_memory=memory, import_timeout=imports,
                                     swarm=swarm)
        if ray_address is not None:
            from kamera_cli import distributed

            result = distributed.check_on_ray(paths, address=ray_address, overrides=overrides, options=options)
        else:
            result = supervisor.supervise(paths, overrides=overrides, options=options, on_progress=progress)
        if progress is not None:
            sys.stderr.write("\r\x1b[2K")
            sys.stderr.flush()
        # reports first: a closed stdout (| head) must not cost the files CI reads
        if junit_path is not None:
            from kamera_cli.report import junit as junit_report

            junit_report.write_junit(result, junit_path)
        if json_path is not None:
            from kamera_cli.report import json_report

            json_report.write_json(result, json_path)
        if html_path is not None:
            from kamera_cli.report import html_report

            html_report.write_html(result, html_path)
        verbosity = -1 if quiet else (1 if verbose else 0)
        text = terminal.render(result, color=_use_color(sys.stdout), verbosity=verbosity,
                               github=os.environ.get("GITHUB_ACTIONS") == "true")
        _echo_quietly(text)  # with GITHUB_ACTIONS=true it ends with the ::error annotations
        return int(_exit_code(result))

    _run(body)


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files, or folders searched for scenario.yaml.")],
) -> None:
    """Check scenarios without running them: schema, files, manifests, kinds, entry points, JSONPath."""
    from kamera_cli import scenario

    def body() -> int:
        loaded = scenario.validate_paths(paths)
        for s in loaded:
            typer.echo(f"ok {s.file}: {s.name}")
        return int(ExitCode.OK)

    _run(body)


@app.command("schema")
def schema_command(
    which: Annotated[str, typer.Argument(help="scenario or result")] = "scenario",
) -> None:
    """Print the JSON Schema of the scenario format or of the JSON result."""
    from kamera_cli.scenario import schema_path

    def body() -> int:
        if which not in ("scenario", "result"):
            raise UsageError(f"unknown schema {which!r}: choose 'scenario' or 'result'")
        typer.echo((schema_path().parent / f"{which}.schema.json").read_text(encoding="utf-8"), nl=False)
        return int(ExitCode.OK)

    _run(body)


_IMPORT_EPILOG = """\b
Examples:
  kubectl get deploy,svc,cm,widgets -n shop -o yaml > cluster.yaml
  kubectl get crd widgets.example.com -o yaml > crds.yaml
  kamera import cluster.yaml crds.yaml -o scenarios/shop
  kamera import dump/ --namespace shop --audit audit.log -o scenarios/incident --force

\b
Exit codes:
  0  the scenario folder was written (warnings say what was left out)
  2  bad input (file:line:col: message), or the folder is not empty without --force
"""


@app.command("import", epilog=_IMPORT_EPILOG)
def import_command(
    inputs: Annotated[list[Path] | None, typer.Argument(
        help="What kubectl get -o yaml prints (a List or several documents), CRD dumps, or folders of manifests.",
        show_default=False)] = None,
    out_dir: Annotated[Path | None, typer.Option("--output", "-o", help="The scenario folder to write.",
                                                 show_default=False)] = None,
    namespace: Annotated[list[str] | None, typer.Option(
        "--namespace", "-n", help="Import only namespaced objects of this namespace (repeatable).")] = None,
    keep_status: Annotated[bool, typer.Option(
        "--keep-status", metavar="", help="Keep status (and a pod's nodeName) instead of stripping them.")] = False,
    force: Annotated[bool, typer.Option(
        "--force", metavar="", help="Write into a folder that is not empty, overwriting the files it writes.")] = False,
    name: Annotated[str, typer.Option("--name", help="The scenario's name (default: the folder's name).")] = "",
    audit: Annotated[list[Path] | None, typer.Option(
        "--audit", help="A Kubernetes audit log (JSON lines); users' writes become spec.actions (repeatable).")] = None,
    user: Annotated[list[str] | None, typer.Option(
        "--user", help="Also replay these users' writes (glob, repeatable; wins over --exclude-user); "
                     "default: every user not system:*.")] = None,
    exclude_user: Annotated[list[str] | None, typer.Option(
        "--exclude-user",
        help="Do not replay these users' writes (glob, repeatable), e.g. your controller's own user.")] = None,
    at: Annotated[str, typer.Option(
        "--at", help="When each replayed action may happen: any (every placement) or converged.")] = "any",
    since: Annotated[str, typer.Option(
        "--since", help="Replay only audit events that completed at or after this RFC 3339 time.")] = "",
    until: Annotated[str, typer.Option(
        "--until", help="Replay only audit events that completed at or before this RFC 3339 time.")] = "",
) -> None:
    """Scaffold a scenario from a real cluster: its objects (CRDs and seed, server-owned fields stripped) and, with
    --audit, the users' writes its audit log recorded (spec.actions)."""
    from kamera_cli.importer import ImportOptions, import_scenario

    def body() -> int:
        if out_dir is None:
            raise UsageError("missing -o/--output: the scenario folder to write")
        if at not in ("any", "converged"):
            raise UsageError(f"invalid value for --at: {at!r} (choose any or converged)")
        report = import_scenario(ImportOptions(
            inputs=tuple(str(p) for p in inputs or ()), out_dir=str(out_dir),
            namespaces=tuple(namespace or ()), keep_status=keep_status, force=force, name=name,
            audit=tuple(str(p) for p in audit or ()), users=tuple(user or ()), exclude_users=tuple(exclude_user or ()),
            at="any" if at == "any" else "converged", since=since, until=until))
        for problem in report.warnings:
            typer.echo(f"warning: {problem.render()}", err=True)
        for note in report.notes:
            typer.echo(f"note: {note}", err=True)
        actions = f", {report.actions} user action(s)" if report.actions else ""
        typer.echo(f"wrote {report.out_dir}: {report.objects} object(s) of {report.kinds} kind(s), "
                   f"{report.crds} CRD(s){actions} in {len(report.files)} file(s)")
        scenario_file = Path(report.out_dir) / "scenario.yaml"
        if report.builtins:
            typer.echo(f"it runs now with the built-in controllers {', '.join(report.builtins)}: "
                       f"kamera check {report.out_dir}")
            typer.echo(f"next: add your controllers in {scenario_file} (TODO), and invariants")
        else:
            typer.echo(f"next: name the controllers under test in {scenario_file} (TODO), "
                       f"then: kamera check {report.out_dir}")
        return int(ExitCode.OK)

    _run(body)


@app.command("inspect")
def inspect_command(
    result_file: Annotated[Path, typer.Argument(help="A JSON result written by kamera check --json.")],
) -> None:
    """Browse a JSON result in the terminal: scenarios, checks, counterexample steps and their diffs,
    converged outcomes and the explored states (recorded by check --graph-states N or --html). Keys: arrows,
    enter, e, c, q."""

    def body() -> int:
        import json

        from kamera_cli.report import json_report

        try:
            text = result_file.read_text(encoding="utf-8")
        except OSError as exc:
            raise UsageError(f"{result_file}: cannot read: {exc.strerror or exc}") from exc
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise json_report.ResultFormatError(f"{result_file}:{exc.lineno}:{exc.colno}: not JSON: {exc.msg}") from exc
        result = json_report.from_json(doc)
        # a full-screen app on a pipe or a CI log draws escape codes until it is killed: refuse instead
        if not (sys.stdout.isatty() and sys.stdin.isatty()):
            which = "standard output" if not sys.stdout.isatty() else "standard input"
            raise UsageError(f"kamera inspect is interactive and needs a terminal, but {which} is not one "
                             "(piped, redirected or in CI); without a terminal, read the result with "
                             "kamera check's report, or open the --html report")
        try:
            from kamera_cli.report import inspector
        except ImportError as exc:
            raise UsageError("kamera inspect needs the optional extra: pip install 'kamera-cli[inspect]' "
                             f"({exc})") from exc
        inspector.run(result, str(result_file))
        return int(ExitCode.OK)

    _run(body)


def _graph_states(given: int | None, html_out: Path | None) -> int:
    """How many states of each search to record: as given, else enough to draw with --html, else none."""
    if given is not None:
        return given
    return DEFAULT_GRAPH_STATES if html_out is not None else 0


def _report_path(path: Path | None, option: str) -> Path | None:
    """Absolute (so a controller's chdir cannot move it) and writable, or a usage error now, not after the search."""
    if path is None:
        return None
    target = path.absolute()
    if target.is_dir():
        raise UsageError(f"{option} {path}: is a folder; give a file name")
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir() or not os.access(parent, os.W_OK) or (target.exists() and not os.access(target, os.W_OK)):
        raise UsageError(f"{option} {path}: cannot write there (permission denied or not a folder)")
    return target


def _echo_quietly(text: str) -> None:
    """Print, ending quietly when the reader went away (``kamera check ... | head``)."""
    try:
        typer.echo(text)
        sys.stdout.flush()
    except BrokenPipeError:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())


def _exit_code(result: CheckResult) -> ExitCode:
    verdict = result.verdict
    if verdict is Verdict.ERROR:
        return ExitCode.USAGE
    if verdict is Verdict.FAILED:
        return ExitCode.CHECK_FAILED
    if verdict is Verdict.INCONCLUSIVE:
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


def _progress_printer() -> Callable[[str, int, int, float, float], None]:
    from kamera_cli.report import terminal

    def show(scenario: str, states: int, depth: int, rate: float, elapsed: float) -> None:
        sys.stderr.write("\r\x1b[2K" + scenario + ": " + terminal.progress_line(states, depth, rate, elapsed))
        sys.stderr.flush()

    return show


def _run(body: Callable[[], int]) -> NoReturn:
    """The one place exceptions become exit codes."""
    try:
        code = body()
    except ScenarioError as exc:
        for problem in exc.problems:
            typer.echo(problem.render(), err=True)
        typer.echo(f"{len(exc.problems)} problem(s) found", err=True)
        code = int(exc.exit_code)
    except KameraError as exc:
        typer.echo(f"error: {exc}", err=True)
        code = int(exc.exit_code)
    except KeyboardInterrupt:  # before or after the search (the supervisor handles it during one)
        typer.echo("interrupted: nothing was checked", err=True)
        code = int(ExitCode.INCONCLUSIVE)
    except (typer.Exit, typer.Abort):
        raise
    except Exception as exc:  # a bug in kamera: say so, keep the evidence
        code = int(ExitCode.INTERNAL)
        report = _write_internal_error(exc)
        typer.echo(
            f"internal error: this is a bug in kamera, not in your scenario ({type(exc).__name__}: {exc}).\n"
            f"The traceback and versions are in {report}; please attach it to a bug report.",
            err=True,
        )
    raise typer.Exit(code)


def _write_internal_error(exc: BaseException) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    path = Path(f"kamera-internal-error-{stamp}.txt")
    try:
        import kubernetes

        client_version = getattr(kubernetes, "__version__", "?")
    except Exception:
        client_version = "not importable"
    text = (
        f"kamera {__version__}\npython {platform.python_version()} ({platform.platform()})\n"
        f"kubernetes client {client_version}\nargv: {sys.argv}\n\n"
        + "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    )
    try:
        path.write_text(text, encoding="utf-8")
        return str(path)
    except OSError:
        sys.stderr.write(text)
        return "the text above"


def main() -> None:
    app(prog_name="kamera")


if __name__ == "__main__":
    main()
