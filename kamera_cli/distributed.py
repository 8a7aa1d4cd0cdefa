"""Scenarios checked on a Ray cluster (``kamera check --ray auto|local|ADDRESS``).

Why a layer above the supervisor: a scenario checked on a Ray node must keep every guarantee of a
local run — its own supervised worker process, the network namespace, the budgets, nothing lost
when user code kills its process — so each Ray task runs the supervisor on one scenario, and only
the judged ``ScenarioResult`` travels back. Results come back in discovery order whatever order the
tasks finish in, so the output is the local one.

With ``--workers N`` above the number of runs, each run's search is split too: its coordinator stays
in the task's supervised worker, and ``N // runs - 1`` Ray actors each host a search worker. Why an
actor hosts a process rather than being the worker: the worker runs user code, so it must sit behind
the same containment as every other (its own network namespace, the fence) — which would cut the
actor off from Ray. So the actor starts the worker as a contained process of its own and relays
between it and the coordinator (coordinator ⇄ pipe ⇄ relay threads in the task ⇄ actor ⇄ pipe ⇄
worker); the worker builds its model from the same scenario file (``runner.serve_remote``), so the
split search is the serial one, node for node (docs/explorer.md).

The scenario files must be readable at the same path on every Ray node (a shared checkout or file
system); ``local`` starts a Ray instance on this machine.
"""

from __future__ import annotations

import contextlib
import importlib.util
import multiprocessing
import threading
from collections.abc import Sequence
from dataclasses import replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from kamera_cli import netns, runner, supervisor
from kamera_cli.errors import UsageError
from kamera_cli.model.result import CheckResult, ScenarioResult, Verdict

__all__ = ["SearchHost", "check_on_ray", "ray_missing", "remote_search_workers", "wait_for_relays"]


def ray_missing() -> str | None:
    """Why ``--ray`` cannot work here (None: it can)."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed: pip install 'kamera-cli[ray]'"
    return None


def _check_one(path: str, overrides: runner.Overrides, options: supervisor.Options) -> CheckResult:
    try:
        return supervisor.supervise([Path(path)], overrides=overrides, options=options)
    finally:
        wait_for_relays()


def check_on_ray(paths: Sequence[Path], *, address: str, overrides: runner.Overrides | None = None,
                 options: supervisor.Options | None = None) -> CheckResult:
    """Every scenario under ``paths`` as one Ray task each; ``address``: ``auto`` (the running cluster),
    ``local`` (a new instance on this machine), or a cluster address (``ray://host:10001``)."""
    why = ray_missing()
    if why is not None:
        raise UsageError(f"--ray {address}: {why}")
    import ray

    from kamera_cli.scenario import discover

    files = discover(list(paths))
    overrides = overrides or runner.Overrides()
    options = options or supervisor.Options()
    started_here = not ray.is_initialized()
    if started_here:
        try:
            if address == "local":
                ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False)
            else:
                ray.init(address=address, log_to_driver=False, configure_logging=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise UsageError(f"--ray {address}: cannot connect to a Ray cluster: {exc}") from exc
    try:
        task: Any = ray.remote(max_retries=0)(_check_one)
        # one supervised worker per task: the Ray task is the unit of parallelism
        # (a swarm's members are runs of their own: each carries its member in its overrides)
        runs = runner.units(files, overrides, options.swarm)
        extra = options.workers // len(runs) - 1 if runs else 0
        each = replace(options, workers=1, swarm=0, remote_workers=max(0, extra),
                       remote_search=remote_search_workers if extra > 0 else None)
        pending = [task.remote(str(f.resolve()), o, each) for f, o in runs]
        results: list[ScenarioResult] = []
        notes = [f"checked on Ray ({address}): {len(runs)} run(s) of {len(files)} scenario(s), one task each"
                 + (f", each search split over {extra} Ray worker(s) besides its own process" if extra > 0 else "")]
        for ref in pending:
            checked: CheckResult = ray.get(ref)
            results.extend(checked.scenarios)
            notes.extend(n for n in checked.notes if n not in notes)
            if options.fail_fast and checked.verdict in (Verdict.FAILED, Verdict.ERROR):
                for other in pending[len(results):]:
                    ray.cancel(other)
                break
        return CheckResult(tuple(runner.dedupe_names(results)), notes=tuple(notes))
    finally:
        if started_here:
            ray.shutdown()


# -- one search's frontier over Ray actors ----------------------------------------------------------


class _Duplex:
    """The worker's end of two one-way pipes, as the one connection ``serve`` expects."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self.inbox, self.outbox = inbox, outbox

    def poll(self, timeout: float = 0.0) -> bool:
        return self.inbox.poll(timeout)

    def recv(self) -> Any:
        return self.inbox.recv()

    def send(self, message: Any) -> None:
        self.outbox.send(message)

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def _host_main(inbox: Connection, outbox: Connection, path: str, overrides: runner.Overrides) -> None:
    """A remote search worker's process: contained like a supervised worker, then serving."""
    netns.contain_here()
    runner.serve_remote(Path(path), overrides, _Duplex(inbox, outbox))


class SearchHost:
    """A Ray actor's body: one contained search worker process, and the two ends of its pipes.

    ``put`` and ``take`` run in concurrency groups of one thread each, so messages keep their order
    both ways while a ``take`` waiting for results never holds up a ``put``.
    """

    def __init__(self, path: str, overrides: runner.Overrides) -> None:
        ctx = multiprocessing.get_context("spawn")  # the actor's process has Ray's threads: never fork it
        their_in, self.inbox = ctx.Pipe(duplex=False)
        self.outbox, their_out = ctx.Pipe(duplex=False)
        self.proc = ctx.Process(target=_host_main, args=(their_in, their_out, path, overrides), daemon=True,
                                name="kamera-remote-search")
        self.proc.start()
        their_in.close()
        their_out.close()

    def ready(self) -> bool:
        return bool(self.proc.is_alive())

    def put(self, messages: list[Any]) -> None:
        for message in messages:
            self.inbox.send(message)

    def take(self, timeout: float) -> list[Any] | None:
        """What the worker said within ``timeout`` seconds ([]: nothing yet; None: it has ended)."""
        out: list[Any] = []
        with contextlib.suppress(EOFError, OSError):
            try:
                if self.outbox.poll(timeout):
                    out.append(self.outbox.recv())
                    while self.outbox.poll(0) and len(out) < 256:
                        out.append(self.outbox.recv())
            except OverflowError:  # a poll interrupted by a signal (see _relay_down): try again later
                pass
            return out
        return out or None

    def stop(self) -> None:
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()


_actor_class: Any = None


def _actor() -> Any:
    global _actor_class
    if _actor_class is None:
        import ray

        cls: Any = type("SearchHostActor", (SearchHost,), {
            "put": ray.method(concurrency_group="in")(SearchHost.put),
            "take": ray.method(concurrency_group="out")(SearchHost.take),
            "ready": ray.method(concurrency_group="out")(SearchHost.ready),
        })
        remote: Any = ray.remote  # (its stubs do not list concurrency_groups)
        _actor_class = remote(num_cpus=1, max_restarts=0, concurrency_groups={"in": 1, "out": 1})(cls)
    return _actor_class


#: seconds a search worker's actor may take to be placed and started before the run goes on without it
PLACEMENT_SECONDS = 60.0


def remote_search_workers(path: Path, overrides: runner.Overrides, count: int) -> list[Connection]:
    """Up to ``count`` search workers of ``path``'s run on Ray actors: the coordinator's end of each
    relay. An actor the cluster cannot place within ``PLACEMENT_SECONDS`` (no free CPU) is let go: the
    search is the same with fewer workers, and the run's notes say how many took part."""
    import ray

    actors = [_actor().remote(str(path), replace(overrides, remote_workers=())) for _ in range(count)]
    ready = [a.ready.remote() for a in actors]
    placed, _late = ray.wait(ready, num_returns=len(ready), timeout=PLACEMENT_SECONDS)
    ends: list[Connection] = []
    for i, (actor, ref) in enumerate(zip(actors, ready, strict=True)):
        if ref not in placed or not _get(ref):
            with contextlib.suppress(Exception):
                ray.kill(actor)
            continue
        mine, theirs = multiprocessing.Pipe()
        for relay in (_relay_down, _relay_up):
            thread = threading.Thread(target=relay, args=(theirs, actor), daemon=True,
                                      name=f"kamera-{relay.__name__[1:].replace('_', '-')}-{i}")
            thread.start()
            _relays.append(thread)
        ends.append(mine)
    return ends


_relays: list[threading.Thread] = []


def wait_for_relays(timeout: float = 30.0) -> None:
    """Wait until the relays of finished runs have let their actors go. Why: a relay still talking to
    Ray while the process shuts Ray down takes the whole process with it."""
    for thread in list(_relays):
        thread.join(timeout)
        if not thread.is_alive():
            _relays.remove(thread)


def _get(ref: Any) -> bool:
    import ray

    try:
        return bool(ray.get(ref))
    except Exception:
        return False


def _relay_down(conn: Connection, actor: Any) -> None:
    """Coordinator -> actor, in order (the coordinator batches already); a closed end means quit.

    Why no polling here: in a Ray driver or task process a zero-timeout ``poll`` can fail with
    ``OverflowError`` when a signal interrupts it (seen on CPython 3.11), so the relay only blocks."""
    with contextlib.suppress(BaseException):
        with contextlib.suppress(EOFError, OSError):
            while True:
                actor.put.remote([conn.recv()])
        actor.put.remote([("quit",)])


def _relay_up(conn: Connection, actor: Any) -> None:
    """Actor -> coordinator until the worker ends; a lost actor is said to the coordinator."""
    import ray

    try:
        while True:
            said = ray.get(actor.take.remote(0.5))
            if said is None:
                break
            for message in said:
                conn.send(message)
    except (OSError, EOFError):
        pass  # the coordinator is gone: nobody to tell
    except BaseException as exc:  # the actor or its node died, or Ray is shutting down (SystemExit)
        with contextlib.suppress(BaseException):
            conn.send(("error", f"the Ray actor hosting this search worker failed: {exc!r}"))
    finally:
        with contextlib.suppress(BaseException):
            ray.get(actor.stop.remote(), timeout=10)
        with contextlib.suppress(BaseException):
            ray.kill(actor)
        with contextlib.suppress(BaseException):
            conn.close()
