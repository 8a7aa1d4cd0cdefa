"""The ConfigMapPropagation hook server as many real ones are written: the request handler class
exists only inside a factory (``server_factory(**settings)``), which ``main()`` calls with settings
from the command line, and the server it returns serves forever.

kamera cannot name the class, so the scenario maps the hooks to ``main``: a no-argument entry point
that builds and starts the server. kamera calls it once, as at import (the server binds nothing and
``serve_forever`` returns at once), and serves each hook with the started server's
``RequestHandlerClass``. The sync reads the source's data with ``.get`` (the fixed hook).
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, HTTPServer


def customize(request):
    spec = request["parent"]["spec"]
    return {"relatedResources": [{"apiVersion": "v1", "resource": "configmaps",
                                  "namespace": spec["sourceNamespace"], "names": [spec["sourceName"]]}]}


def sync(request):
    spec = request["parent"]["spec"]
    sources = request["related"].get("ConfigMap.v1") or {}
    source = sources.get(f"{spec['sourceNamespace']}/{spec['sourceName']}")
    if source is None:
        return {"children": [], "status": {"copies": 0}}
    copies = [{"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": spec["sourceName"], "namespace": namespace},
               "data": source.get("data") or {}} for namespace in spec["targetNamespaces"]]
    children = request["children"].get("ConfigMap.v1") or {}
    return {"children": copies, "status": {"copies": len(children)}}


def server_factory(port, routes):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):
            hook = routes.get(self.path)
            if hook is None:
                self.send_error(404)
                return
            request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            answer = json.dumps(hook(request)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    return HTTPServer(("", port), Handler)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=80)
    args = parser.parse_args()
    server_factory(args.port, {"/sync": sync, "/customize": customize}).serve_forever()


if __name__ == "__main__":
    main()
