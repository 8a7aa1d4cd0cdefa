"""A Dask scheduler's HTTP API, as much of it as the operator calls: its workers, and retiring some.

A WSGI application of the standard library alone (a Flask or FastAPI app would do as well): the
scenario's ``fakes: [{url: ..., with: fakes/scheduler.py:app}]`` answers every request a controller
sends to the scheduler's Service with it, in-process.  Its state — which workers it has, and which
it has retired — lives in an ExternalStore, so kamera explores it with the cluster: a crash after the
scheduler retired a worker keeps that retirement, as a real scheduler would.
"""

import json

from kamera_cli import ExternalStore

#: worker name -> {"name": ..., "status": "running" | "retired"}
workers = ExternalStore("scheduler")

# the scheduler knows the two workers the cluster starts with (its state when the scenario starts)
for _name in ("worker-1", "worker-2"):
    workers.put(_name, {"name": _name, "status": "running"})


def _answer(start_response, status, value):
    start_response(f"{status} {'OK' if status == 200 else 'Not Found'}", [("Content-Type", "application/json")])
    return [json.dumps(value).encode()]


def app(environ, start_response):
    method, path = environ["REQUEST_METHOD"], environ["PATH_INFO"]
    if method == "GET" and path == "/api/v1/workers":
        return _answer(start_response, 200, {"workers": [worker for _, worker in workers.items()]})
    if method == "POST" and path == "/api/v1/retire_workers":
        body = json.loads(environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0)))
        running = sorted(name for name, worker in workers.items() if worker["status"] == "running")
        # Dask retires the workers whose loss costs least; with no tasks anywhere, here: the newest
        retired = running[::-1][: body["n"]]
        for name in retired:
            workers.put(name, {"name": name, "status": "retired"})
        return _answer(start_response, 200, {"workers": retired})
    return _answer(start_response, 404, {"error": f"no route for {method} {path}"})
