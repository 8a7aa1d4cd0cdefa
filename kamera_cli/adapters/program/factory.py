"""Controllers that are whole programs, periodic sweeps or event handlers (docs/controllers.md, "Programs").

Why three shapes on one adapter: they are the same thing with more or less ceremony — code that a
real deployment runs as a process, not as a reconcile of one object.

* a **program** (``program: main.py:main``) runs unmodified from ``main()``; one step runs it from
  one blocking point (a watch read, ``time.sleep``) to the next.  Its position is the log of inputs
  it consumed, kept in the explored state as a digest (``ProgramResult.memory``); the log itself is
  in this factory's table, and each step replays it (``program_session``);
* a **sweep** (``program`` with ``every``) calls ``main()`` once per tick of the virtual clock;
* an **event handler** (``handler: h.py:handle``) is called as ``handle(event_type, obj)`` once per
  event of one object of a watched kind; what it was last told about the object is kept in the state.

The explorer knows each as a controller with keys of its own: the program and the sweep have one
(``PROGRAM_KEY``), a handler one per watched object (``"<kind> <namespace>/<name>"``).
"""

from __future__ import annotations

import builtins
import contextlib
import dataclasses
import hashlib
import inspect
import json
import tokenize
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from types import CodeType
from typing import Any

from kamera_cli.adapters.asyncio.loop import run_async
from kamera_cli.adapters.program import parking as program_parking
from kamera_cli.adapters.program import primitives as program_primitives
from kamera_cli.adapters.program.ending import (
    ProgramCrashed,
    ProgramEnded,
    ProgramResult,
    ProgramThreaded,
    ProgramUnwatched,
    ScriptExited,
)
from kamera_cli.adapters.program.memo import MemoEntry, ProgramMemo, Tape, log_key, pattern
from kamera_cli.adapters.program.session import Entry, ProgramDiverged, ProgramParked, Session, watch_content
from kamera_cli.adapters.program.threads import ProgramDeadlocked, Threads
from kamera_cli.adapters.program.trace import Recorder, StepTrace
from kamera_cli.adapters.sandbox.fence import active_run
from kamera_cli.adapters.sandbox.loading import EntrypointLoader, arity_of
from kamera_cli.adapters.sandbox.process import ProcessView
from kamera_cli.adapters.sandbox.servers import idle_servers
from kamera_cli.adapters.sandbox.values import Request, Result
from kamera_cli.errors import EntrypointError
from kamera_cli.model.objects import KindRef

__all__ = ["PROGRAM_KEY", "ProgramCrashed", "ProgramDeadlocked", "ProgramEnded", "ProgramFactory", "ProgramResult",
           "ProgramThreaded", "ProgramUnwatched", "load_program"]

#: the one request name of a program or sweep
PROGRAM_KEY = "program"

_PROGRAM_HINT = "write `def main():` (no parameters): kamera calls it once per start, and it runs until it blocks"
_SWEEP_HINT = "write `def main():` (no parameters): kamera calls it once per tick"
_HANDLER_HINT = "write `def handle(event_type, obj):` (event_type is ADDED, MODIFIED or DELETED)"


class ProgramFactory(EntrypointLoader):
    """A loaded program, sweep or handler; ``invoke`` runs one step of it under the sandbox."""

    #: the state keeps this controller's memory per key (``SimState.memory``)
    memory_owner = ""
    #: no stale-read perturbation: a watch already delivers one event at a time (the lag is explored)
    stale_views = False

    @property
    def timeout_text(self) -> str:
        """How a step that overran its budget is reported (a program never returns; it blocks)."""
        if self.shape != "program":
            return ""
        return "blocked on something kamera does not control (no watch read or time.sleep within its time budget)"

    def __init__(self, entrypoint: str, base_dir: str, *, shape: str, every: float | None, scenario: str,
                 controller: str, env: Mapping[str, str] | ProcessView | None = None) -> None:
        self.shape = shape
        self.every = every
        #: a ``schedule`` sweep's next tick after a time (seconds since the epoch), set by the simulation
        self.next_tick: Callable[[float], float] | None = None
        self.containment: Any = None
        self.registry: Any = None
        self.kinds: tuple[KindRef, ...] = ()
        #: program logs: digest -> (parent digest, the entries one step added)
        self._logs: dict[str, tuple[str, tuple[Entry, ...]]] = {}
        #: logs whose program observed what a log does not show as a value of the cluster: the clock
        #: (read, slept on, waited with a timeout), the step's random seed, or the API server's history
        #: (a list at a resourceVersion, a continue token); their positions are kept exact
        self._exact: set[str] = set()
        #: each step's segments: which thread ran which of its inputs, touching what (``trace.py``)
        self._traces: dict[str, StepTrace] = {}
        #: why some logs keep their threads' order (``StepTrace.untraced``), for the result's notes
        self.untraced: dict[str, None] = {}
        #: programs suspended at their blocking points (the fast path), by log digest
        self._parking = program_parking.Parking()
        #: steps memoised by their position and what the server answered (``memo.py``); off with
        #: ``explore.memoize: false``
        self.memoize = True
        self._memo = ProgramMemo()
        #: each log's memo key (its digest without resourceVersions) and its resourceVersions
        self._keys: dict[str, tuple[bytes, tuple[bytes, ...]]] = {"": (b"", ())}
        #: the last step was answered by the memo (the program did not run): the runtime counts a hit
        self.memo_hit = False
        if shape == "program" and program_parking.greenlets() is None:
            # without green threads a program's real threads would race the explorer: the OS scheduler,
            # not the scenario, would decide what a run sees (issue #28), so it is not checked at all
            raise EntrypointError("a program needs greenlet, a dependency of kamera-cli that is not installed "
                                  "here", scenario=scenario, controller=controller,
                                  hint="pip install greenlet (or reinstall kamera-cli with its dependencies)")
        super().__init__(entrypoint, base_dir, scenario=scenario, controller=controller, env=env)
        self.memory_owner = controller

    accepts_script = True

    @property
    def main_name(self) -> str:
        """How messages name what a start runs: ``main()``, or the script (``program: watch.py``)."""
        return "main()" if self.parsed.attr else f"the script {self.parsed.text}"

    def _load(self) -> Any:
        """A script's top level is the program: loading only compiles it (running it would run the
        program), and each start executes it afresh (``_run_script``)."""
        if self.parsed.attr:
            return super()._load()
        file = self.parsed.file
        assert file is not None
        if not file.is_file():
            raise self._error(f"{self._tried()}: file {self.parsed.text!r} not found (looked for {file})",
                              "file entry points are relative to the scenario file's folder")
        try:
            with tokenize.open(file) as handle:  # the coding cookie, as the interpreter reads it
                source = handle.read()
            self._script: CodeType = compile(source, str(file), "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise self._syntax_error(exc) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise self._error(f"{self._tried()}: {file} cannot be read: {exc}") from None
        return self._run_script

    def _run_script(self) -> None:
        """The script as ``python path.py`` runs it: a fresh ``__main__`` namespace (not put in
        ``sys.modules``: kamera's own ``__main__`` stays), its imports the step's (a replay imports
        them again). ``sys.exit()`` with 0 or None ends it as the end of the file does."""
        file = self.parsed.file
        namespace: dict[str, Any] = {"__name__": "__main__", "__file__": str(file), "__builtins__": builtins,
                                     "__package__": None, "__spec__": None, "__loader__": None,
                                     "__cached__": None, "__doc__": None}
        try:
            exec(self._script, namespace)
        except SystemExit as exc:
            if exc.code not in (None, 0):
                raise ScriptExited(exc.code) from None

    def scope(self) -> contextlib.AbstractContextManager[None]:
        """The loader's scope, with servers idle: a program's health or metrics endpoint (``http.server``,
        ``wsgiref``, ``prometheus_client``) binds nothing, and its ``serve_forever`` returns at once."""
        return self._scope()

    @contextlib.contextmanager
    def _scope(self) -> Iterator[None]:
        with super().scope(), idle_servers():
            yield

    #: a program sees the clock through its sleeps, so its steps are kept in order (never reordered)
    @property
    def time_dependent(self) -> bool:
        return self.shape == "program"

    def attach(self, containment: Any, registry: Any, kinds: Iterable[KindRef]) -> None:
        """What a step needs besides the user's code: the transport to rebind, the kinds' resources."""
        self.containment = containment
        self.registry = registry
        self.kinds = tuple(kinds)

    # -- loading --------------------------------------------------------------------------------------------
    def _check_shape(self, value: Any, where: str) -> Any:
        name = self.parsed.attr
        hint = {"program": _PROGRAM_HINT, "sweep": _SWEEP_HINT}.get(self.shape, _HANDLER_HINT)
        if not callable(value) or inspect.isclass(value):
            raise self._error(f"{self._tried()}: {name!r} in {where} is not a function", hint)
        if inspect.iscoroutinefunction(value) and self.shape != "program":
            raise self._error(f"{self._tried()}: {name!r} in {where} is async; sweeps and handlers are plain "
                              "functions (a program may be `async def main():`)", hint)
        arity = arity_of(value)
        wanted = 2 if self.shape == "handler" else 0
        if arity is not None and (not arity.accepts(wanted) or arity.required_keyword_only):
            call = f"{name}(event_type, obj)" if wanted else f"{name}()"
            raise self._error(f"{self._tried()}: {name!r} in {where} takes {arity.text}; kamera calls it as {call}",
                              hint)
        return value

    def _reimport(self) -> None:
        """Re-import the user's modules inside the step's sandbox (its clock, fence and bound session), as
        the start of a fresh process. Unlike ``reload`` (which runs an import sandbox of its own, outside
        any step), what the top-level code does is part of this run; its errors are the program's. A
        ``from time import time`` it runs binds the sandbox's stand-in, which reads the real clock outside
        a sandbox, so nothing needs unbinding."""
        self.module_set.forget()
        if not self.parsed.attr:
            return  # a script imports what it needs as it runs (``_run_script``)
        with self.module_set.importing():
            module = self._exec_entry_module()
        self.module = module
        self._target = self._resolve(module)

    def unload(self) -> None:
        """End the suspended programs (on the sandbox's worker thread, where they live), then unload."""
        if self._parking and self.containment is not None:
            from kamera_cli.adapters.sandbox.calls import call_sandboxed
            from kamera_cli.adapters.sandbox.fence import VirtualClock

            call_sandboxed(self, lambda: self._parking.clear(self.containment), budget_seconds=5.0,
                            clock=VirtualClock(0.0), seed=b"kamera-program-unload")
        super().unload()

    # -- wiring ---------------------------------------------------------------------------------------------
    def mapper(self, kind: KindRef) -> Callable[[Mapping[str, Any]], list[tuple[str | None, str]]]:
        """The requests a change to an object of ``kind`` enqueues for this controller."""
        if self.shape != "handler":
            return lambda obj: [(None, PROGRAM_KEY)]

        def key(obj: Mapping[str, Any]) -> list[tuple[str | None, str]]:
            meta = obj.get("metadata") or {}
            ns = meta.get("namespace") or ""
            return [(None, f"{kind} {ns}/{meta.get('name', '')}" if ns else f"{kind} {meta.get('name', '')}")]

        return key

    def restart_keys(self, snapshot: Any) -> list[tuple[str, str]]:
        """What a restarted process is told: a program starts again; a handler hears of every object anew."""
        if self.shape != "handler":
            return [("", PROGRAM_KEY)]
        keys: list[tuple[str, str]] = []
        for kind in self.kinds:
            for obj in snapshot.objects_of(kind):
                keys.extend((ns or "", name) for ns, name in self.mapper(kind)(obj))
        return sorted(set(keys))

    # -- one step -------------------------------------------------------------------------------------------
    def invoke(self, request: Request, client: object) -> Any:
        if self.shape == "sweep":
            self._target()
            run = active_run()
            if self.next_tick is not None and run is not None:  # a cron schedule: its next point after now
                return Result(requeue_after=max(self.next_tick(run.clock.now) - run.clock.now, 1.0))
            return Result(requeue_after=self.every)
        if self.shape == "handler":
            return self._handle(request, client)
        return self._step_green(request.remembered, request.choice, request.memo)

    def _run_main(self) -> None:
        """``main()``; an ``async def main()`` on a virtual-time event loop of its own (``aio``), which
        blocks where its one task awaits a watch's next event or ``asyncio.sleep``."""
        if inspect.iscoroutinefunction(self._target):
            run_async(self._target())
        else:
            self._target()

    def _step_green(self, remembered: str, choice: str, memo: bool = True) -> ProgramResult:
        """``main()`` and its threads as greenlets (``program_threads``): resumed where the previous step
        left them (the fast path), answered by the memo (``memo.py``: the program does not run), or
        rebuilt by replaying the log, then run to the step's end."""
        run = active_run()
        assert run is not None and self.containment is not None
        server = self.containment.server
        live = tape = Tape(server)
        clock_reads = run.clock_reads
        self.memo_hit = False
        # a step from the start (the one the determinism check runs twice) or from an exact position
        # (its clock, seed or the server's history observed) is not memoised
        key = values = None
        clocks = (self._logs[remembered][1][-1].clock if remembered else 0.0, run.clock.now)
        if memo and self.memoize and remembered and not self.exact_position(remembered):
            logged, values = self._log_key(remembered)
            key = (logged, pattern(values), choice, clocks[0] >= clocks[1])
            if remembered not in self._parking:  # resuming keeps the chain of suspended programs going
                hit = self._memo.attempt(key, values, clocks, tape)
                if hit is not None:
                    self.memo_hit = True
                    answered: ProgramResult = dataclasses.replace(
                        hit.result, memory=self._store(remembered, hit.entries, False, hit.trace))
                    return answered
                tape.rewind()
        suspended = self._parking.take(remembered) if remembered else None
        if suspended is not None:
            threads, session = suspended
            session.begin_step(live, run.clock, run.clock.now, choice)
            threads.trace.new_step(len(session.log))
            replayed = 0
        else:
            log = self._log(remembered)
            replayed = len(log)
            session = Session(live, log, deliver=bool(remembered), clock=run.clock, step_clock=run.clock.now,
                              choice=choice)
            threads = Threads(session, program_parking.greenlets(), self.module_set.roots)
            threads.trace = Recorder(recorded=sum(len(self._traces[d].segments) for d, _e in self.segments(remembered)
                                                  if d in self._traces), start=len(log))
            session.threads = threads
            threads.trace.modules = _modules_of_this_run(self)
        tape.diverge = session.diverge
        self.containment.bind(session)
        run.on_sleep = session.on_sleep
        kept = False
        outcome = "parked"
        result: ProgramResult | None = None
        try:
            with program_primitives.installed(threads):
                try:
                    try:
                        if suspended is None:
                            # always a fresh import: locks its top-level code creates must be the program's
                            self._reimport()
                            threads.start_main(self._run_main, program_primitives.main_thread_stand_in())
                        outcome = threads.run()
                    except ProgramParked:
                        pass
                    except Exception as exc:
                        raise self._crashed(exc) from exc
                    if outcome in ("quiet", "yield") and not session.threaded and not session.diverged:
                        # what makes its position exact (``exact_position``): the clock or the seed read
                        # (a replay reads again what earlier steps read), the server's history asked for, a
                        # thread left in a timed wait (its wake instant is absolute)
                        observed = (run.clock_reads > clock_reads or session.historic
                                    or bool(threads.timers([t for t in threads.threads if t.state == "parked"])))
                        step = threads.trace.step()
                        memory = self._store(remembered, tuple(session.new_entries), observed, step)
                        result = self._green_result(threads, session, outcome, memory, remembered)
                        if key is not None and values is not None and memory not in self._exact:
                            self._memo.store(key, MemoEntry(values, clocks, tuple(tape.calls),
                                                            tuple(session.new_entries), step, result))
                        if program_parking.ENABLED:
                            self._parking.keep(memory, threads, session, self.containment)
                            kept = True
                finally:
                    if not kept:  # ended, crashed (an injected crash too), diverged: no thread outlives it
                        threads.kill()
        finally:
            run.on_sleep = None
            self.containment.bind(server)
        if session.threaded:
            raise ProgramThreaded(session.threaded if session.threaded.startswith("an async program") else
                                  f"a thread the program started outside kamera's scheduling reached "
                                  f"{session.threaded} (only threading.Thread is scheduled)")
        self._check_replayed(session, replayed)
        if result is None:
            ended = "returned" if self.parsed.attr else "ran to its end"
            raise ProgramEnded(f"{self.main_name} {ended}; a program runs until it blocks (a watch, time.sleep), "
                               "and one that ends handles nothing more")
        return result

    def _green_result(self, threads: Threads, session: Session, outcome: str, memory: str,
                      remembered: str) -> ProgramResult:
        """When the program's next step is due: now at a choice or with an event ready, after the first
        sleep or timeout ends, or when a write to a watched kind wakes it."""
        note = "; ".join(part for part in (session.told or ("started" if not remembered else ""),
                                           threads.describe()) if part)
        if outcome == "yield":
            return ProgramResult(requeue=True, memory=memory, note=note)
        parked = [t for t in threads.threads if t.state == "parked"]
        for t in parked:
            if t.point is not None and t.point[0] == "watch":
                self._check_watched(session.watches[t.point[1]].path)
        if threads.wakeable(parked):
            return ProgramResult(requeue=True, memory=memory, note=note + " (another event is ready)")
        timers = threads.timers(parked)
        if timers and timers[0].point is not None:
            # a wake-up is a periodic resync (it does not keep the cluster from converging) unless the
            # program changed something since a timer last woke it: with threads, in an earlier step too
            pending = len(threads.threads) > 1 and _wrote_since_a_timer(session.log)
            return ProgramResult(requeue_after=max(1.0, timers[0].point[-1] - session.clock.now), memory=memory,
                                 note=note, retry=pending)
        return ProgramResult(requeue=False, memory=memory, note=note)

    def _crashed(self, exc: Exception) -> Exception:
        if getattr(exc, "controller_fault", False) or hasattr(exc, "blocked_address"):
            return exc  # kamera's own verdicts on the program (a network attempt, a watch that blocks, a deadlock)
        # the process would exit: even an API error is the program's crash, not a reconcile's requeue
        what = (f"called sys.exit({exc.code!r})" if isinstance(exc, ScriptExited)
                else f"raised {type(exc).__name__}: {exc}")
        return ProgramCrashed(f"{self.main_name} {what}; the program's process would exit "
                              "(a restart is a crash perturbation)")

    def _check_replayed(self, session: Session, replayed: int) -> None:
        if session.diverged:
            raise ProgramDiverged(f"the program is not deterministic: replaying its {replayed} logged input(s) "
                                  f"from {self.main_name}, {session.diverged}")

    def choices_at(self, remembered: str) -> tuple[str, ...]:
        """The threads the explorer chooses among for this program's next step: those its log's last
        ``yield`` named (several could run on), or () for a program waiting for its next input."""
        if self.shape != "program" or not remembered or remembered not in self._logs:
            return ()
        entries = self._logs[remembered][1]
        if not entries or entries[-1].kind != "yield":
            return ()
        return tuple(json.loads(entries[-1].key))

    def _check_watched(self, path: str) -> None:
        """A program waiting on a watch of a kind its ``watches`` does not list would never be woken by a
        change to it: say so, rather than explore a program that looks idle."""
        parts = path.strip("/").split("/")
        group, version, rest = ("", parts[1], parts[2:]) if parts[0] == "api" else (parts[1], parts[2], parts[3:])
        info = self.registry.lookup_plural(group, version, rest[-1]) if rest else None
        if info is None or any(k.group == info.group and k.kind == info.kind for k in self.kinds):
            return
        kind = f"{info.group}/{info.version}/{info.kind}" if info.group else f"{info.version}/{info.kind}"
        raise ProgramUnwatched(f"the program waits on a watch of {path}, but {kind} is not in its watches: a change "
                               f"to it would not wake the program (add {kind} to the controller's watches)")

    def _log_key(self, digest: str) -> tuple[bytes, tuple[bytes, ...]]:
        """The log's memo key and resourceVersions (``memo.log_key``), worked out once per step of it."""
        chain = []
        while digest not in self._keys:
            chain.append(digest)
            digest = self._logs[digest][0]
        for step in reversed(chain):
            self._keys[step] = log_key(self._keys[self._logs[step][0]], self._logs[step][1])
            digest = step
        return self._keys[digest]

    def _log(self, digest: str) -> list[Entry]:
        chain: list[tuple[Entry, ...]] = []
        while digest:
            parent, entries = self._logs[digest]
            chain.append(entries)
            digest = parent
        return [e for entries in reversed(chain) for e in entries]

    def log_chain(self, digest: str) -> tuple[tuple[str, str, tuple[Entry, ...], bool, StepTrace | None], ...]:
        """The segments of the log a state names, as (digest, parent, entries, exact, trace): what another
        process of a split search needs to go on from that state (the log lives here, the state holds
        its digest). An event handler's memory is the last object it was told about, whole in the
        state: nothing."""
        if self.shape == "handler":
            return ()
        out = []
        while digest:
            parent, entries = self._logs[digest]
            out.append((digest, parent, entries, digest in self._exact, self._traces.get(digest)))
            digest = parent
        return tuple(out)

    def adopt_log(self, chain: Iterable[tuple[str, str, tuple[Entry, ...], bool, StepTrace | None]]) -> None:
        for digest, parent, entries, exact, trace in chain:
            self._logs.setdefault(digest, (parent, entries))
            if exact:
                self._exact.add(digest)
            if trace is not None:
                self._traces.setdefault(digest, trace)

    def segments(self, digest: str) -> list[tuple[str, tuple[Entry, ...]]]:
        """The log a state names, as its segments (digest, entries) from the program's start."""
        out = []
        while digest:
            parent, entries = self._logs[digest]
            out.append((digest, entries))
            digest = parent
        out.reverse()
        return out

    def step_trace(self, digest: str) -> StepTrace | None:
        """What the step that added this log segment ran, thread by thread (``trace.py``)."""
        return self._traces.get(digest)

    def exact_position(self, digest: str) -> bool:
        """Whether the program at this log observed the clock, its random seed or the API server's
        history (docs/semantics.md, "Program positions"): then its position is the log as it is, and
        its steps are kept in order; otherwise it is the log up to resourceVersions, timestamps and
        the times its inputs came at (``sim/positions.py``)."""
        return self.shape != "program" or digest in self._exact

    def _store(self, parent: str, entries: tuple[Entry, ...], observed: bool = False,
               trace: StepTrace | None = None) -> str:
        if not entries:
            return parent
        h = hashlib.sha256(parent.encode())
        for e in entries:
            h.update(e.digest())
        digest = h.hexdigest()
        if digest not in self._logs:
            self._logs[digest] = (parent, entries)
            if trace is not None:
                self._traces[digest] = trace
                if trace.untraced:
                    self.untraced.setdefault(trace.untraced)
            if (observed or parent in self._exact or inspect.iscoroutinefunction(self._target)
                    or any(e.kind in ("sleep", "timeout") for e in entries)):
                self._exact.add(digest)
        return digest

    # -- handlers -------------------------------------------------------------------------------------------
    def _handle(self, request: Request, client: object) -> ProgramResult | None:
        kind_text, _, key = request.name.partition(" ")
        kind = KindRef.parse(kind_text)
        ns, _, name = key.rpartition("/")
        info = self.registry.lookup(kind.api_version, kind.kind)
        base = f"/apis/{info.group}/{info.version}" if info.group else f"/api/{info.version}"
        path = f"{base}/namespaces/{ns}/{info.plural}/{name}" if ns else f"{base}/{info.plural}/{name}"
        resp = self.containment.server.handle("GET", path, [], {"Accept": "application/json"}, None)
        now = json.loads(resp.body) if resp.status == 200 else None
        last = json.loads(request.remembered) if request.remembered else None
        if now is not None and last is None:
            event, obj, memory = "ADDED", now, json.dumps(now, sort_keys=True)
        elif now is not None and last is not None and watch_content(now) != watch_content(last):
            event, obj, memory = "MODIFIED", now, json.dumps(now, sort_keys=True)
        elif now is None and last is not None:
            event, obj, memory = "DELETED", last, ""
        else:
            return None  # nothing this handler has not been told already
        self._target(event, self._typed(client, info, obj))
        return ProgramResult(memory=memory, note=f"handled {event}")

    @staticmethod
    def _typed(client: object, info: Any, obj: Mapping[str, Any]) -> Any:
        """The official client's model for a built-in kind (as its ``Watch`` yields), else the dict."""
        if info.custom:
            return dict(obj)
        import kubernetes.client

        type_name = info.version[:1].upper() + info.version[1:] + info.kind
        if not hasattr(kubernetes.client, type_name) or not hasattr(client, "deserialize"):
            return dict(obj)
        text = json.dumps(obj)
        deserialize: Any = client.deserialize
        if "content_type" in inspect.signature(deserialize).parameters:  # the v37+ generated client
            return deserialize(text, type_name, "application/json")
        return deserialize(_Data(text), type_name)


def _modules_of_this_run(factory: ProgramFactory) -> Callable[[], tuple[Any, ...]]:
    """The program's modules as this run imported them (taken at its first segment: a later replay
    imports them afresh for itself, while this run, suspended, keeps its own)."""
    taken: list[tuple[Any, ...]] = []

    def modules() -> tuple[Any, ...]:
        if not taken:
            taken.append(tuple(factory.module_set.modules.values()))
        return taken[0]

    return modules


def _wrote_since_a_timer(log: list[Entry]) -> bool:
    """Whether the program sent a write since its start or since a sleep or timeout last ended."""
    for entry in reversed(log):
        if entry.kind in ("sleep", "timeout", "start"):
            return False
        if entry.kind == "http" and not entry.key.startswith("GET "):
            return True
    return False


@dataclass(frozen=True, slots=True)
class _Data:
    """The one attribute ``ApiClient.deserialize`` reads from a response."""

    data: str


def load_program(entrypoint: str, base_dir: str, *, shape: str, every: float | None = None, scenario: str = "",
                 controller: str = "", env: Mapping[str, str] | ProcessView | None = None) -> ProgramFactory:
    """Import a program's, sweep's or handler's entry point and check its shape (EntrypointError otherwise)."""
    return ProgramFactory(entrypoint, base_dir, shape=shape, every=every, scenario=scenario,
                          controller=controller, env=env)
