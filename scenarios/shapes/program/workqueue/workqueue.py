"""An index of owners, written as the classic thread shape: the main thread watches the ConfigMaps of
namespace ``zeta`` and puts each change (its name and ``owner``) on a ``queue.Queue``; two worker
threads take changes from it and record each owner in the ConfigMap ``alpha/owners`` (``index.py``).

The bug: both workers read, change and replace the same index. When their reads and writes
interleave, the second replace fails with 409 Conflict; nothing catches it, so the worker thread dies
(Python prints the exception and the thread ends, the program runs on) and its change is never
recorded. With one worker, or a retry on conflict (``workqueue_fixed.py``), every change is.
"""

from index import record, serve


def main():
    serve(work)


def work(v1, changes):
    while True:
        name, owner = changes.get()
        record(v1, name, owner)
