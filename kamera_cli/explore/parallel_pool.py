"""The processes of a split search and the pipes between them.

Why the coordinator never blocks on a write: a worker blocked writing its results to a full pipe
while the coordinator is blocked writing to that worker's would be a deadlock. Sending through a
thread per worker avoided it but cost the coordinator a GIL hand-off for every batch (a quarter of a
millisecond each, measured: as much as a step). So where the connection is a socket (what
``multiprocessing.Pipe`` makes on Linux and macOS) the coordinator frames its messages itself, the
way ``Connection.send`` does, and writes them with ``MSG_DONTWAIT``: what the socket cannot take now
waits in the outbox and goes with the next pump. Any other connection still gets a sender thread.
"""

from __future__ import annotations

import collections
import contextlib
import gc
import multiprocessing
import os
import queue
import select
import socket
import struct
import threading
import time
from collections.abc import Sequence
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from typing import Any

from kamera_cli.explore.model import ExploreError, Model
from kamera_cli.explore.parallel_worker import Worker, worker_main
from kamera_cli.explore.reduction import Reducible
from kamera_cli.explore.settings import SearchSettings

#: messages to a worker sent together (unless it runs short of work, or the coordinator waits)
BATCH = 16
#: socket buffers asked for (the kernel caps them): a worker's results rarely have to wait
_SOCKET_BUFFER = 1 << 20


class WorkerDied(RuntimeError):
    """A worker process of a parallel search ended without a word (user code in it exited or was
    killed). ``exitcode`` is its exit status (negative: the signal), so a supervisor can judge it as
    it would judge the death of the process that ran the whole search."""

    def __init__(self, worker: int, exitcode: int | None) -> None:
        super().__init__(f"search worker {worker} ended unexpectedly (exit code {exitcode})")
        self.exitcode = exitcode


def _frame(message: object) -> bytes:
    """``message`` as ``Connection.recv`` at the other end reads it: a length, then the pickle."""
    payload = bytes(ForkingPickler.dumps(message))
    n = len(payload)
    header = struct.pack("!i", n) if n <= 0x7FFFFFFF else struct.pack("!i", -1) + struct.pack("!Q", n)
    return header + payload


class _Outbox:
    """What the coordinator has for one worker and could not write yet."""

    def __init__(self, conn: Connection) -> None:
        self.pending: collections.deque[memoryview] = collections.deque()
        self.gone = False
        self.sock: socket.socket | None = None
        self.thread_box: queue.SimpleQueue[tuple[Any, ...] | None] | None = None
        self.thread: threading.Thread | None = None
        try:
            self.sock = socket.socket(fileno=os.dup(conn.fileno()))
        except OSError:  # not a socket: a sender thread may block for us
            self.thread_box = queue.SimpleQueue()
            self.thread = threading.Thread(target=_send_loop, args=(conn, self.thread_box), daemon=True,
                                           name="kamera-search-send")
            self.thread.start()
            return
        with contextlib.suppress(OSError):
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SOCKET_BUFFER)

    def put(self, message: tuple[Any, ...]) -> None:
        if self.thread_box is not None:
            self.thread_box.put(message)
            return
        if not self.gone:
            self.pending.append(memoryview(_frame(message)))
            self.pump()

    def pump(self) -> bool:
        """Write what the socket takes now; False: some is still waiting."""
        pending, sock = self.pending, self.sock
        while pending:
            head = pending[0]
            assert sock is not None
            try:
                sent = sock.send(head, socket.MSG_DONTWAIT)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:  # the worker is gone: reading from it says how
                self.gone = True
                pending.clear()
                return True
            if sent == len(head):
                pending.popleft()
            else:
                pending[0] = head[sent:]
                return False
        return True

    def drain(self, seconds: float) -> None:
        """Write everything within ``seconds`` (at the end: a worker that reads no more is let go)."""
        deadline = time.monotonic() + seconds
        while not self.pump() and time.monotonic() < deadline:
            time.sleep(0.001)

    def close(self) -> None:
        if self.thread_box is not None and self.thread is not None:
            self.thread_box.put(None)
            self.thread.join(timeout=2)
        if self.sock is not None:
            with contextlib.suppress(OSError):
                self.sock.close()


def _send_loop(conn: Connection, outbox: queue.SimpleQueue[tuple[Any, ...] | None]) -> None:
    with contextlib.suppress(OSError, ValueError):
        while True:
            message = outbox.get()
            if message is None:
                return
            conn.send(message)


def readable(conns: Sequence[Connection]) -> Any:
    """A ``select.poll`` watching ``conns`` for input (hang-ups and errors are always reported); None
    where there is no ``poll`` (Windows)."""
    make = getattr(select, "poll", None)
    if make is None:
        return None
    poller = make()
    for conn in conns:
        poller.register(conn.fileno(), select.POLLIN)
    return poller


def _forked_worker(conn: Connection, others: list[Connection], *args: Any) -> None:
    # Objects inherited from the coordinator are never garbage: keep the collector off them (and off
    # the pages they share with it, which a collection would otherwise copy).
    gc.freeze()
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _SOCKET_BUFFER)
        sock.close()
    worker_main(conn, others, *args)


class Pool:
    """Worker 0 runs in the coordinator's own process; workers 1.. are forked, each with a pipe, and
    the last ones may be remote: a connection to a process that serves the search (``serve``) with a
    model of its own, on this machine or another (a relay speaks the same protocol).

    Why the coordinator expands too: merging costs little, and a coordinator that only waited would
    still need a core of its own to answer in time. So with ``workers=N`` there are N processes in
    all, the coordinator expanding its own nodes between merges.
    """

    def __init__(self, model: Model[Any, Any], settings: SearchSettings[Any],
                 reducer: Reducible[Any, Any] | None) -> None:
        n, remote = settings.workers, settings.remote
        forked = n - 1 - len(remote)
        try:
            ctx = multiprocessing.get_context("fork") if forked else None
        except ValueError as exc:  # no fork (Windows): the serial search is the only one
            raise ExploreError("a parallel search needs the 'fork' start method (Linux, macOS)") from exc
        self.size = n
        self.conns: list[Connection] = []  # workers 1..n-1
        self.procs: list[Any] = []  # None for a remote worker
        self.outboxes: list[_Outbox] = []
        for i in range(1, n):
            if i <= forked:
                assert ctx is not None
                mine, theirs = ctx.Pipe()
                args = (theirs, list(self.conns), model, settings, reducer)
                proc = ctx.Process(target=_forked_worker, args=args, name=f"kamera-search-{i}", daemon=True)
                proc.start()
                theirs.close()
            else:
                mine, proc = remote[i - 1 - forked], None
            self.conns.append(mine)
            self.procs.append(proc)
            self.outboxes.append(_Outbox(mine))
        #: results of worker 0 go straight here (the coordinator's results by node); its other replies
        #: wait in ``replies`` for ``recv(0)``
        self.results: dict[int, Any] = {}
        self.replies: collections.deque[tuple[Any, ...]] = collections.deque()
        self.batches: list[list[tuple[Any, ...]]] = [[] for _ in range(1, n)]
        self.batched_nodes = [0] * (n - 1)
        self.local = Worker(self._local_reply, model, settings, reducer)
        # its results are merged as they are, in node order, which is not the order it expands in: a
        # numbering would meet a number before the result that brought it
        self.local.numbering = False
        self.closed = False
        self.by_fd = {conn.fileno(): conn for conn in self.conns}
        self.poller = readable(self.conns)

    def _local_reply(self, message: tuple[Any, ...]) -> None:
        if message[0] == "result":
            self.results[message[1]] = message[2]
        else:
            self.replies.append(message)

    def worker_of(self, conn: Any) -> int:
        return self.conns.index(conn) + 1

    def ready(self, timeout: float) -> list[Connection]:
        """The workers' connections with something to read (or gone) within ``timeout`` seconds.

        Why not ``multiprocessing.connection.wait``: it builds a selector per call, ~6 µs, and the
        coordinator asks once per node it expands itself."""
        if self.poller is None:
            return [c for c in wait(self.conns, timeout=timeout) if isinstance(c, Connection)] if self.conns else []
        return [self.by_fd[fd] for fd, _events in self.poller.poll(timeout * 1000)]

    def send(self, worker: int, message: tuple[Any, ...], nodes: int = 0) -> None:
        """Worker 0 handles it now; the others' messages go out in batches (``flush``): a frame per
        message would cost a pickle and a system call each. ``nodes``: how many nodes the message
        gives the worker to expand (``held`` counts them until the batch leaves)."""
        if worker == 0:
            self.local.handle(message)
            return
        batch = self.batches[worker - 1]
        batch.append(message)
        self.batched_nodes[worker - 1] += nodes
        if len(batch) >= BATCH or message[0] in ("get", "labels", "halt", "give"):
            self.flush(worker)

    def held(self, worker: int) -> int:
        """Nodes given to ``worker`` that still sit in its batch, here (the worker cannot start them)."""
        return self.batched_nodes[worker - 1] if worker else 0

    def flush(self, worker: int | None = None) -> None:
        for w in range(1, self.size) if worker is None else (worker,):
            batch = self.batches[w - 1]
            if batch:
                self.outboxes[w - 1].put(("batch", list(batch)))
                batch.clear()
                self.batched_nodes[w - 1] = 0

    def unsent(self) -> bool:
        """Pump every outbox; True: something still waits for room in a socket."""
        waiting = False
        for box in self.outboxes:
            if box.pending and not box.pump():
                waiting = True
        return waiting

    def recv(self, worker: int) -> Any:
        if worker == 0:
            return self.replies.popleft()
        box, conn = self.outboxes[worker - 1], self.conns[worker - 1]
        # the answer may wait on a question still in the outbox, which waits on the worker reading:
        # pump while waiting, never block on a write
        while box.pending and not box.pump() and not wait([conn], timeout=0.001):
            pass
        try:
            message = conn.recv()
        except (EOFError, OSError):
            proc = self.procs[worker - 1]
            if proc is None:
                raise RuntimeError(f"remote search worker {worker} went away without a word") from None
            proc.join(timeout=5)
            raise WorkerDied(worker, proc.exitcode) from None
        if message[0] == "error":
            raise RuntimeError(f"search worker {worker} failed:\n{message[1]}")
        return message

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            for box in self.outboxes:
                box.close()
            for conn in self.conns:
                conn.close()  # the workers see the end of their pipe and quit

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for box in self.outboxes:
            box.put(("quit",))
            box.drain(2.0)
            box.close()
        for conn in self.conns:
            conn.close()  # a worker still writing gets a broken pipe
        for proc in self.procs:
            if proc is None:
                continue
            proc.join(timeout=2)
            if proc.is_alive():
                proc.kill()
                proc.join()
