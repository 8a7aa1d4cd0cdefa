"""Giving every team a Grafana folder, with nothing but the standard library's ``urllib.request``.

A Namespace labelled ``grafana: folder`` gets a folder titled after it in Grafana, and the folder's
uid recorded in the namespace (the ConfigMap ``grafana-folder``), where the team's dashboards look it
up.  Grafana picks the uid, and refuses a second folder with a title already taken (409 Conflict,
which ``urlopen`` raises as ``urllib.error.HTTPError``).

``buggy`` creates the folder, then records it.  A crash between the two leaves a folder the namespace
does not record; the restarted operator asks Grafana for the folder again, is refused, and raises on
every retry: the namespace never learns its folder.  ``fixed`` takes the 409 to mean the folder is
already there, and looks its uid up by title.
"""

import json
import urllib.error
import urllib.request

from kubernetes import client, config
from kubernetes.client.rest import ApiException

config.load_kube_config()
core = client.CoreV1Api()

GRAFANA = "http://grafana.monitoring.svc:3000"


def _grafana(method, path, body=None):
    request = urllib.request.Request(
        GRAFANA + path, method=method, data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": "Bearer operator-token", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        if response.getheader("Content-Type") != "application/json":
            raise RuntimeError(f"Grafana answered {response.status} with {response.getheader('Content-Type')}")
        return json.load(response)


def _team(request):
    """The namespace's name when it wants a folder and has none recorded yet, else None."""
    try:
        namespace = core.read_namespace(request.name)
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise
    if (namespace.metadata.labels or {}).get("grafana") != "folder":
        return None
    try:
        core.read_namespaced_config_map("grafana-folder", request.name)
        return None
    except ApiException as exc:
        if exc.status != 404:
            raise
    return request.name


def _record(namespace, uid):
    core.create_namespaced_config_map(namespace, client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="grafana-folder"), data={"uid": uid}))


def buggy(request):
    team = _team(request)
    if team is None:
        return
    folder = _grafana("POST", "/api/folders", {"title": team})
    _record(team, folder["uid"])


def fixed(request):
    team = _team(request)
    if team is None:
        return
    try:
        folder = _grafana("POST", "/api/folders", {"title": team})
    except urllib.error.HTTPError as exc:
        if exc.code != 409:  # anything but "already there" is still an error
            raise
        folder = next(f for f in _grafana("GET", "/api/folders") if f["title"] == team)
    _record(team, folder["uid"])
