"""User code runs in a worker process; the ``kamera`` process only watches it and keeps the results.

Why a separate process: kamera runs code it does not control.  In-process, a controller calling
``os._exit(0)`` made kamera exit 0 with no report (a silent green), a segfault in a C extension or
an exhausted heap took every result with it, a busy loop blocked inside C ignored every budget, and
a forked child kept stdout open so CI waited forever after PASSED.  None of that can be caught
from inside the process it happens in.  Here each scenario runs in a forked worker that is the
leader of its own process group; this process enforces the deadline and the memory bound from
outside (by killing the whole group, grandchildren included), turns a worker's death into a
finding that names the step that was running, and writes every report from whatever the workers
sent — also after Ctrl-C or SIGTERM.

Why fork: the worker inherits kamera's modules already imported (start-up costs milliseconds,
not the ~1 s a fresh interpreter needs to import the client), and it can share a small memory
page with this process where it writes the description of the step it is about to run — one
``memcpy`` per step instead of a message, and still readable after a ``SIGKILL``.  Platforms
without ``fork`` run in-process, and say so.

The worker puts itself behind kamera's network containment (``netns.py``: a network namespace of its
own where Linux allows, the in-process fence always); when it is done, the supervisor kills every
process left in that namespace.
"""

from __future__ import annotations

import contextlib
import mmap
import multiprocessing
import os
import signal
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, BinaryIO

from kamera_cli import runner
from kamera_cli.adapters import install_audit_fence
from kamera_cli.errors import ExitCode, KameraError
from kamera_cli.explore import WorkerDied
from kamera_cli.model.result import (
    Check,
    CheckName,
    CheckResult,
    Counterexample,
    ScenarioResult,
    Stats,
    Verdict,
)
from kamera_cli.netns import contain_here, isolate_network, kill_namespace, namespace_id

#: ``contain_here`` and ``kill_namespace`` live in ``netns.py``; importable from here as before
__all__ = ["IMPORT_BUDGET_SECONDS", "Options", "contain_here", "default_max_memory", "kill_namespace", "parse_size",
           "supervise"]

#: how long after its own deadline, and after the longest the step running then may take
#: (``runner.step_allowance``), a worker may take to stop by itself before it is killed: that step is
#: let finish (the reduction's look-ahead gives up at the deadline), since a kill loses everything the
#: search found (its statistics, checks)
GRACE_SECONDS = 12.0
#: budget for importing the controllers (a loop at import time is a finding, not a hang)
IMPORT_BUDGET_SECONDS = 60.0
#: budget for judging (replaying counterexamples) once the search has ended, plus as long as the
#: search took (``_Job.judge_budget``)
JUDGE_BUDGET_SECONDS = 30.0
#: after Ctrl-C or SIGTERM, how long workers get to judge what they explored
INTERRUPT_GRACE_SECONDS = 3.0
_MEMORY_POLL_SECONDS = 0.25
_SLOT_BYTES = 4096


@dataclass(frozen=True, slots=True)
class Options:
    workers: int = 1
    fail_fast: bool = False
    #: bytes all workers together may hold (resident); None: :func:`default_max_memory`
    max_memory: int | None = None
    #: move workers into their own network namespace (Linux); off only for tests of the fence
    isolate_network: bool = True
    #: wall-clock seconds importing a scenario's controllers may take (module top-level code)
    import_timeout: float = IMPORT_BUDGET_SECONDS
    #: run each scenario as this many seeded random searches (``--swarm``; 0: once, as written)
    swarm: int = 0
    #: search workers each run gets elsewhere, on top of its own processes (``--ray`` with ``--workers``)
    remote_workers: int = 0
    #: starts them: ``(scenario file, the run's overrides, how many)`` -> a connection to each (the
    #: coordinator's end; the factory keeps the other, ``distributed.py``)
    remote_search: Callable[[Path, runner.Overrides, int], Sequence[Any]] | None = None


def default_max_memory() -> int:
    """Half the machine's physical memory: room for the search, never the whole machine."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")) // 2
    except (ValueError, OSError, AttributeError):
        return 4 << 30


def parse_size(text: str) -> int:
    """``512M``, ``4G``, ``1.5GiB``, or a plain number of bytes; raises ValueError with the reason."""
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in units and t[-1:] != "" and not t[-1:].isdigit() else ""
    number = t[: len(t) - len(unit)] if unit else t
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a size (examples: 512M, 4G)") from None
    if not 0 < value < 1 << 50:
        raise ValueError(f"{text!r} is out of range (examples: 512M, 4G)")
    return int(value * units[unit])


# ---------------------------------------------------------------------------- the worker side
def _worker_main(conn: Connection, path: str, overrides: runner.Overrides, slot: mmap.mmap, log_fd: int,
                 isolate: bool) -> None:
    os.setpgid(0, 0)  # its own group: killed whole from outside; the terminal's Ctrl-C reaches only kamera
    os.dup2(log_fd, 1)  # anything it or its children print lands in the log, never in kamera's stdout
    os.dup2(log_fd, 2)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    stop: list[str] = []
    signal.signal(signal.SIGUSR1, lambda *_: stop.append("interrupted"))
    containment = isolate_network() if isolate else "in-process fence only: isolation turned off"
    install_audit_fence(block_processes=containment != "network namespace")
    conn.send(("containment", containment, namespace_id()))

    def on_step(text: str) -> None:
        data = text.encode("utf-8", "replace")[: _SLOT_BYTES - 2]
        slot[2: 2 + len(data)] = data
        slot[0:2] = len(data).to_bytes(2, "little")

    def on_phase(phase: str, name: str, budget: float | None, allowance: float) -> None:
        on_step("")
        conn.send(("phase", phase, name, budget, allowance))

    def on_progress(name: str, states: int, depth: int, rate: float, elapsed: float) -> None:
        conn.send(("progress", name, states, depth, rate, elapsed))

    hooks = runner.RunHooks(on_phase=on_phase, on_step=on_step, should_stop=lambda: stop[0] if stop else "")
    try:
        result = runner.check_file(Path(path), overrides, on_progress, hooks)
        conn.send(("result", result))
    except WorkerDied as died:
        # a process of a parallel search died under user code: die the same way, so that it is judged
        # exactly as the death of a serial search's process (the step it ran is in the shared slot)
        code = died.exitcode if died.exitcode is not None else 1
        if code < 0:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code)
    except KameraError as exc:
        conn.send(("error", int(exc.exit_code), str(exc)))
    except BaseException:
        conn.send(("internal", traceback.format_exc()))
    conn.close()
    os._exit(0)


# ---------------------------------------------------------------------------- the supervisor side
class _Job:
    """One scenario file in one worker, and everything known about it from outside."""

    def __init__(self, index: int, path: Path, ctx: Any, overrides: runner.Overrides, isolate: bool,
                 import_budget: float = IMPORT_BUDGET_SECONDS) -> None:
        self.index = index
        self.import_budget = import_budget
        self.path = path
        self.name = runner.run_label(path, overrides)
        self.started_at = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.slot = mmap.mmap(-1, _SLOT_BYTES)
        self.log: BinaryIO = tempfile.TemporaryFile()  # noqa: SIM115 - closed in finish()
        self.conn, child = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_worker_main, name=f"kamera-worker-{index}",
                                   args=(child, str(path), overrides, self.slot, self.log.fileno(), isolate))
        self.process.start()
        child.close()
        self.pid: int = self.process.pid
        self.phase = "load"
        self.phase_started = time.monotonic()
        self.budget: float | None = None
        #: how much longer than its budget the phase may take (the search: the step running at its
        #: deadline; judging: as long as the search took)
        self.allowance = 0.0
        self.progress: tuple[int, int, float] = (0, 0, 0.0)  # states, depth, elapsed
        self.result: ScenarioResult | None = None
        self.error: tuple[int, str] | None = None
        self.containment = ""
        #: the worker's network namespace ("net:[inode]"), whose every process is killed when it ends;
        #: set only while ``_namespace_fd`` holds it open (see ``_hold_namespace``)
        self.namespace = ""
        self._namespace_fd = -1
        self.stop_reason = ""  # why it was asked to stop, or killed
        self.stop_sent_at: float | None = None
        self.killed = ""  # why it was killed from outside
        self.eof = False

    # -- messages
    def drain(self, on_progress: runner.ProgressCallback | None) -> None:
        while not self.eof:
            try:
                if not self.conn.poll():
                    return
                msg = self.conn.recv()
            except (EOFError, OSError):
                self.eof = True
                return
            kind = msg[0]
            if kind == "progress":
                _, name, states, depth, rate, elapsed = msg
                self.progress = (states, depth, elapsed)
                if on_progress is not None:
                    on_progress(name, states, depth, rate, elapsed)
            elif kind == "phase":
                _, self.phase, self.name, self.budget, self.allowance = msg
                self.phase_started = time.monotonic()
            elif kind == "result":
                self.result = msg[1]
            elif kind == "containment":
                self.containment = msg[1]
                self._hold_namespace(msg[2])
            elif kind in ("error", "internal"):
                self.error = (msg[1], msg[2]) if kind == "error" else (int(ExitCode.INTERNAL), msg[1])

    def _hold_namespace(self, namespace: str) -> None:
        """Keep the worker's network namespace open for as long as this job may kill what is in it.

        Why: a namespace's inode number is freed with the namespace and handed to the next one made —
        another worker's, of this run or of another kamera on the machine. Killing "every process in
        net:[N]" after the worker had gone killed that other worker (seen in CI: a kopf example's
        worker "killed by SIGKILL while importing the controllers" while another run finished). An
        open descriptor keeps the namespace, and so its number, ours until the job ends."""
        if not namespace:
            return
        try:
            fd = os.open(f"/proc/{self.pid}/ns/net", os.O_RDONLY)
        except OSError:
            return  # the worker is already gone: its namespace may be another's by now
        if f"net:[{os.fstat(fd).st_ino}]" == namespace:
            self.namespace, self._namespace_fd = namespace, fd
        else:
            os.close(fd)

    def _release_namespace(self) -> None:
        if self._namespace_fd >= 0:
            os.close(self._namespace_fd)
        self.namespace, self._namespace_fd = "", -1

    def step(self) -> str:
        n = int.from_bytes(self.slot[0:2], "little")
        return bytes(self.slot[2: 2 + min(n, _SLOT_BYTES - 2)]).decode("utf-8", "replace")

    def log_tail(self, limit: int = 2000) -> str:
        try:
            self.log.seek(0, os.SEEK_END)
            size = self.log.tell()
            self.log.seek(max(0, size - limit))
            return self.log.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""

    # -- control
    def deadline(self) -> float | None:
        if self.phase == "import":
            return self.phase_started + self.import_budget
        if self.phase == "search" and self.budget is not None:
            return self.phase_started + self.budget + self.allowance + GRACE_SECONDS
        if self.phase == "judge":
            return self.phase_started + self.judge_budget()
        return None

    def judge_budget(self) -> float:
        """``JUDGE_BUDGET_SECONDS``, and as long again as the search took: replays re-run its steps."""
        return JUDGE_BUDGET_SECONDS + self.allowance

    def ask_to_stop(self, reason: str) -> None:
        if self.stop_sent_at is None:
            self.stop_reason = reason
            self.stop_sent_at = time.monotonic()
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, signal.SIGUSR1)

    def kill(self, why: str) -> None:
        if not self.killed:
            self.killed = why
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signal.SIGKILL)
        kill_namespace(self.namespace)

    def resident_bytes(self) -> int:
        return _group_rss(self.pid)

    def finish(self) -> ScenarioResult:
        self.process.join(5)
        with contextlib.suppress(ProcessLookupError, PermissionError):  # anything it left behind goes too
            os.killpg(self.pid, signal.SIGKILL)
        kill_namespace(self.namespace)  # and what left its group (setsid, a double fork, a daemon)
        self._release_namespace()
        result = self.result if self.result is not None else self._without_result()
        self.log.close()
        self.slot.close()
        self.conn.close()
        return result

    def _without_result(self) -> ScenarioResult:
        states, depth, elapsed = self.progress
        stats = Stats(states=states, max_depth=depth, elapsed_seconds=elapsed, bound_hit=self.killed)
        if self.error is not None:
            code, text = self.error
            if code == int(ExitCode.INTERNAL):
                raise WorkerCrash(f"in the worker process checking {self.path}:\n{text}")
            raise _WorkerError(code, text)
        if self.killed:
            message = f"search incomplete: {self.killed}"
            step = self.step()
            if step:
                message += f" (the worker was stopped from outside during step '{step}')"
            if self.killed.startswith("importing"):
                cex = Counterexample(kind="controller-error", summary=self.killed, details=self.log_tail())
                check = Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.FAILED, self.killed, (cex,))
                return self._result(Verdict.FAILED, check, stats)
            return self._result(Verdict.INCONCLUSIVE, Check(CheckName.CONVERGES, Verdict.INCONCLUSIVE, message), stats)
        code = self.process.exitcode
        how = _death(code)
        step = self.step()
        where = {
            "load": "while loading the scenario",
            "import": "while importing the controllers",
            "judge": "while replaying a counterexample",
        }.get(self.phase, f"during step '{step}'" if step else "between two steps")
        summary = f"the process running the controllers {how} {where}"
        tail = self.log_tail()
        details = "what it printed last:\n" + tail if tail else ""
        cex = Counterexample(kind="controller-error", summary=summary, details=details)
        return self._result(Verdict.FAILED, Check(CheckName.NO_CONTROLLER_ERRORS, Verdict.FAILED, summary, (cex,)),
                            replace(stats, bound_hit=summary))

    def _result(self, verdict: Verdict, check: Check, stats: Stats) -> ScenarioResult:
        return ScenarioResult(name=self.name, file=str(self.path), verdict=verdict, checks=(check,), stats=stats,
                              started_at=self.started_at)


class _WorkerError(KameraError):
    """A deliberate kamera error raised inside a worker, re-raised here with its exit code."""

    def __init__(self, code: int, text: str) -> None:
        super().__init__(text)
        self.exit_code = ExitCode(code)


class WorkerCrash(Exception):
    """A bug in kamera inside a worker: carries the worker's traceback to the internal-error report."""


def _death(code: int | None) -> str:
    if code is None:
        return "stopped answering"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code} (os._exit or an exit from C code)"


def _group_rss(pgid: int) -> int:
    """Resident bytes of every process in a process group (Linux /proc; 0 where unavailable)."""
    total = 0
    page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
    try:
        entries = os.listdir("/proc")
    except OSError:
        return 0
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                raw = fh.read()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2:].split()
        if len(fields) > 21 and int(fields[2]) == pgid:
            total += int(fields[21]) * page
    return total


def supervise(
    paths: Sequence[Path],
    *,
    overrides: runner.Overrides | None = None,
    options: Options = Options(),
    on_progress: runner.ProgressCallback | None = None,
) -> CheckResult:
    """Check every scenario under ``paths``, each in a supervised worker; never loses a result."""
    from kamera_cli.scenario import discover

    files = discover(list(paths))
    if not hasattr(os, "fork") or not hasattr(os, "killpg"):
        result = runner.check_paths(paths, overrides=overrides, workers=options.workers,
                                    fail_fast=options.fail_fast, on_progress=on_progress, swarm=options.swarm)
        return replace(result, notes=(*result.notes, "user code ran inside kamera's process (no fork here)"))
    runs = runner.units(files, overrides or runner.Overrides(), options.swarm)
    runs = [(f, runner.split_workers(o, options.workers, len(runs))) for f, o in runs]
    return _Supervisor(runs, options, on_progress).run()


class _Supervisor:
    def __init__(self, runs: list[runner.Unit], options: Options,
                 on_progress: runner.ProgressCallback | None) -> None:
        self.runs = runs
        self.options = options
        self.on_progress = on_progress
        self.ctx = multiprocessing.get_context("fork")
        self.workers = max(1, options.workers)
        self.memory_each = (options.max_memory or default_max_memory()) // self.workers
        self.interrupted = ""
        self.interrupted_at = 0.0
        self.stopping = ""  # fail-fast
        self.results: dict[int, ScenarioResult] = {}
        self.containment: set[str] = set()

    def _on_signal(self, signum: int, _frame: object) -> None:
        if self.interrupted:  # a second Ctrl-C: stop waiting for anyone
            self.interrupted_at = 0.0
            return
        self.interrupted = signal.Signals(signum).name
        self.interrupted_at = time.monotonic()

    def run(self) -> CheckResult:
        # handlers first: a signal during the warm-up imports must still end with the reports written
        previous: dict[signal.Signals, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError):  # not the main thread: leave signals alone
                previous[sig] = signal.signal(sig, self._on_signal)
        running: list[_Job] = []
        try:
            _warm_up()
            self._loop(running)
        finally:
            for job in running:
                job.kill("kamera is ending")
                with contextlib.suppress(Exception):
                    job.finish()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
        ordered = [self.results[i] for i in sorted(self.results)]
        notes: list[str] = []
        for c in sorted(self.containment):
            if c != "network namespace":
                notes.append(f"containment: {c}")
        if self.interrupted:
            notes.append(f"interrupted by {self.interrupted}: the results cover what was explored until then")
        return CheckResult(tuple(runner.dedupe_names(ordered)), notes=tuple(notes))

    def _loop(self, running: list[_Job]) -> None:
        pending = list(enumerate(self.runs))
        last_memory_poll = 0.0
        while pending or running:
            while pending and len(running) < self.workers and not self.interrupted and not self.stopping:
                index, (path, overrides) = pending.pop(0)
                remote: Sequence[Any] = ()
                if self.options.remote_workers > 0 and self.options.remote_search is not None:
                    remote = self.options.remote_search(path, overrides, self.options.remote_workers)
                    overrides = replace(overrides, remote_workers=tuple(remote),
                                        remote_asked=self.options.remote_workers)
                running.append(_Job(index, path, self.ctx, overrides, self.options.isolate_network,
                                    self.options.import_timeout))
                for conn in remote:  # the forked worker holds them now; ours would hide its end's EOF
                    conn.close()
            if not running:
                break
            wait([j.conn for j in running if not j.eof] + [j.process.sentinel for j in running], timeout=0.1)
            now = time.monotonic()
            for job in list(running):
                job.drain(self.on_progress)
                if not job.process.is_alive():
                    job.drain(self.on_progress)
                    running.remove(job)
                    self._record(job)
                    continue
                self._enforce(job, now)
            if now - last_memory_poll >= _MEMORY_POLL_SECONDS:
                last_memory_poll = now
                for job in running:
                    used = job.resident_bytes()
                    if used > self.memory_each:
                        job.kill(f"memory limit {_size(self.memory_each)} reached ({_size(used)} in use)")
        for index, (path, overrides) in pending:  # never started: interrupted or fail-fast
            why = f"interrupted by {self.interrupted}" if self.interrupted else "--fail-fast stopped the run"
            self.results[index] = ScenarioResult(
                name=runner.run_label(path, overrides), file=str(path), verdict=Verdict.INCONCLUSIVE,
                checks=(Check(CheckName.CONVERGES, Verdict.INCONCLUSIVE, f"not checked: {why} before it started"),))

    def _enforce(self, job: _Job, now: float) -> None:
        if self.interrupted:
            job.ask_to_stop("interrupted")
            if not self.interrupted_at or now > self.interrupted_at + INTERRUPT_GRACE_SECONDS:
                job.kill(f"interrupted by {self.interrupted}")
            return
        if self.stopping:
            job.ask_to_stop(self.stopping)
        if job.stop_sent_at is not None and now > job.stop_sent_at + INTERRUPT_GRACE_SECONDS:
            job.kill(job.stop_reason)
            return
        deadline = job.deadline()
        if deadline is not None and now > deadline:
            if job.phase == "import":
                job.kill(f"importing the controllers took longer than {job.import_budget:g}s")
            elif job.phase == "search":
                job.kill(f"timeout {job.budget:g}s reached")
            else:
                job.kill(f"judging took longer than {job.judge_budget():.0f}s")

    def _record(self, job: _Job) -> None:
        if job.containment:
            self.containment.add(job.containment)
        result = job.finish()
        self.results[job.index] = result
        if self.options.fail_fast and result.verdict in (Verdict.FAILED, Verdict.ERROR):
            self.stopping = "--fail-fast: another scenario failed"


def _warm_up() -> None:
    """Import here, once, what every worker would import: forked workers then start with it.

    Without this each worker paid ~0.6 s importing the kubernetes client (and aiohttp, kopf's and
    kubernetes_asyncio's pieces) and building the resource registry — per scenario.
    """
    from kamera_cli.apiserver import Registry
    from kamera_cli.apiserver.transports.containment import Containment

    Registry.builtin()
    with Containment():  # installs (so imports) every client routing, then puts everything back
        pass
    # kubernetes 35+ builds its API classes lazily, and the big ones cost ~0.3-0.7 s each to build:
    # the ones nearly every controller uses are built here once, not in every worker
    import kubernetes.client

    for name in ("CoreV1Api", "CustomObjectsApi"):
        with contextlib.suppress(Exception):
            getattr(kubernetes.client, name)


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def run_one(path: Path, overrides: runner.Overrides | None = None) -> ScenarioResult:
    """One scenario, supervised (the pytest plugin's form)."""
    return supervise([path], overrides=overrides).scenarios[0]

