"""The same request sequence gives byte-identical answers in any process, under any PYTHONHASHSEED."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r'''
import hashlib, json, sys
from kamera_cli.apiserver import ApiServer, Registry, Snapshot, gc_step, gc_work
sys.path.insert(0, "tests/apiserver")
from crds import WIDGET
reg = Registry.builtin().with_crds([WIDGET])
clock = iter(range(0, 10_000, 7))
s = ApiServer(reg, Snapshot.empty(), now=lambda: next(clock))
out = []
def call(method, path, body=None, query=(), ctype="application/json"):
    raw = None if body is None else json.dumps(body).encode()
    r = s.handle(method, path, list(query), {"Content-Type": ctype, "User-Agent": "OpenAPI-Generator/37"}, raw)
    out.append(b"%d " % r.status + r.body + b"".join(r.stream or ()))
for ns in ("default", "b"):
    call("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
for i in range(6):
    call("POST", "/api/v1/namespaces/default/configmaps",
         {"metadata": {"generateName": "cm-", "labels": {"i": str(i)}}})
call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "owner"}})
owner = json.loads(out[-1][4:])
call("POST", "/api/v1/namespaces/default/secrets", {"metadata": {"name": "dep", "ownerReferences": [
    {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner["metadata"]["uid"]}]}})
call("POST", "/apis/example.com/v1/namespaces/default/widgets",
     {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": "small"}})
call("DELETE", "/api/v1/namespaces/default/configmaps/owner")
call("POST", "/api/v1/namespaces/default/configmaps", {"metadata": {"name": "owner"}})
for w in gc_work(s.snapshot, reg):
    gc_step(s, w)
call("GET", "/api/v1/namespaces/default/configmaps", query=[("labelSelector", "i in (1,2,3)")])
call("GET", "/api/v1/configmaps", query=[("watch", "true"), ("resourceVersion", "3")])
call("GET", "/api/v1/namespaces/default/secrets/dep")
out.append(s.snapshot.fingerprint().encode())
sys.stdout.write(hashlib.sha256(b"\n".join(out)).hexdigest() + "\n" + b"\n".join(out).decode())
'''


def _run(seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run([sys.executable, "-c", SCRIPT], cwd=ROOT, env=env, capture_output=True, text=True,
                          check=False, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_two_processes_with_different_hash_seeds_answer_identically():
    first, second = _run("1"), _run("12345")
    assert first == second
    assert '"generateName":"cm-"' in first and "404" in first  # the script really exercised the server
