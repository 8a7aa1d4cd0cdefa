"""The index of ``workqueue.py``, fixed: a worker whose replace lost the race (409 Conflict) reads the
index again and retries, as client-go's ``retry.RetryOnConflict`` does, so no change is lost."""

from index import record, serve
from kubernetes import client


def main():
    serve(work)


def work(v1, changes):
    while True:
        name, owner = changes.get()
        while True:
            try:
                record(v1, name, owner)
                break
            except client.ApiException as exc:
                if exc.status != 409:
                    raise
