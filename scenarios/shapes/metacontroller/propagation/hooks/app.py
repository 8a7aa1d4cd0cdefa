"""A ConfigMapPropagation hook server written as a WSGI application (the shape a Flask app has).

/customize asks for the source ConfigMap as a related object; /sync answers one copy of it per
target namespace.  The bug: a ConfigMap whose data is empty has no `data` field at all (the API
server leaves empty maps out), so `source["data"]` raises once the source is emptied.
"""

import json
from wsgiref.simple_server import make_server


def customize(request):
    spec = request["parent"]["spec"]
    return {"relatedResources": [{"apiVersion": "v1", "resource": "configmaps",
                                  "namespace": spec["sourceNamespace"], "names": [spec["sourceName"]]}]}


def copies(spec, source, data_of):
    return [{"apiVersion": "v1", "kind": "ConfigMap",
             "metadata": {"name": spec["sourceName"], "namespace": namespace},
             "data": data_of(source)} for namespace in spec["targetNamespaces"]]


def sync(request, data_of=lambda source: source["data"]):
    parent = request["parent"]
    spec = parent["spec"]
    sources = request["related"].get("ConfigMap.v1") or {}
    source = sources.get(f"{spec['sourceNamespace']}/{spec['sourceName']}")
    if source is None:  # the source is gone: remove the copies
        return {"children": [], "status": {"copies": 0}}
    children = request["children"].get("ConfigMap.v1") or {}
    return {"children": copies(spec, source, data_of), "status": {"copies": len(children)}}


def sync_fixed(request):
    return sync(request, data_of=lambda source: source.get("data") or {})


ROUTES = {"/customize": customize, "/sync": sync}


def route(routes):
    def app(environ, start_response):
        handler = routes.get(environ["PATH_INFO"])
        if handler is None or environ["REQUEST_METHOD"] != "POST":
            start_response("404 Not Found", [("Content-Type", "application/json")])
            return [b'{"error": "not found"}']
        length = int(environ.get("CONTENT_LENGTH") or 0)
        answer = json.dumps(handler(json.loads(environ["wsgi.input"].read(length)))).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(answer)))])
        return [answer]

    return app


app = route(ROUTES)
fixed_app = route({**ROUTES, "/sync": sync_fixed})

make_server("", 80, app).serve_forever()  # as deployed; kamera's import returns from it at once
